"""Benchmark 5: batch inference. Rows per second of the classic MNIST Net over the Fashion-MNIST test set.

The 10,000 test images are written once to parquet (uint8 [28, 28] tensor + int64 label, row
groups of 1,000). Each run goes from nothing to the last prediction: reading, normalising, the
forward pass in inference mode and, for the pools, starting the workers and building the model in
each; only Ray's cluster start is kept out, and timed as its own row. Every case uses batches of
500 rows and the same (seeded) weights.

- ember pool of 2 / of 1: ``ember.data.read_parquet(...).map_batches(Predictor, concurrency=n)``,
  one torch thread per worker (``num_cpus=1``);
- plain torch loop: pyarrow read, then the forward pass batch by batch, 2 threads, one process;
- Ray Data: ``ray.data.read_parquet(...).map_batches(Predictor, concurrency=2, num_cpus=0.5)``
  (with Ray's default of one CPU per actor the pool of 2 plus its reader never fits on 2 CPUs).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from harness import Bench, alternate, main, new_bench, version
from workloads import Net, fashion_parquet, start_ray

BATCH = 500
MEAN, STD = 0.2860, 0.3530


def make_net() -> Net:
    torch.manual_seed(0)
    return Net().eval()


def forward(net: Net, images: np.ndarray) -> np.ndarray:
    x = torch.from_numpy(np.ascontiguousarray(images)).float().div_(255).sub_(MEAN).div_(STD).unsqueeze_(1)
    with torch.inference_mode():
        return net(x).numpy()


class Predictor:
    """The guide's pattern: the model is built once per worker, ``__call__`` maps a batch."""

    def __init__(self) -> None:
        self.net = make_net()

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {"output": forward(self.net, batch["image"])}


def rows_per_second(count_rows: Callable[[], int]) -> float:
    start = time.perf_counter()
    rows = count_rows()
    return rows / (time.perf_counter() - start)


def ember_pool(path: Path, workers: int) -> Callable[[], int] | None:
    try:
        import ember.data
    except ImportError:
        return None

    def run() -> int:
        ds = ember.data.read_parquet(str(path)).map_batches(
            Predictor, batch_size=BATCH, concurrency=workers, num_cpus=1
        )
        return sum(block.num_rows for block in ds.iter_internal_blocks())

    return run


def plain_loop(path: Path) -> int:
    import pyarrow.parquet as pq

    torch.set_num_threads(2)
    net = make_net()
    images = pq.read_table(path).column("image").combine_chunks().to_numpy_ndarray()
    return sum(len(forward(net, images[i : i + BATCH])) for i in range(0, len(images), BATCH))


def ray_data(path: Path) -> Callable[[], int] | None:
    try:
        import ray.data
    except ImportError:
        return None

    def run() -> int:
        ds = ray.data.read_parquet(str(path)).map_batches(
            Predictor, batch_size=BATCH, compute=ray.data.ActorPoolStrategy(size=2), num_cpus=0.5
        )
        return sum(len(batch["output"]) for batch in ds.iter_batches(batch_size=None))

    return run


def run(quick: bool) -> Bench:
    rounds = 2 if quick else 5
    path = fashion_parquet(train=False)
    bench = new_bench(
        "inference",
        "Batch inference: classic Net over the Fashion-MNIST test set (10k rows), batches of 500",
        "rows/s",
        higher_is_better=True,
    )
    two, one = "ember pool of 2 (1 thread each)", "ember pool of 1 (1 thread)"
    loop, ray_case = "plain torch loop (2 threads, 1 process)", "Ray Data actor pool of 2 (num_cpus=0.5)"
    runners: dict[str, Callable[[], float] | None] = {}
    for label, tool, count in [
        (two, version("ember"), ember_pool(path, 2)),
        (one, version("ember"), ember_pool(path, 1)),
        (loop, version("torch"), lambda: plain_loop(path)),
        (ray_case, version("ray", "Ray Data"), ray_data(path)),
    ]:
        bench.case(label, tool)
        runners[label] = (lambda count=count: rows_per_second(count)) if count else None
    startup = bench.case(
        "Ray start-up: ray.init, 2 CPUs, loopback (not in Ray's rows/s)", version("ray"), "s"
    )
    bench.compare(two, one, loop, ray_case)
    if runners[ray_case] is not None:
        start = time.perf_counter()
        start_ray()
        startup.samples.append(time.perf_counter() - start)
    try:
        # Quick: Ray once, without a warm-up run (its actors start inside every run anyway).
        slow = {"at_most": {ray_case: 1}, "cold": {ray_case}} if quick else {"at_most": {ray_case: 3}}
        alternate(bench, runners, rounds=rounds, timeout=180, **slow)
    finally:
        import sys

        if "ray" in sys.modules:
            sys.modules["ray"].shutdown()
    return bench


if __name__ == "__main__":
    main(run)
