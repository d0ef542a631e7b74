"""Ray Train's checkpoint management on ember's TorchTrainer: CheckpointConfig retention (compared with
Ray 2.60's own checkpoint manager), Result.best_checkpoints / get_best_checkpoint / metrics_dataframe,
RunConfig(name, storage_path) on a local folder and on S3, and restore after the driver was SIGKILLed."""

from __future__ import annotations

import asyncio
import json
import math
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from _dist import REPO, SCRIPTS, assert_ok, processes_mentioning, run, worker_env
from _s3 import keys, s3_client

from ember.errors import ConfigError
from ember.train import CheckpointConfig, Result, TorchTrainer
from ember.train.checkpoint_manager import best, kept

SCRIPT = SCRIPTS / "train_scored.py"
SCORES = [0.3, 0.9, 0.5, 0.8, 0.1]  # train_scored.py's first five
RAY_CHECKPOINT_NAME = re.compile(r"checkpoint_\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d\.\d{6}")  # Ray 2.60's default


def _ray_keeps(config: CheckpointConfig, metrics: list[dict]) -> tuple[list[int], list[int]]:
    """(best_checkpoint_results, folders left on disk) of
    Ray 2.60's V2 CheckpointManager, as report indexes."""
    import ray.train
    from ray.train.v2._internal.execution.checkpoint.checkpoint_manager import CheckpointManager
    from ray.train.v2._internal.execution.storage import StorageContext
    from ray.train.v2._internal.execution.training_report import _TrainingReport

    async def register() -> tuple[list[int], list[int]]:
        root = tempfile.mkdtemp()
        manager = CheckpointManager(
            storage_context=StorageContext(storage_path=root, experiment_dir_name="exp"),
            checkpoint_config=ray.train.CheckpointConfig(
                config.num_to_keep, config.checkpoint_score_attribute, config.checkpoint_score_order
            ),
        )
        for i, m in enumerate(metrics):
            folder = os.path.join(root, "exp", f"c{i}")
            os.makedirs(folder)
            manager.register_checkpoint(
                _TrainingReport(checkpoint=ray.train.Checkpoint(folder), metrics=m, validation=None)
            )
        listed = [int(os.path.basename(r.checkpoint.path)[1:]) for r in manager.best_checkpoint_results]
        left = sorted(
            int(n[1:]) for n in os.listdir(os.path.join(root, "exp")) if n.startswith("c") and n[1:].isdigit()
        )
        return listed, left

    return asyncio.run(register())


def _ember_keeps(config: CheckpointConfig, metrics: list[dict]) -> tuple[list[int], list[int]]:
    """The same sequence through ember's rule, applied after each report to what is still on disk."""
    present: list[dict] = []
    for i, m in enumerate(metrics):
        present.append({"index": i, "metrics": m, "checkpoint": f"c{i}"})
        present = [r for r in present if r in kept(present, config)]
    return [r["index"] for r in best(present, config)], sorted(r["index"] for r in present)


def test_retention_and_best_checkpoints_match_ray_train_checkpoint_manager():
    pytest.importorskip("ray")
    rng = random.Random(0)
    for trial in range(40):
        config = CheckpointConfig(
            num_to_keep=rng.choice([None, 1, 2, 3]),
            checkpoint_score_attribute=rng.choice([None, "acc"]),
            checkpoint_score_order=rng.choice(["max", "min"]),
        )
        values = [
            rng.choice([0.1, 0.5, 0.5, 0.9, rng.random(), math.nan, None]) for _ in range(rng.randint(1, 8))
        ]
        metrics = [{"acc": v} if v is not None else {"loss": 1.0} for v in values]
        assert _ember_keeps(config, metrics) == _ray_keeps(config, metrics), (trial, config, values)


def test_checkpoint_config_refuses_values_ray_refuses():
    with pytest.raises(
        ConfigError, match=r"^CheckpointConfig\(num_to_keep=0\) must be None \(keep all\) or an int"
    ):
        CheckpointConfig(num_to_keep=0)
    with pytest.raises(ConfigError, match=r"checkpoint_score_order='best'\) must be 'max' or 'min'$"):
        CheckpointConfig(checkpoint_score_order="best")


