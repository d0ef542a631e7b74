"""The picklable callables Ray runs: ember's own reads, fused steps, class UDFs and group functions.

Each one receives Arrow tables from Ray and returns Arrow tables; pickled columns ember's code
produced keep their trust across Ray's object store (``mark_trust`` / ``restore_trust``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa

from ember.data.tensor_types import mark_trust, restore_trust
from ember.data.transforms import Transform, apply_transforms


def _nonempty(blocks: Iterator[pa.Table]) -> Iterator[pa.Table]:
    for block in blocks:
        if block.num_rows:
            yield mark_trust(block)


class ApplySteps:
    """``table -> tables``: ember's fused per-block steps inside a Ray task."""

    def __init__(self, transforms: list[Transform]) -> None:
        self.transforms = transforms

    def __call__(self, table: pa.Table) -> Iterator[pa.Table]:
        yield from _nonempty(apply_transforms(iter([restore_trust(table)]), self.transforms))


class SelectColumns:
    """A block cut to ``columns`` (in that order) when it has them all; else unchanged, so that the
    operator after it names the missing column in its own one-line error."""

    def __init__(self, columns: list[str]) -> None:
        self.columns = columns

    def __call__(self, block: pa.Table) -> pa.Table:
        return block.select(self.columns) if set(self.columns) <= set(block.schema.names) else block


class ReadFragments:
    """Reads the ember read tasks whose (part, task) indices arrive in a batch, then runs that part's
    fused steps. A part is one read with its steps; several parts are a union of reads, in order."""

    def __init__(self, parts: list[tuple[list[Any], list[Transform]]]) -> None:
        self.parts = parts

    def __call__(self, batch: pa.Table) -> Iterator[pa.Table]:
        for part, index in zip(
            batch.column("part").to_pylist(), batch.column("task").to_pylist(), strict=True
        ):
            tasks, transforms = self.parts[part]
            yield from _nonempty(apply_transforms(tasks[index].read(), transforms))


class ClassUDFActor:
    """A Ray actor holding one constructed ember class UDF (the model, loaded once).

    Threads are limited as in the local executor's workers (``pool.py``): torch now if it is already
    imported, else through ``OMP_NUM_THREADS`` & co. when the UDF first loads it. torch is not
    imported for a UDF that does not use it: that import alone took seconds of every actor's start,
    on the pipeline's critical path (the pool's first batch waits for its actors).
    """

    def __init__(self, make_transform: Callable[[], Transform], after: list[Transform], threads: int) -> None:
        from ember.data.execute.pool import limit_threads

        limit_threads(threads)
        self.step, self.after = make_transform(), after

    def __call__(self, table: pa.Table) -> Iterator[pa.Table]:
        yield from _nonempty(apply_transforms(self.step.apply(iter([restore_trust(table)])), self.after))


class AggregateGroup:
    """One group (a pyarrow table from Ray's ``map_groups``) -> its one output row, by ember's aggregations.

    The whole group is aggregated at once, as the local executor does, so every aggregation --
    built-in or a custom ``AggregateFn`` -- gives the local result.
    """

    def __init__(self, keys: tuple[str, ...], aggs: tuple[Any, ...]) -> None:
        self.keys, self.aggs = keys, aggs
        self.__name__ = "Aggregate"  # Ray names the operator after it

    def __call__(self, group: pa.Table) -> pa.Table:
        from ember.data.aggregate import aggregate_table

        group = restore_trust(group)
        for agg in self.aggs:  # ember's one-line error for a missing column, as locally
            agg.validate(group.schema.names)
        key = tuple(group.column(k)[0].as_py() for k in self.keys)
        row = dict(zip(self.keys, key, strict=True))
        row.update(aggregate_table(group, self.aggs, key[0] if len(key) == 1 else key))
        return pa.Table.from_pylist([row])


class MapGroup:
    """``fn(batch of one group)`` as the local executor calls it (same batch format, same error text)."""

    def __init__(
        self, keys: tuple[str, ...], fn: Callable, batch_format: str, fn_args: tuple, fn_kwargs: dict
    ) -> None:
        self.keys, self.fn, self.batch_format, self.fn_args, self.fn_kwargs = (
            keys,
            fn,
            batch_format,
            fn_args,
            fn_kwargs,
        )
        self.__name__ = getattr(fn, "__name__", type(fn).__name__)  # Ray names the operator after it

    def __call__(self, group: pa.Table) -> pa.Table:
        from ember.data.block import batch_to_block, block_to_batch
        from ember.data.transforms import call_user, udf_name

        group = restore_trust(group)
        key = tuple(group.column(k)[0].as_py() for k in self.keys) if group.num_rows else ()
        batch = block_to_batch(group, self.batch_format, writable=True)
        result = call_user(self.fn, "map_groups", f"group {key}", batch, *self.fn_args, **self.fn_kwargs)
        return mark_trust(batch_to_block(result, f"map_groups {udf_name(self.fn)}"))
