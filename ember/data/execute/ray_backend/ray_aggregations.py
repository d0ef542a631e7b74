"""Ray's Count/Min/Max that check their columns with ember's one-line errors (Ray imported here).

Ray checks each aggregation's column (``_validate``) inside its shuffle's map task, where an
exception is not wrapped as a user-code error: ember's ``DataError`` then reaches the caller as it
does from ember's own grouped aggregation on Ray (``Max(on='nope'): no such column; ...``), instead
of Ray's text about its sort keys. Each also checks the group keys (the local ``no column 'k'``).

Example:
    >>> from ember.data.aggregate import Max
    >>> import pyarrow as pa
    >>> checked = CheckedMax(Max("x"), ("k",), on="x", ignore_nulls=True, alias_name="max(x)")
    >>> checked._validate(pa.schema([("k", pa.int64()), ("y", pa.int64())]))
    Traceback (most recent call last):
    ...
    ember.data.ray_errors.DataValueError: Max(on='x'): no such column; the dataset has columns ['k', 'y']
"""

from __future__ import annotations

from typing import Any

from ray.data import aggregate as ray_aggregate

from ember.data.ray_errors import DataValueError


class _Checked(ray_aggregate.AggregateFn):
    """Mixin: ``_validate`` runs the ember aggregation's check and the group keys' first."""

    def __init__(self, ember_agg: Any, keys: tuple[str, ...], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._ember_agg, self._group_keys = ember_agg, keys

    def _validate(self, schema: Any) -> None:
        names = list(getattr(schema, "names", None) or [])
        if names:  # Ray's empty blocks may carry no columns; the local executor skips them
            self._ember_agg.validate(names)
            for key in self._group_keys:
                if key not in names:
                    raise DataValueError(f"no column {key!r}; the dataset has columns {names}")
        super()._validate(schema)


class CheckedCount(_Checked, ray_aggregate.Count):
    """Ray's ``Count`` with ember's column checks."""


class CheckedMin(_Checked, ray_aggregate.Min):
    """Ray's ``Min`` with ember's column checks."""


class CheckedMax(_Checked, ray_aggregate.Max):
    """Ray's ``Max`` with ember's column checks."""
