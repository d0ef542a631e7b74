"""WandbLogger: Lightning's Weights & Biases logger (``pip install wandb``; imported when the run starts).

Lightning's arguments and behaviour: the run is ``wandb.init(name, project, dir=save_dir, id=version,
resume="allow", **kwargs)`` made on first use of ``experiment`` (rank 0; a do-nothing object elsewhere);
``offline=True`` writes a local run under ``<save_dir>/wandb/offline-run-*`` (``wandb sync`` uploads it
later) and needs no network; metrics carry ``trainer/global_step``; hyperparameters go to ``run.config``;
``log_model=True`` logs checkpoints as ``model`` artifacts when the fit succeeds, ``"all"`` as each is
written. The project defaults to ``$WANDB_PROJECT``, else ``lightning_logs``. wandb's own ``init_timeout``
(90 s unless ``settings=`` says otherwise) is the deadline of the call to its service.
"""

from __future__ import annotations

import os
from argparse import Namespace
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ember.errors import ConfigError
from ember.loggers.base import Logger
from ember.loggers.logger import rank_zero_experiment, rank_zero_only


def _needs_wandb() -> None:
    import importlib.util

    if importlib.util.find_spec("wandb") is None:
        raise ConfigError(
            "WandbLogger needs the wandb package: pip install wandb (or use MLFlowLogger, "
            "TensorBoardLogger or CSVLogger from ember.loggers)"
        )


def config_values(params: Mapping[str, Any] | Namespace) -> dict[str, Any]:
    """Hyperparameters as wandb's config takes them (Lightning's conversion): a Namespace as a dict, a
    callable by its name, anything JSON cannot hold as its text.

    Example:
        >>> config_values({"lr": 0.1, "act": len, "shape": (2, 3), "path": Path("a")})
        {'lr': 0.1, 'act': 'len', 'shape': (2, 3), 'path': 'a'}
    """
    import json

    values = vars(params) if isinstance(params, Namespace) else dict(params)
    out: dict[str, Any] = {}
    for key, value in values.items():
        if callable(value):
            value = getattr(value, "__name__", repr(value))
        try:
            json.dumps(value)
        except (TypeError, ValueError, OverflowError):
            value = str(value)
        out[key] = value
    return out


