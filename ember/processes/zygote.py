"""A zygote: one fresh interpreter that imports what workers need once, then forks each worker from itself.

Starting a worker as a fresh interpreter (``python -m MODULE ...``) costs its imports every time: torch and
torch._dynamo alone are ~3.4 CPU-s, most of what a TorchTrainer worker with a short loop spends in its life.
A zygote pays them once: it is started as ``python -m ember.processes.zygote_main`` with the modules to
preload, and each worker is a fork of it that runs ``MODULE`` as ``__main__`` with its own arguments, as the
fresh interpreter would. Only the zygote is forked, never the caller: the caller may hold threads, Ray's
sockets or an OpenMP pool that a fork would copy in a broken state, while the zygote holds nothing but
imported modules (it runs no torch operation, so no thread pool exists when it forks).

What a worker gets, per request: its environment and working folder (the request's, not the zygote's; a
variable read while a module is imported, such as OMP_NUM_THREADS by the OpenMP runtime, is the zygote's,
so a caller starts one zygote per set of such values, see `Zygote.__init__`'s ``env``), its stdin, stdout
and stderr (the caller's descriptors at the moment of the request, passed over the socket), any other
descriptors it names (``{NAME}`` in its arguments becomes the descriptor's number in the worker), a session
of its own if asked (``start_new_session``: killing its process group kills it and its children), SIGKILL
when the zygote ends (PR_SET_PDEATHSIG), and the interpreter's own exit: the exit code of ``SystemExit``, a
traceback and 1 for an exception, atexit handlers run.

The zygote reaps its workers and answers for their exit codes (``poll``), and kills only a worker it has
not reaped (``kill``: no pid of another process is ever signalled). It ends when the caller closes the
socket (`Zygote.close`) or when the thread that started it ends, and its workers with it.

Example:
    >>> zygote = Zygote(preload=("torch",))  # doctest: +SKIP
    >>> process = zygote.start("json.tool", ["--help"], env=os.environ, cwd=".")  # doctest: +SKIP
    >>> process.wait()  # doctest: +SKIP
    0
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ember.class_path import preload_modules, run_user_script, run_worker_module

#: The largest request the zygote reads in one message (environment included).
MESSAGE_BYTES = 1 << 20
#: The most descriptors one request carries (stdin, stdout, stderr and the worker's own).
MAX_FDS = 8
_PR_SET_PDEATHSIG = 1
_STDIO = {"stdin": 0, "stdout": 1, "stderr": 2}


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


class Zygote:
    """A running zygote (the caller's side): `start` workers, ask their exit codes, `close` it."""

    def __init__(
        self, preload: Sequence[str], env: Mapping[str, str] | None = None, *, through_runner: bool = False
    ) -> None:
        """Start the zygote with `env` (default: this process's), importing `preload`. `through_runner`:
        start it as ``python -m ember ...`` so that imports map in its workers as under the zygote-free
        runner (``python -m ember script.py``)."""
        self.owner = os.getpid()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        runner = ["-m", "ember"] if through_runner else []
        with theirs:
            self.process = subprocess.Popen(
                [sys.executable, *runner, "-m", "ember.processes.zygote_main"]
                + [str(theirs.fileno()), str(os.getpid()), ",".join(preload)],
                stdin=subprocess.DEVNULL,
                pass_fds=(theirs.fileno(),),
                env=None if env is None else dict(env),
            )
        self.socket, self._talking = ours, threading.Lock()

    def start(
        self,
        module: str,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: str,
        fds: Mapping[str, int] | None = None,
        session: bool = False,
        script: bool = False,
    ) -> ZygoteChild:
        """Fork a worker that runs `module` as ``__main__`` with `argv` (``python -m MODULE ARGV``; with
        `script`, `module` is a script's path: ``python SCRIPT ARGV``). `fds`: descriptors of this process
        to hand over by name (``stdin``, ``stdout``, ``stderr`` become the worker's 0, 1, 2; any other name
        is written into `argv` where ``{NAME}`` stands); by default the worker gets this process's 0, 1, 2."""
        given = dict(fds) if fds is not None else {name: fd for name, fd in _STDIO.items() if _is_open(fd)}
        request = {
            "start": {
                "module": module,
                "script": script,
                "argv": list(argv),
                "env": dict(env),
                "cwd": cwd,
                "session": session,
                "fds": list(given),
            }
        }
        return ZygoteChild(self, self.ask(request, list(given.values())))

    def ask(self, request: dict[str, Any], fds: list[int] | None = None) -> Any:
        """Send one request (with `fds`) and return the zygote's answer; OSError once it has ended."""
        message = json.dumps(request).encode()
        with self._talking:  # one question and its answer at a time (callers ask from several threads)
            socket.send_fds(self.socket, [message], fds or [])
            answer = self.socket.recv(MESSAGE_BYTES)
        if not answer:
            raise OSError(f"ember's worker zygote (pid {self.process.pid}) ended")
        return json.loads(answer)["answer"]

    def alive(self) -> bool:
        return self.owner == os.getpid() and self.process.poll() is None

    def close(self) -> None:
        """End the zygote (its workers still running end with it) and reap it."""
        if self.owner != os.getpid():  # a fork of the caller: the zygote is the parent's to end
            return
        self.socket.close()  # the zygote reads the end of its requests and exits
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class ZygoteChild:
    """A worker forked by a zygote, with the members of ``subprocess.Popen`` a supervisor uses: ``pid``,
    ``returncode``, ``poll``, ``wait``. Its exit code comes from the zygote, which reaped it; a worker whose
    zygote has ended was killed with it (SIGKILL)."""

    def __init__(self, zygote: Zygote, pid: int) -> None:
        self.zygote, self.pid = zygote, pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                self.returncode = self.zygote.ask({"poll": self.pid})
            except OSError:
                self.returncode = -signal.SIGKILL
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"zygote worker {self.pid}", timeout or 0.0)
            time.sleep(0.01)
        assert self.returncode is not None
        return self.returncode

    def kill(self) -> None:
        """SIGKILL the worker if it is still the zygote's (not yet reaped)."""
        if self.poll() is None:
            with contextlib.suppress(OSError):  # (a zygote that ended took its workers with it)
                self.zygote.ask({"kill": self.pid})


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


