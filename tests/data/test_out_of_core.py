"""Datasets larger than the memory budget: shuffle, sort and groupby spill to a scratch folder, the
process's memory stays bounded, and a SIGKILLed run's scratch is removed by the next run (only
ember's own, dead-owner folders)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ember.data
from ember.data.execute.spill import remove_stale_scratch

SCRIPT = str(Path(__file__).with_name("_out_of_core_script.py"))


def _write(folder: Path, rows: int, payload: int, rows_per_group: int = 2000) -> None:
    """``rows`` rows (id, key in [0, 1000), an incompressible payload) in files of 20 row groups."""
    folder.mkdir()
    rng = np.random.default_rng(0)
    per_file = rows_per_group * 20
    for start in range(0, rows, per_file):
        n = min(per_file, rows - start)
        table = pa.table(
            {
                "id": np.arange(start, start + n, dtype=np.int64),
                "key": rng.integers(0, 1000, n),
                "payload": pa.array([rng.bytes(payload) for _ in range(n)], pa.binary()),
            }
        )
        pq.write_table(
            table, folder / f"part-{start:09d}.parquet", row_group_size=rows_per_group, compression="none"
        )


def _tree_rss(pid: int) -> int:
    import psutil

    try:
        process = psutil.Process(pid)
        return sum(p.memory_info().rss for p in [process, *process.children(recursive=True)])
    except psutil.Error:
        return 0


@pytest.mark.slow
def test_300_mb_under_a_50_mb_budget_stays_bounded_and_exact(tmp_path):
    data, scratch = tmp_path / "data", tmp_path / "scratch"
    _write(data, rows=300_000, payload=1000)
    scratch.mkdir()
    child = subprocess.Popen(
        [sys.executable, SCRIPT, str(data), str(scratch), "50", "run"], stdout=subprocess.PIPE, text=True
    )
    imported = json.loads(child.stdout.readline())["imported_rss"]
    peak = 0
    while child.poll() is None:
        peak = max(peak, _tree_rss(child.pid))
        time.sleep(0.05)
    results = json.loads(child.stdout.read().strip().splitlines()[-1])
    assert child.returncode == 0
    assert results["shuffle_is_permutation"] and results["shuffle_moved"] and results["sorted"]
    assert results["group_rows"] == 300_000 and results["groups"] == 1000
    growth = max(peak, results["peak_rss"]) - imported
    # 300 MB of data held in memory would add >= 300 MB; bounded by the 50 MB budget it adds far less
    assert growth < 150 * 1024**2, (
        f"peak RSS grew {growth / 1e6:.0f} MB over the {imported / 1e6:.0f} MB after import"
    )
    assert list(scratch.iterdir()) == []


def test_sigkilled_runs_scratch_is_removed_by_the_next_run_and_nothing_else(tmp_path):
    data, scratch = tmp_path / "data", tmp_path / "scratch"
    _write(data, rows=4000, payload=500, rows_per_group=500)
    scratch.mkdir()
    child = subprocess.Popen(
        [sys.executable, SCRIPT, str(data), str(scratch), "1", "hang"], stdout=subprocess.PIPE, text=True
    )
    try:
        child.stdout.readline()
        assert json.loads(child.stdout.readline()) == {"inside": True}
        leftovers = [p.name for p in scratch.iterdir()]
        assert len(leftovers) == 1 and leftovers[0].startswith(f"ember-spill.{child.pid}.")
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    finally:
        if child.poll() is None:
            child.kill()
    assert (scratch / leftovers[0]).exists()  # a SIGKILL leaves it: no code runs in a killed process
    alive = scratch / f"ember-spill.{os.getpid()}.live"  # a running process's folder (ours)
    alive.mkdir()
    unrelated = scratch / "ember-spill-notes"  # a folder ember did not write
    unrelated.mkdir()
    ctx = ember.data.DataContext.get_current()
    saved = ctx.memory_budget_bytes, ctx.scratch_dir
    ctx.memory_budget_bytes, ctx.scratch_dir = 64 * 1024, str(scratch)
    try:
        assert ember.data.read_parquet(str(data)).sort("key").count() == 4000
        ember.data.read_parquet(str(data)).sort("key").take(1)  # a spilling run starts: it cleans up
    finally:
        ctx.memory_budget_bytes, ctx.scratch_dir = saved
    assert sorted(p.name for p in scratch.iterdir()) == sorted([alive.name, unrelated.name])
    assert remove_stale_scratch(scratch) == []
