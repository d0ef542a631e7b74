"""Logger: the small interface every logger implements, and run-folder versioning."""

from __future__ import annotations

import os
import re
from typing import Any

from ember.fs import RemotePath, storage_path


def next_version(folder: str | os.PathLike[str] | RemotePath) -> int:
    """The next free `version_N` under `folder` (0 when there is none)."""
    where = storage_path(folder)
    if not where.is_dir():
        return 0
    found = [int(m.group(1)) for p in where.iterdir() if (m := re.fullmatch(r"version_(\d+)", p.name))]
    return max(found, default=-1) + 1


class Logger:
    """Base class: receives float metrics at flush points and hyperparameters once per run.

    A logger that writes no local files (Lightning's base ``Logger``, subclassed as its docs show: ``name``
    and ``version`` properties, ``log_hyperparams``/``log_metrics``) has ``save_dir``, ``root_dir`` and
    ``log_dir`` None; ``trainer.log_dir`` is then its ``save_dir`` and checkpoints go under
    ``<default_root_dir>/<name>/<version>/checkpoints``, as in Lightning.

    Example:
        >>> class Recorder(Logger):
        ...     @property
        ...     def name(self):
        ...         return "Recorder"
        ...     @property
        ...     def version(self):
        ...         return "0.1"
        ...     def log_metrics(self, metrics, step):
        ...         print(step, metrics)
        >>> logger = Recorder()
        >>> logger.save_dir, logger.log_dir
        (None, None)
        >>> logger.log_metrics({"loss": 0.5}, step=3)
        3 {'loss': 0.5}
    """

    def __init__(
        self,
        save_dir: str | os.PathLike[str] | RemotePath | None = None,
        name: str | None = "lightning_logs",
        version: int | str | None = None,
    ) -> None:
        self._save_dir = storage_path(save_dir) if save_dir is not None else None
        self._name = name or ""
        self._version = version

    @property
    def name(self) -> str:
        return self._name

    @property
    def save_dir(self) -> str | None:
        return str(self._save_dir) if self._save_dir is not None else None

    @property
    def root_dir(self) -> str | None:
        return str(self._save_dir / self._name) if self._save_dir is not None else None

    @property
    def version(self) -> int | str:
        if self._version is None:
            root = self.root_dir
            self._version = next_version(root) if root is not None else 0
        return self._version

    @property
    def log_dir(self) -> str | None:
        root = self.root_dir  # once: a flush reads log_dir (no path built twice per flush)
        if root is None:
            return None
        version = self.version if isinstance(self.version, str) else f"version_{self.version}"
        return str(storage_path(root) / version)

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        raise NotImplementedError

    def log_hyperparams(self, params: dict[str, Any]) -> None: ...

    def log_graph(self, model: Any, input_array: Any = None) -> None:
        """Record the model's graph (TensorBoardLogger with log_graph=True); others record nothing."""

    def save(self) -> None: ...

    def finalize(self, status: str) -> None:
        self.save()

    def after_save_checkpoint(self, checkpoint_callback: Any) -> None:
        """Called by `ModelCheckpoint` after it wrote a file (Lightning's hook); `MLFlowLogger` uploads it."""

    def state_dict(self) -> dict[str, Any]:
        """What a checkpoint needs to continue this logger's run on resume (MLflow: the run id)."""
        return {}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None: ...
