from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from ember.datasets import read_idx
from ember.datasets.idx import parse_idx
from ember.errors import DataError


def idx_bytes(array: np.ndarray, code: int) -> bytes:
    header = bytes([0, 0, code, array.ndim]) + np.array(array.shape, ">u4").tobytes()
    return header + array.astype(array.dtype.newbyteorder(">")).tobytes()


@pytest.mark.parametrize(
    ("dtype", "code"), [(np.uint8, 0x08), (np.int16, 0x0B), (np.int32, 0x0C), (np.float32, 0x0D)]
)
def test_parse_idx_round_trips_every_dtype(dtype: type, code: int) -> None:
    array = np.arange(24).reshape(2, 3, 4).astype(dtype)
    decoded = parse_idx(idx_bytes(array, code))
    assert decoded.dtype == np.dtype(dtype) and decoded.dtype.isnative
    np.testing.assert_array_equal(decoded, array)


def test_plain_and_gzipped_files_read_the_same(tmp_path: Path) -> None:
    labels = np.array([3, 1, 4, 1, 5], np.uint8)
    (tmp_path / "plain").write_bytes(idx_bytes(labels, 0x08))
    (tmp_path / "packed.gz").write_bytes(gzip.compress(idx_bytes(labels, 0x08)))
    np.testing.assert_array_equal(read_idx(tmp_path / "plain"), labels)
    np.testing.assert_array_equal(read_idx(tmp_path / "packed.gz"), labels)


def test_truncated_file_names_the_file_and_the_sizes(tmp_path: Path) -> None:
    path = tmp_path / "train-images-idx3-ubyte"
    path.write_bytes(idx_bytes(np.zeros((10, 28, 28), np.uint8), 0x08)[:-100])
    with pytest.raises(DataError, match=r"train-images-idx3-ubyte is truncated: 7756 bytes.*needs 7856"):
        read_idx(path)


def test_truncated_gzip_is_reported_as_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "labels.gz"
    path.write_bytes(gzip.compress(idx_bytes(np.zeros(1000, np.uint8), 0x08))[:-20])
    with pytest.raises(DataError, match=r"labels.gz is corrupt"):
        read_idx(path)


def test_not_an_idx_file(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("hello world")
    with pytest.raises(DataError, match="not an IDX file"):
        read_idx(path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="does not exist"):
        read_idx(tmp_path / "nope")
