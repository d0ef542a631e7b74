"""``Expr.dt``: date and time functions of an expression's values (Ray Data 2.60's datetime namespace),
each one ``pyarrow.compute`` function as in Ray.

Example:
    >>> import datetime, pyarrow as pa
    >>> from ember.data.expressions import col, evaluate
    >>> t = pa.table({"t": [datetime.datetime(2024, 5, 1, 13, 45)]})
    >>> evaluate(col("t").dt.strftime("%Y-%m-%d"), t).to_pylist(), evaluate(col("t").dt.hour(), t).to_pylist()
    (['2024-05-01'], [13])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class DatetimeNamespace:
    """``expr.dt``: ``year``, ``month``, ``day``, ``hour``, ``minute``, ``second``, ``strftime(fmt)``,
    and ``ceil``/``floor``/``round(unit)`` to a whole ``unit`` (``"day"``, ``"hour"``...).

    Example:
        >>> import datetime, pyarrow as pa
        >>> from ember.data.expressions import col, evaluate
        >>> t = pa.table({"t": [datetime.datetime(2024, 5, 1, 13, 45)]})
        >>> evaluate(col("t").dt.floor("day"), t).to_pylist()
        [datetime.datetime(2024, 5, 1, 0, 0)]
    """

    def __init__(self, expr: Any, make: Callable[..., Any]) -> None:
        self._expr, self._make = expr, make

    def _part(self, part: str) -> Any:
        return self._make(part, self._expr, label=f"dt.{part}")

    def year(self) -> Any:
        """The year of each value (``month``, ``day``, ``hour``, ``minute``, ``second`` likewise)."""
        return self._part("year")

    def month(self) -> Any:
        """The month (1-12) of each value."""
        return self._part("month")

    def day(self) -> Any:
        """The day of the month of each value."""
        return self._part("day")

    def hour(self) -> Any:
        """The hour of each value."""
        return self._part("hour")

    def minute(self) -> Any:
        """The minute of each value."""
        return self._part("minute")

    def second(self) -> Any:
        """The second of each value."""
        return self._part("second")

    def strftime(self, fmt: str) -> Any:
        """Each value formatted with ``fmt`` (``pyarrow.compute.strftime``)."""
        return self._make("strftime", self._expr, (), {"format": fmt}, label="dt.strftime")

    def _round(self, function: str, unit: str, name: str) -> Any:
        return self._make(
            function, self._expr, (), {"multiple": 1, "unit": unit}, label=f"dt.{name}", shown=(unit,)
        )

    def ceil(self, unit: str) -> Any:
        """Each value rounded up to a whole ``unit`` (``pyarrow.compute.ceil_temporal``)."""
        return self._round("ceil_temporal", unit, "ceil")

    def floor(self, unit: str) -> Any:
        """Each value rounded down to a whole ``unit``."""
        return self._round("floor_temporal", unit, "floor")

    def round(self, unit: str) -> Any:
        """Each value rounded to the nearest whole ``unit``."""
        return self._round("round_temporal", unit, "round")
