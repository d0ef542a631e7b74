"""Blocks are pyarrow Tables; this module converts them to and from what user code sees.

User functions see dicts of numpy arrays (default), pandas DataFrames or pyarrow Tables, and may
return numpy arrays, torch tensors, lists or pandas objects. ndarray columns become Arrow tensor
columns (``arrow.fixed_shape_tensor`` when every row has one shape, ``ember.variable_shape_tensor``
otherwise), so they round-trip through parquet.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, TypeVar, Union

import numpy as np
import pyarrow as pa

from ember.data.block_accessor import AggType, BlockAccessor, KeyType, T, U  # noqa: F401  (ray.data.block's names)
from ember.data.tensor_types import (
    PythonObjectType,
    VariableShapeTensorType,
    object_array,
    python_object_array,
    python_object_to_numpy,
    variable_tensor_array,
    variable_tensor_to_numpy,
)
from ember.errors import DataError

if TYPE_CHECKING:
    import pandas

Block: TypeAlias = pa.Table  # Ray's Block is Table | DataFrame; ember's blocks are always Arrow
BATCH_FORMATS = ("numpy", "pandas", "pyarrow", "default")

#: What a batch function gets and returns (Ray's ``DataBatch``): a dict of numpy arrays (the default
#: batch_format), a pandas DataFrame or a pyarrow Table.
DataBatch: TypeAlias = Union[pa.Table, "pandas.DataFrame", dict[str, np.ndarray]]
#: One column of a batch (Ray's ``DataBatchColumn``).
DataBatchColumn: TypeAlias = Union[pa.ChunkedArray, pa.Array, "pandas.Series", np.ndarray]

_In = TypeVar("_In", contravariant=True)
_Out = TypeVar("_Out", covariant=True)


class _CallableClassProtocol(Protocol[_In, _Out]):
    """A callable class a UDF may be: built once per worker, then called per row or batch."""

    def __call__(self, arg: _In, /) -> _Out | Iterator[_Out]: ...


#: A user function of rows or batches (Ray's ``UserDefinedFunction[T, U]``): a function of a ``T``
#: returning a ``U`` (or yielding them), or a callable class whose instances do.
UserDefinedFunction: TypeAlias = (
    Callable[[T], U] | Callable[[T], Iterator[U]] | type[_CallableClassProtocol[T, U]]
)


# ---------------------------------------------------------------- values -> Arrow


def _torch_to_numpy(value: Any) -> Any:
    """torch tensors (on any device) become numpy arrays; Ray does the same."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    return value


def to_arrow_column(values: Any, column: str = "?") -> pa.Array:
    """Convert one column of a user batch (ndarray, tensor, list, Series, Arrow) to Arrow."""
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return values
    values = _torch_to_numpy(values)
    if type(values).__module__.startswith("pandas"):
        values = values.to_numpy()
    if isinstance(values, np.ndarray):
        return _ndarray_to_arrow(values, column)
    if isinstance(values, (list, tuple)):
        return _list_to_arrow(list(values), column)
    raise DataError(
        f"column {column!r} holds a {type(values).__name__}; return a numpy array, torch tensor or list per "
        "column"
    )


def _ndarray_to_arrow(values: np.ndarray, column: str) -> pa.Array:
    if values.dtype == object:
        return _list_to_arrow(list(values), column)
    if values.ndim == 0:
        raise DataError(f"column {column!r} is a scalar; return one value per row (an array of length n)")
    if values.ndim == 1:
        return _flat_to_arrow(values)
    if values.dtype.kind == "b":  # Arrow's fixed_shape_tensor has no bool values: one bool ndarray per row
        return variable_tensor_array(list(values))
    values = np.ascontiguousarray(values)
    flat = _flat_to_arrow(values.reshape(-1))
    storage = pa.FixedSizeListArray.from_arrays(flat, int(np.prod(values.shape[1:])))
    tensor_type = pa.fixed_shape_tensor(flat.type, list(values.shape[1:]))
    return pa.ExtensionArray.from_storage(tensor_type, storage)


def _flat_to_arrow(values: np.ndarray) -> pa.Array:
    """1-D numpy to Arrow: zero-copy for numbers, and avoiding pa.array(), which imports pandas
    (~0.5 s in every fresh worker process)."""
    kind = values.dtype.kind
    if kind in "iuf" and values.dtype.isnative:
        values = np.ascontiguousarray(values)
        return pa.Array.from_buffers(
            pa.from_numpy_dtype(values.dtype), len(values), [None, pa.py_buffer(values)]
        )
    if kind == "b":
        bits = np.packbits(values.astype(np.uint8), bitorder="little")
        return pa.Array.from_buffers(pa.bool_(), len(values), [None, pa.py_buffer(bits)])
    if kind == "U":
        return _bytes_to_arrow([v.encode() for v in values.tolist()], pa.string())
    if kind == "S":
        return _bytes_to_arrow(values.tolist(), pa.binary())
    return pa.array(values)


