"""TorchTrainer's local mirror of an object-store run folder writes only inside its working copy: a key such
as ``exp/../../escape.txt`` planted in the bucket is skipped with one line, and every later fit still runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _s3 import keys, s3_client

SCRIPT = Path(__file__).parent / "scripts" / "train_tiny_run.py"
REPO = Path(__file__).resolve().parents[2]


def run(storage: str, epochs: int, tmp: Path) -> subprocess.CompletedProcess:
    # the local working copy is made under TMPDIR: tmp/a/b/ember-train-*, so ../../ lands in tmp/a
    (tmp / "a" / "b").mkdir(parents=True, exist_ok=True)
    return subprocess.run(
        [sys.executable, str(SCRIPT), storage, str(epochs)],
        cwd=tmp,
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(tmp / "a" / "b")},
    )


@pytest.mark.slow  # two TorchTrainer fits against the moto server
@pytest.mark.timeout(300)
def test_a_planted_dotdot_key_is_never_mirrored_outside_the_working_copy(bucket, tmp_path):
    storage = f"s3://{bucket}/results"
    planted = ["results/exp/../../escape.txt", "results/exp/../escape.txt", "results/exp//abs/escape.txt"]
    for key in planted:
        s3_client().put_object(Bucket=bucket, Key=key, Body=b"payload")
    for epochs in (1, 2):  # the planted key crashed every later fit before
        done = run(storage, epochs, tmp_path)
        assert done.returncode == 0, done.stderr[-3000:]
        assert json.loads(done.stdout.strip().splitlines()[-1])["metrics"]["epoch"] == epochs - 1
        assert "results/exp/../../escape.txt: not mirrored: '../../escape.txt' leaves its root" in done.stderr
    assert not [p for p in tmp_path.rglob("escape.txt")], "a planted key was written outside the working copy"
    assert not Path("/escape.txt").exists() and not Path("/abs/escape.txt").exists()
    stored = keys(bucket, "results/")
    assert set(planted) <= set(stored)  # ember never deletes what it did not write
    assert "results/exp/result.json" in stored
