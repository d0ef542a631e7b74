"""DataErrors that are also the builtin exception Ray Data raises for the same mistake.

Code written for Ray catches ``ValueError`` around ``sort`` / ``groupby`` on a missing column,
``zip`` of datasets with different row counts and ``take_all(limit=)`` past the limit; ember's
one-line ``DataError`` for each is also a ``ValueError`` so that code keeps working unchanged.
"""

from __future__ import annotations

from ember.errors import DataError


class DataValueError(DataError, ValueError):
    """A ``DataError`` where Ray Data raises ``ValueError`` (caught by either ``except``).

    Example:
        >>> try:
        ...     ember.data.range(3).sort("nope").take_all()
        ... except ValueError as error:
        ...     print(type(error).__name__, isinstance(error, ember.errors.DataError))
        DataValueError True
    """
