"""Exact resume: a run killed at any point and resumed ends bitwise equal to one never interrupted."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest
import torch
from _fit_server import FitServer
from _models import assert_bitwise_equal

import ember
from ember.errors import CheckpointError

TOTAL_STEPS = 3 * 47  # 1500 digits / batch 32


@pytest.fixture(scope="module")
def fit_server(tmp_path_factory):
    """Runs of _fit_script.py forked from one process that imported torch and ember once (tests/trainer/
    _fit_server.py): each run is still a process of its own, killed and resumed for real; only the ~4.5 s of
    imports per run is not repeated. The environment is the one these runs always had."""
    env = {**os.environ, "PYTHONHASHSEED": "0", "OMP_NUM_THREADS": "1"}
    server = FitServer(tmp_path_factory.mktemp("fit_server"), env)
    yield server
    server.close()


@pytest.fixture
def run_script(fit_server):
    """`python _fit_script.py ROOT OUT FLAGS...` run to its end: (exit code, stdout, stderr)."""

    def run(root: Path, out: Path, *flags: str) -> subprocess.CompletedProcess:
        return fit_server.run(str(root), str(out), *flags, timeout=180)

    return run


def test_sigkill_mid_epoch_then_resume_is_bitwise_identical(tmp_path, uninterrupted, run_script):
    killed = run_script(tmp_path, tmp_path / "out.pt", "--die-at", "60")  # epoch 1, batch 12; last ckpt at 56
    assert killed.returncode == -signal.SIGKILL
    resumed = run_script(tmp_path, tmp_path / "out.pt", "--resume")
    assert resumed.returncode == 0, resumed.stderr
    result = torch.load(tmp_path / "out.pt")
    assert result["steps"] == list(range(57, TOTAL_STEPS + 1))  # exactly the remaining steps, once each
    assert_bitwise_equal(result["weights"], uninterrupted["weights"])
    assert torch.equal(result["val_loss"], uninterrupted["val_loss"])


def test_two_successive_kills_with_dataloader_workers(tmp_path, uninterrupted, run_script):
    for die_at in (30, 100):  # mid-epoch 0, then mid-epoch 2 of the resumed run
        killed = run_script(
            tmp_path,
            tmp_path / "out.pt",
            "--die-at",
            str(die_at),
            "--workers",
            "1",
            *(["--resume"] if die_at == 100 else []),
        )
        assert killed.returncode == -signal.SIGKILL, killed.stderr
    resumed = run_script(tmp_path, tmp_path / "out.pt", "--resume", "--workers", "1")
    assert resumed.returncode == 0, resumed.stderr
    result = torch.load(tmp_path / "out.pt")
    assert result["steps"][0] == 99  # the checkpoint at step 98 was the last one written
    assert_bitwise_equal(result["weights"], uninterrupted["weights"])


def test_sigterm_saves_a_checkpoint_and_resume_is_exact(tmp_path, uninterrupted, run_script):
    stopped = run_script(tmp_path, tmp_path / "out.pt", "--term-at", "50")
    assert stopped.returncode == 1
    message = stopped.stderr.strip().splitlines()[-1]
    assert "SIGTERM received at epoch 1, step 50" in message and "ckpt_path='last'" in message
    checkpoint = ember.checkpoint.load_checkpoint(
        tmp_path / "lightning_logs" / "version_0" / "checkpoints" / "last.ckpt"
    )
    assert checkpoint["progress"]["global_step"] == 50
    resumed = run_script(tmp_path, tmp_path / "out.pt", "--resume")
    assert resumed.returncode == 0, resumed.stderr
    result = torch.load(tmp_path / "out.pt")
    assert result["steps"] == list(range(51, TOTAL_STEPS + 1))
    assert_bitwise_equal(result["weights"], uninterrupted["weights"])


def test_crash_while_writing_a_checkpoint_leaves_the_previous_one_as_latest(
    tmp_path, uninterrupted, run_script
):
    killed = run_script(tmp_path, tmp_path / "out.pt", "--die-in-save-at", "21")
    assert killed.returncode == -signal.SIGKILL
    checkpoints = tmp_path / "lightning_logs" / "version_0" / "checkpoints"
    visible = sorted(p.name for p in checkpoints.iterdir() if not p.name.startswith("."))
    assert visible == ["epoch=0-step=14.ckpt", "epoch=0-step=7.ckpt", "last.ckpt"]  # no half-written step=21
    assert ember.checkpoint.load_checkpoint(checkpoints / "last.ckpt")["progress"]["global_step"] == 14
    resumed = run_script(tmp_path, tmp_path / "out.pt", "--resume")
    assert resumed.returncode == 0, resumed.stderr
    result = torch.load(tmp_path / "out.pt")
    assert result["steps"][0] == 15
    assert_bitwise_equal(result["weights"], uninterrupted["weights"])


def test_truncated_last_checkpoint_is_refused_with_one_line_and_kept(tmp_path, run_script):
    killed = run_script(tmp_path, tmp_path / "out.pt", "--die-at", "20")
    assert killed.returncode == -signal.SIGKILL
    last = tmp_path / "lightning_logs" / "version_0" / "checkpoints" / "last.ckpt"
    data = last.read_bytes()
    last.write_bytes(data[: len(data) // 2])
    resumed = run_script(tmp_path, tmp_path / "out.pt", "--resume")
    assert resumed.returncode != 0
    error = resumed.stderr.strip().splitlines()[-1]
    assert "CheckpointError" in error and "last.ckpt" in error
    assert last.stat().st_size == len(data) // 2  # nothing the user has is deleted or overwritten
    with pytest.raises(CheckpointError, match="truncated|corrupt|not a checkpoint"):
        ember.checkpoint.load_checkpoint(last)
