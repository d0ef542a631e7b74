"""The built-in column aggregations: Count, Sum, Min, Max, AbsMax, Mean, Std, Quantile, Unique.

Output names follow Ray's: ``count()``, ``sum(x)``, ``min(x)``, ``max(x)``, ``mean(x)``, ``std(x)``,
``abs_max(x)``, ``quantile(x)``, ``unique(x)``, or ``alias_name``.

Example:
    >>> import ember.data
    >>> ember.data.from_items([{"x": -3}, {"x": 2}]).aggregate(AbsMax("x"), Sum("x"))
    {'abs_max(x)': 3, 'sum(x)': -1}
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ember.data.aggregate.base import AggregateFn, hashable
from ember.data.ray_errors import DataValueError  # Ray raises ValueError here
from ember.errors import ConfigError


class _OnColumn(AggregateFn):
    """A built-in aggregation over column ``on``; nulls are skipped unless ``ignore_nulls=False``
    (then a null makes the result null, as in Ray)."""

    label = "?"
    _default_ignore_nulls = True

    def __init__(
        self, on: str | None = None, ignore_nulls: bool | None = None, alias_name: str | None = None
    ) -> None:
        self.on = on
        self.ignore_nulls = self._default_ignore_nulls if ignore_nulls is None else ignore_nulls
        self.name = alias_name or f"{self.label}({on or ''})"
        self.key = None
        if on is None and self.label not in ("count",):
            raise ConfigError(f"{type(self).__name__}() needs a column: {type(self).__name__}(on='column')")

    def validate(self, columns: list[str]) -> None:
        if self.on is not None and columns and self.on not in columns:
            raise DataValueError(
                f"{type(self).__name__}(on={self.on!r}): no such column; the dataset has columns {columns}"
            )

    def columns_read(self) -> tuple[str, ...]:
        return () if self.on is None else (self.on,)

    def _values(self, table: pa.Table) -> tuple[pa.ChunkedArray, bool]:
        """The column's values without nulls, and whether a null was seen."""
        values = table.column(self.on)
        nulls = values.null_count > 0
        return (values.drop_null() if nulls else values), nulls


class Count(_OnColumn):
    """Rows (``on=None``) or non-null values of ``on`` (all values with ``ignore_nulls=False``)."""

    label = "count"
    _default_ignore_nulls = False

    def init(self) -> Any:
        return 0

    def accumulate_block(self, acc: Any, table: pa.Table) -> Any:
        if self.on is None or not self.ignore_nulls:
            return acc + table.num_rows
        return acc + table.num_rows - table.column(self.on).null_count

    def merge(self, a: Any, b: Any) -> Any:
        return a + b

    def finalize(self, acc: Any) -> Any:
        return acc


def _zero() -> int:
    return 0


def _plus_inf() -> float:
    return float("inf")


def _minus_inf() -> float:
    return float("-inf")


class _Reduce(_OnColumn):
    """Sum/Min/Max/AbsMax: a running scalar; None until a value is seen; a poisoning null.

    As in Ray 2.60, an input with no value at all gives ``zero_factory()`` when ``ignore_nulls=False``
    (Sum 0, Min +inf, Max -inf, AbsMax 0 by default) and None when ``ignore_nulls=True``; the zero is
    never folded into a result that has values.
    """

    _NULL = object()
    #: The result of an input without values when nulls are not ignored (None: the result is None).
    zero_factory: Callable[[], Any] | None = None

    def init(self) -> Any:
        return None

    def _reduce(self, values: pa.ChunkedArray) -> Any:
        raise NotImplementedError

    def _combine(self, a: Any, b: Any) -> Any:
        raise NotImplementedError

    def accumulate_block(self, acc: Any, table: pa.Table) -> Any:
        values, nulls = self._values(table)
        if nulls and not self.ignore_nulls:
            return self._NULL
        if len(values) == 0:
            return acc
        return self.merge(acc, self._reduce(values))

    def merge(self, a: Any, b: Any) -> Any:
        if a is self._NULL or b is self._NULL:
            return self._NULL
        if a is None or b is None:
            return b if a is None else a
        return self._combine(a, b)

    def finalize(self, acc: Any) -> Any:
        if acc is None and not self.ignore_nulls and self.zero_factory is not None:
            return self.zero_factory()
        return None if acc is self._NULL else acc