def _bytes_to_arrow(items: list[bytes], arrow_type: pa.DataType) -> pa.Array:
    offsets = np.zeros(len(items) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in items], out=offsets[1:])
    if offsets[-1] >= 2**31:
        arrow_type = pa.large_string() if arrow_type == pa.string() else pa.large_binary()
    else:
        offsets = offsets.astype(np.int32)
    data = pa.py_buffer(b"".join(items))
    return pa.Array.from_buffers(arrow_type, len(items), [None, pa.py_buffer(offsets), data])


def _scalars_to_arrow(values: list[Any]) -> pa.Array | None:
    """Fast paths for lists of one plain Python type; None when there is no fast path."""
    kinds = {type(v) for v in values}
    if len(kinds) != 1:
        return None
    kind = kinds.pop()
    if kind is bool:
        return _flat_to_arrow(np.array(values, dtype=bool))
    if kind is int:
        try:
            return _flat_to_arrow(np.array(values, dtype=np.int64))
        except OverflowError:
            return None
    if kind is float:
        return _flat_to_arrow(np.array(values, dtype=np.float64))
    if kind is str:
        return _bytes_to_arrow([v.encode() for v in values], pa.string())
    if kind is bytes:
        return _bytes_to_arrow(values, pa.binary())
    return None


def _list_to_arrow(values: list[Any], column: str) -> pa.Array:
    values = [_torch_to_numpy(v) for v in values]
    arrays = [v for v in values if isinstance(v, np.ndarray)]
    if arrays and len(arrays) == len(values):
        return _ndarrays_to_arrow(arrays, column)
    fast = _scalars_to_arrow(values) if values else None
    if fast is not None:
        return fast
    try:
        return pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return python_object_array(values)


def _ndarrays_to_arrow(arrays: list[np.ndarray], column: str) -> pa.Array:
    first = arrays[0]
    if first.dtype == object:
        return python_object_array(arrays)
    if any(a.dtype != first.dtype or a.ndim != first.ndim for a in arrays):
        arrays = [np.asarray(a, dtype=np.result_type(*arrays)) for a in arrays]
        if any(a.ndim != first.ndim for a in arrays):
            return python_object_array(arrays)
    if first.ndim == 0 or all(a.shape == first.shape for a in arrays):
        return _ndarray_to_arrow(np.stack(arrays), column)
    return variable_tensor_array(arrays)


def batch_to_block(batch: Any, udf: str = "function") -> Block:
    """Turn what a user function returned into a block, or raise a one-line DataError."""
    if isinstance(batch, pa.Table):
        return batch
    if type(batch).__module__.startswith("pandas"):
        batch = {str(k): batch[k] for k in batch.columns}
    if not isinstance(batch, Mapping):
        raise DataError(
            f"{udf} returned a {type(batch).__name__}; return a dict of column name -> array "
            "(or a pandas DataFrame / pyarrow Table)"
        )
    columns = {str(k): to_arrow_column(v, str(k)) for k, v in batch.items()}
    lengths = {k: len(v) for k, v in columns.items()}
    if len(set(lengths.values())) > 1:
        raise DataError(f"{udf} returned columns of different lengths {lengths}; return equal-length columns")
    return pa.table(columns) if columns else pa.table({})


def rows_to_block(rows: Sequence[Mapping[str, Any]], udf: str = "function") -> Block:
    """Turn a list of row dicts into a block (columns in first-seen order)."""
    if not rows:
        return pa.table({})
    names: dict[str, None] = {}
    for row in rows:
        if not isinstance(row, Mapping):
            raise DataError(
                f"{udf} returned a {type(row).__name__} row; return a dict of column name -> value"
            )
        names.update(dict.fromkeys(row))
    try:
        columns = {str(k): [row[k] for row in rows] for k in names}
    except KeyError as e:
        raise DataError(
            f"{udf} returned rows with different keys (missing {e}); return the same keys in every row"
        ) from None
    return pa.table({k: _list_to_arrow(v, k) for k, v in columns.items()})


# ---------------------------------------------------------------- Arrow -> values


