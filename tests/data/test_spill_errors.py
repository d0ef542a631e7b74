"""A spill that runs out of room (a full disk, a file-size limit) fails in one line naming the spill file,
and ember's spill folder is removed at once, so the disk gets its space back."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parent / "_spill_full_disk_script.py"
REPO = Path(__file__).resolve().parents[2]


def spill(scratch: Path, limit: int) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), str(scratch), str(limit)],
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


@pytest.mark.timeout(300)
def test_a_spill_past_the_file_size_limit_names_the_file_and_removes_its_folder(tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    (scratch / "user_file.txt").write_text("mine")
    done = spill(scratch, 1_000_000)
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"ember.errors.DataError: spilling to {scratch}/ember-spill."), last
    assert "failed (File too large); ember removed its spill folder" in last
    assert "set DataContext.scratch_dir to a folder with room" in last
    assert sorted(p.name for p in scratch.iterdir()) == [
        "user_file.txt"
    ]  # spill folder gone, the user's file kept


def test_a_spill_folder_that_cannot_be_made_is_one_line(tmp_path):
    import numpy as np

    import ember.data
    from ember.errors import DataError

    context = ember.data.DataContext.get_current()
    saved = context.memory_budget_bytes, context.scratch_dir
    context.memory_budget_bytes, context.scratch_dir = 1 << 20, str(tmp_path / "a_file")
    (tmp_path / "a_file").write_text("not a folder")
    try:
        ds = ember.data.from_numpy(np.arange(200_000, dtype=np.int64))
        with pytest.raises(
            DataError,
            match=r"^cannot make a spill folder in .*a_file \(Not a directory\); set "
            r"DataContext.scratch_dir to a writable folder with room",
        ):
            list(ds.random_shuffle(seed=1).iter_batches(batch_size=50_000))
    finally:
        context.memory_budget_bytes, context.scratch_dir = saved
    assert (tmp_path / "a_file").read_text() == "not a folder"
