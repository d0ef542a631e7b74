"""Arrow extension types for columns Arrow has no canonical type for.

Fixed-shape ndarrays use Arrow's own ``arrow.fixed_shape_tensor``. pyarrow does not ship the
variable-shape tensor type, so ember registers its own (``ember.variable_shape_tensor``: a struct of
the flat values and the shape). Values Arrow cannot hold at all (PIL images, arbitrary objects) are
stored pickled in ``ember.python_object``. Both types are registered on import, so they survive a
parquet round trip: parquet keeps the Arrow schema and the extension name in its metadata.

Unpickling runs code, so ember unpickles only *trusted* ``ember.python_object`` columns: those built in
this process, or passed between ember's own processes (`trust`), or read by
``read_parquet(..., allow_pickle=True)``. A column that pyarrow rebuilt from outside bytes (a file read
with ``pyarrow.parquet``, an IPC stream) is untrusted, and turning it into values is a one-line error.
"""

from __future__ import annotations

import contextlib
import json
import pickle

import numpy as np
import pyarrow as pa

VARIABLE_TENSOR_NAME = "ember.variable_shape_tensor"
PYTHON_OBJECT_NAME = "ember.python_object"


class VariableShapeTensorType(pa.ExtensionType):
    """ndarrays of one dtype and one ndim whose shapes differ from row to row."""

    def __init__(self, value_type: pa.DataType, ndim: int) -> None:
        self.value_type = value_type
        self.ndim = ndim
        storage = pa.struct([("data", pa.large_list(value_type)), ("shape", pa.list_(pa.int64(), ndim))])
        super().__init__(storage, VARIABLE_TENSOR_NAME)

    def __arrow_ext_serialize__(self) -> bytes:
        return str(self.ndim).encode()

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type: pa.DataType, serialized: bytes):
        value_type = storage_type.field("data").type.value_type
        return cls(value_type, int(serialized.decode()))

    def __reduce__(self):
        return VariableShapeTensorType, (self.value_type, self.ndim)


class PythonObjectType(pa.ExtensionType):
    """Any picklable Python object, one pickle per row; ``trusted`` says whether ember may unpickle it."""

    def __init__(self, trusted: bool = True) -> None:
        self.trusted = trusted
        super().__init__(pa.large_binary(), PYTHON_OBJECT_NAME)

    def __arrow_ext_serialize__(self) -> bytes:
        return b""

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type: pa.DataType, serialized: bytes):
        return cls(trusted=False)  # rebuilt from bytes that came from somewhere: a file, a stream

    def __reduce__(self):
        return PythonObjectType, ()


def _register(ext_type: pa.ExtensionType) -> None:
    with contextlib.suppress(pa.ArrowKeyError):  # already registered (module reloaded)
        pa.register_extension_type(ext_type)


_register(VariableShapeTensorType(pa.float32(), 1))
_register(PythonObjectType())

#: The one trusted instance. pyarrow keeps only a weak reference to a Python extension type and rebuilds a
#: collected one with ``__arrow_ext_deserialize__`` (untrusted), so every trusted column uses this one.
TRUSTED_PYTHON_OBJECT = PythonObjectType()


def variable_tensor_array(arrays: list[np.ndarray]) -> pa.ExtensionArray:
    """Store ndarrays of equal dtype and ndim but different shapes in one Arrow column."""
    first = arrays[0]
    value_type = pa.from_numpy_dtype(first.dtype)
    flat = [np.ascontiguousarray(a).reshape(-1) for a in arrays]
    offsets = np.zeros(len(flat) + 1, dtype=np.int64)
    np.cumsum([f.size for f in flat], out=offsets[1:])
    values = pa.array(np.concatenate(flat) if flat else np.empty(0, first.dtype), type=value_type)
    data = pa.LargeListArray.from_arrays(pa.array(offsets), values)
    shapes = pa.array([list(a.shape) for a in arrays], type=pa.list_(pa.int64(), first.ndim))
    storage = pa.StructArray.from_arrays([data, shapes], names=["data", "shape"])
    return pa.ExtensionArray.from_storage(VariableShapeTensorType(value_type, first.ndim), storage)


