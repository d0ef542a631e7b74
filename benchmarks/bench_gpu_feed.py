"""Feeding the GPU: rows/s of parquet batches delivered onto the device, ember.data against a plain loop.

784-byte rows (a uint8 [28, 28] tensor column and an int64 label), batches of 1024, as issue 30 measured:
`ember.data.read_parquet(...).iter_torch_batches(device="cuda")` against a plain loop that streams the
same files with pyarrow (`ParquetFile.iter_batches`) and copies each batch to the GPU. Each batch is
touched on the device (a sum), so a copy that has not finished is waited for. Goal: ember >= 0.95x.

    python benchmarks/bench_gpu_feed.py [--rows 600000] [--rounds 3] [--out feed.json]
    python benchmarks/bench_gpu_feed.py --device cpu --rows 20000 --rounds 1     (a check of the script only)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import torch


def write_rows(folder: Path, rows: int, files: int = 8) -> Path:
    import ember.data

    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(rows, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, 10, size=rows).astype(np.int64)
    import pandas as pd

    frame = pd.DataFrame({"image": list(images), "label": labels})
    ember.data.from_pandas(frame).repartition(files).write_parquet(str(folder))
    return folder


def plain_loop(folder: Path, batch: int, device: torch.device) -> tuple[int, float]:
    import pyarrow.parquet as pq

    start, rows, total = time.perf_counter(), 0, torch.zeros((), device=device)
    for path in sorted(folder.glob("*.parquet")):
        for record_batch in pq.ParquetFile(path).iter_batches(batch_size=batch):
            images = record_batch.column("image")  # a fixed-shape tensor column: one flat uint8 buffer
            x = torch.from_numpy(images.to_numpy_ndarray()).to(device)
            y = torch.from_numpy(record_batch.column("label").to_numpy()).to(device)
            total += x.float().sum() + y.sum()
            rows += len(record_batch)
    float(total)  # waits for the device
    return rows, time.perf_counter() - start


def ember_loop(folder: Path, batch: int, device: torch.device) -> tuple[int, float]:
    import ember.data

    start, rows, total = time.perf_counter(), 0, torch.zeros((), device=device)
    data = ember.data.read_parquet(str(folder))
    for b in data.iter_torch_batches(batch_size=batch, device=device):
        total += b["image"].float().sum() + b["label"].sum()
        rows += len(b["label"])
    float(total)
    return rows, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    # the plain loop hands torch pyarrow's read-only buffer (no copy), as a careful hand-written loop would
    warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", default="cuda")
    p.add_argument("--rows", type=int, default=600_000)
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("bench_gpu_feed needs a CUDA GPU (--device cpu checks the script only)")
    samples: dict[str, list[float]] = {"plain pyarrow loop": [], "ember.data": []}
    with tempfile.TemporaryDirectory() as tmp:
        folder = write_rows(Path(tmp) / "rows", args.rows)
        for _ in range(args.rounds):
            for name, loop in (("plain pyarrow loop", plain_loop), ("ember.data", ember_loop)):
                rows, seconds = loop(folder, args.batch, device)
                assert rows == args.rows, (name, rows)
                samples[name].append(rows / seconds)
    plain, ours = (statistics.median(samples[k]) for k in ("plain pyarrow loop", "ember.data"))
    where = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    print(
        f"Feed onto {where}: {args.rows} rows of 784 bytes, "
        f"batch {args.batch}, median of {args.rounds} rounds"
    )
    print(
        f"| plain pyarrow loop | {plain:,.0f} rows/s |\n| "
        f"ember.data | {ours:,.0f} rows/s | {ours / plain:.3f}x |"
    )
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"device": where, "args": vars(args), "rows_per_s": samples}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
