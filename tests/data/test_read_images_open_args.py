"""read_images(arrow_open_file_args=): Ray opens each file as a stream with these arguments."""

from __future__ import annotations

import gzip
import io

import numpy as np
import pytest
from PIL import Image

import ember.data
from ember.errors import ConfigError


@pytest.fixture
def gzipped_pngs(tmp_path):
    rng = np.random.default_rng(3)
    images = [rng.integers(0, 255, (4, 5, 3), dtype=np.uint8) for _ in range(3)]
    for i, image in enumerate(images):
        raw = io.BytesIO()
        Image.fromarray(image).save(raw, format="png")
        (tmp_path / f"{i}.png").write_bytes(gzip.compress(raw.getvalue()))  # a .png name, gzip inside
    return str(tmp_path), images


def test_gzipped_images_read_as_ray_reads_them(local_ray, gzipped_pngs):
    ray = local_ray
    folder, images = gzipped_pngs
    args = {"compression": "gzip"}
    theirs = ray.data.read_images(folder, arrow_open_file_args=args, include_paths=True).take_all()
    ours = ember.data.read_images(folder, arrow_open_file_args=args, include_paths=True).take_all()
    by_path = {r["path"]: r["image"] for r in theirs}
    assert len(ours) == len(theirs) == 3
    for row in ours:
        assert np.array_equal(row["image"], by_path[row["path"]])
    assert all(np.array_equal(r["image"], images[i]) for i, r in enumerate(ours))
    with pytest.raises(
        ember.errors.DataError, match="not a readable image"
    ):  # without it: gzip bytes, no image
        ember.data.read_images(folder).take_all()


def test_an_unknown_open_argument_is_refused(gzipped_pngs):
    with pytest.raises(ConfigError, match=r"read_images\(arrow_open_file_args="):
        ember.data.read_images(gzipped_pngs[0], arrow_open_file_args={"compresion": "gzip"})
