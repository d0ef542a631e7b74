"""ember.processes.zygote: workers forked from one interpreter behave as `python -m MODULE ARGS` would.

Each test starts a real zygote (a fresh interpreter) and real forked workers; the worker module is
tests/processes/_zygote_probe.py, which reports what it sees into a file and exits as told.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from ember.processes.zygote import Zygote

ROOT = Path(__file__).resolve().parents[2]
PROBE = "tests.processes._zygote_probe"


@pytest.fixture
def zygote():
    running = Zygote(preload=("colorsys",), env=dict(os.environ, PYTHONPATH=str(ROOT)))
    yield running
    running.close()


def _env(**extra: str) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT), **extra)


def test_a_worker_runs_its_module_as_main_with_its_own_arguments_environment_and_folder(zygote, tmp_path):
    report = tmp_path / "report.json"
    child = zygote.start(PROBE, [str(report), "0"], env=_env(EMBER_PROBE="seen"), cwd=str(tmp_path))
    assert child.wait(timeout=60) == 0
    seen = json.loads(report.read_text())
    assert seen["name"] == "__main__"
    assert seen["argv"][1:] == [str(report), "0"]
    assert seen["orig_argv"] == [sys.executable, "-m", PROBE, str(report), "0"]
    assert seen["cwd"] == str(tmp_path) and seen["path0"] == str(tmp_path)
    assert seen["variable"] == "seen"
    assert seen["ppid"] == zygote.process.pid  # a fork of the zygote, not of this process
    assert seen["preloaded"] is True  # imported by the zygote before the fork


def test_exit_codes_and_exceptions_come_back_as_a_fresh_interpreters(zygote, tmp_path):
    exited = zygote.start(PROBE, [str(tmp_path / "a.json"), "3"], env=_env(), cwd=str(tmp_path))
    raised = zygote.start(PROBE, [str(tmp_path / "b.json"), "raise"], env=_env(), cwd=str(tmp_path))
    assert exited.wait(timeout=60) == 3
    assert raised.wait(timeout=60) == 1
    assert (tmp_path / "atexit-ran").read_text() == "yes"  # the interpreter's exit, atexit included


def test_stdout_and_stderr_are_the_descriptors_handed_over(zygote, tmp_path):
    out, err = (tmp_path / "out.txt").open("wb"), (tmp_path / "err.txt").open("wb")
    with out, err:
        child = zygote.start(
            PROBE,
            [str(tmp_path / "r.json"), "raise"],
            env=_env(),
            cwd=str(tmp_path),
            fds={"stdout": out.fileno(), "stderr": err.fileno()},
        )
        assert child.wait(timeout=60) == 1
    assert (tmp_path / "out.txt").read_text() == "probe says hello\n"
    assert "RuntimeError: the probe was told to raise" in (tmp_path / "err.txt").read_text()


def test_a_worker_in_its_own_session_dies_with_its_process_group(zygote, tmp_path):
    child = zygote.start(
        PROBE, [str(tmp_path / "r.json"), "sleep"], env=_env(), cwd=str(tmp_path), session=True
    )
    _wait_for(tmp_path / "r.json")
    assert os.getpgid(child.pid) == child.pid  # a session and group of its own
    os.killpg(child.pid, signal.SIGKILL)
    assert child.wait(timeout=30) == -signal.SIGKILL


def test_kill_signals_only_a_worker_not_yet_reaped(zygote, tmp_path):
    child = zygote.start(PROBE, [str(tmp_path / "r.json"), "sleep"], env=_env(), cwd=str(tmp_path))
    _wait_for(tmp_path / "r.json")
    child.kill()
    assert child.wait(timeout=30) == -signal.SIGKILL
    child.kill()  # reaped already: nothing is signalled (no other process could be hit by a reused pid)
    assert child.poll() == -signal.SIGKILL


def test_a_zygote_that_ends_takes_its_workers_with_it(tmp_path):
    zygote = Zygote(preload=(), env=_env())
    child = zygote.start(PROBE, [str(tmp_path / "r.json"), "sleep"], env=_env(), cwd=str(tmp_path))
    _wait_for(tmp_path / "r.json")
    pid = child.pid
    zygote.process.kill()
    zygote.process.wait()
    assert child.poll() == -signal.SIGKILL  # its zygote gone: reported killed, as it was (PR_SET_PDEATHSIG)
    deadline = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid)
    zygote.close()


def _wait_for(path: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"the worker never wrote {path}"
        time.sleep(0.02)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