class WandbLogger(Logger):
    """Logs to a Weights & Biases run (Lightning's ``WandbLogger``).

    Example:
        >>> from ember.loggers import WandbLogger
        >>> logger = WandbLogger(project="mnist", offline=True, save_dir="runs")  # doctest: +SKIP
        >>> trainer = ember.Trainer(logger=logger)                                # doctest: +SKIP
    """

    LOGGER_JOIN_CHAR = "-"

    def __init__(
        self,
        name: str | None = None,
        save_dir: str | os.PathLike[str] = ".",
        version: str | None = None,
        offline: bool = False,
        dir: str | os.PathLike[str] | None = None,
        id: str | None = None,  # noqa: A002
        anonymous: bool | None = None,
        project: str | None = None,
        log_model: str | bool = False,
        experiment: Any = None,
        prefix: str = "",
        checkpoint_name: str | None = None,
        add_file_policy: str = "mutable",
        **kwargs: Any,
    ) -> None:
        _needs_wandb()
        if offline and log_model:
            raise ConfigError(
                f"WandbLogger(log_model={log_model!r}, offline=True): checkpoints cannot be uploaded "
                "offline (Lightning refuses this too); set offline=False or log_model=False"
            )
        if log_model not in (False, True, "all"):
            raise ConfigError(f"WandbLogger(log_model={log_model!r}) must be False, True or 'all'")
        where = os.fspath(save_dir) if save_dir is not None else (os.fspath(dir) if dir is not None else None)
        project = project or os.environ.get("WANDB_PROJECT", "lightning_logs")
        super().__init__(where, project, version or id)
        self._offline, self._log_model, self._prefix = offline, log_model, prefix
        self._experiment = experiment
        self._checkpoint_name, self.add_file_policy = checkpoint_name, add_file_policy
        self._wandb_init: dict[str, Any] = {
            "name": name,
            "project": project,
            "dir": where,
            "id": version or id,
            "resume": "allow",
            "anonymous": "allow" if anonymous else None,
            **kwargs,
        }
        self._logged_files: dict[str, float] = {}  # checkpoint file -> its mtime when it was logged
        self._pending: dict[int, Any] = {}  # log_model=True: checkpoint callbacks whose files go at the end

    # ---- the run -----------------------------------------------------------------------------------------
    @property
    @rank_zero_experiment
    def experiment(self) -> Any:
        """The ``wandb`` run (``wandb.init`` on first use; an
        existing ``wandb.run`` is reused, as Lightning does)."""
        if self._experiment is None:
            import wandb

            if self._offline:
                os.environ["WANDB_MODE"] = "offline"  # Lightning's: the process's mode, read by wandb.init
            if wandb.run is not None:
                import warnings

                warnings.warn(
                    "There is a wandb run already in progress; WandbLogger reuses it (call wandb.finish() "
                    "before building the logger for a new run)",
                    stacklevel=3,
                )
                self._experiment = wandb.run
            else:
                self._experiment = wandb.init(**self._wandb_init)
                if getattr(self._experiment, "define_metric", None) is not None:
                    if self._wandb_init.get("sync_tensorboard"):
                        self._experiment.define_metric("*", step_metric="global_step")
                    else:
                        self._experiment.define_metric("trainer/global_step")
                        self._experiment.define_metric("*", step_metric="trainer/global_step", step_sync=True)
        return self._experiment

    @property
    def save_dir(self) -> str | None:
        return self._wandb_init.get("dir")

    @property
    def name(self) -> str:
        """The project (not the run's display name, which is ``experiment.name``), as in Lightning."""
        return self._wandb_init["project"]

    @property
    def version(self) -> Any:
        """The run's id once it exists, else the id given."""
        return self._experiment.id if self._experiment is not None else self._wandb_init.get("id")

    def watch(
        self, model: Any, log: str | None = "gradients", log_freq: int = 100, log_graph: bool = True
    ) -> None:
        self.experiment.watch(model, log=log, log_freq=log_freq, log_graph=log_graph)

    # ---- what the Trainer sends --------------------------------------------------------------------------
    @rank_zero_only
    def log_hyperparams(self, params: Mapping[str, Any] | Namespace) -> None:
        self.experiment.config.update(config_values(params), allow_val_change=True)

    @rank_zero_only
    def log_metrics(self, metrics: Mapping[str, Any], step: int | None = None) -> None:
        if self._prefix:
            metrics = {f"{self._prefix}{self.LOGGER_JOIN_CHAR}{k}": v for k, v in metrics.items()}
        if step is not None and not self._wandb_init.get("sync_tensorboard"):
            self.experiment.log({**metrics, "trainer/global_step": step})
        else:
            self.experiment.log(dict(metrics))

    def save(self) -> None:
        """wandb writes as it goes; nothing is buffered here."""

    @rank_zero_only
    def finalize(self, status: str) -> None:
        """A successful run logs the checkpoints ``log_model=True`` waited for (Lightning does not end the
        wandb run here: ``wandb.finish()`` or the process's exit does)."""
        if status == "success" and self._experiment is not None:
            for callback in self._pending.values():
                self._log_checkpoints(callback)

    def after_save_checkpoint(self, checkpoint_callback: Any) -> None:
        if self._log_model == "all" or (self._log_model is True and checkpoint_callback.save_top_k == -1):
            self._log_checkpoints(checkpoint_callback)
        elif self._log_model is True:
            self._pending[id(checkpoint_callback)] = checkpoint_callback

    # ---- media and artifacts (Lightning's helpers) --------------------------------------------------------
    @rank_zero_only
    def log_table(
        self,
        key: str,
        columns: list[str] | None = None,
        data: list[list[Any]] | None = None,
        dataframe: Any = None,
        step: int | None = None,
    ) -> None:
        import wandb

        # wandb's hint is list[str | int], and a list is invariant: our list[str] is one it takes
        table = wandb.Table(columns=columns, data=data, dataframe=dataframe)  # type: ignore[arg-type]
        self.log_metrics({key: table}, step)

    @rank_zero_only
    def log_text(
        self,
        key: str,
        columns: list[str] | None = None,
        data: list[list[str]] | None = None,
        dataframe: Any = None,
        step: int | None = None,
    ) -> None:
        self.log_table(key, columns, data, dataframe, step)

    @rank_zero_only
    def log_image(self, key: str, images: list[Any], step: int | None = None, **kwargs: Any) -> None:
        self._log_media("Image", key, images, step, kwargs)

    @rank_zero_only
    def log_audio(self, key: str, audios: list[Any], step: int | None = None, **kwargs: Any) -> None:
        self._log_media("Audio", key, audios, step, kwargs)

    @rank_zero_only
    def log_video(self, key: str, videos: list[Any], step: int | None = None, **kwargs: Any) -> None:
        self._log_media("Video", key, videos, step, kwargs)

    def _log_media(
        self, kind: str, key: str, items: list[Any], step: int | None, per_item: dict[str, Any]
    ) -> None:
        """`wandb.<kind>(item, **options)` for each item; each option is a list with one value per item."""
        import wandb

        if not isinstance(items, list):
            raise TypeError(f'Expected a list as "{kind.lower()}s", found {type(items)}')
        for option, values in per_item.items():
            if len(values) != len(items):
                raise ValueError(f"Expected {len(items)} items but only found {len(values)} for {option}")
        make = getattr(wandb, kind)
        media = [make(item, **{k: v[i] for k, v in per_item.items()}) for i, item in enumerate(items)]
        self.log_metrics({key: media}, step)

    def use_artifact(self, artifact: str, artifact_type: str | None = None) -> Any:
        return self.experiment.use_artifact(artifact, type=artifact_type)

    @staticmethod
    @rank_zero_only
    def download_artifact(
        artifact: str,
        save_dir: str | os.PathLike[str] | None = None,
        artifact_type: str | None = None,
        use_artifact: bool | None = True,
    ) -> str:
        import wandb

        found = (
            wandb.run.use_artifact(artifact)
            if wandb.run is not None and use_artifact
            else wandb.Api().artifact(artifact, type=artifact_type)
        )
        return found.download(root=None if save_dir is None else os.fspath(save_dir))

    def _log_checkpoints(self, callback: Any) -> None:
        """Each checkpoint file of `callback` not logged since it was last written, as a ``model`` artifact
        (aliases ``latest``, and ``best`` for the best one), oldest first."""
        import wandb

        files = {Path(p) for p in getattr(callback, "best_k_models", {})}
        files |= {Path(p) for p in (callback.last_model_path, callback.best_model_path) if p}
        fresh = sorted(
            (f.stat().st_mtime, str(f))
            for f in files
            if f.is_file() and self._logged_files.get(str(f)) != f.stat().st_mtime
        )
        for mtime, path in fresh:
            score: Any = callback.best_k_models.get(path) if hasattr(callback, "best_k_models") else None
            metadata = {
                "score": score.item() if hasattr(score, "item") else score,
                "original_filename": Path(path).name,
                type(callback).__name__: {
                    k: getattr(callback, k, None)
                    for k in ("monitor", "mode", "save_last", "save_top_k", "save_weights_only")
                },
            }
            self._checkpoint_name = self._checkpoint_name or f"model-{self.experiment.id}"
            artifact = wandb.Artifact(name=self._checkpoint_name, type="model", metadata=metadata)
            # Lightning's str argument, handed to wandb as given (wandb checks it: "mutable" or "immutable")
            artifact.add_file(path, name="model.ckpt", policy=self.add_file_policy)  # type: ignore[arg-type]
            aliases = ["latest", "best"] if path == callback.best_model_path else ["latest"]
            self.experiment.log_artifact(artifact, aliases=aliases)
            self._logged_files[path] = mtime
