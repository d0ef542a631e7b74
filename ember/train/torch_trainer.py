"""TorchTrainer: run a plain PyTorch training function on N workers (Ray Train's functional API).

Local processes by default: the training function (pickled by reference or by value, as Ray does)
runs in N worker processes started with torchrun's variables (`local_workers.py`); the user's script
is never run again, so it may come from a file, `python -c`, stdin or a notebook. On Ray when
`ray.init()` was called, when `RAY_ADDRESS` is set (Ray's rule, the one ember.data follows too), or
with `RunConfig(use_ray=True)`: the function is shipped to N Ray actors.
"""

from __future__ import annotations

import inspect
import os
from pathlib import Path
from typing import Any

from ember.errors import ConfigError, did_you_mean
from ember.fs import is_url, make_folders
from ember.fs.mirror import mirrored
from ember.train.checkpoint_folder import Checkpoint
from ember.train.config import (
    CheckpointConfig,
    DataConfig,
    FailureConfig,
    RunConfig,
    ScalingConfig,
    TorchConfig,
)
from ember.train.result import Result
from ember.train.run_names import default_run_name, default_storage_path

#: Ray Train 2.60 TorchTrainer arguments ember refuses when set, each with what to do instead.
_REFUSED = {
    "metadata": "Ray Train 2.60 refuses it too (deprecated); pass such values in train_loop_config",
    "validation_config": "Ray Train's alpha checkpoint validation is not implemented; validate inside "
    "train_loop_per_worker and report the metrics",
}


