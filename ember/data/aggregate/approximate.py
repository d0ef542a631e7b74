"""ApproximateQuantile and ApproximateTopK, computed exactly.

Ray Data computes these with ``datasketches`` sketches (KLL for quantiles, frequent-items for top
k) and raises ImportError without that package. ember computes the exact answers instead (it keeps
the column's non-null values, or one count per distinct value), so it needs no extra package and
its answer is the one a sketch approximates:

- ``ApproximateQuantile``: for each ``q`` the smallest value such that more than a ``q`` share of the
  values are at or below it (the largest for ``q=1``; no interpolation): the rule Ray's call of
  ``kll_floats_sketch.get_quantiles`` uses, with values held as 32-bit floats as in that sketch. Up to
  ``quantile_precision`` values (800 by default) the sketch holds them all and Ray's answer is this
  one exactly (checked against datasketches 5.2); past that Ray's is approximate. ``quantile_precision`` only
  sizes Ray's sketch.
- ``ApproximateTopK``: the ``k`` most frequent values as ``[{on: value, "count": n}, ...]``, most
  frequent first, ties in first-seen order. ``log_capacity`` only sizes Ray's sketch.

Example:
    >>> import ember.data
    >>> ds = ember.data.from_items([{"v": 20.0}, {"v": 40.0}, {"v": 60.0}, {"v": 80.0}, {"v": 100.0}])
    >>> ds.aggregate(ApproximateQuantile("v", quantiles=[0.1, 0.5, 0.9]))
    {'approx_quantile(v)': [20.0, 60.0, 100.0]}
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyarrow as pa

from ember.data.aggregate.profiling import value_key
from ember.data.aggregate.v2 import AggregateFnV2
from ember.errors import ConfigError


class ApproximateQuantile(AggregateFnV2):
    """The ``quantiles`` of column ``on`` (nulls skipped), computed exactly (see the module text).
    Output ``approx_quantile(on)``: a list, one value per quantile; None when there is no value.

    Example:
        >>> import ember.data
        >>> ds = ember.data.from_items([{"k": i % 2, "v": float(i)} for i in range(10)])
        >>> ds.groupby("k").aggregate(ApproximateQuantile("v", quantiles=[0.0, 0.5, 1.0])).take_all()
        [{'k': 0, 'approx_quantile(v)': [0.0, 4.0, 8.0]}, {'k': 1, 'approx_quantile(v)': [1.0, 5.0, 9.0]}]
    """

    def __init__(
        self, on: str, quantiles: list[float], quantile_precision: int = 800, alias_name: str | None = None
    ) -> None:
        quantiles = list(quantiles)
        if not quantiles or not all(isinstance(q, (int, float)) and 0 <= q <= 1 for q in quantiles):
            raise ConfigError(
                f"ApproximateQuantile(quantiles={quantiles!r}); pass a non-empty list of "
                "fractions in [0, 1], e.g. [0.5]"
            )
        self._quantiles = quantiles
        self._quantile_precision = quantile_precision
        super().__init__(alias_name or f"approx_quantile({on})", zero_factory=list, on=on, ignore_nulls=True)

    def aggregate_block(self, block: pa.Table) -> list[np.ndarray]:
        values = block.column(self._target_col_name).drop_null()
        return [np.asarray(values.to_numpy(), dtype=np.float32)]

    def combine(self, current_accumulator: list[np.ndarray], new: list[np.ndarray]) -> list[np.ndarray]:
        return current_accumulator + new

    def finalize(self, accumulator: list[np.ndarray]) -> list[float] | None:
        values = np.sort(np.concatenate(accumulator)) if accumulator else np.empty(0, np.float32)
        if values.size == 0:
            return None
        n = values.size
        return [float(values[min(n - 1, math.floor(q * n))]) for q in self._quantiles]


class ApproximateTopK(AggregateFnV2):
    """The ``k`` most frequent values of ``on`` (nulls skipped; with ``encode_lists=True`` the items
    of list values are counted one by one), computed exactly (see the module text).
    Output ``approx_topk(on)``: ``[{on: value, "count": n}, ...]``.

    Example:
        >>> import ember.data
        >>> words = ["apple", "banana", "apple", "cherry", "apple", "banana"]
        >>> ember.data.from_items([{"w": w} for w in words]).aggregate(ApproximateTopK("w", k=2))
        {'approx_topk(w)': [{'w': 'apple', 'count': 3}, {'w': 'banana', 'count': 2}]}
    """

    def __init__(
        self,
        on: str,
        k: int,
        log_capacity: int = 15,
        alias_name: str | None = None,
        encode_lists: bool = False,
    ) -> None:
        if not isinstance(k, int) or k < 1:
            raise ConfigError(f"ApproximateTopK(k={k!r}); pass a positive int")
        self.k = k
        self._log_capacity = log_capacity
        self._encode_lists = encode_lists
        super().__init__(alias_name or f"approx_topk({on})", zero_factory=dict, on=on, ignore_nulls=True)

    def _items(self, values: list[Any]) -> list[Any]:
        if not self._encode_lists:
            return [v for v in values if v is not None]
        items: list[Any] = []
        for value in values:
            if isinstance(value, list):
                items.extend(item for item in value if item is not None)
            elif value is not None:
                items.append(value)
        return items

    def aggregate_block(self, block: pa.Table) -> dict[Any, list[Any]]:
        counts: dict[Any, list[Any]] = {}
        for item in self._items(block.column(self._target_col_name).to_pylist()):
            counts.setdefault(value_key(item), [item, 0])[1] += 1
        return counts

    def combine(
        self, current_accumulator: dict[Any, list[Any]], new: dict[Any, list[Any]]
    ) -> dict[Any, list[Any]]:
        for key, (item, count) in new.items():
            current_accumulator.setdefault(key, [item, 0])[1] += count
        return current_accumulator

    def finalize(self, accumulator: dict[Any, list[Any]]) -> list[dict[str, Any]]:
        ranked = sorted(accumulator.values(), key=lambda pair: -pair[1])  # stable: ties keep first-seen order
        assert self._target_col_name is not None  # __init__ takes on: str
        return [{self._target_col_name: item, "count": count} for item, count in ranked[: self.k]]
