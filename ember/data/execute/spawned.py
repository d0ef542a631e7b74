"""A pool worker started as a fresh process, for a process where Ray runs: Ray's sockets must not be forked.

Ray's core worker (in a driver after ``ray.init``, and in every Ray task and actor) talks to its raylet
and GCS over sockets shared by nothing else. A forked child holds copies of them, and any byte it
sends or reads there interleaves with the parent's messages: Ray documents forking in Ray application
code as an anti-pattern ("use the spawn method"), and here a fork of a Ray driver crashed its raylet
with a malformed worker-lease request. So where Ray is initialized, `WorkerPool` starts each worker as
``python -m ember.data.execute.spawned_worker FD`` instead of forking it: the pipe to the pool travels
as the inherited descriptor FD, and the job (the handler factory) comes on stdin, packed by
`ember.class_path.pack_job` as TorchTrainer's local workers receive theirs. The user's script is never
run again (multiprocessing's spawn would re-import it).

`SpawnedProcess` has the few members of ``multiprocessing.Process`` the pool uses (``start``,
``pid``, ``sentinel``, ``is_alive``, ``kill``, ``join``, ``exitcode``).

Example:
    >>> ray_runs_here()  # doctest: +SKIP
    False
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

from ember.class_path import pack_job, unpack_job


def ray_runs_here() -> bool:
    """Is Ray's core worker running in this process (a driver after ``ray.init``, a Ray task or actor)?"""
    ray = sys.modules.get("ray")  # never import Ray just to ask
    return bool(ray is not None and getattr(ray, "is_initialized", lambda: False)())


class SpawnedProcess:
    """``target(conn, *args)`` in a fresh interpreter; ``conn`` (one end of a pipe) is inherited as a
    descriptor, ``target`` and ``args`` travel with cloudpickle."""

    def __init__(self, target: Callable[..., Any], conn: Any, args: tuple[Any, ...]) -> None:
        self._fd = conn.fileno()
        self._job = pack_job((target, args))
        self._popen: subprocess.Popen[bytes] | None = None
        self.sentinel = -1

    def start(self) -> None:
        # under `python -m ember script.py` the worker starts through the runner too, so the names the
        # job refers to (ray.data, lightning...) map as they did in the driver
        runner = ["-m", "ember"] if os.environ.get("EMBER_RUNNER") == "1" else []
        # the sentinel: a pipe whose only writer is the worker, so it reads as ended (EOF) once the worker
        # has exited, as multiprocessing's own sentinels do
        self.sentinel, held_by_worker = os.pipe()
        try:
            self._popen = subprocess.Popen(
                [sys.executable, *runner, "-m", "ember.data.execute.spawned_worker", str(self._fd)],
                stdin=subprocess.PIPE,
                pass_fds=(self._fd, held_by_worker),
            )
        finally:
            os.close(held_by_worker)
        assert self._popen.stdin is not None
        try:
            with self._popen.stdin:
                self._popen.stdin.write(self._job)
        except BrokenPipeError:  # it ended before reading its job: the pool sees it end and says how
            pass

    @property
    def pid(self) -> int | None:
        return None if self._popen is None else self._popen.pid

    @property
    def exitcode(self) -> int | None:
        return None if self._popen is None else self._popen.poll()

    def is_alive(self) -> bool:
        return self._popen is not None and self._popen.poll() is None

    def kill(self) -> None:
        if self.is_alive():
            assert self._popen is not None
            self._popen.kill()

    def join(self, timeout: float | None = None) -> None:
        if self._popen is None:
            return
        try:
            self._popen.wait(timeout)
        except subprocess.TimeoutExpired:
            return
        if self.sentinel >= 0:
            os.close(self.sentinel)
            self.sentinel = -1


def main(argv: list[str]) -> None:
    """The worker: read the job from stdin, then run it on the pipe at descriptor ``argv[0]``."""
    import multiprocessing.connection

    target, args = unpack_job(sys.stdin.buffer)
    target(multiprocessing.connection.Connection(int(argv[0])), *args)
