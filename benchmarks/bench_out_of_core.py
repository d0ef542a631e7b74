"""Benchmark 4d: datasets larger than the memory budget (ember.data vs Ray Data, same cap).

A generated parquet dataset (default 2.5M rows ≈ 2.5 GB: an int64 ``id``, a ``key`` in
[0, 1000), an incompressible 1 KB ``payload``) and a memory budget (default 1.5 GB): ember's
``DataContext.memory_budget_bytes``, Ray's object store (``object_store_memory``). Four
operations, each in a fresh process: a streaming pass, random_shuffle + pass, sort by key + pass,
groupby("key").count(). For each: seconds from the call to the last row, exactness (checked, not
assumed: the pass sees every id once, the shuffle is a permutation that moved rows, the sort is
ordered, the group counts equal the generator's), and the peak RSS of the process tree (the
child, its workers and, for Ray, the raylet, GCS and object store), sampled every 20 ms.

    python benchmarks/bench_out_of_core.py [--quick] [--rows N] [--budget-mb M]
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from harness import FULL_ONLY, Bench, alternate, main, new_bench, run_child, version

OPERATIONS = ("streaming pass", "random_shuffle + pass", "sort + pass", "groupby count")
TOOLS = {"ember.data": "ember", "Ray Data": "ray"}
ROWS_PER_FILE, ROWS_PER_GROUP, KEYS, PAYLOAD = 50_000, 5_000, 1000, 1024


def _option(name: str, default: int) -> int:
    """``--rows`` / ``--budget-mb`` (taken out of argv before the shared command line sees it)."""
    if name in sys.argv:
        index = sys.argv.index(name)
        value = int(sys.argv[index + 1])
        del sys.argv[index : index + 2]
        return value
    return default


def run(quick: bool) -> Bench:
    rows = ROWS if ROWS else (200_000 if quick else 2_500_000)
    budget_mb = BUDGET_MB if BUDGET_MB else (150 if quick else 1536)
    folder = dataset(rows)
    bench = new_bench("out_of_core", f"Larger than memory: {rows:,} rows × 1 KB, budget {budget_mb} MB", "s")
    runners: dict[str, Callable[[], float] | None] = {}
    results: dict[tuple[str, str], dict] = {}

    def measure(tool: str, operation: str, what: str) -> Callable[[], float]:
        def once() -> float:
            if what == "seconds":  # one child gives both figures of (tool, operation)
                results[tool, operation] = run_child(
                    [__file__, "--child", tool, operation, str(folder), str(rows), str(budget_mb)],
                    timeout=3000,
                )
            result = results[tool, operation]
            if not result["exact"]:
                raise RuntimeError(f"not exact: {result['why']}")
            return result[what]

        return once

    for operation in OPERATIONS:
        for tool, distribution in TOOLS.items():
            bench.case(f"{operation}: {tool}", version(distribution, {"ray": "Ray Data"}.get(distribution)))
            runners[f"{operation}: {tool}"] = measure(tool, operation, "seconds")
        bench.compare(f"{operation}: ember.data", f"{operation}: Ray Data")
    for operation in OPERATIONS:
        for tool, distribution in TOOLS.items():
            bench.case(f"peak RSS, {operation}: {tool}", version(distribution), unit="MB")
            runners[f"peak RSS, {operation}: {tool}"] = measure(tool, operation, "peak_rss_mb")
    if quick and not ROWS:  # Ray's cluster start and spilling take minutes: full runs only
        for label in list(runners):
            if label.endswith("Ray Data"):
                runners.pop(label)
                bench.get(label).status = FULL_ONLY
    alternate(bench, runners, rounds=1, warmup=0, timeout=3600)
    return bench


def dataset(rows: int) -> Path:
    """The parquet folder for ``rows`` rows, generated once (seeded) into the temporary folder."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = Path(tempfile.gettempdir()) / f"ember-bench-out-of-core-{rows}"
    done = folder / "_complete"
    if done.exists():
        return folder
    folder.mkdir(exist_ok=True)
    rng = np.random.default_rng(0)
    for start in range(0, rows, ROWS_PER_FILE):
        n = min(ROWS_PER_FILE, rows - start)
        payload = rng.integers(0, 256, n * PAYLOAD, dtype=np.uint8).tobytes()
        offsets = pa.array(np.arange(0, (n + 1) * PAYLOAD, PAYLOAD, dtype=np.int32))
        table = pa.table(
            {
                "id": np.arange(start, start + n, dtype=np.int64),
                "key": rng.integers(0, KEYS, n),
                "payload": pa.BinaryArray.from_buffers(
                    pa.binary(), n, [None, offsets.buffers()[1], pa.py_buffer(payload)]
                ),
            }
        )
        pq.write_table(
            table,
            folder / f"part-{start // ROWS_PER_FILE:05d}.parquet",
            row_group_size=ROWS_PER_GROUP,
            compression="none",
        )
    done.write_text("")
    return folder


