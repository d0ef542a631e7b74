"""The run folder's record of reports and checkpoints, and which checkpoints a CheckpointConfig keeps.

A run folder (`storage_path/name`) holds:
- `trainer.json`: the run's settings, written by the driver before the workers start (plain JSON: a
  restored run never loads code from the folder);
- `result.json`: one JSON line per report of rank zero, `{"index", "metrics", "checkpoint"}`; the
  source of truth, as Ray Train's checkpoint manager snapshot is. A checkpoint folder counts once its
  line is written; rank zero deletes the checkpoints the config no longer keeps only after that;
- the reported checkpoints, under Ray's names (`run_names.py`): `checkpoint_<time>/`, or the
  `report(checkpoint_dir_name=)` given; runs ember wrote before have `checkpoint_NNNNNN/`. Only folders a
  record names count (nothing found by listing the folder), so pruning never reaches another folder.

The order follows Ray Train's checkpoint manager: without a score attribute, report order; with one,
ascending by score (the best last), ties broken by report order, NaN below -inf, a missing attribute
scoring -inf; "min" negates the score. `num_to_keep` keeps the last k of that order on disk, and the
latest; `Result.best_checkpoints` lists those k.

Example:
    >>> records = [
    ...     {"index": i, "metrics": {"acc": a}, "checkpoint": f"checkpoint_2026-11-28_20-00-0{i}.000000"}
    ...     for i, a in enumerate([0.5, 0.9, 0.7, 0.6])
    ... ]
    >>> [r["index"] for r in ranked(records, CheckpointConfig(checkpoint_score_attribute="acc"))]
    [0, 3, 2, 1]
    >>> [r["index"] for r in best(records, CheckpointConfig(2, "acc"))]  # the latest (3) stays on disk too
    [2, 1]
"""

from __future__ import annotations

import dataclasses
import json
import math
import numbers
import warnings
from pathlib import Path
from typing import Any, SupportsFloat, cast

from ember.errors import ConfigError, UnsafePathError
from ember.fs import atomic_write, confined, remove_tree, truncate_torn_tail
from ember.train.config import CheckpointConfig
from ember.train.run_names import is_own_checkpoint_name, is_plain_folder_name

RESULTS_FILE = "result.json"
SETTINGS_FILE = "trainer.json"
SETTINGS_FORMAT = "ember.train.TorchTrainer/1"


def read_records(run_dir: Path) -> list[dict[str, Any]]:
    """The report lines of `result.json` (a torn last line, from a writer killed mid-append, is skipped)."""
    path = run_dir / RESULTS_FILE
    if not path.exists():
        return []
    records = []
    for line in path.read_text().splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return records


def checkpoint_records(records: list[dict[str, Any]], run_dir: Path) -> list[dict[str, Any]]:
    """The records naming a checkpoint that is still on disk, in report order.

    Only a folder directly in the run folder (ember's default name or a `checkpoint_dir_name`: a plain,
    not hidden name; not a link, not ember's own records) counts: a record naming ``/abs/folder`` or
    ``../../folder`` (a planted or edited result.json) is skipped with one warning, so nothing outside the
    run folder is ever loaded or deleted."""
    present = []
    for record in records:
        name = record.get("checkpoint") if isinstance(record, dict) else None
        if not name:
            continue
        folder = own_checkpoint_folder(run_dir, name)
        if folder is not None and folder.is_dir():
            present.append(record)
    return present


def own_checkpoint_folder(run_dir: Path, name: Any) -> Path | None:
    """`run_dir / name` if `name` is a checkpoint folder name directly in `run_dir`, else None (after a
    one-line warning naming the record and the run folder)."""
    if (is_own_checkpoint_name(name) or is_plain_folder_name(name)) and name not in (
        RESULTS_FILE,
        SETTINGS_FILE,
    ):
        try:
            folder = confined(run_dir, name)
        except UnsafePathError:
            folder = None
        if folder is not None and not folder.is_symlink():
            return folder
    warnings.warn(
        f"{run_dir / RESULTS_FILE} names the checkpoint {name!r}, which is not a checkpoint folder "
        f"directly in this run folder; ember ignores that record and never loads or deletes it",
        stacklevel=3,
    )
    return None


