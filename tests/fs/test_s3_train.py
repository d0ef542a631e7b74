"""TorchTrainer with RunConfig(storage_path="s3://..."): the run folder is uploaded to the store as it
goes, and a later fit with the same name resumes from the checkpoint the store holds."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from _s3 import keys, s3_client

RAY_CHECKPOINT_NAME = re.compile(r"checkpoint_\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d\.\d{6}")  # Ray 2.60's default

SCRIPT = Path(__file__).parent / "scripts" / "train_to_storage.py"
REPO = Path(__file__).resolve().parents[2]


def run(storage: str, epochs: int, cwd: Path) -> dict:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), storage, str(epochs)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_storage_path_on_s3_holds_the_run_and_resumes_from_it(bucket, tmp_path):
    first = run(f"s3://{bucket}/results", 2, tmp_path)
    assert first["path"] == f"s3://{bucket}/results/exp"
    stored = keys(bucket, "results/exp/")
    lines = (
        s3_client()
        .get_object(Bucket=bucket, Key="results/exp/result.json")["Body"]
        .read()
        .decode()
        .splitlines()
    )
    names = [json.loads(line)["checkpoint"] for line in lines]
    assert len(names) == 2 and all(RAY_CHECKPOINT_NAME.fullmatch(name) for name in names), (
        names
    )  # Ray's names
    assert stored == [
        f"results/exp/{names[0]}/state.pt",
        f"results/exp/{names[1]}/state.pt",
        "results/exp/result.json",
        "results/exp/trainer.json",
    ], stored

    resumed = run(f"s3://{bucket}/results", 4, tmp_path)  # a new machine would see only the store
    assert resumed["metrics"]["epoch"] == 3
    lines = (
        s3_client()
        .get_object(Bucket=bucket, Key="results/exp/result.json")["Body"]
        .read()
        .decode()
        .splitlines()
    )
    last = json.loads(lines[-1])["checkpoint"]
    assert len(lines) == 4 and last not in names
    assert [k for k in keys(bucket, "results/exp/") if k.endswith("state.pt")][
        -1
    ] == f"results/exp/{last}/state.pt"
    straight = run(str(tmp_path / "local"), 4, tmp_path)
    assert resumed["weights"] == straight["weights"]  # exactly the uninterrupted run's weights
