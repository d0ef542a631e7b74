"""Which rows go into which output file: one rule for a local write and a write on Ray.

A write sees its input as *items*: ``(handle, start, rows, nbytes)``, a block (locally the block
itself, on Ray a reference to it) and the rows of it that belong to the dataset. The layout cuts
that ordered stream into *files*, each a list of ``(handle, start, length)`` pieces, from row
counts and sizes alone, so the driver of a Ray write plans every file without fetching a block:

- no option: one file per non-empty block;
- ``max_rows`` only: blocks longer than it are cut into files of ``max_rows`` (the last shorter);
- ``min_rows`` (ember's ``min_rows_per_file``): files of exactly ``min_rows`` rows across blocks,
  the last one shorter (with ``max_rows`` too, ``min_rows`` decides);
- ``min_bytes`` (``write_parquet(min_bytes_per_file=)``): whole blocks combined until their in-memory
  size reaches it, never split (Ray's rule: a file can be larger, the last one smaller);
- ``whole_rows`` (a Datasink's ``min_rows_per_write``): whole blocks combined until they hold that
  many rows.

Example:
    >>> items = [("a", 0, 3, 30), ("b", 0, 0, 0), ("c", 0, 4, 40)]
    >>> list(plan_files(items))
    [[('a', 0, 3)], [('c', 0, 4)]]
    >>> list(plan_files(items, min_rows=5))
    [[('a', 0, 3), ('c', 0, 2)], [('c', 2, 2)]]
    >>> list(plan_files(items, min_bytes=25))
    [[('a', 0, 3)], [('c', 0, 4)]]
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

Item = tuple[Any, int, int, int]  #: (handle, start row, rows, in-memory bytes)
Piece = tuple[Any, int, int]  #: (handle, start row, rows)


def plan_files(
    items: Iterable[Item],
    *,
    min_rows: int | None = None,
    max_rows: int | None = None,
    min_bytes: int | None = None,
    whole_rows: int | None = None,
) -> Iterator[list[Piece]]:
    """The files (lists of pieces), in order; empty items are skipped."""
    items = (item for item in items if item[2] > 0)
    if min_bytes is not None:
        return _combine(items, min_bytes, key=lambda item: item[3])
    if whole_rows is not None:
        return _combine(items, whole_rows, key=lambda item: item[2])
    if min_rows is not None:
        return _exact(items, min_rows)
    if max_rows is not None:
        return _cut(items, max_rows)
    return ([(handle, start, rows)] for handle, start, rows, _ in items)


def _cut(items: Iterator[Item], max_rows: int) -> Iterator[list[Piece]]:
    for handle, start, rows, _ in items:
        for offset in range(0, rows, max_rows):
            yield [(handle, start + offset, min(max_rows, rows - offset))]


def _exact(items: Iterator[Item], target: int) -> Iterator[list[Piece]]:
    pending: list[Piece] = []
    pending_rows = 0
    for handle, start, rows, _ in items:
        offset = 0
        while offset < rows:
            take = min(target - pending_rows, rows - offset)
            pending.append((handle, start + offset, take))
            pending_rows += take
            offset += take
            if pending_rows == target:
                yield pending
                pending, pending_rows = [], 0
    if pending:
        yield pending


def _combine(items: Iterator[Item], threshold: int, key: Any) -> Iterator[list[Piece]]:
    pending: list[Piece] = []
    total = 0
    for item in items:
        pending.append(item[:3])
        total += key(item)
        if total >= threshold:
            yield pending
            pending, total = [], 0
    if pending:
        yield pending


def check_min_bytes(min_bytes: Any, where: str, *row_options: Any) -> None:
    """Ray's checks of ``min_bytes_per_file``: a positive count, and no row-count option beside it."""
    from ember.errors import ConfigError

    if min_bytes is None:
        return
    if isinstance(min_bytes, bool) or not isinstance(min_bytes, int) or min_bytes < 1:
        raise ConfigError(f"{where}(min_bytes_per_file={min_bytes!r}); use a positive byte count")
    if any(value is not None for value in row_options):
        raise ConfigError(
            f"{where}: min_bytes_per_file cannot be used with min_rows_per_file, max_rows_per_file "
            "or num_rows_per_file (as in Ray); pass one of them"
        )


def index_pieces(pieces: list[Piece]) -> tuple[list[Any], list[tuple[int, int, int]]]:
    """(the distinct blocks of ``pieces``, pieces naming them by index): what a job is called with.

    Example:
        >>> index_pieces([("a", 0, 2), ("a", 2, 1), ("b", 0, 4)])
        (['a', 'b'], [(0, 0, 2), (0, 2, 1), (1, 0, 4)])
    """
    sources: list[Any] = []
    positions: dict[int, int] = {}
    indexed = []
    for handle, start, rows in pieces:
        if id(handle) not in positions:
            positions[id(handle)] = len(sources)
            sources.append(handle)
        indexed.append((positions[id(handle)], start, rows))
    return sources, indexed