class TorchTrainer:
    """Runs `train_loop_per_worker(config)` on `scaling_config.num_workers` workers.

    Example:
        >>> def train_func(config):
        ...     model = ember.train.torch.prepare_model(torch.nn.Linear(30, 1))
        ...     for batch in ember.train.get_dataset_shard("train").iter_torch_batches(batch_size=128):
        ...         ...
        ...     ember.train.report({"done": 1})
        >>> trainer = TorchTrainer(train_func, datasets={"train": ds},
        ...                        scaling_config=ScalingConfig(num_workers=2))  # doctest: +SKIP
        >>> result = trainer.fit()  # doctest: +SKIP
    """

    def __init__(
        self,
        train_loop_per_worker: Any,
        *,
        train_loop_config: dict[str, Any] | None = None,
        torch_config: TorchConfig | None = None,
        scaling_config: ScalingConfig | None = None,
        run_config: RunConfig | None = None,
        datasets: dict[str, Any] | None = None,
        dataset_config: DataConfig | None = None,
        validation_config: Any = None,
        metadata: dict[str, Any] | None = None,
        resume_from_checkpoint: Checkpoint | None = None,
        failure_config: FailureConfig | None = None,
        **ray_only: Any,
    ) -> None:
        for name, value in (("validation_config", validation_config), ("metadata", metadata)):
            if value is not None:
                raise ConfigError(f"TorchTrainer({name}=...): {_REFUSED[name]}")
        for name in ray_only:
            raise ConfigError(_unknown_argument_message(name))
        _check_type("torch_config", torch_config, TorchConfig)
        _check_type("dataset_config", dataset_config, DataConfig)
        if not callable(train_loop_per_worker):
            raise ConfigError(
                f"train_loop_per_worker must be a function; got {type(train_loop_per_worker).__name__}"
            )
        self.train_loop = train_loop_per_worker
        self.config = train_loop_config
        self.scaling = scaling_config or ScalingConfig()
        self.run_config = run_config or RunConfig()
        self.datasets = dict(datasets or {})
        self.failure = failure_config or self.run_config.failure_config or FailureConfig()
        self.resume_from_checkpoint = resume_from_checkpoint
        #: None: ember's default group (gloo, or nccl with use_gpu; 600 s timeout)
        self.torch_config = torch_config
        self.dataset_config = dataset_config or DataConfig()

    @property
    def checkpoint_config(self) -> CheckpointConfig:
        return self.run_config.checkpoint_config or CheckpointConfig()

    def fit(self) -> Result:
        """Train on all workers; returns rank zero's last reported metrics and the kept checkpoints.

        A run folder that already holds this run (same `RunConfig(name, storage_path)`) is continued:
        `get_checkpoint()` returns its last recorded checkpoint, as in Ray Train 2.60.
        """
        from ember.train.checkpoint_manager import write_settings
        from ember.train.restore import settings_of

        storage = self._storage_url()  # an object store: the run works locally and is uploaded as it goes
        on_ray = self._on_ray()
        if not on_ray:
            self._refuse_ray_datasets()
        run_dir = self._run_dir()
        with mirrored(run_dir, storage):
            write_settings(run_dir, settings_of(self))
            if on_ray:
                from ember.train.ray_actors import fit_on_ray

                result = fit_on_ray(self, run_dir)
            else:
                # imported here, not at the top: it is also the workers' __main__ (python -m)
                from ember.train.local_workers import fit_with_local_workers

                result = fit_with_local_workers(self, run_dir)
        if storage is not None:
            result.path = storage  # as in Ray: the run's place on the storage path
        return result

    @classmethod
    def restore(
        cls,
        path: str | os.PathLike[str],
        train_loop_per_worker: Any = None,
        train_loop_config: dict[str, Any] | None = None,
        datasets: dict[str, Any] | None = None,
        scaling_config: ScalingConfig | None = None,
    ) -> TorchTrainer:
        """A trainer that continues the run in `path` (local
        or s3://) after its driver died; see `restore.py`.

        Example:
            >>> TorchTrainer.restore("/results/exp", train_loop_per_worker=train_func).fit()  # doctest: +SKIP
        """
        from ember.train.restore import restore

        return restore(cls, path, train_loop_per_worker, train_loop_config, datasets, scaling_config)

    @classmethod
    def can_restore(cls, path: str | os.PathLike[str]) -> bool:
        """Does `path` hold a TorchTrainer run that `restore` can continue?

        Example:
            >>> TorchTrainer.can_restore("/nonexistent/run")
            False
        """
        from ember.train.restore import can_restore

        return can_restore(path)

    # ---- where and how ------------------------------------------------------------------------
    def _run_name(self) -> str:
        if getattr(self, "_name", None) is None:
            self._name = self.run_config.name or default_run_name()  # Ray's RunConfig has chosen it already
        return self._name

    def _storage_url(self) -> str | None:
        """`storage_path/name` when storage_path is an object
        store (s3://, gs://, memory://...), else None."""
        root = self.run_config.storage_path
        return f"{str(root).rstrip('/')}/{self._run_name()}" if root is not None and is_url(root) else None

    def _run_dir(self) -> Path:
        remote = self._storage_url()
        if remote is not None:  # a local working copy, mirrored to the store (ember.fs.mirror)
            from ember.fs import make_temporary_folder

            return make_temporary_folder("train-").resolve()
        root = Path(self.run_config.storage_path or default_storage_path()).expanduser()
        folder = root / self._run_name()
        make_folders(folder)
        return folder.resolve()

    def _on_ray(self) -> bool:
        if self.run_config.use_ray is not None:
            return self.run_config.use_ray
        from ember.deadlines import wants_ray

        return wants_ray()  # Ray's rule: the Ray initialized here, else RAY_ADDRESS (as ember.data joins)

    # ---- local processes ---------------------------------------------------------------------
    def _refuse_ray_datasets(self) -> None:
        for name, data in self.datasets.items():
            if type(data).__module__.startswith("ray."):
                raise ConfigError(
                    f"datasets[{name!r}] is a ray.data Dataset; call ray.init() first (or "
                    "RunConfig(use_ray=True)) to train on Ray, or pass an ember.data Dataset"
                )


def _check_type(name: str, value: Any, expected: type) -> None:
    if value is not None and not isinstance(value, expected):
        where = "ember.train.torch" if expected is TorchConfig else "ember.train"
        raise ConfigError(
            f"TorchTrainer({name}=...) takes {where}.{expected.__name__}, not "
            f"{type(value).__module__}.{type(value).__name__}"
        )


def _unknown_argument_message(name: str) -> str:
    known = [p for p in inspect.signature(TorchTrainer.__init__).parameters if p not in ("self", "ray_only")]
    hint = did_you_mean(name, known, f"its arguments: {', '.join(known)}")
    return f"TorchTrainer has no argument {name!r}; {hint}"
