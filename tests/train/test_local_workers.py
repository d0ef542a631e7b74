"""TorchTrainer's local workers run only the training function: a program given as a file, as
`python -c` or piped on stdin trains the same, and its top level runs once (in the driver)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from _dist import REPO, SCRIPTS, alive, assert_no_orphans, assert_ok, run, worker_env

PROGRAM = SCRIPTS / "train_func_anywhere.py"


def _check(out, stdout: str) -> dict:
    """The run trained: 3 epochs on 2 ranks, 284 rows each (569 split equally), the loss went down."""
    report = json.loads(stdout.strip().splitlines()[-1])
    history = report["history"]
    assert [m["epoch"] for m in history] == [0, 1, 2]
    assert all(m["rows"] == 284 and m["world_size"] == 2 for m in history)
    assert history[-1]["loss"] < history[0]["loss"] < 0.7
    ranks = [[json.loads(line) for line in (out / f"rank_{r}").read_text().splitlines()] for r in (0, 1)]
    assert [[e["epoch"] for e in rank] for rank in ranks] == [[0, 1, 2], [0, 1, 2]]
    worker_pids = {e["pid"] for rank in ranks for e in rank}
    assert len(worker_pids) == 2 and report["driver_pid"] not in worker_pids
    # both forked by one zygote (ember/processes/zygote.py), not by the driver, each with the launcher's
    # share of the cores though the zygote imported torch before the workers existed
    parents = {e["ppid"] for rank in ranks for e in rank}
    assert len(parents) == 1 and report["driver_pid"] not in parents
    assert all(e["threads"] == int(e["omp"]) for rank in ranks for e in rank)
    # the top level ran once, in the driver: the workers never re-ran the program
    assert (out / "toplevel").read_text().split() == [str(report["driver_pid"])]
    # this run's workers ended with it (its own pids: other tests' local workers may run beside it on
    # another pytest-xdist worker, so not every process of ember.train.local_workers on the machine)
    assert not [pid for pid in worker_pids if alive(pid)]
    return report


@pytest.fixture(scope="module")
def file_run(tmp_path_factory):
    """`python train_func_anywhere.py OUT`, once for the module (a 2-worker run, ~10 s): the test of a
    script file checks it, and the stdin test compares its losses with it (the same command each would run;
    neither writes into its folder)."""
    out = tmp_path_factory.mktemp("file")
    return run([sys.executable, str(PROGRAM), str(out)], out)


@pytest.mark.slow  # a 2-worker run (~10 s)
@pytest.mark.timeout(120)
def test_a_script_file_trains_on_two_workers_that_do_not_rerun_it(file_run):
    result = file_run
    assert_ok(result)
    _check(result.out, result.stdout)
    assert_no_orphans(result)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_python_dash_c_trains_on_two_workers(tmp_path):
    result = run([sys.executable, "-c", PROGRAM.read_text(), str(tmp_path)], tmp_path)
    assert_ok(result)
    _check(tmp_path, result.stdout)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_script_piped_on_stdin_trains_on_two_workers_not_nothing(file_run, tmp_path):
    done = subprocess.run(
        [sys.executable, "-", str(tmp_path)],
        input=PROGRAM.read_text(),
        capture_output=True,
        text=True,
        timeout=100,
        cwd=REPO,
        env=worker_env(),
    )
    assert done.returncode == 0, done.stderr[-4000:]
    report = _check(tmp_path, done.stdout)
    again = file_run  # the same program run from its file (shared with the test above)
    assert_ok(again)
    # the same program, the same seeds: the same losses, bit for bit, whichever way Python read it
    assert json.loads(again.stdout.strip().splitlines()[-1])["history"] == report["history"]


def test_a_training_function_that_cannot_be_pickled_is_one_line_error(tmp_path):
    import threading

    from ember.errors import ConfigError
    from ember.train import RunConfig, TorchTrainer

    lock = threading.Lock()

    def loop():
        with lock:
            pass

    trainer = TorchTrainer(loop, run_config=RunConfig(name="run", storage_path=str(tmp_path)))
    with pytest.raises(
        ConfigError,
        match=r"^TorchTrainer cannot send the training function, its config or "
        r"datasets to the workers \(TypeError: cannot pickle '_thread.lock'",
    ):
        trainer.fit()
