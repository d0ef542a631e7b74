"""What a 2-rank run says when it cannot train: a SIGTERM during start-up is a termination (not 'killed'),
and ranks holding different numbers of batches are one line naming the ranks and the counts."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

from _dist import REPO, SCRIPTS, Run, assert_no_orphans, run_script, worker_env


def test_sigterm_while_the_workers_start_is_reported_as_a_termination(tmp_path):
    proc = subprocess.Popen(
        [sys.executable, str(SCRIPTS / "short_ddp.py"), str(tmp_path), "sigterm-startup"],
        cwd=REPO,
        env=worker_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    pids = tmp_path / "pids"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (pids.exists() and len(pids.read_text().split()) >= 9):
        time.sleep(0.05)  # the driver and both ranks are up; the ranks are in their slow start-up
    os.kill(proc.pid, signal.SIGTERM)  # what a batch scheduler does
    try:
        stdout, stderr = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        raise
    assert proc.returncode != 0 and not (tmp_path / "finished").exists()
    last = stderr.strip().splitlines()[-1]
    # the ranks still in their start-up when the signal came: both, or (on a loaded machine, where one may
    # already be past it) only the other
    assert re.match(
        r"ember: SIGTERM reached the workers before training could stop cleanly "
        r"\((ranks 0, 1 were|rank [01] was) still starting up\); "
        r"all workers were stopped and no checkpoint was written",
        last,
    ), stderr
    assert "killed" not in stderr and "Traceback" not in stderr, stderr
    assert_no_orphans(Run(tmp_path, proc.returncode, stdout, stderr, 0.0))


def test_ranks_with_different_batch_counts_fail_in_one_line_naming_them(tmp_path):
    result = run_script("short_ddp.py", tmp_path, "uneven")
    assert result.returncode != 0 and not (tmp_path / "finished").exists()
    error = next(line for line in result.stderr.splitlines() if line.startswith("ember.errors.WorkerError"))
    assert (
        "raised ember.errors.ConfigError: the ranks hold different numbers of training batches in epoch 0 "
        "(rank 0: 10, rank 1: 6); DDP needs the same number on every rank" in error
    ), result.stderr
    assert "frame #" not in error
    assert_no_orphans(result)