def _check_scored_run(report: dict, names: list[str]) -> None:
    """5 epochs, num_to_keep=2 by max "score": the best two are epochs 1 (0.9) and 3 (0.8); the latest,
    epoch 4 (0.1), stays on disk but is not among the best (as in Ray). `names`: each report's checkpoint
    folder, Ray's `checkpoint_<time>` names in report order."""
    assert len(names) == 5 and all(RAY_CHECKPOINT_NAME.fullmatch(name) for name in names), names
    assert names == sorted(names)  # timestamps: later reports, later names
    assert report["metrics"]["epoch"] == 4 and report["checkpoint"] == names[4]
    assert [name for name, _ in report["best_checkpoints"]] == [names[3], names[1]]
    assert [m["score"] for _, m in report["best_checkpoints"]] == [0.8, 0.9]
    assert report["best"] == names[1]
    assert report["dataframe"]["epoch"] == [3, 1] and report["dataframe"]["score"] == [0.8, 0.9]
    assert report["history"] == [0, 1, 2, 3, 4] and report["error"] is None


def _checkpoint_names(result_json: str) -> list[str]:
    """The checkpoint folder each report of a result.json recorded, in report order (a line being written
    is left out)."""
    return [
        json.loads(line)["checkpoint"]
        for line in result_json.splitlines(keepends=True)
        if line.endswith("\n")
    ]


@pytest.fixture(scope="module")
def scored_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("scored")
    result = run(
        [sys.executable, str(SCRIPT), str(out), "exp", "--num-to-keep", "2", "--score", "score"], out
    )
    assert_ok(result)
    return out, json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.slow  # a 2-worker run of 5 epochs
@pytest.mark.timeout(120)
def test_num_to_keep_keeps_the_best_by_score_and_the_latest_on_a_local_storage_path(scored_run):
    out, report = scored_run
    run_dir = out / "exp"
    names = _checkpoint_names(_text(run_dir / "result.json"))
    _check_scored_run(report, names)
    assert report["path"] == str(run_dir.resolve())
    assert sorted(p.name for p in run_dir.glob("checkpoint_*")) == [names[1], names[3], names[4]]
    again = Result.from_path(run_dir)  # read back from the folder alone
    assert [(Path(c.path).name, m) for c, m in again.best_checkpoints] == [
        tuple(x) for x in report["best_checkpoints"]
    ]
    assert again.metrics_dataframe.to_dict(orient="list") == report["dataframe"]
    with pytest.raises(
        ConfigError, match=r"^get_best_checkpoint: no kept checkpoint has the metric 'acc'; its "
    ):
        again.get_best_checkpoint("acc", "max")
    assert Path(again.get_best_checkpoint("loss", "min").path).parent == run_dir.resolve()


@pytest.mark.slow
@pytest.mark.timeout(150)
def test_a_run_on_s3_keeps_the_same_checkpoints_in_the_bucket_and_can_be_restored(bucket, tmp_path):
    url = f"s3://{bucket}/runs"
    result = run(
        [sys.executable, str(SCRIPT), url, "exp", "--num-to-keep", "2", "--score", "score"],
        tmp_path,
        timeout=120,
        AWS_ACCESS_KEY_ID=os.environ["AWS_ACCESS_KEY_ID"],
        AWS_SECRET_ACCESS_KEY=os.environ["AWS_SECRET_ACCESS_KEY"],
        AWS_ENDPOINT_URL=os.environ["AWS_ENDPOINT_URL"],
        AWS_DEFAULT_REGION="us-east-1",
    )
    assert_ok(result)
    report = json.loads(result.stdout.strip().splitlines()[-1])
    names = _checkpoint_names(
        s3_client().get_object(Bucket=bucket, Key="runs/exp/result.json")["Body"].read().decode()
    )
    _check_scored_run(report, names)
    assert report["path"] == f"{url}/exp"
    stored = keys(bucket, "runs/exp/")
    assert sorted({k.split("/")[2] for k in stored if k.split("/")[2].startswith("checkpoint_")}) == [
        names[1],
        names[3],
        names[4],
    ]  # deleted from the bucket too
    assert "runs/exp/result.json" in stored and "runs/exp/trainer.json" in stored
    assert TorchTrainer.can_restore(f"{url}/exp") and not TorchTrainer.can_restore(f"{url}/other")


