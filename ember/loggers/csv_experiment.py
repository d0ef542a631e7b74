"""`CSVLogger.experiment`: Lightning's experiment-writer
object for a CSV run (log_metrics, log_hparams, save).

Lightning's GAN template and user callbacks write through ``logger.experiment``; for a CSVLogger that is an
object whose ``log_metrics(metrics_dict, step)`` records a row (tensors become numbers, no prefix, nothing
written until ``save()``), ``log_hparams(params)`` records hyperparameters, and ``save()`` writes both. Here
it is a view onto its CSVLogger: the rows it records are the logger's rows, written by the logger's `save`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ember.loggers.csv_logger import CSVLogger


class CSVExperiment:
    """What `CSVLogger(...).experiment` returns (Lightning's ``ExperimentWriter`` names).

    Example:
        >>> from ember.loggers import CSVLogger
        >>> writer = CSVLogger("runs", name="gan", version=0).experiment
        >>> writer.log_metrics({"d_loss": 0.5}, step=3)
        >>> writer.metrics, writer.metrics_file_path
        ([{'step': 3, 'd_loss': 0.5}], 'runs/gan/version_0/metrics.csv')
    """

    NAME_METRICS_FILE = "metrics.csv"

    def __init__(self, logger: CSVLogger) -> None:
        self._logger = logger
        self.hparams: dict[str, Any] = {}

    @property
    def log_dir(self) -> str:
        return str(self._logger.log_dir)

    @property
    def metrics_file_path(self) -> str:
        return str(self._logger.metrics_file)

    @property
    def metrics(self) -> list[dict[str, Any]]:
        """The rows recorded and not yet written."""
        return self._logger.pending_rows()

    def log_metrics(self, metrics_dict: dict[str, Any], step: int | None = None) -> None:
        """Record one row (a tensor's value as a number); `save()` writes it."""
        values = {k: (v.item() if hasattr(v, "item") else v) for k, v in metrics_dict.items()}
        self._logger.add_row(values, step)

    def log_hparams(self, params: dict[str, Any]) -> None:
        """Record hyperparameters; `save()` writes them to hparams.yaml."""
        self.hparams.update(params)

    def save(self) -> None:
        if self.hparams:
            self._logger.log_hyperparams(self.hparams)
        self._logger.save()
