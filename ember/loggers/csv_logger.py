"""CSVLogger: metrics.csv and hparams.yaml in the run folder.

A run folder's metrics.csv belongs to one run. A fit that resumes from a checkpoint (the Trainer calls
`load_state_dict`) continues it: a last row left half-written by a killed writer is cut first, so the next
row starts on a line of its own. A fresh run whose folder already holds a metrics.csv (an explicit
``version=`` naming an earlier run's folder) is refused in one line instead of appending to that run's rows
(Lightning warns and appends); ``version=None`` picks a new ``version_N`` folder, as in Lightning. A
metrics.csv that is a symbolic link is never read or written through.
"""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path
from typing import Any

from ember.errors import ConfigError
from ember.fs import (
    RemotePath,
    atomic_write,
    make_folders,
    open_for_append,
    open_own,
    refuse_link,
    storage_path,
    truncate_torn_tail,
)
from ember.loggers.base import Logger
from ember.loggers.csv_experiment import CSVExperiment
from ember.loggers.logger import rank_zero_experiment, rank_zero_only


class CSVLogger(Logger):
    """Writes one row per flush to `<log_dir>/metrics.csv` and hyperparameters to `hparams.yaml`.

    As Lightning's: `prefix` is put before every metric name (joined by ``-``), and a row logged at step `s`
    writes the buffered rows when ``(s + 1) % flush_logs_every_n_steps == 0`` (a Trainer also saves after
    each of its logs).

    Example:
        >>> from ember.loggers import CSVLogger
        >>> logger = CSVLogger(save_dir="runs", name="mnist", prefix="train")
        >>> logger.log_metrics({"loss": 0.5}, step=0); logger._rows
        [{'step': 0, 'train-loss': 0.5}]
    """

    LOGGER_JOIN_CHAR = "-"

    def __init__(
        self,
        save_dir: str | os.PathLike[str] | RemotePath = ".",
        name: str | None = "lightning_logs",
        version: int | str | None = None,
        prefix: str = "",
        flush_logs_every_n_steps: int = 100,
    ) -> None:
        super().__init__(save_dir, name, version)
        self._prefix, self._flush_every = prefix, flush_logs_every_n_steps
        self._rows: list[dict[str, Any]] = []
        self._columns: list[str] = []
        self._resumes = False  # set when a fit resumes this logger's run from a checkpoint
        self._checked = False  # the existing metrics.csv was checked (once per logger)
        self._experiment: CSVExperiment | None = None

    @property
    def log_dir(self) -> str:
        """`<save_dir>/<name>/<version>`, the folder of this run's metrics.csv and hparams.yaml."""
        folder = super().log_dir
        assert folder is not None  # save_dir is required here, so the version folder always exists
        return folder

    @property
    def metrics_file(self) -> Path | RemotePath:
        return storage_path(self.log_dir) / "metrics.csv"

    @rank_zero_only  # one writer under DDP: global rank zero (Lightning's)
    def log_metrics(self, metrics: dict[str, float], step: int | None = None) -> None:
        if self._prefix:
            metrics = {f"{self._prefix}{self.LOGGER_JOIN_CHAR}{k}": v for k, v in metrics.items()}
        step = self.add_row(metrics, step)
        if (step + 1) % self._flush_every == 0:
            self.save()

    def add_row(self, metrics: dict[str, Any], step: int | None = None) -> int:
        """Buffer one row as it is (no prefix, no flush);
        returns its step. `experiment.log_metrics` uses it."""
        if step is None:  # Lightning's: the number of rows waiting to be written
            step = len(self._rows)
        self._rows.append({"step": step, **metrics})
        return step

    def pending_rows(self) -> list[dict[str, Any]]:
        """The rows buffered and not yet written (`experiment.metrics`)."""
        return list(self._rows)

    @property
    @rank_zero_experiment
    def experiment(self) -> CSVExperiment:
        """Lightning's `CSVLogger.experiment`: an object with `log_metrics(metrics_dict, step)`,
        `log_hparams(params)` and `save()` writing into this run's files (a no-op object off rank 0)."""
        if self._experiment is None:
            self._experiment = CSVExperiment(self)
        return self._experiment

    @rank_zero_only
    def log_hyperparams(self, params: dict[str, Any]) -> None:
        import yaml

        from ember.checkpoint import to_safe

        folder = storage_path(self.log_dir)
        make_folders(folder)
        self._check_existing_file()  # at the start of a fit: refuse before training, not at the first flush
        if not params:
            return  # Lightning's: the run folder, no hparams.yaml
        safe = {k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in to_safe(dict(params)).items()}
        with atomic_write(folder / "hparams.yaml", "w") as f:
            f.write(yaml.safe_dump(safe))  # keys sorted, as Lightning's yaml.dump writes them

    @rank_zero_only
    def save(self) -> None:
        """Append buffered rows; rewrite the file only when new columns appear (an existing run resumes it),
        or always on an object store, where an object is written whole (uploaded on each flush)."""
        if not self._rows:
            return
        path = self.metrics_file
        make_folders(path.parent)
        self._check_existing_file()
        old_rows: list[dict[str, Any]] = []
        if not self._columns and path.exists():
            self._columns = list(csv.DictReader(io.StringIO(_whole_lines(path))).fieldnames or [])
        new_columns = [k for row in self._rows for k in row if k not in self._columns]
        if new_columns or isinstance(path, RemotePath):  # an object cannot be appended to: rewrite it whole
            if path.exists():
                old_rows = list(csv.DictReader(io.StringIO(_whole_lines(path))))
            self._columns = sorted({*self._columns, *new_columns})  # Lightning's header: every column, sorted
            with atomic_write(path, "w", newline="") as f:
                writer = csv.DictWriter(f, fieldnames=self._columns)
                writer.writeheader()
                writer.writerows(old_rows + self._rows)
        else:
            with open_for_append(path, newline="") as f:  # never through a link planted at metrics.csv
                csv.DictWriter(f, fieldnames=self._columns).writerows(self._rows)
        self._rows = []

    def _check_existing_file(self) -> None:
        """Once per logger: a metrics.csv already there is continued only by a resumed fit (its torn last
        row cut first); a fresh run refuses it; a link there is refused either way."""
        if self._checked:
            return
        path = self.metrics_file
        if isinstance(path, Path):
            refuse_link(path, "metrics.csv")
        if not path.exists():
            self._checked = True
            return
        if not self._resumes:
            raise ConfigError(
                f"CSVLogger: {path} already holds the rows of an earlier run, and this fit does not resume "
                "it; pass version=None for a new version_N folder, "
                "resume that run with ckpt_path=, or remove the file"
            )
        if isinstance(path, Path):
            truncate_torn_tail(path)
        self._checked = True

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """The fit resumes from a checkpoint: this logger continues its run's metrics.csv."""
        self._resumes = True


def _whole_lines(path: Path | RemotePath) -> str:
    """The text of an existing metrics.csv up to its last complete line, never read through a link."""
    with open_own(path, "r", newline="") as f:
        text = f.read()
    return text[: text.rfind("\n") + 1]
