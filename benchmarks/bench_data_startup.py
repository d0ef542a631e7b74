"""Benchmark 4b: how soon the first batch arrives, and how much memory the data layer adds.

Each run is a fresh process that has already imported its tool (imports are benchmark 3). It
then asks for batches of 256 from the Fashion-MNIST train parquet and records: the seconds from
the call to the first batch in hand, and the machine's memory in use at its peak during the pass
above what was in use just before the call (MemTotal - MemAvailable, sampled every 20 ms, so
worker processes and, for Ray, its raylet and workers are counted too). Ray's cluster start is
timed on its own row and its memory is counted from before `ray.init`.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable

from harness import FULL_ONLY, Bench, alternate, main, new_bench, run_child, version

TOOLS = {"ember.data": "ember", "DataLoader, 0 workers": "torch", "Ray Data": "ray"}


def run(quick: bool) -> Bench:
    rounds, limit = (1, 120) if quick else (5, 300)
    bench = new_bench(
        "data_startup", "Data start-up: first batch of 256 and memory added (Fashion-MNIST parquet)", "s"
    )
    runners: dict[str, Callable[[], float] | None] = {}
    results: dict[str, dict] = {}

    def measure(tool: str, what: str) -> Callable[[], float]:
        def once() -> float:
            if what == "first":  # one child per round gives all three figures of the tool
                results[tool] = run_child([__file__, "--child", tool], timeout=limit)
            return results[tool][what]

        return once

    for tool, distribution in TOOLS.items():
        label = version(distribution, {"ray": "Ray Data"}.get(distribution))
        bench.case(f"first batch: {tool}", label)
        runners[f"first batch: {tool}"] = measure(tool, "first")
    for tool, distribution in TOOLS.items():
        bench.case(f"memory added: {tool}", version(distribution), unit="MB")
        runners[f"memory added: {tool}"] = measure(tool, "memory_mb")
    bench.case("Ray cluster start (ray.init)", version("ray", "Ray"))
    runners["Ray cluster start (ray.init)"] = measure("Ray Data", "ray_init")
    bench.compare("first batch: ember.data", "first batch: DataLoader, 0 workers", "first batch: Ray Data")
    bench.compare("memory added: ember.data", "memory added: DataLoader, 0 workers", "memory added: Ray Data")
    if quick:  # Ray's child takes ~17 s here: more than the quick mode's budget
        for label in ("first batch: Ray Data", "memory added: Ray Data", "Ray cluster start (ray.init)"):
            runners.pop(label)
            bench.get(label).status = FULL_ONLY
    alternate(bench, runners, rounds=rounds, warmup=0, timeout=limit + 30)
    return bench


# --- what runs in the child process -------------------------------------------------------------


def memory_in_use_mb() -> float:
    with open("/proc/meminfo") as lines:
        info = dict(line.split(":", 1) for line in lines)
    return (int(info["MemTotal"].split()[0]) - int(info["MemAvailable"].split()[0])) / 1024


class PeakMemory:
    """Samples the machine's memory in use on a thread; `.added` is the peak above the start."""

    def __enter__(self) -> PeakMemory:
        self.start = self.peak = memory_in_use_mb()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, memory_in_use_mb())

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, memory_in_use_mb())
        self.added = self.peak - self.start


def batches(tool: str, path: str):
    if tool == "ember.data":
        import ember.data

        return ember.data.read_parquet(path).iter_torch_batches(batch_size=256)
    if tool == "Ray Data":
        import ray.data

        return ray.data.read_parquet(path).iter_torch_batches(batch_size=256)
    from bench_data_feed import ParquetRows
    from torch.utils.data import DataLoader

    return DataLoader(ParquetRows(path), batch_size=256)


def child(tool: str) -> dict:
    import torch  # noqa: F401  (every tool needs it; not part of what is measured)
    from workloads import fashion_parquet, start_ray

    path = str(fashion_parquet())
    if tool == "Ray Data":
        import ray.data  # noqa: F401
    elif tool == "ember.data":
        import ember.data  # noqa: F401
    ray_init = 0.0
    with PeakMemory() as memory:
        if tool == "Ray Data":
            start = time.perf_counter()
            start_ray()
            ray_init = time.perf_counter() - start
        start = time.perf_counter()
        stream = iter(batches(tool, path))
        rows = len(next(stream)["label"])
        first = time.perf_counter() - start
        rows += sum(len(batch["label"]) for batch in stream)
    assert rows == 60_000, rows
    return {"first": first, "memory_mb": memory.added, "ray_init": ray_init}


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        print(json.dumps(child(sys.argv[2])))
    else:
        main(run)