def column_to_numpy(column: pa.ChunkedArray | pa.Array, lists_as_arrays: bool = False) -> np.ndarray:
    """One Arrow column as numpy; zero-copy for single-chunk primitive and tensor columns. A variable-length
    list column gives Python lists per row (rows, unique values), or ndarrays with ``lists_as_arrays``
    (batches)."""
    if isinstance(column, pa.ChunkedArray):
        column = column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
    column_type = column.type
    if isinstance(column_type, pa.FixedShapeTensorType):
        if column.null_count == 0:
            tensors: np.ndarray = column.to_numpy_ndarray()
            return tensors
        return object_array(column.to_pylist())
    if isinstance(column_type, VariableShapeTensorType):
        return variable_tensor_to_numpy(column)
    if isinstance(column_type, PythonObjectType):
        return python_object_to_numpy(column)
    if pa.types.is_fixed_size_list(column_type):
        return _fixed_size_list_to_numpy(column)
    if lists_as_arrays and (pa.types.is_list(column_type) or pa.types.is_large_list(column_type)):
        # a batch: one ndarray per row (None for a null row), as Arrow's (and Ray's) batch conversion gives
        rows: np.ndarray = column.to_numpy(zero_copy_only=False)
        return rows
    if (
        pa.types.is_list(column_type)
        or pa.types.is_large_list(column_type)
        or pa.types.is_struct(column_type)
    ):
        return object_array(column.to_pylist())
    return _primitive_to_numpy(column)


def _fixed_size_list_to_numpy(column: pa.Array) -> np.ndarray:
    """``fixed_size_list<uint8>[784]`` (what other tools write for images) is a tensor column: (n, 784),
    zero-copy; nested fixed-size lists give more dimensions. With nulls, one list per row."""
    shape, values = [len(column)], column
    while pa.types.is_fixed_size_list(values.type) and values.null_count == 0:
        shape.append(values.type.list_size)
        values = values.flatten()
    if pa.types.is_fixed_size_list(values.type) or values.type not in _NUMPY_DTYPES or values.null_count:
        return object_array(column.to_pylist())
    return _primitive_to_numpy(values).reshape(shape)


_NUMPY_DTYPES = {
    pa.int8(): np.int8,
    pa.int16(): np.int16,
    pa.int32(): np.int32,
    pa.int64(): np.int64,
    pa.uint8(): np.uint8,
    pa.uint16(): np.uint16,
    pa.uint32(): np.uint32,
    pa.uint64(): np.uint64,
    pa.float16(): np.float16,
    pa.float32(): np.float32,
    pa.float64(): np.float64,
}


def _primitive_to_numpy(column: pa.Array) -> np.ndarray:
    """Zero-copy view for numbers; avoids Array.to_numpy(), which imports pandas (~0.5 s)."""
    dtype = _NUMPY_DTYPES.get(column.type)
    if dtype is not None and column.null_count == 0:
        buffer = column.buffers()[1]
        array = np.frombuffer(
            buffer, dtype=dtype, count=len(column), offset=column.offset * np.dtype(dtype).itemsize
        )
        array.flags.writeable = False  # Arrow memory is immutable and may be shared by other blocks
        return array
    if pa.types.is_boolean(column.type) and column.null_count == 0:
        return np.array(column.to_pylist(), dtype=bool)
    if (
        pa.types.is_string(column.type)
        or pa.types.is_large_string(column.type)
        or pa.types.is_binary(column.type)
    ):
        return object_array(column.to_pylist())
    values: np.ndarray = column.to_numpy(zero_copy_only=False)
    return values


def slices_convert_alike(block: Block) -> bool:
    """True when converting ``block`` to numpy once and slicing the arrays gives exactly what converting
    each row-slice would: every column numeric or bool (plain, fixed-shape tensor or fixed-size list of
    them) without nulls. Not so for strings, ragged or nested values, or nulls, whose conversion
    depends on the rows present (a slice without nulls stays int, one with them does not).

    Example:
        >>> import pyarrow as pa
        >>> slices_convert_alike(pa.table({"x": [1, 2], "y": [0.5, 1.5]}))
        True
        >>> with_null, strings = pa.table({"x": [1, None]}), pa.table({"s": ["a", "b"]})
        >>> slices_convert_alike(with_null), slices_convert_alike(strings)
        (False, False)
    """
    return all(_slices_convert_alike(block.column(i)) for i in range(block.num_columns))


def _slices_convert_alike(column: pa.ChunkedArray) -> bool:
    column_type = column.type
    if column.null_count:
        return False
    if isinstance(column_type, pa.FixedShapeTensorType):
        return column_type.value_type in _NUMPY_DTYPES
    if isinstance(column_type, pa.ExtensionType):  # ragged tensors, Python objects (and unhashable types)
        return False
    if pa.types.is_fixed_size_list(
        column_type
    ):  # numbers all the way down, as _fixed_size_list_to_numpy needs
        values = pa.chunked_array([chunk.flatten() for chunk in column.chunks], column_type.value_type)
        return not pa.types.is_boolean(values.type) and _slices_convert_alike(values)
    return column_type in _NUMPY_DTYPES or pa.types.is_boolean(column_type)


