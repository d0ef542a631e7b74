"""Helpers for the distributed tests: run a script as real processes, and check none is left behind.

Every run is a real `python script.py` (ember's launcher then starts the ranks), or `torchrun`, with
a hard timeout; rendezvous and gloo stay on 127.0.0.1. The scripts record the pid of every process
they start in OUT/pids, so a test can check that each one is gone afterwards.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).parent / "scripts"
REPO = Path(__file__).resolve().parents[2]


@dataclasses.dataclass
class Run:
    out: Path
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    def final(self) -> dict:
        import torch

        return torch.load(self.out / "final.pt", weights_only=True)

    def pids(self) -> list[tuple[str, int, int]]:
        """(rank or "driver", attempt, pid) of every process the script ran in."""
        lines = (self.out / "pids").read_text().split() if (self.out / "pids").exists() else []
        return [(lines[i], int(lines[i + 1]), int(lines[i + 2])) for i in range(0, len(lines), 3)]

    def writes(self) -> list[tuple[str, str]]:
        """(rank, file name) of every checkpoint file written."""
        path = self.out / "writes"
        return [tuple(line.split()) for line in path.read_text().splitlines()] if path.exists() else []

    def checkpoints(self) -> list[str]:
        """The checkpoint folder's files: default_root_dir/checkpoints (the script runs with logger=False)."""
        return sorted(p.name for p in (self.out / "checkpoints").iterdir())


def worker_env(**extra: str) -> dict[str, str]:
    env = dict(
        os.environ,
        PYTHONPATH=str(REPO),
        OMP_NUM_THREADS="1",
        MASTER_ADDR="127.0.0.1",
        PYTHONUNBUFFERED="1",
        **extra,
    )
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_PORT", "EMBER_LAUNCH_DIR", "RAY_ADDRESS"):
        env.pop(name, None)  # never join someone else's group or cluster
    for name in ("EMBER_GLOBAL_SEED", "PL_GLOBAL_SEED", "EMBER_SEED_WORKERS", "PL_SEED_WORKERS"):
        if name not in extra:  # a seed_everything of this process must not reseed the script's ranks
            env.pop(name, None)
    return env


def run(command: list[str], out: Path, timeout: float = 90, **env: str) -> Run:
    """Run `command` (its output folder `out` is created) and wait at most `timeout` seconds."""
    out.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    proc = subprocess.Popen(
        command,
        cwd=REPO,
        env=worker_env(**env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        stdout, stderr = proc.communicate()
        pytest.fail(f"{' '.join(command)} did not finish in {timeout}s (a hang?)\n{stderr[-4000:]}")
    return Run(out, proc.returncode, stdout, stderr, time.monotonic() - start)


def run_script(name: str, out: Path, *args: str, timeout: float = 90, **env: str) -> Run:
    return run([sys.executable, str(SCRIPTS / name), str(out), *args], out, timeout, **env)


def alive(pid: int) -> bool:
    """Is `pid` a live (not zombie) process? Read from /proc, Linux only."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state != "Z"


def processes_mentioning(text: str) -> list[int]:
    """Live processes whose command line contains `text` (e.g. a run's output folder)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if text in cmdline and alive(int(entry.name)):
                found.append(int(entry.name))
    return found


def assert_no_orphans(result: Run, wait: float = 10.0) -> None:
    """Every process of the run is gone: the pids it recorded, and anything whose command line names
    its output folder (within `wait` seconds: SIGKILL is quick, reaping is asynchronous)."""
    pids = [pid for _, _, pid in result.pids()]
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        left = sorted({pid for pid in pids if alive(pid)} | set(processes_mentioning(str(result.out))))
        if not left:
            return
        time.sleep(0.1)
    pytest.fail(f"processes still running after the run: {left}")


def assert_ok(result: Run) -> None:
    assert result.returncode == 0, f"exit {result.returncode}\n--- stderr ---\n{result.stderr[-6000:]}"
