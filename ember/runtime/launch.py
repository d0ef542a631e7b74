"""Start N worker processes on this machine and watch them until all finish or one fails.

How ember starts DDP workers: the launching process re-runs the user's script (the same command
line) N times with RANK/LOCAL_RANK/WORLD_SIZE/MASTER_ADDR=127.0.0.1/MASTER_PORT set, exactly the
environment torchrun would give, so a script behaves the same under both. The launching process
itself does not train: it supervises. That is what makes failures clean:

- a worker that dies or raises makes the supervisor kill every worker's process group at once and
  raise ONE `WorkerError` naming the rank, with its traceback (read from a file the rank wrote);
- workers die with the supervisor (Linux PR_SET_PDEATHSIG), so nothing is orphaned;
- SIGTERM to the supervisor is forwarded to every worker (they then stop at the same step, see
  `runtime/distributed.py`); a SIGTERM to one worker directly works too; a SIGTERM that arrives while
  the workers are still starting (before they can stop cleanly) is reported as a termination, never
  as a crash;
- with `max_failures=k` all workers are started again, up to k times, resuming from the last checkpoint.

The ranks are forked from a zygote instead of started as N fresh interpreters (`ember.processes.zygote`):
one interpreter, started with rank zero's environment (the ranks differ only in variables read at run
time: RANK, LOCAL_RANK, ...), imports torch (`RANK_PRELOAD`; TorchTrainer's local workers: their own list)
once, for all attempts of one call, and each rank is a fork of it that runs the script (or ``-m`` module)
as ``python [-u] SCRIPT ARGS`` would: its own ``__main__``, sys.argv, sys.path[0], exit code. A command
line with other interpreter options, and any command off Linux, starts fresh interpreters, as before.

Both halves of that contract live here: the supervisor's side (`run_workers`, `_watch`) and the
worker's side (`install_error_report`, `mark_interrupted`: the files a rank leaves in
EMBER_LAUNCH_DIR for the supervisor to read), so the format of those files is defined in one place.

Example:
    >>> run_workers([sys.executable, "-c", "print('hi')"], 2)  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

from ember.errors import ConfigError, TrainingInterrupted, WorkerError
from ember.fs import make_temporary_folder, remove_temporary_folder, write_text
from ember.processes.zygote import Zygote, die_with_parent

_POLL_SECONDS = 0.05
#: What a rank of the user's script imports before its first step, imported once by the zygote the ranks
#: fork from (the script itself, and what it imports, each rank still runs): torch, torch._dynamo (which
#: torch.optim imports) and torch.distributed, ~3 CPU-s a rank.
RANK_PRELOAD = ("torch", "torch._dynamo", "torch.distributed")
#: After one rank stops on an agreed signal, how long the others get to write the checkpoint and exit.
_INTERRUPT_GRACE_SECONDS = 120.0


#: What `worker_env` sets for one rank or one attempt: never in a zygote's own environment.
_PER_RANK_OR_ATTEMPT = (
    "RANK",
    "LOCAL_RANK",
    "MASTER_PORT",
    "EMBER_LAUNCH_DIR",
    "EMBER_RESTART_COUNT",
    "EMBER_RUN_ID",
)


class _Worker(Protocol):
    """A started rank: a ``subprocess.Popen`` or a fork of a zygote (``ZygoteChild``)."""

    pid: int
    returncode: int | None

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...


@dataclasses.dataclass
class _Exit:
    rank: int
    pid: int
    code: int
    seen_at: int  # poll round in which the exit was noticed
    error: str  # the traceback the rank wrote, if any
    summary: str = ""  # the exception's own line (type: message), which the traceback's last line may not be

    @property
    def secondary(self) -> bool:
        return self.code > 0 and is_secondary_failure(self.error)

    def describe(self) -> str:
        if self.code in (-signal.SIGTERM, -signal.SIGINT):
            how = f"was terminated by {signal.Signals(-self.code).name} before it could stop cleanly"
        elif self.code < 0:
            how = f"was killed by {signal.Signals(-self.code).name}"
        elif self.summary.strip():
            how = f"raised {self.summary.strip()}"
        elif self.error.strip():
            how = f"raised {self.error.strip().splitlines()[-1]}"
        else:
            how = f"exited with code {self.code}"
        return f"rank {self.rank} (pid {self.pid}) {how}"


def script_command(who: str = "strategy='ddp'") -> list[str]:
    """The command line that started this process, to start it again as a worker."""
    import __main__

    argv0 = sys.argv[0] if sys.argv else ""
    is_pytest = Path(argv0).name in ("pytest", "py.test") or "pytest" in argv0.replace("\\", "/").split("/")
    main_file = getattr(__main__, "__file__", None) or ""
    if argv0 == "-" or main_file.startswith("<"):  # `python - < train.py`: __file__ is "<stdin>"
        raise ConfigError(
            f"{who} starts its workers by re-running the script, but this Python read it from standard input "
            "(python - < train.py), which the workers cannot read again, so they would train nothing; save "
            "it and run `python train.py`"
        )
    if not main_file or argv0 in ("-c", "") or is_pytest:
        raise ConfigError(
            f"{who} starts its workers by re-running the script, but this Python was started without "
            "one (interactive, notebook, -c or pytest); run `python train.py` or "
            "`torchrun --nproc_per_node=N train.py`"
        )
    return [sys.executable, *sys.orig_argv[1:]]


def free_port() -> int:
    """A free TCP port on the loopback interface (for MASTER_PORT)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run_workers(
    command: list[str],
    num_processes: int,
    *,
    max_failures: int = 0,
    env: dict[str, str] | None = None,
    what: str = "training",
    preload: Sequence[str] = (),
) -> None:
    """Run `command` as `num_processes` ranks; return when all exit 0, else raise WorkerError.

    `preload`: for a command ``[sys.executable, ["-u",] SCRIPT or "-m" MODULE, *ARGS]`` on Linux, fork the
    ranks from a zygote that imported these modules once (the module docstring), instead of starting N
    fresh interpreters.

    Example:
        >>> run_workers([sys.executable, "-c", "import os; print(os.environ['RANK'])"], 2)  # doctest: +SKIP
    """
    main = _forkable(command, preload)
    extra = dict(env or {})
    if main is not None and main.unbuffered:  # `-u`, which a fork cannot take, as the variable saying it
        extra["PYTHONUNBUFFERED"] = "1"
    zygote = None if main is None else (_zygote(preload, num_processes, extra), main)
    try:
        for attempt in range(max_failures + 1):
            failure = _run_once(command, num_processes, attempt, extra, zygote)
            if failure is None:
                return
            if attempt == max_failures:
                raise failure
            print(
                f"ember: {failure.args[0].splitlines()[0]}; restarting all {num_processes} {what} workers "
                f"from the last checkpoint (restart {attempt + 1} of {max_failures})",
                file=sys.stderr,
                flush=True,
            )
    finally:
        if zygote is not None:
            zygote[0].close()


