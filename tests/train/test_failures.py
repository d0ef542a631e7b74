"""FailureConfig on local workers: a worker SIGKILLed mid-run with max_failures=0 is one clear error
(the restart with max_failures=1 is tests/distributed/test_train_api.py's)."""

from __future__ import annotations

import pytest
from _dist import assert_no_orphans, run_script


@pytest.mark.slow  # a 2-worker run killed at epoch 1 (~10 s)
@pytest.mark.timeout(120)
def test_a_killed_worker_without_retries_is_one_error_naming_the_rank_and_no_process_is_left(tmp_path):
    result = run_script("train_loop_restart.py", tmp_path, "--kill-at", "1", "--max-failures", "0")
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("ember.errors.WorkerError: rank 1 (pid ") and last.endswith(
        ") was killed by SIGKILL; ember stopped the other 1 worker"
    ), result.stderr[-3000:]
    assert "restarting" not in result.stderr
    epochs = sorted(tuple(map(int, line.split())) for line in (tmp_path / "epochs").read_text().splitlines())
    assert epochs == [(0, 0, 0), (0, 0, 1), (1, 0, 0), (1, 0, 1)]  # attempt 0 only: nothing was restarted
    assert result.stdout == ""  # fit() raised: the script printed no result
    assert_no_orphans(result)
