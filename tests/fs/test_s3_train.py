"""TorchTrainer with RunConfig(storage_path="s3://..."): the run folder is uploaded to the store as it
goes, and a later fit with the same name resumes from the checkpoint the store holds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _s3 import keys, s3_client

SCRIPT = Path(__file__).parent / "scripts" / "train_to_storage.py"
REPO = Path(__file__).resolve().parents[2]


def run(storage: str, epochs: int, cwd: Path) -> dict:
    done = subprocess.run([sys.executable, str(SCRIPT), storage, str(epochs)], cwd=cwd, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_storage_path_on_s3_holds_the_run_and_resumes_from_it(bucket, tmp_path):
    first = run(f"s3://{bucket}/results", 2, tmp_path)
    assert first["path"] == f"s3://{bucket}/results/exp"
    stored = keys(bucket, "results/exp/")
    assert stored == ["results/exp/checkpoint_000000/state.pt", "results/exp/checkpoint_000001/state.pt",
                      "results/exp/result.json", "results/exp/trainer.json"], stored
    lines = s3_client().get_object(Bucket=bucket, Key="results/exp/result.json")["Body"].read().decode().splitlines()
    assert [json.loads(line)["checkpoint"] for line in lines] == ["checkpoint_000000", "checkpoint_000001"]

    resumed = run(f"s3://{bucket}/results", 4, tmp_path)  # a new machine would see only the store
    assert resumed["metrics"]["epoch"] == 3
    assert [k for k in keys(bucket, "results/exp/") if k.endswith("state.pt")][-1] == "results/exp/checkpoint_000003/state.pt"
    straight = run(str(tmp_path / "local"), 4, tmp_path)
    assert resumed["weights"] == straight["weights"]  # exactly the uninterrupted run's weights