def expected_counts(folder: str) -> dict[int, int]:
    import pyarrow.compute as pc
    import pyarrow.dataset as pads

    keys = pads.dataset(folder, format="parquet").to_table(columns=["key"]).column("key")
    counts = pc.value_counts(keys)
    return {int(v["values"]): int(v["counts"]) for v in counts.to_pylist()}


# --- what runs in the child process -------------------------------------------------------------


class PeakTreeRSS:
    """Samples the RSS of this process and all its descendants every 20 ms; ``.peak`` in bytes."""

    def __enter__(self) -> PeakTreeRSS:
        import psutil

        self._me, self.peak = psutil.Process(), 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _tree(self) -> int:
        import psutil

        total = 0
        for process in [self._me, *self._me.children(recursive=True)]:
            with contextlib.suppress(psutil.Error):  # a process that just ended
                total += process.memory_info().rss
        return total

    def _sample(self) -> None:
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, self._tree())

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._tree())


class Check:
    """Streams batches of (id, key) and decides exactness for one operation."""

    def __init__(self, operation: str, rows: int) -> None:
        import numpy as np

        self.operation, self.rows = operation, rows
        self.seen = np.zeros(rows, dtype=np.uint8)
        self.previous_key, self.ordered, self.first_ids = -1, True, None

    def batch(self, ids, keys) -> None:
        import numpy as np

        np.add.at(self.seen, ids, 1)
        if self.first_ids is None:
            self.first_ids = ids[:1000].copy()
        if self.operation == "sort + pass" and len(keys):
            self.ordered &= bool((np.diff(keys) >= 0).all()) and int(keys[0]) >= self.previous_key
            self.previous_key = int(keys[-1])

    def verdict(self) -> tuple[bool, str]:
        if not (self.seen == 1).all():
            return False, f"{int((self.seen == 0).sum())} ids missing, {int((self.seen > 1).sum())} repeated"
        if self.operation == "random_shuffle + pass" and (self.first_ids == sorted(self.first_ids)).all():
            return False, "the first 1,000 ids are in order: not shuffled"
        if self.operation == "sort + pass" and not self.ordered:
            return False, "keys out of order"
        return True, ""


def child(tool: str, operation: str, folder: str, rows: int, budget_mb: int) -> dict:
    import torch  # noqa: F401  (both tools' users have it; not part of what is measured)

    budget = budget_mb * 1024**2
    expected = expected_counts(folder) if operation == "groupby count" else None
    if tool == "Ray Data":
        import harness  # noqa: F401  (Ray's environment: no usage reporting)
        import ray
        import ray.data

        ray.init(
            address="local",
            _node_ip_address="127.0.0.1",
            include_dashboard=False,
            num_cpus=2,
            log_to_driver=False,
            object_store_memory=max(budget, 80 * 1024**2),
        )
        ray.data.DataContext.get_current().enable_progress_bars = False
        ds = ray.data.read_parquet(folder)
    else:
        import ember.data

        ember.data.DataContext.get_current().memory_budget_bytes = budget
        ds = ember.data.read_parquet(folder)
    check = Check(operation, rows)
    with PeakTreeRSS() as memory:
        start = time.perf_counter()
        if operation == "groupby count":
            counts = {int(r["key"]): int(r["count()"]) for r in ds.groupby("key").count().take_all()}
        else:
            if operation == "random_shuffle + pass":
                ds = ds.random_shuffle(seed=0)
            elif operation == "sort + pass":
                ds = ds.sort("key")
            for batch in ds.iter_batches(batch_size=8192, batch_format="numpy"):
                check.batch(batch["id"], batch["key"])
        seconds = time.perf_counter() - start
    if expected is not None:
        exact, why = counts == expected, "group counts differ from the generator's"
    else:
        exact, why = check.verdict()
    if tool == "Ray Data":
        import ray

        ray.shutdown()
    return {"seconds": seconds, "peak_rss_mb": memory.peak / 1024**2, "exact": exact, "why": why}


ROWS = _option("--rows", 0)
BUDGET_MB = _option("--budget-mb", 0)

if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        tool, operation, folder, rows, budget_mb = sys.argv[2:7]
        os.environ.setdefault("RAY_DEDUP_LOGS", "0")
        print(json.dumps(child(tool, operation, folder, int(rows), int(budget_mb))))
    else:
        main(run)