def _forkable(command: list[str], preload: Sequence[str]) -> _Main | None:
    """What each rank of `command` runs when the ranks can fork from a zygote, else None to start them
    as fresh interpreters (no `preload`, a command line with interpreter options other than ``-u``, not
    Linux: elsewhere a fork after importing torch may copy a half-initialized system framework, as
    macOS's Objective-C runtime, which warns and aborts such children)."""
    if not preload or not sys.platform.startswith("linux"):
        return None
    return _main_of(command)


def _zygote(preload: Sequence[str], n: int, extra_env: dict[str, str]) -> Zygote:
    """A zygote with the variables the ranks share (the thread share, gloo's interface, the caller's own)
    and none of one rank or one attempt: a module that read RANK while the zygote imported it would give
    every rank one."""
    shared = worker_env(0, n, 0, Path(os.devnull), 0, extra_env)
    return Zygote(
        preload, {name: value for name, value in shared.items() if name not in _PER_RANK_OR_ATTEMPT}
    )


@dataclasses.dataclass
class _Main:
    """What ``python [-u] SCRIPT ARGS`` or ``python [-u] -m MODULE ARGS`` runs."""

    name: str
    argv: list[str]
    script: bool
    unbuffered: bool


def _main_of(command: list[str]) -> _Main | None:
    if not command or command[0] != sys.executable:
        return None
    rest = command[1:]
    unbuffered = rest[:1] == ["-u"]
    rest = rest[1:] if unbuffered else rest
    if rest[:1] == ["-m"] and len(rest) >= 2:
        return _Main(rest[1], rest[2:], script=False, unbuffered=unbuffered)
    if rest and not rest[0].startswith("-"):
        return _Main(rest[0], rest[1:], script=True, unbuffered=unbuffered)
    return None


def _run_once(
    command: list[str], n: int, attempt: int, extra_env: dict[str, str], zygote: tuple[Zygote, _Main] | None
) -> BaseException | None:
    launch_dir = make_temporary_folder("launch-")
    port = free_port()
    procs: list[_Worker] = []
    try:
        for rank in range(n):
            env = worker_env(rank, n, port, launch_dir, attempt, extra_env)
            procs.append(_start(command, env, zygote))
        with _forward_signals(procs) as received:
            return _watch(procs, launch_dir, received)
    finally:
        _kill_all(procs)
        remove_temporary_folder(launch_dir)


