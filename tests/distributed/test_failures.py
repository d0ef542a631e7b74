"""Failures of one rank in a 2-process DDP run: SIGKILL, an exception, restarts, and SIGTERM (preemption).

Every case checks the error names the rank, arrives well before the collective timeout (60 s in the
script; a hang would hit it), and that no process of the run is left behind.
"""

from __future__ import annotations

import re

import pytest
import torch
from _dist import assert_no_orphans, assert_ok, run_script

pytestmark = pytest.mark.timeout(120)
# The collective timeout in the script is 60 s: an error reported much sooner did not come from a hang.
BOUND_SECONDS = 40


def _rank_pid(result, rank: str, attempt: int = 0) -> int:
    return next(pid for r, a, pid in result.pids() if r == rank and a == attempt)


def test_sigkill_of_one_worker_gives_one_line_naming_the_rank(tmp_path):
    result = run_script("train_cancer.py", tmp_path, "--kill-rank", "1", "--at-step", "3")
    assert result.returncode != 0
    last_line = result.stderr.strip().splitlines()[-1]
    pid = _rank_pid(result, "1")
    assert last_line == (
        f"ember.errors.WorkerError: rank 1 (pid {pid}) was killed by SIGKILL; "
        "ember stopped the other 1 worker"
    )
    assert "[rank0]: Traceback" not in result.stderr  # the peer's consequential error is one line at most
    assert result.seconds < BOUND_SECONDS
    assert not (tmp_path / "final.pt").exists()
    assert_no_orphans(result)


def test_worker_that_raises_names_the_rank_with_its_traceback(tmp_path):
    result = run_script("train_cancer.py", tmp_path, "--fail-rank", "1", "--at-step", "3")
    assert result.returncode != 0
    pid = _rank_pid(result, "1")
    headline = (
        f"ember.errors.WorkerError: rank 1 (pid {pid}) raised ValueError: boom on rank 1 at step 3; "
        "ember stopped the other 1 worker"
    )
    assert headline in result.stderr.splitlines()
    traceback = result.stderr.split("--- traceback of rank 1 ---\n", 1)[1]
    assert re.search(r'File ".*train_cancer\.py", line \d+, in training_step', traceback)
    assert traceback.strip().endswith("ValueError: boom on rank 1 at step 3")
    assert "[rank0]: Traceback" not in result.stderr
    assert result.seconds < BOUND_SECONDS
    assert_no_orphans(result)


def test_max_failures_restarts_from_the_last_checkpoint_and_finishes(tmp_path, torchrun_run):
    # a checkpoint every 2 steps; rank 1 dies at step 5 of the first attempt; the restart resumes at step 4
    result = run_script(
        "train_cancer.py",
        tmp_path,
        "--kill-rank",
        "1",
        "--at-step",
        "5",
        "--every-n-steps",
        "2",
        "--max-failures",
        "1",
    )
    assert_ok(result)
    assert (
        f"ember: rank 1 (pid {_rank_pid(result, '1')}) was killed by SIGKILL; ember stopped the other 1 "
        "worker; restarting all 2 training workers from the last checkpoint (restart 1 of 1)"
    ) in result.stderr
    assert sorted((r, a) for r, a, _ in result.pids()) == [
        ("0", 0),
        ("0", 1),
        ("1", 0),
        ("1", 1),
        ("driver", 0),
    ]
    final = result.final()
    assert final["global_step"] == 16
    assert final["rows_per_rank"] == [384, 384]  # the restart trained steps 5..16 only: 12 x 32 rows
    # ... and the result is exactly the uninterrupted run's (same script under torchrun, no failure)
    for name, value in torchrun_run.final()["state_dict"].items():
        assert torch.equal(final["state_dict"][name], value), name
    assert_no_orphans(result)


def test_sigterm_to_rank_one_stops_all_ranks_with_one_checkpoint_then_resumes(tmp_path, torchrun_run):
    stopped = run_script("train_cancer.py", tmp_path, "--sigterm-rank", "1", "--at-step", "5")
    assert stopped.returncode != 0
    # both ranks stopped after the same step (the flag rode the gradient all-reduce of step 5 -> 6)
    assert stopped.stderr.count("ember: SIGTERM received at epoch 0, step 6; checkpoint saved to") == 2
    assert stopped.stderr.strip().endswith(
        "ember: SIGTERM reached the workers; every rank stopped after the same step and the checkpoint was "
        "saved; run the script again with fit(..., ckpt_path='last') to resume"
    )
    assert stopped.writes() == [("0", "last.ckpt")]  # one coordinated checkpoint, written once
    ckpt = torch.load(tmp_path / "checkpoints" / "last.ckpt", weights_only=True)
    assert ckpt["global_step"] == 6
    assert stopped.seconds < BOUND_SECONDS
    assert_no_orphans(stopped)

    resumed = run_script(
        "train_cancer.py", tmp_path, "--sigterm-rank", "1", "--at-step", "5", "--ckpt", "last"
    )
    assert_ok(resumed)
    final = resumed.final()
    assert final["global_step"] == 16 and final["rows_per_rank"] == [320, 320]  # steps 7..16
    for name, value in torchrun_run.final()["state_dict"].items():
        assert torch.equal(final["state_dict"][name], value), name
    assert_no_orphans(resumed)