class _ReduceWithZero(_Reduce):
    """Min/Max/AbsMax: Ray's ``zero_factory=`` argument (the result of an input without values
    when ``ignore_nulls=False``)."""

    _default_zero: Callable[[], Any] = staticmethod(_zero)

    def __init__(
        self,
        on: str | None = None,
        ignore_nulls: bool = True,
        alias_name: str | None = None,
        zero_factory: Callable[[], Any] | None = None,
    ) -> None:
        super().__init__(on, ignore_nulls, alias_name)
        self.zero_factory = zero_factory if zero_factory is not None else type(self)._default_zero


class Sum(_Reduce):
    """Sum of ``on`` (0 for an input without values when ``ignore_nulls=False``).

    Example:
        >>> import ember.data
        >>> empty = ember.data.range(3).filter(lambda r: False)
        >>> empty.aggregate(Sum("id"), Sum("id", ignore_nulls=False, alias_name="strict"))
        {'sum(id)': None, 'strict': 0}
    """

    label = "sum"
    zero_factory = staticmethod(_zero)

    def _reduce(self, values: pa.ChunkedArray) -> Any:
        return pc.sum(values).as_py()

    def _combine(self, a: Any, b: Any) -> Any:
        return a + b


class Min(_ReduceWithZero):
    """Smallest value of ``on``; ``zero_factory`` (default +inf) is the result of an input without
    values when ``ignore_nulls=False``.

    Example:
        >>> import ember.data
        >>> empty = ember.data.range(3).filter(lambda r: False)
        >>> empty.aggregate(Min("id", ignore_nulls=False, zero_factory=lambda: 0))
        {'min(id)': 0}
    """

    label = "min"
    _default_zero = staticmethod(_plus_inf)

    def _reduce(self, values: pa.ChunkedArray) -> Any:
        return pc.min(values).as_py()

    def _combine(self, a: Any, b: Any) -> Any:
        return min(a, b)


class Max(_ReduceWithZero):
    """Largest value of ``on``; ``zero_factory`` (default -inf) is the result of an input without
    values when ``ignore_nulls=False``.

    Example:
        >>> import ember.data
        >>> ember.data.range(3).aggregate(Max("id", ignore_nulls=False, zero_factory=lambda: 100))
        {'max(id)': 2}
    """

    label = "max"
    _default_zero = staticmethod(_minus_inf)

    def _reduce(self, values: pa.ChunkedArray) -> Any:
        return pc.max(values).as_py()

    def _combine(self, a: Any, b: Any) -> Any:
        return max(a, b)


class AbsMax(_ReduceWithZero):
    """Largest absolute value of ``on``; ``zero_factory`` (default 0) is the result of an input
    without values when ``ignore_nulls=False``."""

    label = "abs_max"

    def _reduce(self, values: pa.ChunkedArray) -> Any:
        return pc.max(pc.abs(values)).as_py()

    def _combine(self, a: Any, b: Any) -> Any:
        return max(a, b)


class Mean(_Reduce):
    """Mean of ``on`` (running sum and count)."""

    label = "mean"

    def _reduce(self, values: pa.ChunkedArray) -> Any:
        return (pc.sum(values).as_py(), len(values))

    def _combine(self, a: Any, b: Any) -> Any:
        return (a[0] + b[0], a[1] + b[1])

    def finalize(self, acc: Any) -> Any:
        acc = super().finalize(acc)
        return None if acc is None else acc[0] / acc[1]


