"""Pool workers for a process where Ray runs: Ray's sockets must not be forked, so workers are forked from
a fresh interpreter instead.

Ray's core worker (in a driver after ``ray.init``, and in every Ray task and actor) talks to its raylet
and GCS over sockets shared by nothing else. A forked child holds copies of them, and any byte it
sends or reads there interleaves with the parent's messages: Ray documents forking in Ray application
code as an anti-pattern ("use the spawn method"), and here a fork of a Ray driver crashed its raylet
with a malformed worker-lease request. So where Ray is initialized, `WorkerPool`'s workers come from a
*zygote*: one fresh interpreter per process (``python -m ember.data.execute.spawned_worker SOCKET PID``),
that has imported ember.data's worker code once and holds nothing of Ray, started for the first such
worker and ended after the last has ended. Each worker is a fork of it, so N workers running at once (the
pools of one execution) cost one interpreter start and N forks, not N interpreter starts (~0.5 CPU-s
each, and whatever the job's own modules import).

For each worker the zygote receives, over a Unix socket, the worker's descriptors (its end of the pipe
to the pool, the sentinel's writing end, a pipe carrying the job, this process's stdout and stderr) and
this process's environment and folder; the job itself (the handler factory, packed by
`ember.class_path.pack_job` as TorchTrainer's local workers receive theirs) travels through its pipe
to the worker, never through the zygote. The user's script is never run again (multiprocessing's spawn
and forkserver would re-import it). The zygote reaps its workers and answers for their exit codes; it
ends when this process closes the socket (after the last worker, or at exit) or when the thread that
started it ends (PR_SET_PDEATHSIG), and its workers with it.

`SpawnedProcess` has the few members of ``multiprocessing.Process`` the pool uses (``start``,
``pid``, ``sentinel``, ``is_alive``, ``kill``, ``join``, ``exitcode``).

Example:
    >>> ray_runs_here()  # doctest: +SKIP
    False
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from ember.class_path import pack_job, unpack_job

#: The largest request the zygote reads in one message (environment included).
_MESSAGE_BYTES = 1 << 20
_PR_SET_PDEATHSIG = 1
#: The descriptors a start request carries, in this order.
_START_FDS = ("conn", "sentinel", "job", "stdout", "stderr")


def _load_prctl() -> Callable[..., int] | None:
    """libc's prctl, looked up here in the parent: in a forked child, loading a library takes the
    dynamic loader's lock, which another thread may have held at the moment of the fork."""
    try:
        return ctypes.CDLL("libc.so.6", use_errno=True).prctl
    except (OSError, AttributeError):  # not Linux: the end of its pipe or socket still ends a process
        return None


_PRCTL = _load_prctl()


def die_with_parent() -> None:
    """Have this process SIGKILLed when the thread that started it ends (PR_SET_PDEATHSIG; Linux only)."""
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, signal.SIGKILL)


def ray_runs_here() -> bool:
    """Is Ray's core worker running in this process (a driver after ``ray.init``, a Ray task or actor)?"""
    ray = sys.modules.get("ray")  # never import Ray just to ask
    return bool(ray is not None and getattr(ray, "is_initialized", lambda: False)())


class _Zygote:
    """This process's zygote while it has workers: started for the first, ended after the last has ended
    (so no process of ember's outlives its pools), started again after this process forked."""

    _lock = threading.Lock()
    _current: _Zygote | None = None

    @classmethod
    def acquire(cls) -> _Zygote:
        """The zygote to fork one more worker from (counted until `release`)."""
        with cls._lock:
            zygote = cls._current
            if zygote is None or zygote.owner != os.getpid() or zygote.process.poll() is not None:
                cls._current = zygote = cls()
            zygote.workers += 1
            return zygote

    def release(self) -> None:
        """One of its workers has ended; after the last, the zygote ends too."""
        with self._lock:
            self.workers -= 1
            if self.workers > 0 or self.owner != os.getpid():
                return
            if _Zygote._current is self:
                _Zygote._current = None
        self.socket.close()  # the zygote reads the end of its requests and exits
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def __init__(self) -> None:
        self.owner, self.workers = os.getpid(), 0
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        # under `python -m ember script.py` the zygote starts through the runner too, so the names a job
        # refers to (ray.data, lightning...) map in its workers as they did here
        runner = ["-m", "ember"] if os.environ.get("EMBER_RUNNER") == "1" else []
        with theirs:
            self.process = subprocess.Popen(
                [sys.executable, *runner, "-m", "ember.data.execute.spawned_worker"]
                + [str(theirs.fileno()), str(os.getpid())],
                stdin=subprocess.DEVNULL,
                pass_fds=(theirs.fileno(),),
            )
        self.socket, self.talking = ours, threading.Lock()

    def ask(self, request: dict[str, Any], fds: list[int] | None = None) -> Any:
        """Send one request (with `fds`) and return the zygote's answer."""
        message = json.dumps(request).encode()
        with self.talking:  # one question and its answer at a time (pools ask from several threads)
            socket.send_fds(self.socket, [message], fds or [])
            answer = self.socket.recv(_MESSAGE_BYTES)
        if not answer:
            raise OSError(f"ember.data's worker zygote (pid {self.process.pid}) ended")
        return json.loads(answer)["answer"]


