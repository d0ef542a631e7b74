"""Read IDX files, the format of MNIST, Fashion-MNIST and KMNIST (plain or gzipped).

An IDX file is a 4-byte magic number ``0 0 <dtype code> <ndim>``, then ``ndim`` big-endian uint32
sizes, then the values in C order, big-endian.
"""

from __future__ import annotations

import gzip
import os
import zlib
from pathlib import Path

import numpy as np

from ember.errors import DataError

# IDX type code -> big-endian numpy dtype.
_DTYPES: dict[int, str] = {
    0x08: "u1",
    0x09: "i1",
    0x0B: ">i2",
    0x0C: ">i4",
    0x0D: ">f4",
    0x0E: ">f8",
}


def read_idx(path: str | os.PathLike[str]) -> np.ndarray:
    """Read one IDX file (``.gz`` or not) into a numpy array in native byte order.

    Raises ``DataError`` with the file name when the file is missing, truncated or not IDX.

    Example::

        >>> images = read_idx("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz")
        >>> images.shape, images.dtype
        ((10000, 28, 28), dtype('uint8'))
    """
    path = Path(path)
    try:
        raw = _read_bytes(path)
    except FileNotFoundError:
        raise DataError(f"IDX file {path} does not exist") from None
    except (OSError, EOFError, zlib.error) as err:
        raise DataError(f"IDX file {path} is corrupt ({err}); delete it and fetch it again") from None
    return parse_idx(raw, name=str(path))


def parse_idx(raw: bytes, name: str = "<bytes>") -> np.ndarray:
    """Decode the bytes of an IDX file; ``name`` is used in error messages."""
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _DTYPES:
        raise DataError(f"{name} is not an IDX file (bad magic number {raw[:4].hex() or 'empty'})")
    dtype = np.dtype(_DTYPES[raw[2]])
    ndim = raw[3]
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise DataError(f"{name} is truncated: {len(raw)} bytes, the header alone needs {header}")
    shape = tuple(int(n) for n in np.frombuffer(raw, ">u4", count=ndim, offset=4))
    expected = header + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(raw) != expected:
        problem = "truncated" if len(raw) < expected else "longer than its header says"
        raise DataError(
            f"{name} is {problem}: {len(raw)} bytes, shape {shape} needs {expected}; "
            "delete it and fetch it again"
        )
    array = np.frombuffer(raw, dtype, offset=header).reshape(shape)
    return array.astype(dtype.newbyteorder("="), copy=True)


def _read_bytes(path: Path) -> bytes:
    with path.open("rb") as f:
        magic = f.read(2)
    if magic == b"\x1f\x8b":
        with gzip.open(path, "rb") as f:
            return f.read()
    return path.read_bytes()
