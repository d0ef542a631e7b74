"""DeviceStatsMonitor logs what Lightning 2.6's logs on a CPU run: the same psutil statistics under the same
names, at the same batches; it refuses a fit without a logger, and a CPU run without psutil, in one line."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import pytest
from _twin import Body, digits_loaders, fit, lightning, make_module

import ember
import ember.callbacks
from ember.callbacks import DeviceStatsMonitor
from ember.errors import ConfigError

PREFIX = "DeviceStatsMonitor."


class Evaluated(Body):
    def test_step(self, batch, batch_idx):
        return self.validation_step(batch, batch_idx)


def _stats_rows(folder: Path) -> list[tuple[float, dict[str, float]]]:
    with open(next(Path(folder).rglob("metrics.csv"))) as f:
        rows = list(csv.DictReader(f))
    return [
        (float(row["step"]), {k: float(v) for k, v in row.items() if v and k.startswith(PREFIX)})
        for row in rows
        if any(v and k.startswith(PREFIX) for k, v in row.items())
    ]


def _run(library: str, root: Path, **monitor) -> list[tuple[float, dict[str, float]]]:
    callbacks, loggers = (
        (lightning().callbacks, lightning().loggers)
        if library == "lightning"
        else (ember.callbacks, ember.loggers)
    )
    module = make_module(library, Evaluated)
    trainer = fit(
        library,
        root,
        [callbacks.DeviceStatsMonitor(**monitor)],
        module=module,
        max_epochs=2,
        logger=loggers.CSVLogger(root),
        log_every_n_steps=2,
    )
    trainer.test(module, digits_loaders()[1])
    return _stats_rows(root)


def test_same_statistics_at_the_same_batches_as_lightning(tmp_path):
    theirs, ours = _run("lightning", tmp_path / "lightning"), _run("ember", tmp_path / "ember")
    names = {k for _, stats in ours for k in stats}
    assert names == {k for _, stats in theirs for k in stats}
    assert (
        f"{PREFIX}on_train_batch_start/cpu_percent" in names
        and f"{PREFIX}on_test_batch_end/cpu_swap_percent" in names
    )
    assert all(0 <= v <= 100 for _, stats in ours for v in stats.values())

    def steps(rows, hook):
        return [step for step, stats in rows if any(k.startswith(PREFIX + hook + "/") for k in stats)]

    # training: both hooks of the batches that take steps 2, 4, ...; ember logs them at the step its training
    # metrics of that batch go to, Lightning one lower (its train-metric convention)
    for hook in ("on_train_batch_start", "on_train_batch_end"):
        assert steps(ours, hook) == [s + 1 for s in steps(theirs, hook)] == [2, 4, 6, 8, 10, 12, 14, 16]
    # validation and test (2 batches a run): the second batch of each run, at the step ember logs that run's
    # metrics at (a validation inside the epoch: Lightning's one lower, as its val_loss row)
    for hook in ("on_validation_batch_start", "on_validation_batch_end"):
        assert steps(ours, hook) == [s + 1 for s in steps(theirs, hook)] == [8, 16]
    for hook in ("on_test_batch_start", "on_test_batch_end"):
        assert steps(ours, hook) == steps(theirs, hook) == [16]


def test_cpu_stats_false_logs_nothing_on_a_cpu_run(tmp_path):
    module = make_module("ember")
    fit(
        "ember",
        tmp_path,
        [DeviceStatsMonitor(cpu_stats=False)],
        module=module,
        max_epochs=1,
        logger=ember.loggers.CSVLogger(tmp_path),
        log_every_n_steps=1,
    )
    assert _stats_rows(tmp_path) == []


def test_refusals(tmp_path, monkeypatch):
    with pytest.raises(ConfigError, match="DeviceStatsMonitor logs to the loggers"):
        fit("ember", tmp_path, [DeviceStatsMonitor()], max_epochs=1)  # _twin's fits have logger=False
    with pytest.raises(ConfigError, match="cpu_stats"):
        DeviceStatsMonitor(cpu_stats="yes")
    monkeypatch.setitem(sys.modules, "psutil", None)  # psutil not installed
    with pytest.raises(ConfigError, match="needs psutil"):
        DeviceStatsMonitor(cpu_stats=True)
    with pytest.raises(ConfigError, match="needs psutil"):
        fit("ember", tmp_path, [DeviceStatsMonitor()], max_epochs=1, logger=ember.loggers.CSVLogger(tmp_path))
