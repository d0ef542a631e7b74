"""Result of TorchTrainer.fit: last metrics, last checkpoint, where they are stored."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from ember.train.checkpoint_folder import Checkpoint

RESULTS_FILE = "result.json"  # one JSON line per report() of rank zero


@dataclasses.dataclass
class Result:
    """What `fit()` returns.

    Example:
        >>> Result(metrics={"loss": 0.1}, checkpoint=None, path="/tmp/run").metrics["loss"]
        0.1
    """

    metrics: dict[str, Any]
    checkpoint: Checkpoint | None
    path: str
    error: BaseException | None = None
    metrics_history: list[dict[str, Any]] = dataclasses.field(default_factory=list)

    @classmethod
    def from_path(cls, path: str | Path) -> Result:
        """Read a finished (or interrupted) run folder."""
        folder = Path(path)
        lines = (folder / RESULTS_FILE).read_text().splitlines() if (folder / RESULTS_FILE).exists() else []
        history = [json.loads(line) for line in lines if line.strip()]
        metrics = dict(history[-1]["metrics"]) if history else {}
        return cls(metrics=metrics, checkpoint=latest_checkpoint(folder), path=str(folder),
                   metrics_history=[h["metrics"] for h in history])


def latest_checkpoint(folder: Path) -> Checkpoint | None:
    """The newest complete checkpoint_NNNNNN folder (staging folders are hidden; an older ember's end in .tmp)."""
    done = sorted(p for p in folder.glob("checkpoint_*") if p.is_dir() and not p.name.endswith(".tmp"))
    return Checkpoint(done[-1]) if done else None
