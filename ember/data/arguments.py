"""Checks of the plain arguments many Dataset methods share (batch sizes, seeds, counts), made once per call.

A wrong value fails at the call, in one line naming the argument and what to pass: ``batch_size=0``
made ``map_batches`` loop forever, ``2.5`` and ``-3`` failed deep inside pyarrow, ``seed="x"`` was a
bare ``int()`` error.

Example:
    >>> batch_size("Dataset.map_batches", "default", default=1024)
    1024
    >>> batch_size("Dataset.iter_batches", 0)
    Traceback (most recent call last):
    ...
    ember.errors.ConfigError: Dataset.iter_batches(batch_size=0); use a positive integer, or None for whole
    blocks
"""

from __future__ import annotations

import numbers
from typing import Any, Literal

from ember.errors import ConfigError


def _is_integer(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def batch_size(
    where: str, value: Any, default: int | None = None, auto: bool = False
) -> int | Literal["auto"] | None:
    """A positive int, None (whole blocks), ``"default"`` where the method has a default
    (``default``), or ``"auto"`` where the method sizes batches by bytes (``auto=True``)."""
    if value == "default" and default is not None:
        return default
    if value == "auto" and auto:
        return "auto"
    if value is None or (_is_integer(value) and value >= 1):
        return None if value is None else int(value)
    choices = "a positive integer, or None for whole blocks"
    if auto:
        choices = "a positive integer, None (or 'default') for whole blocks, or 'auto' for ~16 MiB batches"
    elif default is not None:
        choices = f"a positive integer, None for whole blocks, or 'default' ({default} rows)"
    raise ConfigError(f"{where}(batch_size={value!r}); use {choices}")


def seed(where: str, value: Any, name: str = "seed") -> int | None:
    """An integer seed or None."""
    if value is None or _is_integer(value):
        return None if value is None else int(value)
    raise ConfigError(f"{where}({name}={value!r}); use an integer seed, or None for a random one")


def count(where: str, value: Any, name: str) -> int:
    """A row count >= 0."""
    if _is_integer(value) and value >= 0:
        return int(value)
    raise ConfigError(f"{where}({name}={value!r}); use an integer >= 0")


def call_args(where: str, args: Any, kwargs: Any, name: str = "fn") -> tuple[tuple[Any, ...], dict[str, Any]]:
    """A UDF's extra arguments as (tuple, dict): ``{name}_args`` any iterable but a string or a mapping,
    ``{name}_kwargs`` a mapping; None (Ray's default) is none.

    Example:
        >>> call_args("Dataset.map", None, None)
        ((), {})
        >>> call_args("Dataset.map", 3, None)
        Traceback (most recent call last):
        ...
        ember.errors.ConfigError: Dataset.map(fn_args=3); pass a tuple or list of extra positional arguments,
        or None
    """
    if args is None:
        args = ()
    if isinstance(args, (str, bytes, dict)) or not hasattr(args, "__iter__"):
        raise ConfigError(
            f"{where}({name}_args={args!r}); pass a tuple or list of extra positional arguments, or None"
        )
    if kwargs is None:
        kwargs = {}
    if not hasattr(kwargs, "keys") or not all(isinstance(key, str) for key in kwargs):
        raise ConfigError(
            f"{where}({name}_kwargs={kwargs!r}); pass a dict of keyword arguments (str keys), or None"
        )
    return tuple(args), dict(kwargs)


def column_names(where: str, value: Any, name: str = "cols", single: bool = True) -> list[str]:
    """Column names: a list of strings (a single string too where ``single``), checked at the call.

    Example:
        >>> column_names("Dataset.select_columns", "a")
        ['a']
        >>> column_names("Dataset.select_columns", 3)
        Traceback (most recent call last):
        ...
        ember.errors.ConfigError: Dataset.select_columns(cols=3); pass a column name or a list of column names
    """
    if isinstance(value, str) and single:
        return [value]
    what = "a column name or a list of column names" if single else "a list of column names"
    if isinstance(value, (str, bytes, dict)) or not hasattr(value, "__iter__"):
        raise ConfigError(f"{where}({name}={value!r}); pass {what}")
    names = list(value)
    if not all(isinstance(n, str) for n in names):
        raise ConfigError(f"{where}({name}={value!r}); pass {what} (strings)")
    return names
