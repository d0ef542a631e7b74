"""``DataType``: a column type as Ray Data 2.60 names it (``ray.data.datatype``), over pyarrow types.

A ``DataType`` holds one concrete type from one of three type systems: a ``pyarrow.DataType`` (what
ember's blocks hold, and what the factories make), a ``numpy.dtype``, or a Python class (such as
``object``: "whatever the function returns"). Expressions take it where Ray does: ``Expr.cast``,
``udf(return_dtype=...)``. Two DataTypes are equal only when they come from the same type system.
Tensor factories make ember's tensor types (Arrow's ``fixed_shape_tensor``, ember's variable-shape
tensor), shown under Ray's names.

Example:
    >>> from ember.data.datatype import DataType
    >>> DataType.list(DataType.int64())
    DataType(arrow:list<item: int64>)
    >>> DataType.int64() == DataType.from_numpy("int64")
    False
"""

from __future__ import annotations

import builtins
import datetime
from enum import Enum
from typing import Any

import numpy as np
import pyarrow as pa

from ember.data.tensor_types import VariableShapeTensorType


class TypeCategory(str, Enum):
    """Groups of types that ``DataType.is_of`` tests for (Ray's ``TypeCategory``).

    Example:
        >>> DataType.large_list(DataType.int64()).is_of(TypeCategory.LARGE_LIST)
        True
    """

    LIST = "list"
    LARGE_LIST = "large_list"
    STRUCT = "struct"
    MAP = "map"
    TENSOR = "tensor"
    TEMPORAL = "temporal"


#: The scalar factories (``DataType.int64()``...) and the pyarrow type each one makes.
_SCALAR_FACTORIES = {
    "int8": "int8",
    "int16": "int16",
    "int32": "int32",
    "int64": "int64",
    "uint8": "uint8",
    "uint16": "uint16",
    "uint32": "uint32",
    "uint64": "uint64",
    "float32": "float32",
    "float64": "float64",
    "string": "string",
    "bool": "bool_",
    "binary": "binary",
}

#: ``DataType.temporal`` kinds: (pyarrow factory, default unit, allowed units or None for any).
_TEMPORAL = {
    "timestamp": ("timestamp", "us", None),
    "date32": ("date32", None, None),
    "date64": ("date64", None, None),
    "time32": ("time32", "s", ("s", "ms")),
    "time64": ("time64", "us", ("us", "ns")),
    "duration": ("duration", "us", None),
}


def _scalar_factory(name: str, arrow_factory: str) -> classmethod[DataType, [], DataType]:
    def factory(cls: type[DataType]) -> DataType:
        return cls.from_arrow(getattr(pa, arrow_factory)())

    factory.__name__, factory.__qualname__ = name, f"DataType.{name}"
    factory.__doc__ = f"The Arrow type ``pyarrow.{arrow_factory}()`` (Ray's ``DataType.{name}()``)."
    return classmethod(factory)


