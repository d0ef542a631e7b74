"""In-memory and generated sources: from_items, from_numpy, from_pandas, from_arrow, from_torch,
range, range_tensor. Data is cut into blocks of ``DataContext.target_rows_per_block`` rows."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from ember.data.block import rows_to_block, to_arrow_column
from ember.data.read.task import ReadTask
from ember.data.tensor_types import trust, trusted_names


def _chunks(n: int, rows_per_block: int) -> list[tuple[int, int]]:
    return [(s, min(s + rows_per_block, n)) for s in range(0, n, rows_per_block)] or [(0, 0)]


def block_tasks(blocks: list[pa.Table], name: str) -> list[ReadTask]:
    """Tasks that hand out existing blocks (materialized data, from_arrow, from_pandas)."""
    return [
        ReadTask(read=_constant(b), description=f"{name} block {i}", num_rows=b.num_rows)
        for i, b in enumerate(blocks)
    ]


def _constant(block: pa.Table) -> Callable[[], Iterator[pa.Table]]:
    # Pickled columns trusted now stay trusted when the task runs in another process (Ray pickles it);
    # an untrusted one (a table read with pyarrow, given to from_arrow) never becomes trusted.
    names = trusted_names(block)
    return lambda: iter([trust(block, names) if names else block])


def items_tasks(items: list, rows_per_block: int, num_blocks: int | None = None) -> list[ReadTask]:
    """One task per block of ``rows_per_block`` items, or, with ``num_blocks``, Ray's cut into that many."""
    rows = [item if isinstance(item, dict) else {"item": item} for item in items]
    bounds = _even_chunks(len(rows), num_blocks) if num_blocks else _chunks(len(rows), rows_per_block)
    return [
        ReadTask(read=_rows_reader(rows[s:e]), description=f"from_items rows {s}-{e - 1}", num_rows=e - s)
        for s, e in bounds
    ]


def _even_chunks(n: int, num_blocks: int) -> list[tuple[int, int]]:
    # Ray's from_items: at most one block per item, the first n % k blocks one item longer (10 in 3: 4, 3, 3)
    blocks = max(1, min(num_blocks, n))
    size, longer = divmod(n, blocks)
    edges = [0]
    for index in range(blocks):
        edges.append(edges[-1] + size + (index < longer))
    return list(zip(edges, edges[1:], strict=False))


def _rows_reader(rows: list[dict]) -> Callable[[], Iterator[pa.Table]]:
    return lambda: iter([rows_to_block(rows, "from_items")])


def numpy_tasks(arrays: list[np.ndarray], rows_per_block: int) -> list[ReadTask]:
    tasks = []
    for index, array in enumerate(arrays):
        for s, e in _chunks(len(array), rows_per_block):
            tasks.append(
                ReadTask(
                    read=_column_reader("data", array, s, e),
                    description=f"from_numpy array {index} rows {s}-{e - 1}",
                    num_rows=e - s,
                )
            )
    return tasks


def _column_reader(name: str, array: np.ndarray, start: int, end: int) -> Callable[[], Iterator[pa.Table]]:
    return lambda: iter([pa.table({name: to_arrow_column(array[start:end], name)})])


def range_tasks(n: int, rows_per_block: int, shape: tuple[int, ...] | None = None) -> list[ReadTask]:
    # range(0) has no task, hence no block and no schema, as in Ray (schema() and columns() are None)
    return [
        ReadTask(read=_range_reader(s, e, shape), description=f"range rows {s}-{e - 1}", num_rows=e - s)
        for s, e in _chunks(n, rows_per_block)
        if e > s
    ]


def _range_reader(start: int, end: int, shape: tuple[int, ...] | None) -> Callable[[], Iterator[pa.Table]]:
    def read() -> Iterator[pa.Table]:
        ids = np.arange(start, end, dtype=np.int64)
        if shape is None:
            yield pa.table({"id": to_arrow_column(ids, "id")})
        else:
            data = np.broadcast_to(ids.reshape((-1,) + (1,) * len(shape)), (end - start, *shape))
            yield pa.table({"data": to_arrow_column(np.ascontiguousarray(data), "data")})

    return read


def torch_tasks(dataset: Any, rows_per_block: int) -> list[ReadTask]:
    """A map-style dataset is indexed in chunks; an iterable one is read in one task."""
    if hasattr(dataset, "__len__") and hasattr(dataset, "__getitem__"):
        return [
            ReadTask(
                read=_torch_reader(dataset, s, e), description=f"from_torch items {s}-{e - 1}", num_rows=e - s
            )
            for s, e in _chunks(len(dataset), rows_per_block)
        ]
    return [ReadTask(read=_torch_iterable_reader(dataset, rows_per_block), description="from_torch iterable")]


def _torch_reader(dataset: Any, start: int, end: int) -> Callable[[], Iterator[pa.Table]]:
    return lambda: iter([rows_to_block([{"item": dataset[i]} for i in range(start, end)], "from_torch")])


def _torch_iterable_reader(dataset: Any, rows_per_block: int) -> Callable[[], Iterator[pa.Table]]:
    def read() -> Iterator[pa.Table]:
        rows = []
        for item in dataset:
            rows.append({"item": item})
            if len(rows) == rows_per_block:
                yield rows_to_block(rows, "from_torch")
                rows = []
        if rows:
            yield rows_to_block(rows, "from_torch")

    return read