def variable_tensor_to_numpy(array: pa.ExtensionArray) -> np.ndarray:
    """One ndarray per row; stacked into one ndarray when every row has the same shape."""
    storage = array.storage
    data = storage.field("data")
    shapes = storage.field("shape").to_pylist()
    values = data.values.to_numpy(zero_copy_only=False)
    offsets = data.offsets.to_numpy()
    arrays = [values[offsets[i] : offsets[i + 1]].reshape(shapes[i]) for i in range(len(array))]
    if arrays and all(a.shape == arrays[0].shape for a in arrays):
        return np.stack(arrays)
    return object_array(arrays)


def python_object_array(values: list) -> pa.ExtensionArray:
    """Pickle each value into one row of an ``ember.python_object`` column."""
    storage = pa.array([pickle.dumps(v, protocol=5) for v in values], type=pa.large_binary())
    return pa.ExtensionArray.from_storage(TRUSTED_PYTHON_OBJECT, storage)


def python_object_to_numpy(array: pa.ExtensionArray) -> np.ndarray:
    if not array.type.trusted:
        from ember.errors import DataError

        raise DataError(
            "a column of pickled Python objects (ember.python_object) came from outside ember, and "
            "unpickling it could run code; read the file with ember.data.read_parquet(path, "
            "allow_pickle=True) if you trust it"
        )
    return object_array([pickle.loads(b) for b in array.storage.to_pylist()])


def trust(table: pa.Table, only: list[str] | None = None) -> pa.Table:
    """Mark ``table``'s pickled columns (or those named in ``only``) as ember's own: an opted-in file's,
    or what a worker sent back that was trusted there."""
    names = [
        f.name
        for f in table.schema
        if isinstance(f.type, PythonObjectType) and not f.type.trusted and (only is None or f.name in only)
    ]
    for name in names:
        index = table.schema.get_field_index(name)
        chunks = [
            pa.ExtensionArray.from_storage(TRUSTED_PYTHON_OBJECT, c.storage)
            for c in table.column(index).chunks
        ]
        column = pa.chunked_array(chunks, TRUSTED_PYTHON_OBJECT)
        table = table.set_column(index, pa.field(name, TRUSTED_PYTHON_OBJECT), column)
    return table


_TRUSTED_KEY = b"ember.trusted_python_objects"


def trusted_names(table: pa.Table) -> list[str]:
    return [f.name for f in table.schema if isinstance(f.type, PythonObjectType) and f.type.trusted]


def mark_trust(table: pa.Table) -> pa.Table:
    """Before a table leaves for another of ember's processes (Arrow IPC, Ray's object store): list its
    trusted pickled columns in the schema metadata, since pyarrow rebuilds every one as untrusted."""
    names = trusted_names(table)
    if not names:
        return table
    return table.replace_schema_metadata(
        {**(table.schema.metadata or {}), _TRUSTED_KEY: json.dumps(names).encode()}
    )


def restore_trust(table: pa.Table) -> pa.Table:
    """After a table arrived from another of ember's processes: trust the columns `mark_trust` listed,
    only."""
    metadata = table.schema.metadata or {}
    if _TRUSTED_KEY not in metadata:
        return table
    names = json.loads(metadata[_TRUSTED_KEY])
    rest = {k: v for k, v in metadata.items() if k != _TRUSTED_KEY}
    return trust(table.replace_schema_metadata(rest or None), names)


def object_array(values: list) -> np.ndarray:
    """A 1-D object ndarray holding ``values`` as they are (numpy would try to stack them)."""
    out = np.empty(len(values), dtype=object)
    for i, value in enumerate(values):
        out[i] = value
    return out
