"""Benchmark 4: feeding a training loop. Rows per second of batches of 256 from a parquet file.

The Fashion-MNIST train split (60,000 rows: a uint8 [28, 28] image tensor and an int64 label) is written once
to parquet. Each run goes from nothing to the last batch of one pass as dicts of torch tensors: opening and
reading the file is counted, Ray's cluster start is not (it is noted). The pyarrow row is plain pyarrow at its
best: it streams record batches of 8,192 rows (reading the whole file at once is 2-3x slower here: for tensor
columns pyarrow materialises per-value levels for the whole row group), converts each column to numpy once and
hands out views. A tool built on pyarrow has no cheaper way to get from the file to tensors, so it is the
upper bound. The DataLoader rows use the habitual per-sample Dataset.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import torch
from harness import Bench, alternate, main, new_bench, version
from torch.utils.data import DataLoader, Dataset
from workloads import fashion_parquet, start_ray

BATCH = 256


def rows_per_second(batches: Callable[[], Iterable[dict[str, torch.Tensor]]]) -> float:
    start = time.perf_counter()
    rows = sum(len(batch["label"]) for batch in batches())
    return rows / (time.perf_counter() - start)


def pyarrow_slices(path: Path) -> Iterable[dict[str, torch.Tensor]]:
    """Plain pyarrow at its best: stream record batches, convert each column once, hand out views."""
    for record_batch in pq.ParquetFile(path).iter_batches(batch_size=8192):
        images = record_batch.column("image").to_numpy_ndarray()
        labels = record_batch.column("label").to_numpy()
        for start in range(0, len(labels), BATCH):
            yield {
                "image": torch.from_numpy(images[start : start + BATCH]),
                "label": torch.from_numpy(labels[start : start + BATCH]),
            }


class ParquetRows(Dataset):
    """The usual map-style Dataset: load the file, then hand out one row at a time."""

    def __init__(self, path: Path) -> None:
        table = pq.read_table(path).combine_chunks()
        self.images = table["image"].chunk(0).to_numpy_ndarray()
        self.labels = table["label"].to_numpy()

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int) -> dict[str, object]:
        return {
            "image": torch.from_numpy(np.ascontiguousarray(self.images[index])),
            "label": int(self.labels[index]),
        }


def run(quick: bool) -> Bench:
    rounds = 1 if quick else 7
    path = fashion_parquet()
    bench = new_bench(
        "data_feed", "Data feeding: Fashion-MNIST parquet, batches of 256", "rows/s", higher_is_better=True
    )
    runners: dict[str, Callable[[], float] | None] = {}

    def case(label: str, tool: str, batches: Callable[[], Iterable[dict[str, torch.Tensor]]] | None) -> None:
        bench.case(label, tool)
        runners[label] = (lambda: rows_per_second(batches)) if batches else None

    case("ember.data iter_torch_batches", version("ember"), ember_batches(path))
    case("pyarrow iter_batches + slice (upper bound)", version("pyarrow"), lambda: pyarrow_slices(path))
    for workers in (0, 2):
        loader = lambda workers=workers: DataLoader(ParquetRows(path), batch_size=BATCH, num_workers=workers)  # noqa: E731
        case(f"DataLoader, per-sample, {workers} workers", version("torch"), loader)
    case("Ray Data iter_torch_batches", version("ray", "Ray Data"), ray_batches(path))
    bench.compare("ember.data iter_torch_batches", *[c.label for c in bench.cases[1:]])
    try:
        ray_once = {"Ray Data iter_torch_batches": 1} if quick else None  # ~5x slower: one run is plenty
        alternate(bench, runners, rounds=rounds, timeout=120, at_most=ray_once)
    finally:
        import sys

        if "ray" in sys.modules:
            sys.modules["ray"].shutdown()
    return bench


def ember_batches(path: Path) -> Callable[[], Iterable[dict[str, torch.Tensor]]] | None:
    try:
        import ember.data
    except ImportError:
        return None
    return lambda: ember.data.read_parquet(str(path)).iter_torch_batches(batch_size=BATCH)


def ray_batches(path: Path) -> Callable[[], Iterable[dict[str, torch.Tensor]]] | None:
    """Ray Data's pass; the cluster is started on the first (warm-up) call, not in a timed one."""
    try:
        import ray.data
    except ImportError:
        return None

    def batches() -> Iterable[dict[str, torch.Tensor]]:
        if not ray.is_initialized():
            start_ray()
        return ray.data.read_parquet(str(path)).iter_torch_batches(batch_size=BATCH)

    return batches


if __name__ == "__main__":
    main(run)