def _score(record: dict[str, Any], config: CheckpointConfig) -> tuple[bool, float]:
    value = record["metrics"].get(config.checkpoint_score_attribute, float("-inf"))
    if not isinstance(value, numbers.Number) or isinstance(value, bool):
        raise ConfigError(
            f"CheckpointConfig(checkpoint_score_attribute={config.checkpoint_score_attribute!r}): "
            f"report {record['index']} has the non-numerical value {value!r}"
        )
    # numbers.Number declares no __float__ (a complex has none: float() refuses it here)
    value = float(cast(SupportsFloat, value)) * (1.0 if config.checkpoint_score_order == "max" else -1.0)
    return (False, float("-inf")) if math.isnan(value) else (True, value)


def ranked(records: list[dict[str, Any]], config: CheckpointConfig) -> list[dict[str, Any]]:
    """Checkpoint records from worst to best (report order without a score attribute)."""
    if config.checkpoint_score_attribute is None:
        return list(records)
    return sorted(records, key=lambda r: (_score(r, config), r["index"]))


def best(records: list[dict[str, Any]], config: CheckpointConfig) -> list[dict[str, Any]]:
    """The best `num_to_keep` records, worst to best (Ray's `best_checkpoint_results`: the latest is on
    disk but not listed here when it is not among them)."""
    order = ranked(records, config)
    return order if config.num_to_keep is None else order[-config.num_to_keep :]


def kept(records: list[dict[str, Any]], config: CheckpointConfig) -> list[dict[str, Any]]:
    """The records whose checkpoints stay on disk: the best ones, and the latest."""
    keep = best(records, config)
    latest = max(records, key=lambda r: r["index"]) if records else None
    return [r for r in ranked(records, config) if r in keep or r is latest]


def read_checkpoint_config(run_dir: Path) -> CheckpointConfig:
    settings = read_settings(run_dir)
    return CheckpointConfig(**settings.get("checkpoint_config", {})) if settings else CheckpointConfig()


def delete_unkept(run_dir: Path) -> None:
    """Rank zero, after recording a report: remove the checkpoint folders the run's config no longer keeps
    (only folders `result.json` names: nothing ember did not write)."""
    config = read_checkpoint_config(run_dir)
    if config.num_to_keep is None:
        return
    present = checkpoint_records(read_records(run_dir), run_dir)
    keep = {r["checkpoint"] for r in kept(present, config)}
    for record in present:
        if record["checkpoint"] not in keep:
            remove_tree(run_dir / record["checkpoint"], run_dir)  # checked above: an own name, below run_dir


# ---- trainer.json -------------------------------------------------------------------------------------
def write_settings(run_dir: Path, settings: dict[str, Any]) -> None:
    with atomic_write(run_dir / SETTINGS_FILE, mode="w") as sink:
        sink.write(json.dumps({"format": SETTINGS_FORMAT, **settings}, indent=1))


def read_settings(run_dir: Any) -> dict[str, Any] | None:
    """`trainer.json` of a run folder (a local Path or an object-store path), or None if there is none."""
    path = run_dir / SETTINGS_FILE
    if not path.exists():
        return None
    try:
        settings = json.loads(path.read_text())
    except ValueError as exc:  # not JSON, or not text
        raise ConfigError(
            f"{path} is not valid JSON ({str(exc).splitlines()[0][:200]}); the run folder's "
            f"{SETTINGS_FILE} is damaged: restore it, or start a new run with another RunConfig(name=)"
        ) from None
    if not isinstance(settings, dict) or settings.get("format") != SETTINGS_FORMAT:
        raise ConfigError(f"{path} is not a TorchTrainer run's {SETTINGS_FILE} (format {SETTINGS_FORMAT})")
    return settings


def checkpoint_config_dict(config: CheckpointConfig) -> dict[str, Any]:
    return dataclasses.asdict(config)


def next_report_index(run_dir: Path) -> int:
    """Where a (re)started run's report numbering continues: after every recorded report and, in a run
    ember wrote with numbered folders, after any `checkpoint_NNNNNN` a killed attempt renamed into place
    without recording it (never reused)."""
    folders = [int(p.name.split("_")[1]) for p in run_dir.glob("checkpoint_??????") if p.name[11:].isdigit()]
    return max([len(read_records(run_dir)), *(i + 1 for i in folders)])


def drop_torn_tail(run_dir: Path) -> None:
    """Rank zero, before a (re)started run reports: cut a last line a killed writer left half-written, so
    the next report starts on a line of its own."""
    path = run_dir / RESULTS_FILE
    if not path.is_file() or path.is_symlink():
        return
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        truncate_torn_tail(path)
