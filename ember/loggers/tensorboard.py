"""TensorBoardLogger: event files in the run folder (needs the `tensorboard` package)."""

from __future__ import annotations

import os
from typing import Any

from ember.errors import ConfigError
from ember.loggers.base import Logger


def tensorboard_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("tensorboard") is not None


class TensorBoardLogger(Logger):
    """Scalars and hyperparameters as TensorBoard event files; view with `tensorboard --logdir <root>`.

    The writer (and TensorBoard itself) is imported on first use, not at `import ember`.

    Example:
        >>> from ember.loggers import TensorBoardLogger
        >>> logger = TensorBoardLogger(save_dir="runs", name="mnist")
    """

    def __init__(self, save_dir: str | os.PathLike[str] = ".", name: str | None = "ember_logs", version: int | str | None = None) -> None:
        super().__init__(save_dir, name, version)
        self._writer: Any = None

    @property
    def experiment(self) -> Any:
        if self._writer is None:
            if not tensorboard_available():
                raise ConfigError("TensorBoardLogger needs the tensorboard package; pip install 'ember[tensorboard]'")
            from torch.utils.tensorboard import SummaryWriter

            self._writer = SummaryWriter(log_dir=self.log_dir)
        return self._writer

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        for name, value in metrics.items():
            if name != "epoch":
                self.experiment.add_scalar(name, value, step)

    def log_hyperparams(self, params: dict[str, Any]) -> None:
        from ember.checkpoint import to_safe

        text = "\n".join(f"- {k}: {v}" for k, v in to_safe(dict(params)).items())
        if text:
            self.experiment.add_text("hparams", text, 0)

    def save(self) -> None:
        if self._writer is not None:
            self._writer.flush()

    def finalize(self, status: str) -> None:
        if self._writer is not None:
            self._writer.flush()
            self._writer.close()
            self._writer = None
