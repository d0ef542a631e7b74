"""Every file a logger, callback or profiler writes under DDP has one writer: global rank zero, or a name per
rank by design (profiler reports, prediction shares). A real 2-process CPU DDP fit + predict with CSVLogger,
TensorBoardLogger, MLFlowLogger (sqlite store), ModelCheckpoint, LearningRateMonitor, PredictionWriter and
each profiler: one run folder per logger, every step's row exactly once, no prediction lost."""

from __future__ import annotations

import csv

import pytest
import torch
from _dist import assert_ok, run_ranks

STEPS = list(range(8))  # 2 epochs of 4 optimizer steps (32 samples, batches of 4, 2 ranks)


def csv_rows(out):
    (folder,) = (out / "csv" / "lightning_logs").iterdir()  # one version folder: rank 1 made none
    with (folder / "metrics.csv").open(newline="") as f:
        return list(csv.DictReader(f))


def steps_of(rows, column):
    return sorted(int(r["step"]) for r in rows if r[column] != "")


@pytest.mark.slow
@pytest.mark.parametrize("profiler", ["simple", "advanced", "pytorch"])
def test_each_file_under_ddp_has_one_writer_and_each_row_appears_once(tmp_path, profiler):
    out = tmp_path / "run"
    assert_ok(run_ranks("rank_zero_files.py", out, profiler, ranks=2, timeout=400))

    rows = csv_rows(out)
    assert steps_of(rows, "loss") == STEPS  # rank 1's rows would double every step
    assert steps_of(rows, "lr-SGD") == STEPS  # LearningRateMonitor through the loggers
    assert steps_of(rows, "val") == [3, 7] and steps_of(rows, "rank_sum") == [3, 7]
    assert {float(r["rank_sum"]) for r in rows if r["rank_sum"]} == {4.0}  # the reduced value (0 + 4), once

    (tb_folder,) = (out / "tb" / "lightning_logs").iterdir()
    writers = {name.split(".")[-2] for name in (p.name for p in tb_folder.glob("events.out.tfevents.*"))}
    assert len(writers) == 1  # the event files' process ids: one process wrote them
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(tb_folder))
    events.Reload()
    assert [e.step for e in events.Scalars("loss")] == STEPS

    from mlflow import MlflowClient

    client = MlflowClient(f"sqlite:///{out}/mlflow.db")
    (run,) = client.search_runs([client.get_experiment_by_name("guard").experiment_id])
    assert sorted(m.step for m in client.get_metric_history(run.info.run_id, "loss")) == STEPS

    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == [
        "epoch=0-step=2.ckpt",
        "epoch=0-step=4.ckpt",
        "epoch=1-step=6.ckpt",
        "epoch=1-step=8.ckpt",
    ]

    shares = [torch.load(p, weights_only=True) for p in sorted((out / "predictions").iterdir())]
    assert sorted(p.name for p in (out / "predictions").iterdir()) == [
        "predictions-0-rank1.pt",
        "predictions-0.pt",
    ]
    assert sum(len(batch) for share in shares for batch in share["predictions"]) == 16  # both ranks' shares

    reports = sorted(p.name for p in (out / "profiles").iterdir())  # named per rank by design (Lightning's)
    assert {"fit-prof-0.txt", "fit-prof-1.txt", "predict-prof-0.txt", "predict-prof-1.txt"} <= set(reports)
    assert all(name.split(".")[0].split("-")[2] in ("0", "1") for name in reports), reports
    assert sorted(p.name for p in out.iterdir() if p.name != "root") == [
        "checkpoints",
        "csv",
        "finished",
        "mlflow.db",
        "predictions",
        "profiles",
        "tb",
    ]  # nothing else, anywhere