class DataType:
    """One concrete column type: a pyarrow type, a numpy dtype or a Python class (Ray's ``DataType``).

    Factories: ``int8`` ... ``uint64``, ``float32``, ``float64``, ``string``, ``bool``, ``binary``,
    ``list``, ``large_list``, ``fixed_size_list``, ``struct``, ``map``, ``tensor``,
    ``variable_shaped_tensor``, ``temporal``; and ``from_arrow``, ``from_numpy``, ``from_dtype``,
    ``infer_dtype``.

    Example:
        >>> DataType(int), DataType.float32(), DataType.from_numpy("int32")
        (DataType(python:int), DataType(arrow:float), DataType(numpy:int32))
    """

    def __init__(self, _physical_dtype: Any) -> None:
        if not isinstance(_physical_dtype, (pa.DataType, np.dtype, type)):
            raise TypeError(
                "DataType holds a pyarrow DataType, a numpy dtype or a Python type, not "
                f"{type(_physical_dtype).__name__}; use DataType.from_dtype(...) to convert"
            )
        # a pa.DataType, np.dtype or type (checked above), told apart by is_arrow_type() etc.; pyarrow is
        # untyped, so the union is Any to mypy anyway
        self._physical_dtype: Any = _physical_dtype

    # --- which type system ---
    def is_arrow_type(self) -> bool:
        """Whether it holds a pyarrow type.

        Example:
            >>> DataType.int64().is_arrow_type(), DataType(int).is_arrow_type()
            (True, False)
        """
        return isinstance(self._physical_dtype, pa.DataType)

    def is_numpy_type(self) -> bool:
        """Whether it holds a numpy dtype.

        Example:
            >>> DataType.from_numpy("int8").is_numpy_type()
            True
        """
        return isinstance(self._physical_dtype, np.dtype)

    def is_python_type(self) -> bool:
        """Whether it holds a Python class.

        Example:
            >>> DataType(object).is_python_type()
            True
        """
        return isinstance(self._physical_dtype, type)

    # --- conversions ---
    def to_arrow_dtype(self, values: list[Any] | None = None) -> pa.DataType:
        """The pyarrow type (a Python-class type needs ``values`` to infer it from).

        Example:
            >>> DataType.from_numpy("float32").to_arrow_dtype(), DataType(int).to_arrow_dtype([1, 2])
            (DataType(float), DataType(int64))
        """
        if self.is_arrow_type():
            return self._physical_dtype
        if self.is_numpy_type():
            return pa.from_numpy_dtype(self._physical_dtype)
        if not values:
            raise ValueError(
                f"{self!r} is a Python type: pass values to infer its Arrow type from, or use an "
                "Arrow DataType such as DataType.int64()"
            )
        return pa.array(list(values)).type

    def to_numpy_dtype(self) -> np.dtype:
        """The numpy dtype (``object`` where numpy has none).

        Example:
            >>> DataType.from_numpy(np.dtype('int64')).to_numpy_dtype(), DataType.string().to_numpy_dtype()
            (dtype('int64'), dtype('O'))
        """
        if self.is_numpy_type():
            numpy_dtype: np.dtype = self._physical_dtype
            return numpy_dtype
        if self.is_arrow_type():
            try:
                numpy_dtype = np.dtype(self._physical_dtype.to_pandas_dtype())
                return numpy_dtype
            except (TypeError, ValueError, NotImplementedError, pa.ArrowNotImplementedError):
                return np.dtype("object")
        return np.dtype("object")

    def to_python_type(self) -> type:
        """The Python class it holds; a ``ValueError`` for a pyarrow or numpy type (nothing is converted).

        Example:
            >>> DataType(int).to_python_type()
            <class 'int'>
        """
        if self.is_python_type():
            python_type: type = self._physical_dtype
            return python_type
        raise ValueError(f"{self!r} is not backed by a Python type; use to_arrow_dtype() or to_numpy_dtype()")

    def to_cudf_type(self) -> Any:
        """Refused: ember has no cuDF (GPU dataframe) support.

        Example:
            >>> DataType.int64().to_cudf_type()
            Traceback (most recent call last):
            ember.errors.ConfigError: DataType.to_cudf_type(): ember.data has no cuDF support; use
            to_numpy_dtype() or to_arrow_dtype()
        """
        from ember.errors import ConfigError

        raise ConfigError(
            "DataType.to_cudf_type(): ember.data has no cuDF support; use to_numpy_dtype() or "
            "to_arrow_dtype()"
        )

    # --- makers from other type systems ---
    @classmethod
    def from_arrow(cls, arrow_type: pa.DataType) -> DataType:
        """The DataType of a pyarrow type.

        Example:
            >>> DataType.from_arrow(pa.timestamp('s'))
            DataType(arrow:timestamp[s])
        """
        return cls(arrow_type)

    @classmethod
    def from_numpy(cls, numpy_dtype: Any) -> DataType:
        """The DataType of a numpy dtype (or its name).

        Example:
            >>> DataType.from_numpy('float64')
            DataType(numpy:float64)
        """
        return cls(np.dtype(numpy_dtype))

    @classmethod
    def from_cudf(cls, cudf_dtype: Any) -> DataType:
        """Refused: ember has no cuDF support (see `to_cudf_type`)."""
        from ember.errors import ConfigError

        raise ConfigError(
            "DataType.from_cudf(): ember.data has no cuDF support; use DataType.from_numpy() or "
            "DataType.from_arrow()"
        )

    @classmethod
    def from_dtype(cls, dtype: Any) -> DataType | None:
        """A dtype of any supported kind (pyarrow, numpy, a numpy name, pandas, a Python class) as a
        DataType; None when it is none of these.

        Example:
            >>> DataType.from_dtype(pa.int8()), DataType.from_dtype("int8"), DataType.from_dtype(str)
            (DataType(arrow:int8), DataType(numpy:int8), DataType(python:str))
        """
        if dtype is None or isinstance(dtype, DataType):
            return dtype
        if isinstance(dtype, pa.DataType):
            return cls.from_arrow(dtype)
        if isinstance(dtype, type):
            return cls.from_numpy(dtype) if issubclass(dtype, np.generic) else cls(dtype)
        pandas_type = _pandas_arrow_type(dtype)
        if pandas_type is not None:
            return cls.from_arrow(pandas_type)
        try:
            return cls.from_numpy(np.dtype(getattr(dtype, "numpy_dtype", dtype)))
        except (TypeError, ValueError):
            return None

    @classmethod
    def infer_dtype(cls, value: Any) -> DataType:
        """The DataType of a value: numpy values keep their dtype, others take the Arrow type pyarrow
        infers, and values Arrow cannot hold their Python class.

        Example:
            >>> DataType.infer_dtype(5), DataType.infer_dtype(np.int32(42)), DataType.infer_dtype(object())
            (DataType(arrow:int64), DataType(numpy:int32), DataType(python:object))
        """
        if isinstance(value, (np.ndarray, np.generic)):
            return cls.from_numpy(value.dtype)
        try:
            return cls.from_arrow(pa.array([value]).type)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError):
            return cls(type(value))

    # --- nested and temporal factories ---
    @classmethod
    def list(cls, value_type: DataType) -> DataType:
        """A variable-length list of ``value_type``.

        Example:
            >>> DataType.list(DataType.int64())
            DataType(arrow:list<item: int64>)
        """
        return cls.from_arrow(pa.list_(value_type.to_arrow_dtype()))

    @classmethod
    def large_list(cls, value_type: DataType) -> DataType:
        """A list with 64-bit offsets.

        Example:
            >>> DataType.large_list(DataType.int64())
            DataType(arrow:large_list<item: int64>)
        """
        return cls.from_arrow(pa.large_list(value_type.to_arrow_dtype()))

    @classmethod
    def fixed_size_list(cls, value_type: DataType, list_size: int) -> DataType:
        """A list of exactly ``list_size`` values.

        Example:
            >>> DataType.fixed_size_list(DataType.float32(), 3)
            DataType(arrow:fixed_size_list<item: float>[3])
        """
        return cls.from_arrow(pa.list_(value_type.to_arrow_dtype(), list_size))

    @classmethod
    def struct(cls, fields: builtins.list[tuple[str, DataType]]) -> DataType:  # `list`: the factory here
        """A struct of the named fields, in order.

        Example:
            >>> DataType.struct([("x", DataType.int64()), ("y", DataType.float64())])
            DataType(arrow:struct<x: int64, y: double>)
        """
        return cls.from_arrow(pa.struct([(name, field.to_arrow_dtype()) for name, field in fields]))

    @classmethod
    def map(cls, key_type: DataType, value_type: DataType) -> DataType:
        """A map from ``key_type`` to ``value_type``.

        Example:
            >>> DataType.map(DataType.string(), DataType.int64())
            DataType(arrow:map<string, int64>)
        """
        return cls.from_arrow(pa.map_(key_type.to_arrow_dtype(), value_type.to_arrow_dtype()))

    @classmethod
    def tensor(cls, shape: tuple[int, ...], dtype: DataType) -> DataType:
        """An ndarray of fixed ``shape`` per row (Arrow's ``fixed_shape_tensor``, Ray's ``ArrowTensorType``).

        Example:
            >>> DataType.tensor(shape=(3, 4), dtype=DataType.float32())
            DataType(arrow:ArrowTensorType(shape=(3, 4), dtype=float))
        """
        return cls.from_arrow(pa.fixed_shape_tensor(dtype.to_arrow_dtype(), tuple(shape)))

    @classmethod
    def variable_shaped_tensor(cls, dtype: DataType, ndim: int = 2) -> DataType:
        """An ndarray of ``ndim`` dimensions whose shape differs by row.

        Example:
            >>> DataType.variable_shaped_tensor(dtype=DataType.float32(), ndim=2)
            DataType(arrow:ArrowVariableShapedTensorType(ndim=2, dtype=float))
        """
        return cls.from_arrow(VariableShapeTensorType(dtype.to_arrow_dtype(), ndim))

    @classmethod
    def temporal(cls, temporal_type: str, unit: str | None = None, tz: str | None = None) -> DataType:
        """A date, time, timestamp or duration type: ``temporal_type`` is one of ``timestamp`` (unit
        ``us`` unless given, optional ``tz``), ``date32``, ``date64``, ``time32`` (``s``/``ms``),
        ``time64`` (``us``/``ns``), ``duration`` (unit ``us`` unless given).

        Example:
            >>> DataType.temporal("timestamp", unit="us", tz="UTC"), DataType.temporal("date32")
            (DataType(arrow:timestamp[us, tz=UTC]), DataType(arrow:date32[day]))
        """
        kind = temporal_type.lower()
        if kind not in _TEMPORAL:
            raise ValueError(f"temporal_type {temporal_type!r}: use one of {', '.join(map(repr, _TEMPORAL))}")
        factory, default_unit, allowed = _TEMPORAL[kind]
        if default_unit is None:
            return cls.from_arrow(getattr(pa, factory)())
        unit = unit or default_unit
        if allowed is not None and unit not in allowed:
            raise ValueError(f"{kind} unit must be one of {allowed}, got {unit!r}")
        if kind == "timestamp":
            return cls.from_arrow(pa.timestamp(unit, tz=tz))
        return cls.from_arrow(getattr(pa, factory)(unit))

    # --- categories ---
    def is_of(self, category: TypeCategory | str) -> bool:
        """Whether the type is in ``category`` (a ``TypeCategory`` or its name; an unknown name is False).

        Example:
            >>> DataType.struct([("x", DataType.int64())]).is_of("struct"), DataType.int64().is_of("nope")
            (True, False)
        """
        try:
            category = TypeCategory(category)
        except ValueError:
            return False
        if category is TypeCategory.LARGE_LIST:
            return self.is_arrow_type() and (
                pa.types.is_large_list(self._physical_dtype)
                or pa.types.is_large_list_view(self._physical_dtype)
            )
        answer: bool = getattr(self, f"is_{category.value}_type")()
        return answer

    def _arrow_value_type(self) -> pa.DataType:
        """The Arrow type with dictionary / run-end encoding taken off (what the values are)."""
        arrow_type = self._physical_dtype
        if pa.types.is_dictionary(arrow_type) or pa.types.is_run_end_encoded(arrow_type):
            return arrow_type.value_type
        return arrow_type

    def _arrow_is(self, *checks: str) -> bool:
        return self.is_arrow_type() and any(
            getattr(pa.types, check)(self._physical_dtype) for check in checks
        )

    def is_list_type(self) -> bool:
        """Whether it is a list of any kind (list, large, fixed-size, list views).

        Example:
            >>> DataType.list(DataType.int64()).is_list_type(), DataType.int64().is_list_type()
            (True, False)
        """
        return self._arrow_is(
            "is_list", "is_large_list", "is_fixed_size_list", "is_list_view", "is_large_list_view"
        )

    def is_tensor_type(self) -> bool:
        """Whether it is one of ember's tensor types.

        Example:
            >>> DataType.tensor((2,), DataType.int8()).is_tensor_type()
            True
        """
        return isinstance(self._physical_dtype, (pa.FixedShapeTensorType, VariableShapeTensorType))

    def is_struct_type(self) -> bool:
        """Whether it is a struct.

        Example:
            >>> DataType.struct([("x", DataType.int64())]).is_struct_type()
            True
        """
        return self._arrow_is("is_struct")

    def is_map_type(self) -> bool:
        """Whether it is a map.

        Example:
            >>> DataType.map(DataType.string(), DataType.int64()).is_map_type()
            True
        """
        return self._arrow_is("is_map")

    def is_nested_type(self) -> bool:
        """Whether it is a list, struct, map or union.

        Example:
            >>> DataType.list(DataType.int64()).is_nested_type(), DataType.int64().is_nested_type()
            (True, False)
        """
        return self._arrow_is("is_nested")

    def is_null_type(self) -> bool:
        """Whether it is Arrow's null type.

        Example:
            >>> DataType.from_arrow(pa.null()).is_null_type()
            True
        """
        return self._arrow_is("is_null")

    def _is(self, arrow_check: str, numpy_kinds: str, python_types: tuple[type, ...]) -> bool:
        if self.is_arrow_type():
            answer: bool = getattr(pa.types, arrow_check)(self._arrow_value_type())
            return answer
        if self.is_numpy_type():
            return self._physical_dtype.kind in numpy_kinds
        return self._physical_dtype in python_types

    def is_boolean_type(self) -> bool:
        """Whether it is a boolean.

        Example:
            >>> DataType.bool().is_boolean_type(), DataType(bool).is_boolean_type()
            (True, True)
        """
        return self._is("is_boolean", "b", (bool,))

    def is_integer_type(self) -> bool:
        """Whether it is an integer (booleans are not).

        Example:
            >>> DataType.uint8().is_integer_type(), DataType.from_numpy("bool").is_integer_type()
            (True, False)
        """
        return self._is("is_integer", "iu", (int,))

    def is_floating_type(self) -> bool:
        """Whether it is a floating-point number.

        Example:
            >>> DataType.float32().is_floating_type()
            True
        """
        return self._is("is_floating", "f", (float,))

    def is_uint64_type(self) -> bool:
        """Whether it is an unsigned 64-bit integer.

        Example:
            >>> DataType.uint64().is_uint64_type(), DataType.from_numpy("uint64").is_uint64_type()
            (True, True)
        """
        answer: bool = (
            pa.types.is_uint64(self._arrow_value_type())
            if self.is_arrow_type()
            else self.is_numpy_type() and self._physical_dtype == np.dtype("uint64")
        )
        return answer

    def is_numerical_type(self) -> bool:
        """Whether it is an integer, a float, a decimal (Arrow) or a complex number (numpy, Python).

        Example:
            >>> DataType.int64().is_numerical_type(), DataType.string().is_numerical_type()
            (True, False)
        """
        if self.is_arrow_type():
            return (
                self._is("is_integer", "", ())
                or self._is("is_floating", "", ())
                or self._is("is_decimal", "", ())
            )
        return self._is("", "iufc", (int, float, complex))

    def is_string_type(self) -> bool:
        """Whether it is a string (Arrow's string, large string and string view; numpy's U and S).

        Example:
            >>> DataType.string().is_string_type(), DataType.int64().is_string_type()
            (True, False)
        """
        if self.is_arrow_type():
            value_type = self._arrow_value_type()
            return any(
                getattr(pa.types, c)(value_type) for c in ("is_string", "is_large_string", "is_string_view")
            )
        return self._is("", "US", (str,))

    def is_binary_type(self) -> bool:
        """Whether it is binary (Arrow's binary kinds; numpy's void; bytes).

        Example:
            >>> DataType.binary().is_binary_type(), DataType.string().is_binary_type()
            (True, False)
        """
        if self.is_arrow_type():
            value_type = self._arrow_value_type()
            return any(
                getattr(pa.types, c)(value_type)
                for c in ("is_binary", "is_large_binary", "is_binary_view", "is_fixed_size_binary")
            )
        return self._is("", "V", (bytes, bytearray))

    def is_temporal_type(self) -> bool:
        """Whether it is a date, time, timestamp, duration or interval.

        Example:
            >>> DataType.from_arrow(pa.timestamp('s')).is_temporal_type(), DataType.int64().is_temporal_type()
            (True, False)
        """
        return self._is(
            "is_temporal", "mM", (datetime.datetime, datetime.date, datetime.time, datetime.timedelta)
        )

    # --- identity ---
    def __repr__(self) -> str:
        if self.is_arrow_type():
            return f"DataType(arrow:{_arrow_name(self._physical_dtype)})"
        if self.is_numpy_type():
            return f"DataType(numpy:{self._physical_dtype})"
        return f"DataType(python:{self._physical_dtype.__name__})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DataType) or type(self._physical_dtype) is not type(other._physical_dtype):
            return False
        return bool(self._physical_dtype == other._physical_dtype)

    def __hash__(self) -> int:
        return hash((type(self._physical_dtype), self._physical_dtype))


for _name, _arrow_factory in _SCALAR_FACTORIES.items():
    setattr(DataType, _name, _scalar_factory(_name, _arrow_factory))


def _arrow_name(arrow_type: pa.DataType) -> str:
    """An Arrow type as Ray prints it inside a DataType (tensors under Ray's tensor type names)."""
    if isinstance(arrow_type, pa.FixedShapeTensorType):
        return f"ArrowTensorType(shape={tuple(arrow_type.shape)}, dtype={arrow_type.value_type})"
    if isinstance(arrow_type, VariableShapeTensorType):
        return f"ArrowVariableShapedTensorType(ndim={arrow_type.ndim}, dtype={arrow_type.value_type})"
    return str(arrow_type)


def _pandas_arrow_type(dtype: Any) -> pa.DataType | None:
    """The Arrow type of a pandas ``ArrowDtype`` / ``StringDtype``, else None (pandas is not imported
    here)."""
    arrow_type = getattr(dtype, "pyarrow_dtype", None)
    if isinstance(arrow_type, pa.DataType):
        return arrow_type
    if type(dtype).__name__ == "StringDtype":
        return pa.string()
    return None
