"""A TorchTrainer run folder's result.json is data ember reads back: a record naming a folder outside the
run (an absolute path, ``../..``) is never loaded or deleted, even by CheckpointConfig(num_to_keep=1)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[1] / "fs" / "scripts" / "train_tiny_run.py"
REPO = Path(__file__).resolve().parents[2]


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def user_folder(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "thesis.tex").write_text("years of work")
    return path


@pytest.mark.slow  # two TorchTrainer fits
@pytest.mark.timeout(240)
def test_restore_with_num_to_keep_never_deletes_folders_that_planted_records_name(tmp_path):
    storage = tmp_path / "runs"
    first = run(str(storage), "1", cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    run_dir = storage / "exp"
    absolute = user_folder(tmp_path / "home" / "abs_folder")
    relative = user_folder(tmp_path / "folder")  # run_dir / "../../folder"
    with open(run_dir / "result.json", "a") as f:
        for index, name in ((1, str(absolute)), (2, "../../folder")):
            f.write(json.dumps({"index": index, "metrics": {"epoch": 0}, "checkpoint": name}) + "\n")

    restored = run(str(storage), "3", "--restore", cwd=tmp_path)
    assert restored.returncode == 0, restored.stderr[-3000:]
    report = json.loads(restored.stdout.strip().splitlines()[-1])
    assert report["metrics"]["epoch"] == 2
    for folder in (absolute, relative):
        assert (folder / "thesis.tex").read_text() == "years of work"
    assert sorted(p.name for p in run_dir.glob("checkpoint_*")) == [
        report["checkpoint"]
    ]  # its own are pruned
    assert (
        f"names the checkpoint {str(absolute)!r}, which is "
        "not a checkpoint folder directly in this run folder"
    ) in restored.stderr
    assert "names the checkpoint '../../folder'" in restored.stderr
