"""``read_parquet(tensor_column_schema={column: (dtype, shape)})`` (Ray's): binary columns holding raw,
C-contiguous NumPy buffers (``arr.tobytes()``) read back as tensor columns of that dtype and shape.

Example:
    >>> import numpy as np, pyarrow as pa
    >>> table = pa.table({"t": [np.arange(4, dtype=np.int16).tobytes()]})
    >>> decoded = decode_tensor_columns(table, {"t": (np.int16, (2, 2))}, "f.parquet")
    >>> ember.data.block.block_to_numpy(decoded)["t"].tolist()
    [[[0, 1], [2, 3]]]
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from ember.data.block import to_arrow_column
from ember.errors import ConfigError, DataError


def check_tensor_column_schema(schema: Any) -> dict[str, tuple[np.dtype, tuple[int, ...]]]:
    """``{column: (dtype, shape)}`` with NumPy dtypes and int shapes, or a one-line ConfigError.

    Example:
        >>> check_tensor_column_schema({"t": ("float32", [2])})
        {'t': (dtype('float32'), (2,))}
    """
    if not isinstance(schema, dict):
        raise ConfigError(f"read_parquet(tensor_column_schema={schema!r}); pass {{column: (dtype, shape)}}")
    checked = {}
    for column, spec in schema.items():
        try:
            dtype, shape = spec
            checked[column] = (np.dtype(dtype), tuple(int(n) for n in shape))
        except (TypeError, ValueError):
            raise ConfigError(
                f"read_parquet(tensor_column_schema=...): {column!r}: {spec!r} is not "
                "(dtype, shape); pass e.g. (np.float32, (28, 28))"
            ) from None
    return checked


def decode_tensor_columns(
    table: pa.Table, schema: dict[str, tuple[np.dtype, tuple[int, ...]]], path: str
) -> pa.Table:
    """``table`` with each column of ``schema`` decoded from raw bytes into a tensor column."""
    for column, (dtype, shape) in schema.items():
        if column not in table.column_names:
            raise DataError(
                f"read_parquet(tensor_column_schema=...): no column {column!r} in {path}; "
                f"it has columns {table.column_names}"
            )
        values = table.column(column).to_pylist()
        try:
            arrays = (
                np.stack([np.frombuffer(v, dtype=dtype).reshape(shape) for v in values])
                if values
                else np.empty((0, *shape), dtype=dtype)
            )
        except (TypeError, ValueError) as e:
            raise DataError(
                f"read_parquet: column {column!r} of {path} does not hold {dtype} tensors of shape "
                f"{shape} ({e}); check tensor_column_schema"
            ) from None
        table = table.set_column(table.column_names.index(column), column, to_arrow_column(arrays, column))
    return table
