"""Real processes, real signals: SIGKILL during checkpoint saves, and Ctrl-C (SIGINT) once or twice."""

from __future__ import annotations

import os
import random
import signal
import time
from pathlib import Path

import pytest
import torch
from _fit_server import FitServer, Forked
from _models import assert_bitwise_equal

import ember
from ember.fs import is_temporary

TOTAL_STEPS = 3 * 47


@pytest.fixture(scope="module")
def fit_server(tmp_path_factory):
    """Runs of _fit_script.py forked from one process that imported torch and ember once (tests/trainer/
    _fit_server.py): each run is still a process of its own, with real signals and kills; only the ~4.5 s of
    imports per run is not repeated. The environment is the one these runs always had."""
    server = FitServer(
        tmp_path_factory.mktemp("fit_server"), {**os.environ, "PYTHONHASHSEED": "0", "OMP_NUM_THREADS": "1"}
    )
    yield server
    server.close()


@pytest.fixture
def run_script(fit_server):
    """`python _fit_script.py ROOT ROOT/out.pt FLAGS...` run to its end: (exit code, stdout, stderr)."""
    return lambda root, *flags: fit_server.run(str(root), str(root / "out.pt"), *flags, timeout=180)


@pytest.fixture
def start_script(fit_server):
    """`python _fit_script.py ROOT ROOT/out.pt FLAGS...` started: a handle with pid, send_signal, kill, poll
    and communicate, as subprocess.Popen's."""
    return lambda root, *flags: fit_server.start(str(root), str(root / "out.pt"), *flags)


def temporaries(root: Path) -> list[str]:
    return sorted(
        p.name for p in root.rglob("*") if is_temporary(p.name) or p.name.endswith((".tmp", ".link"))
    )


@pytest.mark.slow
@pytest.mark.timeout(900)  # twelve process starts: about 40 s alone, minutes on a loaded machine
def test_ten_sigkills_during_checkpoint_saves_leave_no_temporaries_and_resume_exactly(
    tmp_path, uninterrupted, run_script, start_script
):
    checkpoints = tmp_path / "lightning_logs" / "version_0" / "checkpoints"
    kills = [  # checkpoints every 7 steps; each kill lands inside the save of that step
        ("--die-in-save-at", "14", "--save-fraction", "0.1"),
        ("--die-in-save-at", "21", "--save-fraction", "0.5"),
        ("--die-in-save-at", "28", "--save-fraction", "0.9"),
        ("--die-in-save-at", "35", "--save-fraction", "1.0"),  # every byte written, not yet renamed
        ("--die-at-rename", "42:1"),  # the step's file complete, its rename lost
        ("--die-at-rename", "49:2"),  # the step's file renamed, the last.ckpt link's rename lost
        ("--die-in-save-at", "56", "--save-fraction", "0.3"),  # epoch 1
        ("--die-at-rename", "63:1"),
    ]
    left_behind = 0
    for i, flags in enumerate(kills):
        killed = run_script(tmp_path, *flags, *(["--resume"] if i else []))
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        left_behind += len(temporaries(checkpoints))
        assert ember.checkpoint.load_checkpoint(checkpoints / "last.ckpt")  # always a complete file
    # and kills from outside at varied moments, whatever the process is doing then: a random delay after
    # the run's next save (a fixed delay after the start let a quiet machine finish the run first: the
    # remaining steps take well under a second, so the delay is a few steps' worth)
    rng = random.Random(0)
    for _ in range(3):
        child = start_script(tmp_path, "--resume")
        wait_for_next_save(checkpoints / "last.ckpt", child)
        time.sleep(rng.uniform(0.0, 0.02))
        child.kill()
        child.communicate()
        assert child.returncode == -signal.SIGKILL, (
            "the run ended before the kill: the kill must land mid-run"
        )
        left_behind += len(temporaries(checkpoints))
    assert left_behind >= len(kills)  # the kills did leave half-written files behind
    resumed = run_script(tmp_path, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert temporaries(tmp_path) == []  # the next start removed every stale temporary
    assert_bitwise_equal(torch.load(tmp_path / "out.pt")["weights"], uninterrupted["weights"])


def wait_for_next_save(last: Path, child: Forked, timeout: float = 120.0) -> None:
    """Return once `last` is replaced by a newer checkpoint (the run is training and saving)."""
    before = (last.stat().st_ino, last.stat().st_mtime_ns)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and child.poll() is None:
        try:
            if (last.stat().st_ino, last.stat().st_mtime_ns) != before:
                return
        except FileNotFoundError:  # between the rename's unlink and link on some file systems
            pass
        time.sleep(0.005)
    if child.poll() is not None:
        raise AssertionError(
            f"the run ended (exit code {child.returncode}) before saving again: {child.communicate()[1]}"
        )
    raise AssertionError(f"no new checkpoint within {timeout} s")


def wait_for_pause(child: Forked, timeout: float = 120.0) -> str:
    """The run's first stdout line, once it is written (the run then sleeps 3 s, waiting for signals)."""
    deadline = time.monotonic() + timeout
    while "\n" not in child.stdout_text() and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    line = child.stdout_text().partition("\n")[0] + "\n"
    assert line.startswith("paused at step"), line + child.err.read_text()
    return line


def test_ctrl_c_finishes_the_step_saves_once_and_resume_is_exact(
    tmp_path, uninterrupted, run_script, start_script
):
    child = start_script(tmp_path, "--pause-at", "52")
    wait_for_pause(child)
    child.send_signal(signal.SIGINT)  # what a terminal sends on Ctrl-C
    _, err = child.communicate(timeout=120)
    assert child.returncode == 130, err
    lines = [
        line for line in err.strip().splitlines() if line.strip() and line != "Seed set to 0"
    ]  # as Lightning
    assert "Traceback" not in err
    assert "Ctrl-C: finishing this step and saving a checkpoint (Ctrl-C again stops at once)" in lines[0]
    assert lines[-1].startswith("ember: SIGINT received at epoch 1, step 52; checkpoint saved to ")
    assert "resume with fit(..., ckpt_path='last') or `ember fit --resume`" in lines[-1]
    last = tmp_path / "lightning_logs" / "version_0" / "checkpoints" / "last.ckpt"
    assert ember.checkpoint.load_checkpoint(last)["progress"]["global_step"] == 52
    resumed = run_script(tmp_path, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    result = torch.load(tmp_path / "out.pt")
    assert result["steps"] == list(range(53, TOTAL_STEPS + 1))
    assert_bitwise_equal(result["weights"], uninterrupted["weights"])


def test_a_second_ctrl_c_stops_at_once_without_a_checkpoint(tmp_path, start_script):
    child = start_script(tmp_path, "--pause-at", "52")
    wait_for_pause(child)
    child.send_signal(signal.SIGINT)
    time.sleep(0.3)
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=60)
    assert child.returncode == 130, err
    assert "Traceback" not in err
    last_line = err.strip().splitlines()[-1]
    assert "second Ctrl-C, stopped at once at epoch 1, step 52 without saving" in last_line
    assert "the last checkpoint is " in last_line and last_line.endswith("`ember fit --resume`")
    last = tmp_path / "lightning_logs" / "version_0" / "checkpoints" / "last.ckpt"
    assert ember.checkpoint.load_checkpoint(last)["progress"]["global_step"] == 49  # the save every 7 steps
    assert temporaries(tmp_path) == []
