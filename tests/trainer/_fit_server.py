"""Start many runs of _fit_script.py as real processes without importing torch and ember in each of them.

The kill-and-resume tests (test_resume.py, test_trust_signals.py) start _fit_script.py ~25 times; each
`python _fit_script.py ...` spends ~4.5 s of CPU importing torch (and torch._dynamo, which torch.optim
imports) before its half second of training. This server imports all that once, then forks one child per run:
each child is a real process of its own (its own PID, files, signals; a SIGKILL kills it and nothing else)
that sets `sys.argv` and runs `_fit_script.main()` as the script's `__main__` would, then leaves as a script
does (the interpreter's own exit: exit code, traceback on stderr, atexit). Its stdin is /dev/null and its
stdout and stderr are files, as with `subprocess.run(..., capture_output=True)`. The environment is the one
the tests gave their subprocesses (PYTHONHASHSEED=0, OMP_NUM_THREADS=1), set when the server starts.

Protocol (one JSON line each way): {"start": [ARGS...], "stdout": PATH, "stderr": PATH} -> {"pid": N};
{"poll": N} -> {"returncode": CODE or null} (reaps the child once it has ended).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).parent
SCRIPT = HERE / "_fit_script.py"


def serve() -> dict | None:
    """Answer requests until stdin closes (returns None); in a forked child, return its request."""
    sys.path.insert(0, str(HERE))
    import _fit_script  # noqa: F401 - and with it torch, numpy, ember and _models
    import torch._dynamo  # noqa: F401 - imported by torch.optim on a run's first step: once, here

    import ember.checkpoint  # noqa: F401
    import ember.loggers  # noqa: F401

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
    """In the forked child: stdin /dev/null, stdout and stderr to the request's files, the script's argv."""
    for fd, path, flags in (
        (0, os.devnull, os.O_RDONLY),
        (1, request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
        (2, request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
    ):
        opened = os.open(path, flags, 0o644)
        os.dup2(opened, fd)
        os.close(opened)
    sys.argv = [str(SCRIPT), *request["start"]]
    import _fit_script

    _fit_script.main()


class FitServer:
    """The test side: `start(args...)` gives a Popen-like handle on a forked run of _fit_script.py."""

    def __init__(self, folder: Path, env: dict[str, str]) -> None:
        self.folder, self.runs = folder, 0
        self.process = subprocess.Popen(
            [sys.executable, str(Path(__file__))],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )

    def ask(self, **request) -> dict:
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        assert line, f"the fit server ended (exit code {self.process.wait()})"
        return json.loads(line)

    def start(self, *args: str) -> Forked:
        self.runs += 1
        out, err = self.folder / f"{self.runs}.out", self.folder / f"{self.runs}.err"
        out.touch()  # there from the start, as a pipe would be
        err.touch()
        pid = self.ask(start=list(args), stdout=str(out), stderr=str(err))["pid"]
        return Forked(self, pid, out, err)

    def run(self, *args: str, timeout: float = 180) -> subprocess.CompletedProcess:
        """As subprocess.run([python, _fit_script.py, *args], capture_output=True, text=True, timeout=...)."""
        child = self.start(*args)
        out, err = child.communicate(timeout=timeout)
        return subprocess.CompletedProcess([str(SCRIPT), *args], child.returncode, out, err)

    def close(self) -> None:
        self.process.stdin.close()
        self.process.stdout.close()
        self.process.wait(timeout=60)


class Forked:
    """A run started by the server, with the parts of subprocess.Popen the tests use."""

    def __init__(self, server: FitServer, pid: int, out: Path, err: Path) -> None:
        self.server, self.pid, self.out, self.err = server, pid, out, err
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self.server.ask(poll=self.pid)["returncode"]
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(str(SCRIPT), timeout)
            time.sleep(0.01)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(9)

    def stdout_text(self) -> str:
        return self.out.read_text()

    def communicate(self, timeout: float | None = None) -> tuple[str, str]:
        self.wait(timeout)
        return self.out.read_text(), self.err.read_text()


if __name__ == "__main__":
    child_request = serve()
    if child_request is not None:
        become_the_script(child_request)
