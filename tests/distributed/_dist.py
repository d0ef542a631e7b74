"""Helpers for the distributed tests: run a script as real processes, and check none is left behind.

Two ways to run a script's ranks, each with a hard timeout; rendezvous and gloo stay on 127.0.0.1:
- `run_script`: a real `python script.py` (ember's launcher then starts the ranks as fresh interpreters), or
  `run` for `torchrun`: for the tests of how ranks start, fail, restart, are signalled and cleaned up.
- `run_ranks`: the ranks as `torchrun --nproc_per_node=N script.py` starts them (torchrun's variables, a
  fresh TCP store on a free port), each a real process of its own, forked from one server that imported
  torch and ember once (tests/_fork_server.py): for the tests of what ranks do together (gradients, metrics,
  checkpoints, resume). Each fresh interpreter would spend ~4 CPU-s importing torch and torch._dynamo
  before a fraction of a second of training; ember's launcher and torchrun are tested with `run_script`.
The scripts record the pid of every process they start in OUT/pids, so a test can check that each one is
gone afterwards.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import functools
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from ember.runtime.launch import free_port
from tests._fork_server import Forked, ForkServer

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


# What the scripts import, found by listing sys.modules after a run; imported once by the rank server.
RANK_PRELOAD = [
    "torch",
    "torch._dynamo",
    "torch.distributed",
    "torch.distributed.checkpoint",
    "numpy",
    "ember",
    "ember.trainer",
    "ember.trainer.participants",
    "ember.runtime.distributed",
    "ember.callbacks",
    "ember.loggers",
]
# Read by the interpreter or a library when it starts: a run needing other values than the server's cannot
# be forked from it.
START_UP_VARIABLES = ("PYTHON", "OMP_", "MKL_", "TORCH_", "CUDA_")


@functools.cache
def _server() -> tuple[ForkServer, dict[str, str]]:
    """This pytest process's rank server (started on first use, closed at exit) and its environment."""
    env = worker_env()
    server = ForkServer(Path(tempfile.mkdtemp(prefix="ember-rank-server-")), env, RANK_PRELOAD, cwd=REPO)
    atexit.register(server.close)
    return server, env


def _rank_env(base: dict[str, str], rank: int, ranks: int, port: int, run_id: str, **extra: str) -> dict:
    """The changes to the server's environment that make a forked process rank `rank` of `ranks`, as
    torchrun --nproc_per_node=ranks would start it (without its agent's store: rank 0 hosts one)."""
    wanted = worker_env(**extra)
    if ranks > 1:
        wanted.update(
            RANK=str(rank),
            LOCAL_RANK=str(rank),
            WORLD_SIZE=str(ranks),
            LOCAL_WORLD_SIZE=str(ranks),
            GROUP_RANK="0",
            GROUP_WORLD_SIZE="1",
            ROLE_RANK=str(rank),
            ROLE_WORLD_SIZE=str(ranks),
            ROLE_NAME="default",
            MASTER_PORT=str(port),
            TORCHELASTIC_RUN_ID=run_id,
            TORCHELASTIC_RESTART_COUNT="0",
            TORCHELASTIC_MAX_RESTARTS="0",
            GLOO_SOCKET_IFNAME="lo",
        )
    changes: dict[str, str | None] = {k: v for k, v in wanted.items() if base.get(k) != v}
    changes.update({k: None for k in base if k not in wanted})
    at_start = sorted(k for k in changes if k.startswith(START_UP_VARIABLES))
    assert not at_start, f"run_ranks cannot change {at_start} (read at start-up): use run_script"
    return changes


def run_ranks(name: str, out: Path, *args: str, ranks: int, timeout: float = 90, **env: str) -> Run:
    """`torchrun --nproc_per_node=ranks SCRIPT OUT ARGS...` with forked ranks (module docstring); `ranks=1`
    is `python SCRIPT OUT ARGS...`. As torchrun: when a rank fails, the others are stopped (SIGTERM, SIGKILL
    after 10 s) and the exit code is the first failure's. stdout and stderr: the ranks' in rank order."""
    out.mkdir(parents=True, exist_ok=True)
    server, base = _server()
    port, run_id, start = free_port(), uuid.uuid4().hex, time.monotonic()
    procs = [
        server.start(
            str(SCRIPTS / name),
            str(out),
            *args,
            cwd=REPO,
            env=_rank_env(base, rank, ranks, port, run_id, **env),
            session=True,
        )
        for rank in range(ranks)
    ]
    returncode = _wait_like_torchrun(procs, timeout, name)
    outputs = [proc.communicate() for proc in procs]
    stdout, stderr = ("".join(o[i] for o in outputs) for i in (0, 1))
    return Run(out, returncode, stdout, stderr, time.monotonic() - start)


def _wait_like_torchrun(procs: list[Forked], timeout: float, name: str) -> int:
    deadline, stop_at = time.monotonic() + timeout, None
    failed: int | None = None
    while True:
        codes = [proc.poll() for proc in procs]
        if failed is None:
            failed = next((code for code in codes if code not in (None, 0)), None)
            if failed is not None:
                _signal_all(procs, signal.SIGTERM)
                stop_at = time.monotonic() + 10
        if all(code is not None for code in codes):
            return failed or 0
        if stop_at is not None and time.monotonic() > stop_at:
            _signal_all(procs, signal.SIGKILL)
        if time.monotonic() > deadline:
            _signal_all(procs, signal.SIGKILL)
            for proc in procs:
                proc.wait(10)
            errors = "".join(proc.err.read_text() for proc in procs)
            pytest.fail(
                f"{name}'s {len(procs)} ranks did not finish in {timeout}s (a hang?)\n{errors[-4000:]}"
            )
        time.sleep(0.02)


def _signal_all(procs: list[Forked], sig: int) -> None:
    """`sig` to each running rank's process group (the rank and what it started)."""
    for proc in procs:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, sig)


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
