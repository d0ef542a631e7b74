"""Result of TorchTrainer.fit (Ray Train's Result): latest metrics and checkpoint, the kept checkpoints."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from ember.errors import ConfigError
from ember.train.checkpoint_folder import Checkpoint
from ember.train.checkpoint_manager import (
    RESULTS_FILE,
    best,
    checkpoint_records,
    read_checkpoint_config,
    read_records,
)

__all__ = ["RESULTS_FILE", "Result", "latest_checkpoint"]


@dataclasses.dataclass(repr=False)
class Result:
    """What `fit()` returns (Ray Train's Result, its fields in its order).

    - `metrics`: the last metrics rank zero reported (`metrics_history`, ember's: all of them, in order);
    - `checkpoint`: the latest reported checkpoint;
    - `error`: None (a failed run raises from `fit()`, as Ray 2.60's does);
    - `path`: the run folder, `storage_path/name` (an `s3://...` URL for object storage);
    - `metrics_dataframe`: a pandas DataFrame, one row per kept checkpoint (Ray: "each row corresponds
      to a checkpoint"), None when there is none;
    - `best_checkpoints`: `(Checkpoint, metrics)` of the best `num_to_keep` checkpoints (all without it),
      worst to best as in Ray (report order without `checkpoint_score_attribute`);
    - `return_value`: what `train_loop_per_worker` returned on rank zero (None if nothing).

    Example:
        >>> Result(metrics={"loss": 0.1}, checkpoint=None, error=None, path="/tmp/run").metrics["loss"]
        0.1
    """

    metrics: dict[str, Any]
    checkpoint: Checkpoint | None
    error: BaseException | None
    path: str
    metrics_dataframe: Any = None
    best_checkpoints: list[tuple[Checkpoint, dict[str, Any]]] | None = None
    _storage_filesystem: Any = None
    return_value: Any = None
    metrics_history: list[dict[str, Any]] = dataclasses.field(default_factory=list, kw_only=True)

    @classmethod
    def from_path(cls, path: str | Path, storage_filesystem: Any = None) -> Result:
        """Read a finished (or interrupted) local run folder (`storage_filesystem`: None or a local one)."""
        if storage_filesystem is not None and getattr(storage_filesystem, "type_name", None) != "local":
            raise ConfigError(
                f"Result.from_path(storage_filesystem=<{type(storage_filesystem).__name__}>): "
                "pass the run folder as a local path"
            )
        folder = Path(path)
        records = read_records(folder)
        present = checkpoint_records(records, folder)
        kept = [
            (Checkpoint(folder / r["checkpoint"]), dict(r["metrics"]))
            for r in best(present, read_checkpoint_config(folder))
        ]
        return cls(
            metrics=dict(records[-1]["metrics"]) if records else {},
            checkpoint=latest_checkpoint(folder),
            error=None,
            path=str(folder),
            metrics_dataframe=_dataframe(kept),
            best_checkpoints=kept,
            metrics_history=[r["metrics"] for r in records],
        )

    def __repr__(self) -> str:
        """Ray's layout: the error's type when there is one, the metrics, path, filesystem, checkpoint.

        Example:
            >>> print(Result(metrics={"loss": 0.5}, checkpoint=None, error=None, path="/tmp/run"))
            Result(
              metrics={'loss': 0.5},
              path='/tmp/run',
              filesystem='local',
              checkpoint=None
            )
        """
        shown: dict[str, Any] = {"error": type(self.error).__name__} if self.error else {}
        shown.update(
            metrics=self.metrics,
            path=self.path,
            filesystem=self.filesystem.type_name,
            checkpoint=self.checkpoint,
        )
        return "Result(\n" + ",\n".join(f"  {key}={value!r}" for key, value in shown.items()) + "\n)"

    @property
    def filesystem(self) -> Any:
        """The pyarrow filesystem of `path` (Ray's property): the local one for a local run folder."""
        import pyarrow.fs

        return self._storage_filesystem or pyarrow.fs.LocalFileSystem()

    @property
    def config(self) -> Any:
        """Refused, as in Ray 2.60 (a Ray Tune property)."""
        raise ConfigError(
            "Result.config is deprecated in Ray 2.60 too (a Ray Tune property); keep the "
            "train_loop_config you passed to TorchTrainer"
        )

    def get_best_checkpoint(self, metric: str, mode: str) -> Checkpoint | None:
        """The kept checkpoint with the highest (`mode="max"`) or lowest (`"min"`) `metric`; those whose
        metrics lack it are left out.

        Example:
            >>> result.get_best_checkpoint("val_loss", "min")  # doctest: +SKIP
        """
        if mode not in ("max", "min"):
            raise ConfigError(f"get_best_checkpoint(mode={mode!r}): use 'max' or 'min'")
        if not self.best_checkpoints:  # None or []
            raise ConfigError(
                f"get_best_checkpoint: the run at {self.path} kept no checkpoint (report one with "
                "ember.train.report(metrics, checkpoint=...))"
            )
        scored = [(c, m[metric]) for c, m in self.best_checkpoints if m.get(metric) is not None]
        if not scored:
            raise ConfigError(
                f"get_best_checkpoint: no kept checkpoint has the metric {metric!r}; its metrics are "
                f"{sorted(self.best_checkpoints[-1][1])}"
            )
        pick = max if mode == "max" else min
        return pick(scored, key=lambda pair: pair[1])[0]


def _dataframe(kept: list[tuple[Checkpoint, dict[str, Any]]]) -> Any:
    """The kept checkpoints' metrics, one row each (None without checkpoints)."""
    if not kept:
        return None
    import pandas as pd

    return pd.DataFrame([metrics for _, metrics in kept])


def latest_checkpoint(folder: Path) -> Checkpoint | None:
    """The checkpoint of the last report `result.json` records with one (staging folders never count)."""
    present = checkpoint_records(read_records(folder), folder)
    return Checkpoint(folder / present[-1]["checkpoint"]) if present else None