@pytest.mark.slow  # two drivers, one killed mid-run (~30 s)
@pytest.mark.timeout(180)
def test_restore_after_the_driver_was_sigkilled_continues_from_the_last_checkpoint(scored_run, tmp_path):
    command = [
        sys.executable,
        str(SCRIPT),
        str(tmp_path),
        "exp",
        "--num-to-keep",
        "2",
        "--score",
        "score",
        "--sleep",
        "0.5",
    ]
    driver = subprocess.Popen(
        command,
        cwd=REPO,
        env=worker_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    run_dir = tmp_path / "exp"
    try:
        deadline = time.monotonic() + 90
        while (
            len([n for n in _checkpoint_names(_text(run_dir / "result.json")) if (run_dir / n).exists()]) < 2
        ):
            assert driver.poll() is None and time.monotonic() < deadline, driver.stderr.read().decode()[
                -3000:
            ]
            time.sleep(0.05)
        driver.send_signal(signal.SIGKILL)  # the driver only: its workers die with it (no orphans)
        driver.wait(10)
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
        driver.communicate()
    deadline = time.monotonic() + 10
    while processes_mentioning("ember.train.local_workers") and time.monotonic() < deadline:
        time.sleep(0.1)
    done_before = [
        json.loads(line)["metrics"]["epoch"] for line in _text(run_dir / "result.json").splitlines()
    ]
    assert 1 <= done_before[-1] < 4, done_before  # killed mid-run
    restored = run(
        [*command[:2], str(tmp_path), "exp", "--score", "score", "--restore"], tmp_path, timeout=120
    )
    assert_ok(restored)
    report = json.loads(restored.stdout.strip().splitlines()[-1])
    _check_scored_run(
        report, _checkpoint_names(_text(run_dir / "result.json"))
    )  # the kept checkpoints carried on across the two drivers
    epochs_run = [int(line.split()[0]) for line in (run_dir / "epochs_run").read_text().splitlines()]
    last = done_before[-1]
    # the second driver's workers started after the last recorded checkpoint, and ran each later epoch once
    assert epochs_run[-(4 - last) :] == list(range(last + 1, 5)), epochs_run
    assert report["weights"] == scored_run[1]["weights"]  # exactly the uninterrupted run's final model


def _text(path: Path) -> str:
    return path.read_text() if path.exists() else ""


def test_restore_refuses_without_the_training_function_or_a_run(tmp_path):
    with pytest.raises(
        ConfigError, match=r"^TorchTrainer.restore needs train_loop_per_worker=: ember never loads"
    ):
        TorchTrainer.restore(tmp_path)
    with pytest.raises(ConfigError, match=r"holds no TorchTrainer run \(no trainer.json\)"):
        TorchTrainer.restore(tmp_path, train_loop_per_worker=print)
    assert not TorchTrainer.can_restore(tmp_path)


def test_ray_train_options_ember_does_not_implement_are_refused_by_name():
    from ember.train import FailureConfig, RunConfig, ScalingConfig

    with pytest.raises(
        ConfigError,
        match=r"^CheckpointConfig\(checkpoint_frequency=\.\.\.\) is a Ray Train option "
        r"ember does not implement; deprecated in Ray 2.60 too",
    ):
        CheckpointConfig(num_to_keep=2, checkpoint_frequency=1)
    with pytest.raises(ConfigError, match=r"^RunConfig\(callbacks=\.\.\.\) is a Ray Train option"):
        RunConfig(name="x", callbacks=[object()])
    with pytest.raises(ConfigError, match=r"^ScalingConfig\(trainer_resources=\.\.\.\)"):
        ScalingConfig(num_workers=2, trainer_resources={"CPU": 0})
    with pytest.raises(ConfigError, match=r"^FailureConfig\(max_failures=-1\) must be an int >= 0"):
        FailureConfig(max_failures=-1)
    assert ScalingConfig(num_workers=2, placement_strategy="SPREAD").placement_strategy == "SPREAD"
    with pytest.raises(ConfigError, match=r"placement_strategy='spread'\): use one of PACK, SPREAD"):
        ScalingConfig(placement_strategy="spread")
