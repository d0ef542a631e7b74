"""DataErrors that are also the builtin exception Ray Data raises for the same mistake.

Code written for Ray catches ``ValueError`` around ``sort`` / ``groupby`` / an aggregation on a missing
column, a write with ``mode="error"`` into a folder that exists, ``zip`` of datasets with different row counts
and ``take_all(limit=)`` past the limit, ``KeyError``
around ``drop_columns`` of a missing column, ``FileNotFoundError`` around a read of a missing path;
ember's one-line ``DataError`` for each is also that builtin, so that code keeps working unchanged.
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


class DataKeyError(DataError, KeyError):
    """A ``DataError`` where Ray Data raises ``KeyError``; its message prints as given (KeyError quotes it).

    Example:
        >>> try:
        ...     ember.data.range(3).drop_columns(["nope"]).take_all()
        ... except KeyError as error:
        ...     print(type(error).__name__, isinstance(error, ember.errors.DataError))
        DataKeyError True
    """

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class DataFileNotFoundError(DataError, FileNotFoundError):
    """A ``DataError`` where Ray Data raises ``FileNotFoundError`` (a read of a path that is not there).

    Example:
        >>> try:
        ...     ember.data.read_parquet("/no/such/folder").take_all()
        ... except FileNotFoundError as error:
        ...     print(type(error).__name__, isinstance(error, ember.errors.DataError))
        DataFileNotFoundError True
    """


class DataTypeError(DataError, TypeError):
    """A ``DataError`` where Ray Data raises ``TypeError`` (a string column made into torch tensors).

    Example:
        >>> try:
        ...     next(iter(ember.data.from_items([{"s": "a"}]).iter_torch_batches()))
        ... except TypeError as error:
        ...     print(type(error).__name__, isinstance(error, ember.errors.DataError))
        DataTypeError True
    """


class DataNotImplementedError(DataTypeError, NotImplementedError):
    """A column of a type an aggregation has no kernel for: Ray Data raises Arrow's
    ``ArrowNotImplementedError``
    (a ``NotImplementedError``) there; ember's one line is both that and a ``DataTypeError``.

    Example:
        >>> try:
        ...     ember.data.from_items([{"s": "a"}]).sum("s")
        ... except NotImplementedError as error:
        ...     print(type(error).__name__, isinstance(error, TypeError))
        DataNotImplementedError True
    """


class DataRuntimeError(DataError, RuntimeError):
    """A ``DataError`` where Ray Data raises ``RuntimeError`` (a ragged column made into torch tensors).

    Example:
        >>> import numpy as np
        >>> rows = [{"r": np.zeros(2)}, {"r": np.zeros(3)}]
        >>> try:
        ...     next(iter(ember.data.from_items(rows).iter_torch_batches()))
        ... except RuntimeError as error:
        ...     print(type(error).__name__, isinstance(error, ember.errors.DataError))
        DataRuntimeError True
    """
