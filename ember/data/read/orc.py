"""read_orc: one task per file, read one stripe at a time (as Ray Data 2.60's ORC source).

ORC keeps its footer at the end of the file, so each file is opened seekable. A stripe becomes one
block; empty stripes are skipped. All files must have the same columns and types (checked against
the first file's footer when the file is opened), as for `read_parquet`.

Example:
    >>> import os, tempfile
    >>> import pyarrow as pa
    >>> import pyarrow.orc as orc
    >>> path = os.path.join(tempfile.mkdtemp(), "a.orc")
    >>> orc.write_table(pa.table({"x": [1, 2]}), path)
    >>> import pyarrow.fs as pafs
    >>> [t.to_pylist() for t in read_orc_file(pafs.LocalFileSystem(), path)]
    [[{'x': 1}, {'x': 2}]]
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from ember.data.read.paths import open_input
from ember.data.read.schemas import check_same_schema
from ember.errors import DataError


def _open(filesystem: Any, path: str) -> Any:
    import pyarrow.orc as orc

    try:
        return orc.ORCFile(open_input(filesystem, path))
    except (pa.ArrowInvalid, OSError) as e:
        raise DataError(
            f"read_orc: {path} is not a readable ORC file ({e}); check or rewrite the file"
        ) from None


def orc_schema(filesystem: Any, path: str) -> pa.Schema:
    """The schema of an ORC file, from its footer (no row is read).

    Example:
        >>> import os, tempfile
        >>> import pyarrow as pa, pyarrow.fs as pafs, pyarrow.orc as orc
        >>> path = os.path.join(tempfile.mkdtemp(), "a.orc")
        >>> orc.write_table(pa.table({"x": [1.5]}), path)
        >>> orc_schema(pafs.LocalFileSystem(), path).names
        ['x']
    """
    return _open(filesystem, path).schema


def read_orc_file(
    filesystem: Any, path: str, first: tuple[str, pa.Schema] | None = None
) -> Iterator[pa.Table]:
    """The stripes of one ORC file, one block each; ``first`` is the (path, schema) every file must match."""
    file = _open(filesystem, path)
    if first is not None and first[0] != path:
        check_same_schema(
            "read_orc",
            first,
            (path, file.schema),
            "read the files separately and make their columns agree (cast, select_columns) before union",
        )
    for stripe in range(file.nstripes):
        try:
            batch = file.read_stripe(stripe)
        except (pa.ArrowInvalid, OSError) as e:
            raise DataError(
                f"read_orc: {path} stripe {stripe} is corrupt ({e}); check or rewrite the file"
            ) from None
        if batch.num_rows:
            yield pa.Table.from_batches([batch])
