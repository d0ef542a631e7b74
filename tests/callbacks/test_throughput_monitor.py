"""ThroughputMonitor logs what Lightning 2.6's logs: the same metric names, the same totals of batches,
samples and items at the same points, rates once the window is full, FLOPs per second from `flops_per_batch`,
and a training clock that skips validation."""

from __future__ import annotations

import csv
import time
from pathlib import Path

import pytest
from _twin import Body, fit, lightning, make_module

import ember
import ember.callbacks
from ember.callbacks import ThroughputMonitor
from ember.errors import EmberError

TOTALS = ("batches", "samples", "lengths")


def _csv(folder: Path) -> list[dict[str, str]]:
    with open(next(Path(folder).rglob("metrics.csv"))) as f:
        return list(csv.DictReader(f))


def _rows(folder: Path) -> list[dict[str, float]]:
    """The rows of the run's metrics.csv that hold a throughput metric, empty cells left out."""
    rows = _csv(folder)
    return [
        {k: float(v) for k, v in row.items() if v}
        for row in rows
        if any(v and k.split("/")[0] in ("train", "validate") and "/" in k for k, v in row.items())
    ]


def _fit_both(tmp_path, body=Body, **monitor):
    pl = lightning()
    seen = {}
    for library, callbacks, logger in (
        ("lightning", pl.callbacks, pl.loggers.CSVLogger),
        ("ember", ember.callbacks, ember.loggers.CSVLogger),
    ):
        callback = callbacks.ThroughputMonitor(
            batch_size_fn=lambda batch: batch[0].shape[0], length_fn=lambda batch: batch[0].numel(), **monitor
        )
        fit(
            library,
            tmp_path / library,
            [callback],
            module=make_module(library, body),
            max_epochs=2,
            logger=logger(tmp_path / library),
            log_every_n_steps=2,
        )
        seen[library] = _rows(tmp_path / library)
    return seen["lightning"], seen["ember"]


def test_same_names_and_totals_as_lightning(tmp_path):
    theirs, ours = _fit_both(tmp_path, window_size=4)
    assert set().union(*ours) == set().union(*theirs)  # every metric name, rates included
    assert "train/device/items_per_sec" in set().union(*ours)
    for key in ("train", "validate"):
        mine = [[row[f"{key}/{t}"] for t in TOTALS] for row in ours if f"{key}/batches" in row]
        their = [[row[f"{key}/{t}"] for t in TOTALS] for row in theirs if f"{key}/batches" in row]
        assert mine == their and len(mine) >= 2
    # evaluation rows at the run's batch count, training rows
    # at the step train_loss is logged at: Lightning's steps
    assert [r["step"] for r in ours if "validate/batches" in r] == [
        r["step"] for r in theirs if "validate/batches" in r
    ]
    assert [r["step"] for r in ours if "train/batches" in r] == [
        r["step"] for r in theirs if "train/batches" in r
    ]
    for row in ours:  # a rate appears once the window (4 updates) is full
        assert ("train/device/samples_per_sec" in row) == (row.get("train/batches", 0) >= 4)
        if "train/device/samples_per_sec" in row:
            assert row["train/device/samples_per_sec"] == pytest.approx(
                32 * row["train/device/batches_per_sec"]
            )
            assert row["train/device/items_per_sec"] == pytest.approx(
                64 * row["train/device/samples_per_sec"]
            )


def test_separator_and_flops(tmp_path):
    class WithFlops(Body):
        flops_per_batch = 1000

    monitor = ThroughputMonitor(batch_size_fn=lambda batch: batch[0].shape[0], window_size=2, separator="|")
    fit(
        "ember",
        tmp_path,
        [monitor],
        module=make_module("ember", WithFlops),
        max_epochs=1,
        logger=ember.loggers.CSVLogger(tmp_path),
        log_every_n_steps=1,
    )
    rows = [r for r in _csv(tmp_path) if r.get("train|batches")]
    last = rows[-1]
    assert "train|lengths" not in last or not last["train|lengths"]  # no length_fn: no items
    # FLOPs per second over the window of two updates: the newer batch's 1000 FLOPs over the time between them
    rate = float(last["train|device|flops_per_sec"])
    assert rate == pytest.approx(1000 * float(last["train|device|batches_per_sec"]), rel=1e-6)
    assert "train|device|mfu" not in last  # no peak FLOPs on the CPU (nor in Lightning)


def test_training_clock_skips_validation(tmp_path):
    """The training clock stops while validating: training time plus the validation before the last batch fit
    in the wall time from training start to the last batch (without the skip they would exceed it)."""

    class SlowValidation(Body):
        def validation_step(self, batch, batch_idx):
            time.sleep(0.25)
            return super().validation_step(batch, batch_idx)

    wall: dict[str, float] = {}

    class Start(ember.Callback):  # before the monitor: its clock starts no earlier
        def on_train_start(self, trainer, module):
            wall["start"] = time.perf_counter()

    class LastBatch(ember.Callback):  # after the monitor: its clock reads no later
        def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
            wall["end"] = time.perf_counter()

    monitor = ThroughputMonitor(batch_size_fn=lambda batch: batch[0].shape[0], window_size=2)
    fit(
        "ember",
        tmp_path,
        [Start(), monitor, LastBatch()],
        module=make_module("ember", SlowValidation),
        max_epochs=2,
        logger=ember.loggers.CSVLogger(tmp_path),
        log_every_n_steps=1,
    )
    rows = _rows(tmp_path)
    train_time = [r["train/time"] for r in rows if "train/batches" in r][-1]
    first_validation = [r["validate/time"] for r in rows if r.get("validate/batches") == 2][0]
    assert first_validation >= 0.5  # two batches of 0.25 s
    assert train_time + first_validation <= wall["end"] - wall["start"]


def test_refusals():
    for bad in ({"available_flops": 1.0}, {"world_size": 2}, {"window_size": 1}, {"separator": 3}):
        with pytest.raises(EmberError, match="ThroughputMonitor"):
            ThroughputMonitor(batch_size_fn=len, **bad)
    with pytest.raises(EmberError, match="callables"):
        ThroughputMonitor(batch_size_fn=3)
