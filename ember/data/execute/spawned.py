"""Pool workers for a process where Ray runs: Ray's sockets must not be forked, so workers are forked from
a fresh interpreter instead.

Ray's core worker (in a driver after ``ray.init``, and in every Ray task and actor) talks to its raylet
and GCS over sockets shared by nothing else. A forked child holds copies of them, and any byte it
sends or reads there interleaves with the parent's messages: Ray documents forking in Ray application
code as an anti-pattern ("use the spawn method"), and here a fork of a Ray driver crashed its raylet
with a malformed worker-lease request. So where Ray is initialized, `WorkerPool`'s workers come from a
*zygote* (``ember.processes.zygote``, as TorchTrainer's local workers): one fresh interpreter per process
that has imported ember.data once and holds nothing of Ray, started for the first such worker and ended
after the last has ended. Each worker is a fork of it, so N workers running at once (the
pools of one execution) cost one interpreter start and N forks, not N interpreter starts (~0.5 CPU-s
each, and whatever the job's own modules import).

For each worker the zygote receives, over a Unix socket, the worker's descriptors (its end of the pipe
to the pool, the sentinel's writing end, a pipe carrying the job, this process's stdout and stderr) and
this process's environment and folder, and the worker runs ``ember.data.execute.spawned_worker``; the job
itself (the handler factory, packed by
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

import os
import select
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from ember.class_path import pack_job
from ember.processes.zygote import Zygote, ZygoteChild


def ray_runs_here() -> bool:
    """Is Ray's core worker running in this process (a driver after ``ray.init``, a Ray task or actor)?"""
    ray = sys.modules.get("ray")  # never import Ray just to ask
    return bool(ray is not None and getattr(ray, "is_initialized", lambda: False)())


class _Shared:
    """This process's zygote while it has pool workers: started for the first, ended after the last has
    ended (so no process of ember's outlives its pools), started again after this process forked."""

    _lock = threading.Lock()
    _current: Zygote | None = None
    _workers = 0

    @classmethod
    def acquire(cls) -> Zygote:
        """The zygote to fork one more worker from (counted until `release`)."""
        with cls._lock:
            zygote = cls._current
            if zygote is None or not zygote.alive():
                # under `python -m ember script.py` the zygote starts through the runner too, so the names
                # a job refers to (ray.data, lightning...) map in its workers as they did here
                runner = os.environ.get("EMBER_RUNNER") == "1"
                cls._current = zygote = Zygote(preload=("ember.data",), through_runner=runner)
                cls._workers = 0
            cls._workers += 1
            return zygote

    @classmethod
    def release(cls, zygote: Zygote) -> None:
        """One of its workers has ended; after the last, the zygote ends too."""
        with cls._lock:
            if zygote is not cls._current:  # a zygote of before a fork, or one that ended and was replaced
                return
            cls._workers -= 1
            if cls._workers > 0:
                return
            cls._current = None
        zygote.close()


class SpawnedProcess:
    """``target(conn, *args)`` in a worker forked from the zygote; ``conn`` (one end of a pipe) is passed as
    a descriptor, ``target`` and ``args`` travel with cloudpickle."""

    def __init__(self, target: Callable[..., Any], conn: Any, args: tuple[Any, ...]) -> None:
        self._fd = conn.fileno()
        self._job = pack_job((target, args))
        self._child: ZygoteChild | None = None
        self._exitcode: int | None = None
        self.pid: int | None = None
        self.sentinel = -1

    def start(self) -> None:
        # the sentinel: a pipe whose only writer is the worker, so it reads as ended (EOF) once the worker
        # has exited, as multiprocessing's own sentinels do
        self.sentinel, held_by_worker = os.pipe()
        job_read, job_write = os.pipe()
        try:
            zygote = _Shared.acquire()
            fds = {"conn": self._fd, "sentinel": held_by_worker, "job": job_read, "stdout": 1, "stderr": 2}
            self._child = zygote.start(
                "ember.data.execute.spawned_worker",
                ["{conn}", "{job}"],
                env=os.environ,
                cwd=os.getcwd(),
                fds=fds,  # stdout and stderr as they are now
            )
            self.pid = self._child.pid
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
        if self._exitcode is None and self._child is not None:
            self._exitcode = self._child.poll()  # (-SIGKILL once its zygote has ended: it took them along)
            if self._exitcode is not None:
                _Shared.release(self._child.zygote)
        return self._exitcode

    def is_alive(self) -> bool:
        return self.pid is not None and self.exitcode is None

    def kill(self) -> None:
        if self.is_alive():
            assert self._child is not None
            self._child.kill()  # the zygote knows whether the pid is still its worker's

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