def _start(command: list[str], env: dict[str, str], zygote: tuple[Zygote, _Main] | None) -> _Worker:
    """One rank in a session of its own (its process group is killed as one), dying with this process."""
    if zygote is not None:
        forks, main = zygote
        return forks.start(main.name, main.argv, env=env, cwd=os.getcwd(), session=True, script=main.script)
    return subprocess.Popen(command, env=env, start_new_session=True, preexec_fn=die_with_parent)


def worker_env(
    rank: int, n: int, port: int, launch_dir: Path, attempt: int, extra: dict[str, str]
) -> dict[str, str]:
    """The environment of one worker: torchrun's variables plus ember's launch folder."""
    env = dict(os.environ, **extra)
    env.update(
        RANK=str(rank),
        LOCAL_RANK=str(rank),
        WORLD_SIZE=str(n),
        LOCAL_WORLD_SIZE=str(n),
        GROUP_RANK="0",
        NODE_RANK="0",
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        EMBER_LAUNCH_DIR=str(launch_dir),
        EMBER_RESTART_COUNT=str(attempt),
        EMBER_RUN_ID=env.get("EMBER_RUN_ID", uuid.uuid4().hex),
    )
    # One machine: keep gloo on loopback, and do not let N processes each use every core.
    if sys.platform.startswith("linux") and Path("/sys/class/net/lo").exists():
        env.setdefault("GLOO_SOCKET_IFNAME", "lo")
    env.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // n)))
    return env


@contextlib.contextmanager
def _forward_signals(procs: list[_Worker]) -> Iterator[list[int]]:
    """SIGTERM to the supervisor goes to every worker; Ctrl-C stops them all."""
    received: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return

    def forward(signum: int, frame: Any) -> None:
        received.append(signum)
        for proc in procs:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGTERM)
        if signum == signal.SIGINT:
            raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield received
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _watch(procs: list[_Worker], launch_dir: Path, received: list[int]) -> BaseException | None:
    """Poll until every worker exits 0 (None), one fails (WorkerError), or they stop on a signal."""
    exits: dict[int, _Exit] = {}
    round_, grace_until = 0, None
    while len(exits) < len(procs):
        round_ += 1
        for rank, proc in enumerate(procs):
            if rank not in exits and proc.poll() is not None:
                error_file, summary_file = (
                    launch_dir / f"rank_{rank}.err",
                    launch_dir / f"rank_{rank}.summary",
                )
                error = error_file.read_text() if error_file.exists() else ""
                summary = summary_file.read_text() if summary_file.exists() else ""
                exits[rank] = _Exit(rank, proc.pid, proc.poll() or 0, round_, error, summary)
        interrupted = any(launch_dir.glob("rank_*.interrupted"))
        failed = [e for e in exits.values() if e.code != 0]
        if failed and received and not interrupted:
            return _terminated_early(procs, received[0], failed)
        if failed and not interrupted:
            return _failure(procs, failed, exits)
        if interrupted and grace_until is None:
            grace_until = time.monotonic() + _INTERRUPT_GRACE_SECONDS
        if grace_until is not None and time.monotonic() > grace_until:
            break
        time.sleep(_POLL_SECONDS)
    if any(launch_dir.glob("rank_*.interrupted")):
        name = signal.Signals(received[0]).name if received else "SIGTERM"
        return TrainingInterrupted(
            f"ember: {name} reached the workers; every rank stopped after the same step and the checkpoint "
            "was saved; run the script again with fit(..., ckpt_path='last') to resume"
        )
    return None


def _terminated_early(procs: list[_Worker], signum: int, failed: list[_Exit]) -> TrainingInterrupted:
    """A signal the supervisor forwarded reached ranks that could not yet stop cleanly (still starting up):
    that is a termination the user asked for, not a crash, so say so instead of 'rank 1 was killed'."""
    _kill_all(procs)
    name = signal.Signals(signum).name
    ranks = [str(e.rank) for e in sorted(failed, key=lambda e: e.rank)]
    who = f"rank {ranks[0]} was" if len(ranks) == 1 else f"ranks {', '.join(ranks)} were"
    return TrainingInterrupted(
        f"ember: {name} reached the workers before training could stop cleanly ({who} still starting "
        "up); all workers were stopped and no checkpoint was written; run the script again to start over or "
        "resume from an earlier checkpoint"
    )


