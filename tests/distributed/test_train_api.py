"""ember.train's TorchTrainer: the seed-002 example as local processes, and 2 workers on a real local
Ray cluster (loopback only)."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
import time
from pathlib import Path

import pytest
from _dist import REPO, assert_no_orphans, assert_ok, processes_mentioning, run, run_script

EXAMPLE = REPO / "examples" / "distributed" / "seed_002_torch_trainer.py"


@pytest.mark.timeout(120)
def test_seed_002_example_runs_as_local_processes(tmp_path):
    result = run([sys.executable, str(EXAMPLE), str(tmp_path)], tmp_path, timeout=90)
    assert_ok(result)
    assert result.stdout.startswith("seed 002 finished: {'epoch': 1, 'loss': ")
    reports = [json.loads(line) for line in (tmp_path / "seed_002" / "result.json").read_text().splitlines()]
    assert [r["metrics"]["epoch"] for r in reports] == [0, 1]  # one report per epoch, rank zero's kept
    assert all(r["metrics"]["rank"] == 0 and math.isfinite(r["metrics"]["loss"]) for r in reports)
    assert not processes_mentioning(str(EXAMPLE))


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """One uninterrupted 2-worker run of train_loop_restart.py, with links planted at the names report()
    used to stage into (checkpoint_NNNNNN.tmp, pointing at an empty folder `victim`): the test of those
    links checks where the checkpoints went, and the restart test uses its printed result as the
    uninterrupted reference; the links change nothing in that result, so one run serves both (~12 s)."""
    root = tmp_path_factory.mktemp("uninterrupted")
    victim = root / "victim"
    victim.mkdir()
    run_dir = root / "out" / "run"
    run_dir.mkdir(parents=True)
    for index in range(4):  # the names report() used to stage into: checkpoint_NNNNNN.tmp
        (run_dir / f"checkpoint_{index:06d}.tmp").symlink_to(victim, target_is_directory=True)
    return run_script("train_loop_restart.py", root / "out"), victim, run_dir


@pytest.mark.timeout(120)
def test_failure_config_restarts_from_the_last_reported_checkpoint_and_equals_an_uninterrupted_run(
    uninterrupted, tmp_path
):
    whole, _, _ = uninterrupted
    restarted = run_script("train_loop_restart.py", tmp_path / "restarted", "--kill-at", "2")
    assert_ok(whole)
    assert_ok(restarted)
    assert "rank 1" in restarted.stderr and "restarting all 2 train loop workers" in restarted.stderr
    first, second = json.loads(whole.stdout.splitlines()[-1]), json.loads(restarted.stdout.splitlines()[-1])
    # rank 1 died entering epoch 2 on attempt 0; rank 0 may have entered it too before the group was stopped
    # (rank 0 also saves the checkpoint, so it often reaches epoch 2 after rank 1 died: no order is promised)
    died = [[r, 0, e] for r in (0, 1) for e in (0, 1)] + [[1, 0, 2]]
    assert sorted(e for e in second["epochs"] if e[1] == 0) in (sorted(died), sorted([*died, [0, 0, 2]]))
    # attempt 1: both ranks ran epoch 2 again and epoch 3, from the last reported checkpoint — nothing before
    assert sorted(e for e in second["epochs"] if e[1] == 1) == [[r, 1, e] for r in (0, 1) for e in (2, 3)]
    assert second["history"] == [0, 1, 2, 3]  # each epoch reported once
    assert second["weights"] == first["weights"]  # model and optimizer state resumed exactly
    assert second["metrics"] == first["metrics"]
    assert_no_orphans(restarted)


@pytest.mark.timeout(180)
def test_two_workers_on_a_local_ray_cluster_on_loopback(tmp_path):
    if importlib.util.find_spec("ray") is None:
        pytest.skip("ray is not installed (pip install 'ray[data,train]'); the Ray backend cannot be tested")
    result = run(
        [sys.executable, str(REPO / "tests" / "distributed" / "scripts" / "ray_train.py"), str(tmp_path)],
        tmp_path,
        timeout=150,
        RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0",
    )
    assert_ok(result)
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["addresses"] == ["127.0.0.1"], f"Ray bound to {report['addresses']}, not loopback only"
    metrics = report["metrics"]
    assert metrics["world_size"] == 2
    assert (
        len(set(metrics["pids"])) == 2 and report["driver_pid"] not in metrics["pids"]
    )  # two actor processes
    assert metrics["rows_per_rank"] == [20, 20]  # an ember Dataset of 41 rows, split equally by Ray Data
    assert metrics["valid_rows_per_rank"] == [5, 5]  # a ray.data Dataset, accepted as is
    assert metrics["whole_rows_per_rank"] == [6, 6]  # not in DataConfig(datasets_to_split=...): read whole
    assert metrics["loss"] < 1.0
    assert report["checkpoint_files"] == ["model.pt"]
    assert Path(tmp_path / "ray_run" / "result.json").exists()
    deadline = time.monotonic() + 15  # ray.shutdown() stops the cluster; its processes exit soon after
    while processes_mentioning(report["session_dir"]) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not processes_mentioning(report["session_dir"]), "Ray processes of the test's cluster survived"


def test_a_mistyped_argument_is_one_line_error():
    from ember.errors import ConfigError
    from ember.train import ScalingConfig, TorchTrainer

    with pytest.raises(
        ConfigError,
        match=r"^TorchTrainer has no argument 'scalling_config'; did you mean 'scaling_config'\?$",
    ):
        TorchTrainer(lambda: None, scalling_config=ScalingConfig(num_workers=2))


def test_prepare_model_refuses_a_parallel_strategy_it_would_not_honour():
    import torch

    from ember.errors import ConfigError
    from ember.train.torch import prepare_model

    # Ray wraps in FSDP for "fsdp"; ember used to hand back DDP without a word
    with pytest.raises(ConfigError, match=r"parallel_strategy='fsdp'\): ember.train wraps in DDP only"):
        prepare_model(torch.nn.Linear(2, 1), parallel_strategy="fsdp")


@pytest.mark.slow  # a 2-worker TorchTrainer run (~15 s)
def test_planted_links_at_the_old_staging_names_never_redirect_a_reported_checkpoint(uninterrupted):
    result, victim, run_dir = uninterrupted  # the links were planted before the run (the fixture)
    assert_ok(result)
    assert list(victim.iterdir()) == []
    done = [json.loads(line)["checkpoint"] for line in (run_dir / "result.json").read_text().splitlines()]
    assert len(done) == 4 and sorted(p.name for p in run_dir.glob("checkpoint_2*")) == sorted(done)
    assert all((run_dir / name).is_dir() and not (run_dir / name).is_symlink() for name in done)
    assert (run_dir / done[3] / "state.pt").is_file()
    assert not [p for p in run_dir.iterdir() if p.name.endswith(".ember-tmp")]  # no staging left behind
