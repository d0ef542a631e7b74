"""Ray Train 2.60's names for a run's folders, so code that reads them finds ember's where it finds Ray's.

- the storage root without `RunConfig(storage_path=)`: `~/ray_results` (Ray's `DEFAULT_STORAGE_PATH`;
  Ray 2.60's default Train ignores the deprecated `RAY_STORAGE`, and so does ember);
- the run name without `RunConfig(name=)`: `ray_train_run-<YYYY-mm-dd_HH-MM-SS>` (local time), chosen when
  the RunConfig is made, as Ray's `RunConfig.__post_init__` does;
- a checkpoint folder without `report(checkpoint_dir_name=)`: `checkpoint_<YYYY-mm-dd_HH-MM-SS.ffffff>`.

Runs written by ember before these names (`~/ember_results/TorchTrainer_<time>/checkpoint_NNNNNN/`) are
still read, restored and pruned: `is_own_checkpoint_name` accepts both kinds.

Example:
    >>> is_own_checkpoint_name("checkpoint_2026-11-28_20-15-01.123456")
    True
    >>> is_own_checkpoint_name("checkpoint_000003")
    True
    >>> default_run_name().startswith("ray_train_run-")
    True
"""

from __future__ import annotations

import datetime
import re
from pathlib import Path

_STAMP = "%Y-%m-%d_%H-%M-%S"
#: ember's checkpoint folder names: Ray's timestamped ones, and ember's numbered ones of runs written before
_DEFAULT_CHECKPOINT_NAME = re.compile(r"checkpoint_(\d{4}-\d{2}-\d{2}_\d{2}-\d{2}-\d{2}\.\d{6}|\d{6,})")


def default_storage_path() -> str:
    return Path("~/ray_results").expanduser().as_posix()


def default_run_name() -> str:
    return f"ray_train_run-{datetime.datetime.now():{_STAMP}}"


def new_checkpoint_name(run_dir: Path) -> str:
    """Ray's default checkpoint folder name, one not yet taken in `run_dir` (two reports in one microsecond
    would otherwise share it)."""
    while True:
        name = f"checkpoint_{datetime.datetime.now():{_STAMP}.%f}"
        if not (run_dir / name).exists() and not (run_dir / name).is_symlink():
            return name


def is_own_checkpoint_name(name: object) -> bool:
    """Is `name` one ember gives a checkpoint folder by default (Ray's timestamped name, or ember's older
    `checkpoint_NNNNNN`)?"""
    return isinstance(name, str) and _DEFAULT_CHECKPOINT_NAME.fullmatch(name) is not None


def is_plain_folder_name(name: object) -> bool:
    """A name `report(checkpoint_dir_name=)` accepts: one folder directly in the run folder, not hidden."""
    return (
        isinstance(name, str)
        and bool(name)
        and name not in (".", "..")
        and "/" not in name
        and "\\" not in name
        and "\0" not in name
        and not name.startswith(".")
    )