class Std(_Reduce):
    """Standard deviation of ``on`` with ``ddof`` (1: the sample std), merged with Chan's formula."""

    label = "std"

    def __init__(
        self, on: str | None = None, ddof: int = 1, ignore_nulls: bool = True, alias_name: str | None = None
    ) -> None:
        super().__init__(on, ignore_nulls, alias_name)
        if isinstance(ddof, bool) or not isinstance(ddof, numbers.Integral) or ddof < 0:
            raise ConfigError(f"Std(ddof={ddof!r}); use an integer >= 0 (1: the sample standard deviation)")
        self.ddof: int = int(ddof)

    def _reduce(self, values: pa.ChunkedArray) -> Any:
        count = len(values)
        mean = pc.mean(values).as_py()
        m2 = pc.sum(pc.power(pc.subtract(pc.cast(values, pa.float64()), mean), 2)).as_py()
        return (count, mean, m2)

    def _combine(self, a: Any, b: Any) -> Any:
        (n1, mean1, m21), (n2, mean2, m22) = a, b
        n = n1 + n2
        delta = mean2 - mean1
        return (n, mean1 + delta * n2 / n, m21 + m22 + delta * delta * n1 * n2 / n)

    def finalize(self, acc: Any) -> Any:
        acc = super().finalize(acc)
        if acc is None:
            return None
        count, _, m2 = acc
        # Ray returns NaN where N - ddof <= 0 (one value with ddof=1): the std is undefined, not 0
        return math.nan if count - self.ddof <= 0 else math.sqrt(m2 / (count - self.ddof))


class Quantile(_OnColumn):
    """The ``q`` quantile of ``on`` with linear interpolation (keeps the column's values)."""

    label = "quantile"

    def __init__(
        self, on: str | None = None, q: float = 0.5, ignore_nulls: bool = True, alias_name: str | None = None
    ) -> None:
        super().__init__(on, ignore_nulls, alias_name)
        if isinstance(q, bool) or not isinstance(q, numbers.Real) or not 0 <= q <= 1:
            raise ConfigError(f"Quantile(q={q!r}); use a fraction in [0, 1]")
        self.q: float = q

    def init(self) -> Any:
        return []

    def accumulate_block(self, acc: Any, table: pa.Table) -> Any:
        values, nulls = self._values(table)
        if nulls and not self.ignore_nulls:
            return None
        return None if acc is None else acc + [values]

    def merge(self, a: Any, b: Any) -> Any:
        return None if a is None or b is None else a + b

    def finalize(self, acc: Any) -> Any:
        chunks = [c for part in acc or [] for c in part.chunks]
        if not chunks or not sum(len(c) for c in chunks):
            return None
        return pc.quantile(pa.chunked_array(chunks), q=self.q, interpolation="linear")[0].as_py()


class Unique(_OnColumn):
    """The distinct values of ``on`` (null included unless ``ignore_nulls=True``), in first-seen order.

    ``encode_lists=True`` (Ray's ``Unique.ListEncodingMode.FLATTEN``) counts the items of a list
    column one by one; Ray's ``HASH`` mode (hashes of whole lists, made with polars) is refused.

    Example:
        >>> import ember.data
        >>> ds = ember.data.from_items([{"l": [1, 2]}, {"l": [2, 3]}])
        >>> ds.aggregate(Unique("l"), Unique("l", encode_lists=True, alias_name="items"))
        {'unique(l)': [[1, 2], [2, 3]], 'items': [1, 2, 3]}
    """

    label = "unique"
    _default_ignore_nulls = False

    def __init__(
        self,
        on: str | None = None,
        ignore_nulls: bool = False,
        alias_name: str | None = None,
        encode_lists: Any = None,
    ) -> None:
        super().__init__(on, ignore_nulls, alias_name)
        mode = getattr(encode_lists, "value", encode_lists)
        if mode not in (None, False, True, "FLATTEN"):
            raise ConfigError(
                f"Unique(encode_lists={encode_lists!r}) is not supported; pass encode_lists=True to "
                "flatten list values, or leave it out to keep whole lists"
            )
        self.flatten_lists = mode in (True, "FLATTEN")

    def init(self) -> Any:
        return {}

    def accumulate_block(self, acc: Any, table: pa.Table) -> Any:
        values = table.column(self.on)
        if self.flatten_lists and (pa.types.is_list(values.type) or pa.types.is_large_list(values.type)):
            values = pc.list_flatten(values)
        if self.ignore_nulls:
            values = values.drop_null()
        nested = pa.types.is_nested(values.type)  # pyarrow's unique kernel has no list/struct support
        for value in values.to_pylist() if nested else pc.unique(values).to_pylist():
            acc.setdefault(hashable(value), value)
        return acc

    def merge(self, a: Any, b: Any) -> Any:
        for key, value in b.items():
            a.setdefault(key, value)
        return a

    def finalize(self, acc: Any) -> Any:
        return list(acc.values())