def _failure(procs: list[_Worker], failed: list[_Exit], exits: dict[int, _Exit]) -> WorkerError:
    """Stop everyone, then name the rank that failed first (not one that failed because a peer went away)."""
    _kill_all(procs)
    root = min(failed, key=lambda e: (e.seen_at, e.secondary, e.code > 0, e.rank))
    stopped = len(procs) - 1
    message = f"{root.describe()}; ember stopped the other {stopped} worker{'s' if stopped != 1 else ''}"
    if root.error.strip():
        message += f"\n--- traceback of rank {root.rank} ---\n{root.error.rstrip()}"
    return WorkerError(message)


def _kill_all(procs: list[_Worker]) -> None:
    """SIGKILL each worker's whole process group (its DataLoader workers too) and reap it."""
    for proc in procs:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
    for proc in procs:
        with contextlib.suppress(Exception):
            proc.wait(timeout=10)


class Launcher:
    """What the Trainer calls before a run: start workers here, or (in a worker) pick the checkpoint.

    In the launching process, `prepare` runs the workers and never returns normally: it exits
    with their status (the script ran on the workers, like under torchrun) or raises WorkerError.
    """

    def __init__(self, num_processes: int, max_failures: int = 0) -> None:
        self.num_processes, self.max_failures = num_processes, max_failures

    def prepare(self, stage: str, ckpt_path: Any) -> Any:
        if env_is_distributed():
            restarted = int(
                os.environ.get("EMBER_RESTART_COUNT", os.environ.get("TORCHELASTIC_RESTART_COUNT", 0))
            )
            return "last" if restarted and stage == "fit" and ckpt_path is None else ckpt_path
        run_workers(
            script_command(), self.num_processes, max_failures=self.max_failures, preload=RANK_PRELOAD
        )
        raise SystemExit(0)


# ---- the worker's side: what a rank tells the supervisor ------------------------------------------
def env_is_distributed() -> bool:
    """True inside a worker started by ember's launcher, torchrun, or a SLURM/MPI-style launcher."""
    return all(name in os.environ for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"))


#: Errors a rank raises only because a peer went away: never the root cause when another rank failed.
SECONDARY_MARKERS = (
    "Connection closed by peer",
    "Connection reset by peer",
    "DistBackendError",
    "Broken pipe",
    "NCCL communicator was aborted",
    "ProcessGroupGloo",
)


def is_secondary_failure(error_text: str) -> bool:
    """Does this traceback only say that a peer process disappeared?

    Example:
        >>> is_secondary_failure("RuntimeError: Connection closed by peer [127.0.0.1]:1234")
        True
    """
    return any(marker in error_text for marker in SECONDARY_MARKERS)


def _launch_dir() -> Path | None:
    where = os.environ.get("EMBER_LAUNCH_DIR")
    return Path(where) if where else None


def exception_line(error: BaseException) -> str:
    """`module.Type: first line of the message`: what a traceback's last line would be, without the C++
    stack frames some torch errors append to their message (their last line is `frame #27: ...`).

    Example:
        >>> exception_line(ValueError("bad value\\nException raised from foo at bar.cpp:1\\nframe #0: ..."))
        'ValueError: bad value'
    """
    kind = type(error)
    name = kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
    message = str(error).strip().splitlines()
    return f"{name}: {message[0]}" if message else name


def install_error_report() -> None:
    """Under ember's launcher, write an uncaught exception's traceback where the launcher reads it."""
    folder = _launch_dir()
    if folder is None or getattr(sys.excepthook, "_ember", False):
        return
    previous = sys.excepthook

    def report(kind: type[BaseException], value: BaseException, tb: Any) -> None:
        text = "".join(traceback.format_exception(kind, value, tb))
        rank = os.environ.get("RANK", "0")
        write_text(folder / f"rank_{rank}.err", text)
        write_text(folder / f"rank_{rank}.summary", exception_line(value))
        if is_secondary_failure(text):
            # Only a consequence of a peer failing: the launcher names that peer; one line here, not a wall.
            last = text.strip().splitlines()[-1]
            print(
                f"ember: rank {rank} stopped because a peer process went away ({last[:160]})", file=sys.stderr
            )
            return
        previous(kind, value, tb)

    report._ember = True  # type: ignore[attr-defined]
    sys.excepthook = report


def mark_interrupted() -> None:
    """Tell ember's launcher that this rank stops on an agreed signal (not a failure)."""
    folder = _launch_dir()
    if folder is not None:
        write_text(folder / f"rank_{os.environ.get('RANK', '0')}.interrupted", "")