# ---- the zygote's side -----------------------------------------------------------------------------
def serve(argv: list[str]) -> None:
    """The zygote: ``argv`` = SOCKET_FD CALLER_PID MODULE,MODULE...; import the modules, then fork one
    worker per request on the socket until it closes."""
    die_with_parent()
    if os.getppid() != int(argv[1]):  # the caller is gone already: nothing to serve
        return
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the caller's to handle
    preload_modules([name for name in argv[2].split(",") if name])
    requests = socket.socket(fileno=int(argv[0]))
    workers: set[int] = set()  # started and not yet reaped: only these may be killed
    exited: dict[int, int] = {}  # reaped, exit code not yet asked for
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(requests, MESSAGE_BYTES, MAX_FDS)
        except OSError:
            return
        if not message:
            return
        request = json.loads(message)
        if "start" in request:
            pid = os.fork()
            if pid == 0:
                requests.close()
                _become_worker(request["start"], dict(zip(request["start"]["fds"], fds, strict=True)))
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
    """In the forked worker: what the request gives it, then its module as ``__main__``; never returns."""
    code = 1
    try:
        die_with_parent()  # the zygote's end is its workers' end
        if start["session"]:
            os.setsid()
        signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a fresh interpreter
        for name, number in _STDIO.items():
            if name in fds:
                os.dup2(fds.pop(name), number)
        os.environ.clear()
        os.environ.update(start["env"])
        os.chdir(start["cwd"])
        argv = [arg.format(**fds) if "{" in arg else arg for arg in start["argv"]]
        code = _run_main(start["module"], argv, start["script"])
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        _exit(code)


def _run_main(main: str, argv: list[str], script: bool) -> int:
    """``python -m MAIN ARGV`` (or ``python MAIN ARGV``, a script) from here on: sys.argv, sys.orig_argv
    and sys.path[0] as that command sets them."""
    sys.argv = [main, *argv]
    sys.orig_argv = [sys.executable, *([] if script else ["-m"]), main, *argv]
    sys.path[0] = os.path.dirname(os.path.realpath(main)) if script else os.getcwd()
    try:
        if script:
            run_user_script(main)
        else:
            run_worker_module(main)
    except SystemExit as stop:
        if stop.code is None or isinstance(stop.code, int):
            return stop.code or 0
        print(stop.code, file=sys.stderr)
        return 1
    except BaseException as error:  # as the interpreter does: sys.excepthook (ember's error report too)
        sys.excepthook(type(error), error, error.__traceback__)
        return 1
    return 0


def _exit(code: int) -> None:
    """The end of an interpreter: atexit handlers, flushed output, the exit code (os._exit: the zygote's
    own state, copied by the fork, is not torn down twice)."""
    import atexit

    with contextlib.suppress(BaseException):
        atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(BaseException):
            stream.flush()
    os._exit(code)
