"""The option objects of the functional API, spelled as in Ray Train."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from ember.errors import ConfigError
from ember.train.run_names import default_run_name, default_storage_path

#: Ray Train's marker default of its deprecated fields: anything else was set by the program.
DEPRECATED = "DEPRECATED"


def refuse_set(owner: str, values: dict[str, Any], ray_only: dict[str, tuple[Any, str]]) -> None:
    """Refuse each Ray Train field in `ray_only` (name: (Ray's default, what to do instead)) whose value in
    `values` is not that default: such a field was set by the program, and ember never drops it silently."""
    for name, (default, instead) in ray_only.items():
        value = values[name]
        if value is not default and value != default:
            raise ConfigError(
                f"{owner}({name}=...) is a Ray Train option ember does not implement; {instead}"
            )


@dataclasses.dataclass
class ScalingConfig:
    """How many workers, and what each one gets (Ray Train's ScalingConfig, its fields in its order).

    `num_workers`, `use_gpu`, `resources_per_worker`, `placement_strategy` are honoured; the others are
    Ray's too and refused when set (`trainer_resources` is Ray's first positional field, refused by Ray
    2.60 as well, so `ScalingConfig(2)` is refused there and here: write `ScalingConfig(num_workers=2)`).

    Example:
        >>> ScalingConfig(num_workers=2).num_workers
        2
        >>> ScalingConfig(num_workers=2, use_gpu=True).worker_resources
        {'GPU': 1.0}
    """

    trainer_resources: dict[str, float] | None = None
    num_workers: int = 1
    use_gpu: bool = False
    resources_per_worker: dict[str, float] | None = None
    #: Ray placement group strategy of the workers' bundles: "PACK" (Ray's default), "SPREAD" (different
    #: nodes where possible), "STRICT_PACK", "STRICT_SPREAD". Local workers all run on this machine.
    placement_strategy: str = "PACK"
    accelerator_type: str | None = None
    label_selector: Any = None
    use_tpu: bool = False
    topology: str | None = None
    elastic_resize_monitor_interval_s: float = 60.0

    def __post_init__(self) -> None:
        refuse_set("ScalingConfig", vars(self), _SCALING_REFUSED)
        if isinstance(self.num_workers, tuple):
            raise ConfigError(
                f"ScalingConfig(num_workers={self.num_workers!r}): elastic training (a (min, max) "
                "tuple) is not implemented by ember; pass a number of workers"
            )
        if (
            not isinstance(self.num_workers, int)
            or isinstance(self.num_workers, bool)
            or self.num_workers < 1
        ):
            raise ConfigError(
                f"ScalingConfig(num_workers={self.num_workers!r}) must be a positive int (Ray's 0, "
                "the loop in the driver's process, is not implemented: use 1)"
            )
        if self.placement_strategy not in _PLACEMENT_STRATEGIES:
            raise ConfigError(
                f"ScalingConfig(placement_strategy={self.placement_strategy!r}): use one of "
                f"{', '.join(_PLACEMENT_STRATEGIES)} (Ray's placement group strategies)"
            )
        gpus = (self.resources_per_worker or {}).get("GPU", 0)
        if self.resources_per_worker and not self.use_gpu and gpus > 0:  # Ray's two checks
            raise ConfigError(
                "ScalingConfig: use_gpu is False but resources_per_worker asks for GPU; set "
                "use_gpu=True or remove 'GPU'"
            )
        if self.resources_per_worker and self.use_gpu and gpus == 0:
            raise ConfigError(
                "ScalingConfig: use_gpu is True but resources_per_worker sets GPU to 0; set "
                "use_gpu=False or ask for a positive 'GPU'"
            )

    @property
    def worker_resources(self) -> dict[str, float]:
        """Ray resources of one worker, by Ray's rule: 1 CPU, or 1 GPU (no CPU) with use_gpu, unless given;
        zero amounts dropped."""
        if self.resources_per_worker is None:
            given: dict[str, float] = {"GPU": 1.0} if self.use_gpu else {"CPU": 1.0}
        else:
            given = {k: float(v) for k, v in self.resources_per_worker.items() if v != 0}
        if self.use_gpu:
            given.setdefault("GPU", 1.0)
        return given

    @property
    def num_cpus_per_worker(self) -> float:
        return self.worker_resources.get("CPU", 0)

    @property
    def num_gpus_per_worker(self) -> float:
        return self.worker_resources.get("GPU", 0)

    @property
    def num_tpus_per_worker(self) -> float:
        return 0

    @property
    def additional_resources_per_worker(self) -> dict[str, float]:
        """Resources of one worker other than CPU and GPU."""
        return {k: v for k, v in self.worker_resources.items() if k not in ("CPU", "GPU")}

    @property
    def total_resources(self) -> dict[str, float]:
        """All workers' resources together (Ray 2.60 reserves none for the driver)."""
        return {k: v * self.num_workers for k, v in self.worker_resources.items()}

    @property
    def min_workers(self) -> int:
        return self.num_workers

    @property
    def max_workers(self) -> int:
        return self.num_workers

    @property
    def elasticity_enabled(self) -> bool:
        return False

    def as_placement_group_factory(self) -> Any:
        """Refused: a Ray Tune object (ember has no Tune)."""
        raise ConfigError(
            "ScalingConfig.as_placement_group_factory() builds a Ray Tune object; ember has no Tune "
            "integration: read worker_resources and num_workers instead"
        )

    @classmethod
    def from_placement_group_factory(cls, pgf: Any) -> ScalingConfig:
        """Refused: a Ray Tune object (ember has no Tune)."""
        raise ConfigError(
            "ScalingConfig.from_placement_group_factory() reads a Ray Tune object; ember has no Tune "
            "integration: build ScalingConfig(num_workers=..., resources_per_worker=...)"
        )


_PLACEMENT_STRATEGIES = ("PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD")
_SCALING_REFUSED: dict[str, tuple[Any, str]] = {
    "trainer_resources": (
        None,
        "deprecated in Ray 2.60 too (the driver needs no resources); leave it out, and "
        "pass num_workers by name: ScalingConfig(num_workers=...)",
    ),
    "accelerator_type": (None, "use resources_per_worker={'GPU': 1, ...} with a custom Ray resource"),
    "label_selector": (None, "use resources_per_worker with a custom Ray resource on the nodes you want"),
    "use_tpu": (False, "ember trains on CPU or CUDA"),
    "topology": (None, "ember trains on CPU or CUDA"),
    "elastic_resize_monitor_interval_s": (
        60.0,
        "it only acts with elastic num_workers=(min, max), which ember does not implement",
    ),
}


@dataclasses.dataclass
class CheckpointConfig:
    """Which reported checkpoints to keep (Ray Train's CheckpointConfig).

    All by default. With `num_to_keep=k`, after each report only the best k remain — the most recent k
    without `checkpoint_score_attribute`, else the k with the highest ("max") or lowest ("min") value of
    that metric — and, as in Ray, the latest checkpoint is never deleted, even when it is not among them
    (so a restarted run resumes from it). A checkpoint whose metrics lack the attribute scores lowest.
    `checkpoint_frequency` and `checkpoint_at_end` are refused when set, as Ray 2.60 refuses them.

    Example:
        >>> CheckpointConfig(num_to_keep=2, checkpoint_score_attribute="accuracy").checkpoint_score_order
        'max'
    """

    num_to_keep: int | None = None
    checkpoint_score_attribute: str | None = None
    checkpoint_score_order: str = "max"
    checkpoint_frequency: int | None | str = DEPRECATED
    checkpoint_at_end: bool | None | str = DEPRECATED

    def __post_init__(self) -> None:
        refuse_set(
            "CheckpointConfig",
            vars(self),
            {
                "checkpoint_frequency": (
                    DEPRECATED,
                    "deprecated in Ray 2.60 too: call ember.train.report(..., "
                    "checkpoint=) when you want a checkpoint",
                ),
                "checkpoint_at_end": (
                    DEPRECATED,
                    "deprecated in Ray 2.60 too: report a checkpoint at the end of train_loop_per_worker",
                ),
            },
        )
        if self.num_to_keep is not None and (not isinstance(self.num_to_keep, int) or self.num_to_keep < 1):
            raise ConfigError(
                f"CheckpointConfig(num_to_keep={self.num_to_keep!r}) must be None (keep all) or an int >= 1"
            )
        if self.checkpoint_score_order not in ("max", "min"):
            raise ConfigError(
                f"CheckpointConfig(checkpoint_score_order={self.checkpoint_score_order!r}) must be "
                "'max' or 'min'"
            )


@dataclasses.dataclass
class FailureConfig:
    """`max_failures`: restart all workers, resuming from the last reported checkpoint, up to this many times.

    Ray's other fields are refused when set (they steer Ray's controller and preemption handling).

    Example:
        >>> FailureConfig(max_failures=1).max_failures
        1
    """

    max_failures: int = 0
    fail_fast: bool | str = DEPRECATED
    controller_failure_limit: int = -1
    max_preemption_failures: int = -1
    relax_collectives_on_preemption: bool = False
    preemption_grace_s: float = 0.0

    def __post_init__(self) -> None:
        refuse_set(
            "FailureConfig",
            vars(self),
            {
                "fail_fast": (DEPRECATED, "deprecated in Ray 2.60 too; use max_failures=0"),
                "controller_failure_limit": (
                    -1,
                    "ember's driver is your process: restart it and use TorchTrainer.restore",
                ),
                "max_preemption_failures": (-1, "ember counts every failure in max_failures"),
                "relax_collectives_on_preemption": (
                    False,
                    "ember restarts all workers from the last checkpoint",
                ),
                "preemption_grace_s": (0.0, "ember restarts all workers from the last checkpoint"),
            },
        )
        if not isinstance(self.max_failures, int) or self.max_failures < 0:
            raise ConfigError(
                f"FailureConfig(max_failures={self.max_failures!r}) must be an int >= 0 "
                "(ember does not retry forever: Ray's -1 is refused)"
            )


@dataclasses.dataclass
class RunConfig:
    """Where results go: `storage_path/name` (Ray's defaults: ~/ray_results/ray_train_run-<time>).

    Ray Train's fields in its order. `storage_filesystem` is honoured for a local pyarrow filesystem;
    for another, write the URL into storage_path (`s3://bucket/path`). `callbacks` and
    `worker_runtime_env` are honoured when empty, and `logging_config` when None or Ray's default
    `LoggingConfig()` (level INFO of Ray Train's own logs, which ember does not have); otherwise refused,
    like Ray's deprecated fields.

    ember's own fields are keyword-only, after Ray's: `use_ray=True` runs the workers on Ray even if
    `ray.init` was not called yet (`use_ray=False` keeps local processes even when Ray is initialized).

    Example:
        >>> RunConfig(name="exp", storage_path="/tmp/results").name
        'exp'
    """

    name: str | None = None
    storage_path: str | None = None
    storage_filesystem: Any = None
    failure_config: FailureConfig | None = None
    checkpoint_config: CheckpointConfig | None = None
    callbacks: list[Any] | None = None
    worker_runtime_env: dict[str, Any] | None = None
    logging_config: Any = None
    sync_config: Any = DEPRECATED
    verbose: Any = DEPRECATED
    stop: Any = DEPRECATED
    progress_reporter: Any = DEPRECATED
    log_to_file: Any = DEPRECATED
    use_ray: bool | None = dataclasses.field(default=None, kw_only=True)
    extra: dict[str, Any] = dataclasses.field(default_factory=dict, kw_only=True)

    def __post_init__(self) -> None:
        default_logging = (
            str(getattr(self.logging_config, "log_level", "")).upper() == "INFO"
        )  # Ray's default
        refuse_set(
            "RunConfig",
            {
                **vars(self),
                "callbacks": self.callbacks or None,
                "worker_runtime_env": self.worker_runtime_env or None,
                "logging_config": None if default_logging else self.logging_config,
            },
            _RUN_REFUSED,
        )
        self.callbacks = []
        self.worker_runtime_env = {}
        self.storage_path = _storage_path_on(self.storage_filesystem, self.storage_path)
        if (
            self.storage_path is None
        ):  # Ray's defaults, chosen here as Ray's RunConfig does (see run_names.py)
            self.storage_path = default_storage_path()
        if isinstance(self.storage_path, os.PathLike):
            self.storage_path = Path(self.storage_path).as_posix()
        if not self.name:
            self.name = default_run_name()
        _check_type("failure_config", self.failure_config, FailureConfig)
        _check_type("checkpoint_config", self.checkpoint_config, CheckpointConfig)

    @property
    def storage_context(self) -> Any:
        """Refused: Ray's internal storage object."""
        raise ConfigError(
            "RunConfig.storage_context is Ray Train's internal storage object; read storage_path "
            "and name (the run folder is storage_path/name)"
        )


_RUN_REFUSED: dict[str, tuple[Any, str]] = {
    "callbacks": (None, "Ray Train's UserCallback is not implemented; act on the Result after fit()"),
    "worker_runtime_env": (
        None,
        "local workers inherit the driver's environment; on Ray use ray.init(runtime_env=...)",
    ),
    "logging_config": (
        None,
        "ember has no Ray Train internal logs to set a level for (the workers' output goes "
        "to the driver's stdout/stderr); leave it out",
    ),
    **{
        name: (DEPRECATED, "deprecated in Ray 2.60 too")
        for name in ("sync_config", "verbose", "stop", "progress_reporter", "log_to_file")
    },
}


def _storage_path_on(filesystem: Any, path: str | None) -> str | None:
    """`storage_path` given with a pyarrow `storage_filesystem`: a local one is the path itself; another is
    refused with the URL to write instead."""
    if filesystem is None:
        return path
    type_name = getattr(filesystem, "type_name", None)
    if type_name == "local":
        return path
    scheme = {"s3": "s3", "gcs": "gs"}.get(str(type_name), str(type_name))
    raise ConfigError(
        f"RunConfig(storage_filesystem=<{type(filesystem).__name__}>): pass the location as a URL "
        f"instead, RunConfig(storage_path='{scheme}://{str(path or '').lstrip('/')}') (credentials "
        "from the environment)"
    )


def _check_type(name: str, value: Any, expected: type) -> None:
    if value is not None and not isinstance(value, expected):
        raise ConfigError(
            f"RunConfig({name}=...) takes ember.train.{expected.__name__}, not "
            f"{type(value).__module__}.{type(value).__name__}"
        )


_INIT_METHODS = ("env", "tcp")


@dataclasses.dataclass
class TorchConfig:
    """How the workers' process group is formed (Ray Train's `ray.train.torch.TorchConfig`).

    `backend`: the torch.distributed backend; None picks nccl with `ScalingConfig(use_gpu=True)`, else gloo
    (Ray's rule). `timeout_s`: the group's collective timeout (Ray's default 1800 s; without a TorchConfig
    ember's workers use 600 s). `init_method`: how the ranks find each other, "env" or "tcp"; both give the
    same group (ember binds the rendezvous to the master address either way).

    Example:
        >>> TorchConfig(timeout_s=60).backend_for(use_gpu=False)
        'gloo'
    """

    backend: str | None = None
    init_method: str = "env"
    timeout_s: int = 1800

    def __post_init__(self) -> None:
        if self.init_method not in _INIT_METHODS:
            raise ConfigError(f"TorchConfig(init_method={self.init_method!r}): use 'env' or 'tcp'")
        if (
            not isinstance(self.timeout_s, (int, float))
            or isinstance(self.timeout_s, bool)
            or self.timeout_s <= 0
        ):
            raise ConfigError(
                f"TorchConfig(timeout_s={self.timeout_s!r}) must be a positive number of seconds"
            )
        if self.backend is not None and self.backend not in ("gloo", "nccl", "mpi"):
            raise ConfigError(
                f"TorchConfig(backend={self.backend!r}): ember's workers form a torch.distributed "
                "group with 'gloo', 'nccl' or 'mpi' (None picks nccl on GPUs, else gloo)"
            )

    def backend_for(self, use_gpu: bool) -> str:
        """The backend the workers use: the one given, else nccl on GPUs and gloo on CPUs."""
        return self.backend or ("nccl" if use_gpu else "gloo")


@dataclasses.dataclass
class DataConfig:
    """Which of TorchTrainer's `datasets` are split across the workers (Ray Train's `ray.train.DataConfig`).

    `datasets_to_split="all"` (the default) gives every worker an equal, disjoint shard of each dataset
    (`streaming_split(num_workers, equal=True)`); with a list of names, only those are split and every
    worker reads each other dataset whole (a validation set every rank evaluates, say).
    `enable_shard_locality` is a Ray scheduling hint, accepted. `execution_options` (Ray Data options for
    the shards) is refused: set `ember.data.DataContext.get_current().execution_options` in the training
    function instead.

    Example:
        >>> DataConfig(datasets_to_split=["train"]).splits("valid")
        False
    """

    datasets_to_split: str | list[str] = "all"
    execution_options: Any = None
    enable_shard_locality: bool = True

    def __post_init__(self) -> None:
        split = self.datasets_to_split
        if not (split == "all" or (isinstance(split, list) and all(isinstance(name, str) for name in split))):
            raise ConfigError(
                f"DataConfig(datasets_to_split={split!r}) must be 'all' or a list of dataset names"
            )
        if self.execution_options is not None:
            raise ConfigError(
                "DataConfig(execution_options=...) is not implemented by ember; set "
                "ember.data.DataContext.get_current().execution_options inside the training function"
            )

    def splits(self, name: str) -> bool:
        """Is dataset `name` split across the workers (else each worker reads all of it)?"""
        return self.datasets_to_split == "all" or name in self.datasets_to_split

    def unsplit(self, names: list[str]) -> list[str]:
        """The names among `names` every worker reads whole."""
        return [name for name in names if not self.splits(name)]
