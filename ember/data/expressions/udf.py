"""User functions inside expressions: ``udf`` and ``pyarrow_udf`` (Ray Data 2.60).

A decorated function is called once per block with each argument's values: a column as a
``pyarrow.ChunkedArray``, a constant as a ``pyarrow.Scalar``. It returns the new values (a pyarrow
array, a numpy array or a list), as many as the block has rows. A decorated callable class is
constructed on first use in each worker (once, like Ray's actors), with the arguments given to it:
``AddOffset(5)(col("x"))``. ``return_dtype`` is an ``ember.data.datatype.DataType`` (Ray's) or a
``pyarrow.DataType``; as in Ray 2.60 it declares the type and does not cast: the column holds what
the function returned.

Example:
    >>> import ember.data
    >>> import pyarrow as pa
    >>> import pyarrow.compute as pc
    >>> from ember.data.expressions import col
    >>> @udf(return_dtype=pa.int64())
    ... def add_one(x):
    ...     return pc.add(x, 1)
    >>> ember.data.range(3).with_column("y", add_one(col("id")) * 2).take_all()
    [{'id': 0, 'y': 2}, {'id': 1, 'y': 4}, {'id': 2, 'y': 6}]
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ember.data.block import Block
from ember.data.expressions.core import Evaluation, Expr, LiteralExpr
from ember.errors import ConfigError, DataError


def declared_type(return_dtype: Any) -> Any:
    """``return_dtype`` as an ``ember.data.datatype.DataType`` (the ``UDFExpr.data_type`` Ray's has):
    a DataType is kept, a pyarrow type or a Ray ``DataType`` (anything with ``to_arrow_dtype()``) wrapped.

    Example:
        >>> import pyarrow as pa
        >>> from ember.data.datatype import DataType
        >>> declared_type(pa.int32()), declared_type(DataType(object))
        (DataType(arrow:int32), DataType(python:object))
    """
    import pyarrow as pa

    from ember.data.datatype import DataType

    if isinstance(return_dtype, DataType):
        return return_dtype
    if isinstance(return_dtype, pa.DataType):
        return DataType.from_arrow(return_dtype)
    if callable(getattr(return_dtype, "is_python_type", None)) and return_dtype.is_python_type():
        return DataType(return_dtype.to_python_type())
    if callable(getattr(return_dtype, "to_arrow_dtype", None)):
        return DataType.from_arrow(return_dtype.to_arrow_dtype())
    raise ConfigError(
        f"udf(return_dtype={return_dtype!r}); pass a DataType such as "
        "ember.data.datatype.DataType.int64() (or a pyarrow type)"
    )


def _as_expr(value: Any) -> Expr:
    return value if isinstance(value, Expr) else LiteralExpr(value)


class ConstructOnce:
    """A callable class's instance, built on the first call in each process (never pickled: a
    worker builds its own, as Ray builds one per actor).

    Example:
        >>> class Add:
        ...     def __init__(self, k):
        ...         self.k = k
        ...     def __call__(self, x):
        ...         return x + self.k
        >>> ConstructOnce(Add, (2,), {})(1)
        3
    """

    def __init__(self, cls: type, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self.cls, self.args, self.kwargs = cls, args, kwargs
        self._instance: Any = None
        self.__qualname__ = cls.__qualname__  # error messages name the user's class

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._instance is None:
            self._instance = self.cls(*self.args, **self.kwargs)
        return self._instance(*args, **kwargs)

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_instance": None}


class UDFExpr(Expr):
    """A user function called on whole blocks (Ray's ``UDFExpr``); built by calling a ``udf``.

    Example:
        >>> import pyarrow as pa
        >>> from ember.data.expressions import col, evaluate
        >>> double = udf(return_dtype=pa.int64())(lambda x: pa.compute.multiply(x, 2))
        >>> evaluate(double(col("a")), pa.table({"a": [1, 2]})).to_pylist()
        [2, 4]
    """

    _runs_user_code = True
    _pyarrow_convertible = False

    def __init__(
        self, fn: Callable[..., Any], args: list[Expr], kwargs: dict[str, Expr], data_type: Any
    ) -> None:
        self.fn, self.args, self.kwargs, self.data_type = fn, args, kwargs, data_type

    def _children(self) -> tuple[Expr, ...]:
        return (*self.args, *self.kwargs.values())

    def _evaluate(self, table: Block, ctx: Evaluation) -> Any:
        import numpy as np
        import pyarrow as pa

        from ember.data.transforms import call_user

        args = [a._evaluate(table, ctx) for a in self.args]
        kwargs = {k: v._evaluate(table, ctx) for k, v in self.kwargs.items()}
        out = call_user(self.fn, "udf", f"a block of {table.num_rows} rows", *args, **kwargs)
        if isinstance(out, (pa.Array, pa.ChunkedArray)):
            values = out
        elif isinstance(out, (np.ndarray, list)):
            values = pa.array(out)
        elif hasattr(out, "to_numpy") and hasattr(out, "dtype"):  # a pandas Series
            values = pa.Array.from_pandas(out)
        else:
            raise DataError(
                f"udf {_name(self.fn)} returned {type(out).__name__}; return a pyarrow array, a numpy "
                "array or a list with one value per row"
            )
        if len(values) != table.num_rows:
            raise DataError(
                f"udf {_name(self.fn)} returned {len(values)} values for a block of {table.num_rows} rows; "
                "return one value per row"
            )
        return values

    def __repr__(self) -> str:
        parts = [repr(a) for a in self.args] + [f"{k}={v!r}" for k, v in self.kwargs.items()]
        return f"{_name(self.fn)}({', '.join(parts)})"


def _name(fn: Any) -> str:
    return getattr(fn, "__qualname__", None) or type(fn).__qualname__


def _expression_maker(fn: Callable[..., Any], data_type: Any) -> Callable[..., UDFExpr]:
    """``fn`` as a function of expressions: calling it builds a UDFExpr (constants become literals)."""

    def make(*args: Any, **kwargs: Any) -> UDFExpr:
        return UDFExpr(
            fn, [_as_expr(a) for a in args], {k: _as_expr(v) for k, v in kwargs.items()}, data_type
        )

    if not isinstance(fn, ConstructOnce):
        functools.update_wrapper(make, fn)
    make._original_fn = fn  # type: ignore[attr-defined]  # ember's mark on the maker function
    return make


def udf(return_dtype: Any) -> Callable[[Any], Any]:
    """Decorator: a function (or callable class) of whole columns becomes usable in expressions
    (Ray's ``ray.data.expressions.udf``); see the module text for what it receives and returns.

    Example:
        >>> import ember.data
        >>> import pyarrow as pa
        >>> import pyarrow.compute as pc
        >>> from ember.data.expressions import col
        >>> @udf(return_dtype=pa.int64())
        ... class AddOffset:
        ...     def __init__(self, offset):
        ...         self.offset = offset
        ...     def __call__(self, x):
        ...         return pc.add(x, self.offset)
        >>> ember.data.range(2).with_column("y", AddOffset(10)(col("id"))).take_all()
        [{'id': 0, 'y': 10}, {'id': 1, 'y': 11}]
    """
    data_type = declared_type(return_dtype)

    def decorate(fn_or_class: Any) -> Any:
        if isinstance(fn_or_class, type):
            if not any("__call__" in vars(k) for k in fn_or_class.__mro__[:-1]):  # instances must be callable
                raise ConfigError(f"@udf class {fn_or_class.__qualname__} needs a __call__ method")
            return _udf_class(fn_or_class, data_type)
        if not callable(fn_or_class):
            raise ConfigError(
                f"@udf decorates a function or a callable class, not {type(fn_or_class).__name__}"
            )
        return _expression_maker(fn_or_class, data_type)

    return decorate


def _udf_class(cls: type, data_type: Any) -> type:
    class ExpressionClass:
        """``cls(*args)`` without constructing it here: calling the result with expressions builds a
        UDFExpr."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self._make = _expression_maker(ConstructOnce(cls, args, kwargs), data_type)

        def __call__(self, *args: Any, **kwargs: Any) -> UDFExpr:
            return self._make(*args, **kwargs)

    ExpressionClass.__name__, ExpressionClass.__qualname__ = cls.__name__, cls.__qualname__
    ExpressionClass.__module__ = cls.__module__
    return ExpressionClass


def pyarrow_udf(return_dtype: Any) -> Callable[[Any], Any]:
    """Decorator for a function of pyarrow arrays (Ray's ``pyarrow_udf``). Ember's blocks are Arrow
    tables, so its arguments are already pyarrow values: it behaves as ``udf``.

    Example:
        >>> import ember.data
        >>> import pyarrow as pa
        >>> import pyarrow.compute as pc
        >>> from ember.data.expressions import col
        >>> @pyarrow_udf(return_dtype=pa.string())
        ... def shout(s):
        ...     return pc.utf8_upper(s)
        >>> ember.data.from_items([{"w": "hi"}]).with_column("loud", shout(col("w"))).take_all()
        [{'w': 'hi', 'loud': 'HI'}]
    """
    return udf(return_dtype)
