"""Start many runs of a Python script as real processes without importing torch and ember in each of them.

Tests that run a script many times (`python main.py ...`, the kill-and-resume runs of
tests/trainer/_fit_script.py, the ranks of tests/distributed's scripts) spend most of each run's CPU
importing torch (~2.5 s, and torch._dynamo, which torch.optim imports on its first step, ~2 s more) before a
fraction of a second of work. This server imports the given modules once, then forks one child per run.
Each child is a real process of its own (its own PID, files and signals; a SIGKILL kills it and nothing
else) that does what `python SCRIPT ARGS...` does after start-up: the script's folder first on sys.path,
`sys.argv = [SCRIPT, *ARGS]` and `sys.orig_argv` as that command's (what ember's launcher re-runs), the
script run as `__main__` (runpy), then the interpreter's own exit (exit code, traceback on stderr, atexit);
with "session" it leads a new session (as `start_new_session=True`: a test can kill its process group).
Its stdin is /dev/null, its stdout and stderr are files (as with `subprocess.run(..., capture_output=True)`),
its working folder and environment are the request's (the environment the server started with, plus the
request's changes: variables read at start-up by the interpreter, such as PYTHONPATH or PYTHONHASHSEED, are
the server's).

Protocol (one JSON line each way): {"start": [SCRIPT, ARGS...], "stdout": PATH, "stderr": PATH, "cwd": DIR,
"env": {NAME: VALUE or null}, "session": BOOL} -> {"pid": N}; {"poll": N} -> {"returncode": CODE or null}
(reaps the child once it has ended).
"""

from __future__ import annotations

import json
import os
import runpy
import subprocess
import sys
import time
from pathlib import Path


def serve(modules: list[str]) -> dict | None:
    """Import `modules`, then answer requests until stdin closes (returns None); in a forked child, return
    the child's request."""
    import importlib

    for module in modules:
        importlib.import_module(module)
    reply = sys.stdout
    for line in sys.stdin:
        request = json.loads(line)
        if "start" in request:
            pid = os.fork()
            if pid == 0:
                return request
            answer = {"pid": pid}
        else:
            pid, status = os.waitpid(request["poll"], os.WNOHANG)
            answer = {"returncode": None if pid == 0 else os.waitstatus_to_exitcode(status)}
        reply.write(json.dumps(answer) + "\n")
        reply.flush()
    return None


def become_the_script(request: dict) -> None:
    """In the forked child: the request's stdio, folder and environment, then the script as `__main__`."""
    if request.get("session"):
        os.setsid()
    for fd, path, flags in (
        (0, os.devnull, os.O_RDONLY),
        (1, request["stdout"], os.O_WRONLY | os.O_TRUNC),
        (2, request["stderr"], os.O_WRONLY | os.O_TRUNC),
    ):
        opened = os.open(path, flags)
        os.dup2(opened, fd)
        os.close(opened)
    if request.get("cwd"):
        os.chdir(request["cwd"])
    for name, value in (request.get("env") or {}).items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    script = os.path.abspath(request["start"][0])
    sys.argv = [request["start"][0], *request["start"][1:]]
    sys.orig_argv = [sys.executable, *request["start"]]
    sys.path[0] = os.path.dirname(script)  # (the server's own folder until now) as `python SCRIPT` does
    runpy.run_path(script, run_name="__main__")


class ForkServer:
    """The test side: `start(script, args...)` gives a Popen-like handle on a forked run of the script."""

    def __init__(
        self, folder: Path, env: dict[str, str], modules: list[str], cwd: Path | None = None
    ) -> None:
        self.folder, self.runs = folder, 0
        self.process = subprocess.Popen(
            [sys.executable, str(Path(__file__)), *modules],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd=cwd,
        )

    def ask(self, **request) -> dict:
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        assert line, f"the fork server ended (exit code {self.process.wait()})"
        return json.loads(line)

    def start(
        self,
        script: str,
        *args: str,
        cwd: Path | None = None,
        env: dict | None = None,
        session: bool = False,
    ) -> Forked:
        self.runs += 1
        out, err = self.folder / f"{self.runs}.out", self.folder / f"{self.runs}.err"
        out.touch()  # there from the start, as a pipe would be
        err.touch()
        request = {"start": [str(script), *map(str, args)], "stdout": str(out), "stderr": str(err)}
        pid = self.ask(**request, cwd=str(cwd) if cwd else None, env=env, session=session)["pid"]
        return Forked(self, pid, [str(script), *map(str, args)], out, err)

    def run(
        self, script: str, *args: str, timeout: float, cwd: Path | None = None, env: dict | None = None
    ) -> subprocess.CompletedProcess:
        """As subprocess.run([python, script, *args], capture_output=True, text=True, timeout=...)."""
        child = ForkServer.start(self, script, *args, cwd=cwd, env=env)
        out, err = child.communicate(timeout=timeout)
        return subprocess.CompletedProcess(child.args, child.returncode, out, err)

    def close(self) -> None:
        self.process.stdin.close()
        self.process.stdout.close()
        self.process.wait(timeout=60)


class Forked:
    """A run started by the server, with the parts of subprocess.Popen the tests use."""

    def __init__(self, server: ForkServer, pid: int, args: list[str], out: Path, err: Path) -> None:
        self.server, self.pid, self.args, self.out, self.err = server, pid, args, out, err
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self.server.ask(poll=self.pid)["returncode"]
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(self.args, timeout)
            time.sleep(0.01)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:  # not yet reaped: the pid is still this run's
            os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(9)

    def stdout_text(self) -> str:
        return self.out.read_text()

    def communicate(self, timeout: float | None = None) -> tuple[str, str]:
        self.wait(timeout)
        return self.out.read_text(), self.err.read_text()


if __name__ == "__main__":
    child_request = serve(sys.argv[1:])
    if child_request is not None:
        become_the_script(child_request)
