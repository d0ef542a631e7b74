"""``read_parquet(include_row_hash=True)``: Ray Data 2.60's ``row_hash`` column, the same numbers.

Each row's hash is a uint64 of (file path, position of the row in what the read yields from that file):
the first 8 bytes of the path's MD5 (little-endian) plus the position, through the splitmix64
finalizer. It is reproducible across reads of the same files, whatever the number of workers or the
row-group split. As in Ray, a ``row_hash`` column the file holds is replaced.

Example:
    >>> first = [int(h) for h in row_hashes("/data/a.parquet", 0, 2)]
    >>> first == [int(h) for h in row_hashes("/data/a.parquet", 0, 2)]
    True
    >>> bool(row_hashes("/data/a.parquet", 1, 1)[0] == row_hashes("/data/a.parquet", 0, 2)[1])
    True
"""

from __future__ import annotations

import hashlib

import numpy as np
import pyarrow as pa

COLUMN = "row_hash"


def row_hashes(path: str, start: int, count: int) -> np.ndarray:
    """The hashes of rows [start, start + count) of the file ``path``."""
    seed = np.uint64(int.from_bytes(hashlib.md5(path.encode("utf-8")).digest()[:8], "little"))
    with np.errstate(over="ignore"):  # uint64 arithmetic wraps, as the finalizer intends
        keys = seed + np.arange(start, start + count, dtype=np.uint64)
        keys ^= keys >> np.uint64(30)
        keys *= np.uint64(0xBF58476D1CE4E5B9)
        keys ^= keys >> np.uint64(27)
        keys *= np.uint64(0x94D049BB133111EB)
        keys ^= keys >> np.uint64(31)
    return keys


def with_row_hash(table: pa.Table, path: str, start: int) -> pa.Table:
    """``table`` (rows ``start``... of ``path``) with its ``row_hash`` column last (a file's own one dropped).

    Example:
        >>> with_row_hash(pa.table({"x": [1, 2]}), "/data/a.parquet", 0).schema.names
        ['x', 'row_hash']
    """
    if COLUMN in table.column_names:
        table = table.drop_columns([COLUMN])
    return table.append_column(
        pa.field(COLUMN, pa.uint64()), pa.array(row_hashes(path, start, table.num_rows))
    )
