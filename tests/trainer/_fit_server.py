"""Runs of _fit_script.py for the kill-and-resume tests (test_resume.py, test_trust_signals.py), forked from
one process that imported torch (with torch._dynamo, which torch.optim imports) and ember once: see
tests/_fork_server.py. Each run is still a process of its own, killed, signalled and resumed for real;
only the ~4.5 s of imports per run (~25 runs) is not repeated."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests._fork_server import Forked, ForkServer

SCRIPT = Path(__file__).parent / "_fit_script.py"
# what a run imports (torch.utils.tensorboard for the default logger), found by listing sys.modules after one
PRELOAD = [
    "torch",
    "torch._dynamo",
    "numpy",
    "ember",
    "ember.trainer",
    "ember.module",
    "ember.checkpoint",
    "ember.callbacks",
    "ember.loggers",
    "ember.profilers",
    "torch.utils.tensorboard",
    "torch.utils.tensorboard.summary",
]

__all__ = ["SCRIPT", "FitServer", "Forked"]


class FitServer(ForkServer):
    """`start(args...)` / `run(args..., timeout=...)`: `python _fit_script.py ARGS...` as a forked run."""

    def __init__(self, folder: Path, env: dict[str, str]) -> None:
        super().__init__(folder, env, PRELOAD)

    def start(self, *args: str) -> Forked:
        return super().start(str(SCRIPT), *args)

    def run(self, *args: str, timeout: float) -> subprocess.CompletedProcess:
        return super().run(str(SCRIPT), *args, timeout=timeout)