class SpawnedProcess:
    """``target(conn, *args)`` in a worker forked from the zygote; ``conn`` (one end of a pipe) is passed as
    a descriptor, ``target`` and ``args`` travel with cloudpickle."""

    def __init__(self, target: Callable[..., Any], conn: Any, args: tuple[Any, ...]) -> None:
        self._fd = conn.fileno()
        self._job = pack_job((target, args))
        self._zygote: _Zygote | None = None
        self._exitcode: int | None = None
        self.pid: int | None = None
        self.sentinel = -1

    def start(self) -> None:
        # the sentinel: a pipe whose only writer is the worker, so it reads as ended (EOF) once the worker
        # has exited, as multiprocessing's own sentinels do
        self.sentinel, held_by_worker = os.pipe()
        job_read, job_write = os.pipe()
        try:
            self._zygote = _Zygote.acquire()
            request = {"start": {"env": dict(os.environ), "cwd": os.getcwd()}}
            fds = [self._fd, held_by_worker, job_read, 1, 2]  # stdout and stderr as they are now
            self.pid = self._zygote.ask(request, fds)
        finally:
            os.close(held_by_worker)
            os.close(job_read)
        try:  # through the pipe, not a file: nothing of it is ever on disk
            view = memoryview(self._job)
            while view:
                view = view[os.write(job_write, view) :]
        except BrokenPipeError:  # it ended before reading its job: the pool sees it end and says how
            pass
        finally:
            os.close(job_write)

    @property
    def exitcode(self) -> int | None:
        if self._exitcode is None and self._zygote is not None and self.pid is not None:
            try:
                self._exitcode = self._zygote.ask({"poll": self.pid})
            except OSError:  # the zygote ended, and its workers with it (PR_SET_PDEATHSIG)
                self._exitcode = -signal.SIGKILL
            if self._exitcode is not None:
                self._zygote.release()
        return self._exitcode

    def is_alive(self) -> bool:
        return self.pid is not None and self.exitcode is None

    def kill(self) -> None:
        if self.is_alive():
            assert self._zygote is not None
            with contextlib.suppress(OSError):  # (a zygote that ended took its workers with it)
                self._zygote.ask({"kill": self.pid})  # it knows whether the pid is still its worker's

    def join(self, timeout: float | None = None) -> None:
        if self.pid is None:
            return
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.exitcode is None:  # the sentinel ends first; the exit code follows within moments
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return
            if self.sentinel >= 0:
                select.select([self.sentinel], [], [], 0.05 if left is None else min(left, 0.05))
            else:
                time.sleep(0.01)
        if self.sentinel >= 0:
            os.close(self.sentinel)
            self.sentinel = -1


# ---- the zygote's side -----------------------------------------------------------------------------
def main(argv: list[str]) -> None:
    """The zygote: fork one worker per request on the socket at descriptor ``argv[0]`` until it closes.
    ``argv[1]``: the pid of the process it serves (if that is gone already, nothing to serve)."""
    # the workers' code (ember.data.execute.pool) came with ember.data, imported once for all of them
    die_with_parent()
    if os.getppid() != int(argv[1]):
        return
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the driver's to handle
    requests = socket.socket(fileno=int(argv[0]))
    workers: set[int] = set()  # started and not yet reaped: only these may be killed
    exited: dict[int, int] = {}  # reaped, exit code not yet asked for
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(requests, _MESSAGE_BYTES, len(_START_FDS))
        except OSError:
            return
        if not message:
            return
        request = json.loads(message)
        if "start" in request:
            pid = os.fork()
            if pid == 0:
                requests.close()
                _become_worker(request["start"], dict(zip(_START_FDS, fds, strict=True)))
            for fd in fds:
                os.close(fd)
            workers.add(pid)
            answer: Any = pid
        else:
            _reap(workers, exited)
            pid = request.get("poll", request.get("kill"))
            if "kill" in request and pid in workers:
                os.kill(pid, signal.SIGKILL)
            answer = exited.pop(pid, None) if "poll" in request else None
        requests.send(json.dumps({"answer": answer}).encode())


def _reap(workers: set[int], exited: dict[int, int]) -> None:
    """Collect every worker that has ended (no zombies are left waiting for a question)."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        workers.discard(pid)
        exited[pid] = os.waitstatus_to_exitcode(status)


def _become_worker(start: dict[str, Any], fds: dict[str, int]) -> None:
    """In the forked worker: the driver's stdio, environment and folder, then the job; never returns."""
    code = 1
    try:
        os.dup2(fds.pop("stdout"), 1)
        os.dup2(fds.pop("stderr"), 2)
        os.environ.clear()
        os.environ.update(start["env"])
        os.chdir(start["cwd"])
        with open(fds.pop("job"), "rb") as job:
            target, args = unpack_job(job)
        import multiprocessing.connection

        target(multiprocessing.connection.Connection(fds["conn"]), *args)
        code = 0
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
