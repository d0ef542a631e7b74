"""Resume exactness through ember.Trainer with a SIGKILLed training process.

The process kills itself (SIGKILL: no cleanup, no final checkpoint) at a chosen global step, is
restarted with ckpt_path="last", and the samples it trains on after the resume must be exactly the
ones the uninterrupted run trained on from that point: same batches, same order, once each. The runs are
forked from one process that imported torch and ember once (tests/_fork_server.py): each is still a process
of its own, killed and resumed for real.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests._fork_server import ForkServer

SCRIPT = os.path.join(os.path.dirname(__file__), "_trainer_resume_script.py")
BATCHES_PER_EPOCH, EPOCHS = 10, 2
# what a run imports, found by listing sys.modules after one
PRELOAD = ["torch", "torch._dynamo", "numpy", "ember", "ember.data", "ember.trainer", "ember.callbacks"]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    fork_server = ForkServer(tmp_path_factory.mktemp("fork_server"), env, PRELOAD)
    yield fork_server
    fork_server.close()


def run(server: ForkServer, root, log, kill_at: int) -> int:
    out = server.run(SCRIPT, str(root), str(log), str(kill_at), timeout=120)
    if out.returncode not in (0, -9):
        raise AssertionError(out.stderr[-3000:])
    return out.returncode


def logged(log) -> list[list[int]]:
    return [list(map(int, line.split())) for line in log.read_text().splitlines()]


@pytest.fixture(scope="module")
def reference(server, tmp_path_factory):
    root = tmp_path_factory.mktemp("reference")
    assert run(server, root / "ckpt", root / "log", -1) == 0
    batches = logged(root / "log")
    assert len(batches) == BATCHES_PER_EPOCH * EPOCHS
    for epoch in range(EPOCHS):
        seen = sum(batches[epoch * BATCHES_PER_EPOCH : (epoch + 1) * BATCHES_PER_EPOCH], [])
        assert sorted(seen) == list(range(40))  # each sample once per epoch
    assert batches[:BATCHES_PER_EPOCH] != batches[BATCHES_PER_EPOCH : 2 * BATCHES_PER_EPOCH]
    return batches


def test_sigkilled_training_resumes_exactly(server, reference, tmp_path):
    """Killed mid-epoch (3), on an epoch's last batch (9), at the epoch boundary (10) and mid-epoch
    again (14): four successive resumes, then a clean finish."""
    for kill_at in (3, BATCHES_PER_EPOCH - 1, BATCHES_PER_EPOCH, 14):
        assert run(server, tmp_path / "ckpt", tmp_path / "log", kill_at) == -9
        assert len(logged(tmp_path / "log")) == kill_at  # died before training on batch `kill_at`
        assert logged(tmp_path / "log") == reference[:kill_at]
    assert run(server, tmp_path / "ckpt", tmp_path / "log", -1) == 0
    assert logged(tmp_path / "log") == reference