def block_to_numpy(
    block: Block, writable: bool = False, lists_as_arrays: bool = False
) -> dict[str, np.ndarray]:
    """Columns as numpy; zero-copy views of Arrow memory (read-only) unless ``writable``; list columns as
    ndarrays per row with ``lists_as_arrays`` (a user's batch), else as Python lists (rows)."""
    batch = {
        name: column_to_numpy(block.column(i), lists_as_arrays) for i, name in enumerate(block.column_names)
    }
    if writable:  # user functions may modify their batch in place, as they can in Ray
        batch = {k: _writable(v) for k, v in batch.items()}
    return batch


def _writable(values: np.ndarray) -> np.ndarray:
    """A copy of read-only Arrow views; for ragged ndarray rows, each row that is a view."""
    if values.dtype != object:
        return values if values.flags.writeable else values.copy()
    if not any(isinstance(v, np.ndarray) and not v.flags.writeable for v in values):
        return values
    return object_array(
        [v.copy() if isinstance(v, np.ndarray) and not v.flags.writeable else v for v in values]
    )


def block_to_batch(block: Block, batch_format: str = "numpy", writable: bool = False) -> Any:
    """The batch a user function or consumer sees, in ``batch_format``."""
    if batch_format in ("numpy", "default"):
        return block_to_numpy(block, writable, lists_as_arrays=True)
    if batch_format == "pyarrow":
        return block
    if batch_format == "pandas":
        import pandas as pd

        return pd.DataFrame(
            {k: _pandas_column(v) for k, v in block_to_numpy(block, lists_as_arrays=True).items()}
        )
    raise DataError(f"unknown batch_format {batch_format!r}; use one of 'numpy', 'pandas', 'pyarrow'")


def _pandas_column(values: np.ndarray) -> Any:
    return list(values) if values.ndim > 1 else values


def block_to_rows(block: Block, writable: bool = False) -> Iterator[dict[str, Any]]:
    """Rows as dicts: Python scalars for scalar columns (None for a null, and an int column with nulls stays
    int, as Ray's rows; numpy would make them NaN floats), ndarrays for tensor columns."""
    batch = block_to_numpy(block, writable)
    columns = {k: (list(v) if v.ndim > 1 else v.tolist()) for k, v in batch.items()}
    for name in block.column_names:
        column = block.column(name)
        if column.null_count and not isinstance(column.type, pa.ExtensionType):
            columns[name] = column.to_pylist()
    names = list(columns)
    for i in range(block.num_rows):
        yield {name: columns[name][i] for name in names}


# ---------------------------------------------------------------- combining blocks


def concat_blocks(blocks: list[Block]) -> Block:
    """Concatenate blocks; a column that is fixed-shape in one and ragged in another becomes ragged."""
    blocks = [b for b in blocks if b.num_columns or b.num_rows]
    if not blocks:
        return pa.table({})
    if len(blocks) == 1:
        return blocks[0]
    try:
        return pa.concat_tables(blocks, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return pa.concat_tables(_unify_tensor_types(blocks))


def _unify_tensor_types(blocks: list[Block]) -> list[Block]:
    names = blocks[0].column_names
    out = []
    for block in blocks:
        if block.column_names != names:
            raise DataError(
                f"blocks have different columns {names} and {block.column_names}; return the same columns "
                "from every batch"
            )
        columns = {}
        for name in names:
            types = [b.schema.field(name).type for b in blocks]
            column = block.column(name)
            differ = any(t != types[0] for t in types)
            if differ and any(is_tensor_arrow_type(t) for t in types):
                column = _ndarrays_to_ragged(column_to_numpy(column))
            columns[name] = column
        out.append(pa.table(columns))
    return out


def is_tensor_arrow_type(t: pa.DataType) -> bool:
    return isinstance(t, (pa.FixedShapeTensorType, VariableShapeTensorType))


def _ndarrays_to_ragged(values: np.ndarray) -> pa.Array:
    return variable_tensor_array(list(values))


def block_nbytes(block: Block) -> int:
    size: int
    try:
        size = block.nbytes
    except Exception:  # some extension arrays cannot report their size
        size = block.get_total_buffer_size()
    return size


def split_block(block: Block, rows_per_block: int) -> list[Block]:
    return [block.slice(i, rows_per_block) for i in range(0, block.num_rows, rows_per_block)] or [block]
