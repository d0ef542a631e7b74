"""Benchmark 4d: an image pipeline — a folder of small JPEG/PNG
files -> decode -> resize + normalize -> torch batches.

The folder is generated once into the bench cache: 20,000 files (quick: 2,000), half JPEG and half
PNG, 64x48 RGB with seeded random content (so the PNGs do not compress to nothing). Every tool
does the same work per image: decode with Pillow as RGB, resize to 32x32 (bilinear), scale to
[0, 1], subtract the mean and divide by the std per channel, CHW float32; and hands out batches of
256 as torch tensors. Each run goes from the call to the last batch.

- ember: ``read_images(folder, mode="RGB")`` (decoding runs in the read tasks) ->
  ``map_batches(resize_normalize, batch_size=256, concurrency=2)`` -> ``iter_torch_batches(256)``
- torch: a map-style Dataset over the file list, the per-image version of the same function,
  ``DataLoader(batch_size=256, num_workers=2)``
- Ray Data: the same calls as ember on ``ray.data`` (cluster start not counted)

Goal (issue 15): ember >= the DataLoader's rows/s, >= 3x Ray Data's.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from harness import Bench, alternate, main, new_bench, version
from workloads import cache_dir, start_ray

BATCH = 256
SIZE = (32, 32)
MEAN = np.array([0.485, 0.456, 0.406], np.float32).reshape(3, 1, 1)
STD = np.array([0.229, 0.224, 0.225], np.float32).reshape(3, 1, 1)


def image_folder(count: int) -> Path:
    """``count`` seeded images (even index JPEG, odd PNG), written once; returns the folder."""
    from PIL import Image

    folder = cache_dir() / f"images-{count}"
    done = folder / ".complete"
    if done.exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for i in range(count):
        # smooth-ish content: a random 8x6 image scaled up, plus a little noise
        base = rng.integers(0, 256, (6, 8, 3), dtype=np.uint8)
        image = np.asarray(Image.fromarray(base).resize((64, 48), Image.BILINEAR), dtype=np.int16)
        image = np.clip(image + rng.integers(-8, 9, image.shape), 0, 255).astype(np.uint8)
        suffix = "jpg" if i % 2 == 0 else "png"
        Image.fromarray(image).save(folder / f"{i:06d}.{suffix}")
    done.write_text("ok\n")
    return folder


def resize_normalize_one(image: np.ndarray) -> np.ndarray:
    """HWC uint8 -> CHW float32, resized to SIZE and normalized."""
    from PIL import Image

    small = np.asarray(Image.fromarray(image).resize((SIZE[1], SIZE[0]), Image.BILINEAR), dtype=np.float32)
    return (small.transpose(2, 0, 1) / 255.0 - MEAN) / STD


def resize_normalize(batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The batch version, for map_batches (ember and Ray)."""
    return {"image": np.stack([resize_normalize_one(image) for image in batch["image"]])}


class FileImages:
    """A map-style torch Dataset over the files: decode + the same transform, per sample."""

    def __init__(self, folder: Path) -> None:
        self.files = sorted(str(p) for p in folder.iterdir() if p.suffix in (".jpg", ".png"))

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, index: int) -> np.ndarray:
        from PIL import Image

        with Image.open(self.files[index]) as image:
            return resize_normalize_one(np.asarray(image.convert("RGB")))


def ember_pipeline(folder: Path) -> Callable[[], int] | None:
    try:
        import ember.data
    except ImportError:
        return None

    def once() -> int:
        ds = ember.data.read_images(str(folder), mode="RGB").map_batches(
            resize_normalize, batch_size=BATCH, concurrency=2
        )
        return sum(len(b["image"]) for b in ds.iter_torch_batches(batch_size=BATCH, device=None))

    return once


def dataloader(folder: Path) -> Callable[[], int]:
    def once() -> int:
        from torch.utils.data import DataLoader

        loader = DataLoader(FileImages(folder), batch_size=BATCH, num_workers=2)
        return sum(len(batch) for batch in loader)

    return once


def ray_pipeline(folder: Path) -> Callable[[], int] | None:
    try:
        import ray.data  # noqa: F401
    except ImportError:
        return None

    def once() -> int:
        import ray.data

        ds = ray.data.read_images(str(folder), mode="RGB").map_batches(
            resize_normalize, batch_size=BATCH, concurrency=2
        )
        return sum(len(b["image"]) for b in ds.iter_torch_batches(batch_size=BATCH))

    return once


def rows_per_second(count: Callable[[], int], expected: int) -> float:
    start = time.perf_counter()
    rows = count()
    elapsed = time.perf_counter() - start
    if rows != expected:
        raise RuntimeError(f"got {rows} rows, expected {expected}")
    return rows / elapsed


def run(quick: bool) -> Bench:
    count = int(os.environ.get("BENCH_IMAGES", 2000 if quick else 20000))
    rounds = 1 if quick else 3
    folder = image_folder(count)
    bench = new_bench(
        "images",
        f"Image pipeline: {count:,} small JPEG/PNG files -> decode -> resize 32x32 + "
        "normalize on 2 workers -> torch batches of 256",
        "rows/s",
        higher_is_better=True,
    )
    ours, loader, ray_case = (
        "ember read_images -> map_batches(concurrency=2)",
        "torch DataLoader(num_workers=2)",
        "Ray Data read_images -> map_batches(concurrency=2)",
    )
    runners: dict[str, Callable[[], float] | None] = {}
    for label, tool, pipeline in [
        (ours, version("ember"), ember_pipeline(folder)),
        (loader, version("torch"), dataloader(folder)),
        (ray_case, version("ray", "Ray Data"), ray_pipeline(folder)),
    ]:
        bench.case(label, tool)
        runners[label] = (lambda p=pipeline: rows_per_second(p, count)) if pipeline else None
    bench.compare(ours, loader, ray_case)
    if runners[ray_case] is not None:
        start_ray()
    try:
        slow = {"at_most": {ray_case: 1}, "cold": {ray_case}} if quick else {"at_most": {ray_case: 2}}
        alternate(bench, runners, rounds=rounds, timeout=600, **slow)
    finally:
        if "ray" in sys.modules:
            sys.modules["ray"].shutdown()
    return bench


if __name__ == "__main__":
    main(run)
