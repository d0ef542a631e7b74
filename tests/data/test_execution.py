"""Execution: worker pools, ordering, UDF errors, dead workers, teardown and bounded memory."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ember.data
from ember.data.execute.pool import WorkerPool
from ember.errors import DataError, EmberError, WorkerError
from tests._procs import child_pids


@pytest.fixture(params=["processes", "inline"])
def execution(request):
    ctx = ember.data.DataContext.get_current()
    before = ctx.execution
    ctx.execution = request.param
    yield request.param
    ctx.execution = before


def test_udf_error_is_one_error_with_traceback_and_location(tmp_path, execution):
    pq.write_table(pa.table({"x": np.arange(20)}), tmp_path / "input.parquet", row_group_size=10)

    def explode(batch):
        if batch["x"][0] >= 10:
            return {"x": 1 / 0}
        return batch

    with pytest.raises(DataError) as info:
        ember.data.read_parquet(tmp_path).map_batches(explode, batch_size=5).take_all()
    message = str(info.value)
    assert "input.parquet row group 1" in message
    assert (
        "map_batches `test_udf_error_is_one_error_with_traceback_and_location.<locals>.explode` raised "
        "ZeroDivisionError" in message
    )
    assert "rows 0-4" in message
    assert "Original traceback:" in message and "1 / 0" in message
    assert isinstance(info.value, EmberError)
    assert child_pids() == set()


@pytest.mark.parametrize("how", ["sigkill", "segfault"])
def test_dead_worker_ends_the_job_quickly_without_orphans(how):
    def die(batch):
        if 20 <= batch["id"][0] < 30:
            if how == "sigkill":
                os.kill(os.getpid(), 9)
            import ctypes

            ctypes.string_at(0)  # segfault
        return batch

    ctx = ember.data.DataContext.get_current()
    ctx.execution = "processes"
    start = time.monotonic()
    try:
        with pytest.raises(
            WorkerError,
            match=r"data worker \(pid \d+\) was killed by signal (SIGKILL|SIGSEGV) while processing range "
            r"rows 20-29",
        ):
            list(ember.data.range(40, override_num_blocks=4).map_batches(die).iter_batches(batch_size=5))
    finally:
        ctx.execution = "auto"
    assert time.monotonic() - start < 10
    assert child_pids() == set()


def test_stopping_early_leaves_no_workers():
    ds = ember.data.range(1000, override_num_blocks=20).map_batches(lambda b: b, batch_size=10)
    for _ in ds.iter_batches(batch_size=10, prefetch_batches=2):
        break
    time.sleep(0.2)
    assert child_pids() == set()


def test_class_udf_constructed_once_per_worker(tmp_path):
    marker = tmp_path / "constructed"

    class Model:
        def __init__(self, scale):
            with open(marker, "a") as f:
                f.write(f"{os.getpid()}\n")
            self.scale = scale

        def __call__(self, batch):
            return {"y": batch["id"] * self.scale, "pid": np.full(len(batch["id"]), os.getpid())}

    ds = ember.data.range(200).map_batches(Model, batch_size=10, concurrency=2, fn_constructor_args=(3,))
    rows = ds.take_all()
    assert [r["y"] for r in rows] == [3 * i for i in range(200)]  # 20 batches, in order
    constructions = marker.read_text().split()
    assert len(constructions) == 2 == len(set(constructions))
    assert {r["pid"] for r in rows} == {int(p) for p in constructions}


def test_autoscaling_pool_grows_to_max_and_keeps_order():
    pool = WorkerPool(lambda: lambda n: (time.sleep(0.05), [pa.table({"n": [n]})])[1], size=(1, 2))
    assert pool.size == 1
    out = [b["n"][0].as_py() for bs in pool.imap((i, f"item {i}") for i in range(8)) for b in bs]
    assert out == list(range(8))
    assert pool.size == 2
    pool.close()
    assert child_pids() == set()


def test_output_order_is_deterministic_when_later_tasks_finish_first():
    def slow_first(batch):
        if batch["id"][0] == 0:
            time.sleep(0.3)
        return batch

    ds = ember.data.range(40, override_num_blocks=4).map_batches(slow_first, batch_size=None)
    assert [r["id"] for r in ds.take_all()] == list(range(40))


def test_cpu_heavy_udfs_use_worker_processes():
    ds = ember.data.range(40, override_num_blocks=4).map_batches(
        lambda b: {"pid": np.full(len(b["id"]), os.getpid())}
    )
    pids = {r["pid"] for r in ds.take_all()}
    assert os.getpid() not in pids and len(pids) == min(2, os.cpu_count() or 1)
    assert "worker processes" in ds.stats()


def test_iterating_a_dataset_larger_than_the_memory_bound():
    """2 GiB flows through a worker UDF into torch batches; peak memory stays far below it."""
    script = textwrap.dedent("""
        import resource, ember.data, torch
        ctx = ember.data.DataContext.get_current()
        ctx.max_inflight_bytes = 64 * 2**20
        ctx.target_rows_per_block = 8
        ROWS, SHAPE = 1000, (256, 1024)              # 2 MiB per row, 2 GiB in all
        ds = ember.data.range_tensor(ROWS, shape=SHAPE).map_batches(
            lambda b: {"data": b["data"] + 1}, batch_size=8
        )
        seen = 0
        for batch in ds.iter_torch_batches(batch_size=16, prefetch_batches=2):
            seen += len(batch["data"])
        peak_self = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
        peak_child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024
        print(seen, peak_self, peak_child)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    seen, peak_self, peak_child = map(int, out.stdout.split())
    total_mib = 1000 * 2
    assert seen == 1000
    # Streaming holds a fraction of the 2 GiB (a pass that materialised it would hold all of it). The
    # consumer's peak is ~500 MB run alone but reached ~750 MB inside the whole suite after the typed
    # operators landed (issue 15): bounded at half the data until that difference is understood.
    assert peak_self < total_mib / 2, (peak_self, peak_child)
    assert peak_child < total_mib / 3, (peak_self, peak_child)
