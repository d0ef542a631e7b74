"""Benchmark 4c: a CPU-heavy Python function in map_batches, on one worker and on two.

The function computes, per Fashion-MNIST image, a small feature in pure Python (a row-by-row
brightness profile): it holds the GIL the whole time, as most hand-written preprocessing does,
so threads cannot help and only processes scale. Each run goes through the 60,000-row train
parquet, from the call to the last batch of 256. The in-process row runs the same function over
pyarrow batches in a plain loop: what one core does with no framework at all.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow.parquet as pq
from harness import Bench, alternate, main, new_bench, version
from workloads import fashion_parquet

BATCH = 256


def brightness_profile(batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Per image: the mean of each of its 28 rows, computed in pure Python (GIL-bound on purpose)."""
    profiles = [[sum(row) / 28.0 for row in image] for image in batch["image"].tolist()]
    return {"profile": np.asarray(profiles, dtype=np.float32), "label": batch["label"]}


def run(quick: bool) -> Bench:
    rounds = 1 if quick else 5
    path = str(fashion_parquet(train=not quick))  # quick: the 10k test rows, full: the 60k train rows
    bench = new_bench(
        "map_batches",
        "map_batches: CPU-heavy Python function, Fashion-MNIST parquet",
        "rows/s",
        higher_is_better=True,
    )

    def plain_loop() -> float:
        import time

        start, rows = time.perf_counter(), 0
        for record_batch in pq.ParquetFile(path).iter_batches(batch_size=1024):
            images = record_batch.column("image").to_numpy_ndarray()
            rows += len(
                brightness_profile({"image": images, "label": record_batch.column("label").to_numpy()})[
                    "label"
                ]
            )
        return rows / (time.perf_counter() - start)

    def ember_with(workers: int) -> Callable[[], float] | None:
        try:
            import ember.data
        except ImportError:
            return None

        def once() -> float:
            import time

            start = time.perf_counter()
            ds = ember.data.read_parquet(path).map_batches(
                brightness_profile, batch_size=1024, concurrency=workers
            )
            rows = sum(len(b["label"]) for b in ds.iter_torch_batches(batch_size=BATCH))
            return rows / (time.perf_counter() - start)

        return once

    bench.case("in-process loop, no framework (1 core)", version("pyarrow"))
    bench.case("ember map_batches, concurrency=1", version("ember"))
    bench.case("ember map_batches, concurrency=2", version("ember"))
    bench.compare(
        "ember map_batches, concurrency=2",
        "ember map_batches, concurrency=1",
        "in-process loop, no framework (1 core)",
    )
    runners = {
        "in-process loop, no framework (1 core)": plain_loop,
        "ember map_batches, concurrency=1": ember_with(1),
        "ember map_batches, concurrency=2": ember_with(2),
    }
    alternate(bench, runners, rounds=rounds, timeout=120)
    return bench


if __name__ == "__main__":
    main(run)
