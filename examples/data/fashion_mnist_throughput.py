"""Feed Fashion-MNIST (as parquet, images as a tensor column) to a training loop; print rows/s.

    python examples/data/fashion_mnist_throughput.py [/tmp/fmnist]

Compares ember.data's iter_torch_batches(batch_size=256) with the pyarrow read-and-slice upper
bound on the same file, and reports the time to the first batch.
"""

from __future__ import annotations

import gzip
import os
import sys
import time

import numpy as np
import pyarrow.parquet as pq
import torch

import ember.data

IDX = "/usr/share/datasets/fashion-mnist"


def write_parquet(folder: str) -> str:
    with gzip.open(f"{IDX}/train-images-idx3-ubyte.gz") as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)
    with gzip.open(f"{IDX}/train-labels-idx1-ubyte.gz") as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8).astype(np.int64)
    ds = ember.data.from_numpy(images).rename_columns({"data": "image"})
    table = ds.to_arrow().append_column("label", ember.data.block.to_arrow_column(labels))
    path = os.path.join(folder, "fashion_mnist.parquet")
    os.makedirs(folder, exist_ok=True)
    pq.write_table(table, path, row_group_size=10_000)
    return path


def ember_rows_per_second(path: str) -> tuple[float, float]:
    start = time.perf_counter()
    rows, first = 0, None
    for batch in ember.data.read_parquet(path).iter_torch_batches(batch_size=256, device=None):
        if first is None:
            first = time.perf_counter() - start
        rows += len(batch["label"])
    return rows / (time.perf_counter() - start), first


def pyarrow_rows_per_second(path: str) -> float:
    start = time.perf_counter()
    table = pq.read_table(path)
    rows = 0
    for offset in range(0, table.num_rows, 256):
        chunk = table.slice(offset, 256)
        images = torch.from_numpy(chunk.column("image").combine_chunks().to_numpy_ndarray().copy())
        labels = torch.from_numpy(np.asarray(chunk.column("label")).copy())
        rows += len(labels) + 0 * len(images)
    return rows / (time.perf_counter() - start)


if __name__ == "__main__":
    path = write_parquet(sys.argv[1] if len(sys.argv) > 1 else "/tmp/fmnist")
    for _ in range(2):  # second round is warm
        rate, first = ember_rows_per_second(path)
        bound = pyarrow_rows_per_second(path)
        print(f"ember.data {rate:,.0f} rows/s (first batch {first * 1000:.0f} ms); "
              f"pyarrow read+slice {bound:,.0f} rows/s; ratio {rate / bound:.2f}")
