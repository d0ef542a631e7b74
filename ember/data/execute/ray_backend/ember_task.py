"""Operators Ray Data has no equal for, run as ember's own operator code inside one Ray task.

- ``Union`` of inputs that are not all reads: the inputs one after another (Ray's ``union``
  alternates between its inputs' blocks when it keeps order);
- ``Join``: ember's join. Ray 2.60's ``Dataset.join`` imports the ``polars`` package in its join
  tasks and fails there without it (ember does not depend on polars). With polars (2.1 checked,
  ``tests/data/test_ray_backend_native.py``) its rows and column names equal ember's for the four
  join types with ``on``/``right_on`` and suffixes, but it returns strings as ``large_string``,
  refuses overlapping columns without a suffix (ember's pyarrow join keeps both) and casts keys
  of different integer types that ember refuses: a translation would need those made equal first;
- ``Shard`` (one of ``streaming_split``'s contiguous, ordered shards; Ray's ``streaming_split`` hands
  rows to consumers dynamically instead): the input's rows [start, start + count);
- ``Aggregate`` without keys (``Dataset.aggregate``, ``sum``...): ember's block-by-block aggregation,
  which also answers an empty dataset with one row, as locally.

The inputs are computed by Ray first (``materialize``: their blocks stay in the cluster's object
store, so ``to_ray()`` of such a plan runs its inputs at once); the task then streams them block
by block through the local executor's code and returns its output as one block.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa

from ember.data.tensor_types import mark_trust, restore_trust

#: ``operator(list of block streams, context) -> output blocks``
Operator = Callable[[list[Iterator[pa.Table]], Any], Iterator[pa.Table]]


def run_as_task(ray: Any, operator: Operator, inputs: list[Any], num_cpus: float) -> Any:
    """A ``ray.data.Dataset`` of ``operator``'s output over the (Ray) datasets ``inputs``."""
    from ember.data.context import DataContext

    refs = [dataset.materialize().to_arrow_refs() for dataset in inputs]
    task = ray.remote(num_cpus=num_cpus, max_retries=3)(_run)
    return ray.data.from_arrow_refs([task.remote(operator, refs, DataContext.get_current())])


def _run(operator: Operator, refs: list[list[Any]], context: Any) -> pa.Table:
    from ember.data.block import concat_blocks

    blocks = list(operator([_blocks(side) for side in refs], context))
    non_empty = [b for b in blocks if b.num_rows]
    return mark_trust(concat_blocks(non_empty) if non_empty else blocks[0] if blocks else pa.table({}))


def _blocks(refs: list[Any]) -> Iterator[pa.Table]:
    import ray

    for ref in refs:  # one block in memory at a time
        block = ray.get(ref)
        if block.num_rows:  # Ray's empty blocks may lack the columns; the local executor skips them too
            yield restore_trust(block)


class JoinOperator:
    """ember's join of the two inputs."""

    def __init__(self, node: Any) -> None:
        self.node = node

    def __call__(self, streams: list[Iterator[pa.Table]], context: Any) -> Iterator[pa.Table]:
        from ember.data.execute.combine import join

        left, right = streams
        return join(self.node, left, right, context, {})


class UnionOperator:
    """The inputs one after another (Ray's ``union`` alternates between them under ``preserve_order``)."""

    def __call__(self, streams: list[Iterator[pa.Table]], context: Any) -> Iterator[pa.Table]:
        from ember.data.block_streams import same_schema_union

        return same_schema_union(streams)


class ShardOperator:
    """Rows [start, start + count) of shard ``index`` of ``n`` (the local executor's ``shard_range``)."""

    def __init__(self, index: int, n: int, equal: bool) -> None:
        self.index, self.n, self.equal = index, n, equal

    def __call__(self, streams: list[Iterator[pa.Table]], context: Any) -> Iterator[pa.Table]:
        from ember.data.block_streams import slice_rows
        from ember.data.plan import shard_range

        blocks = list(streams[0])  # held by ray.get already; the row count needs them all
        start, count = shard_range(sum(b.num_rows for b in blocks), self.index, self.n, self.equal)
        sliced = list(slice_rows(iter(blocks), start, count))
        return iter(sliced or [b.slice(0, 0) for b in blocks[:1]])


class RowRangesOperator:
    """The rows of ``(start, count)`` ranges, in order (the local executor's ``select_ranges``)."""

    def __init__(self, ranges: tuple[tuple[int, int], ...]) -> None:
        self.ranges = ranges

    def __call__(self, streams: list[Iterator[pa.Table]], context: Any) -> Iterator[pa.Table]:
        from ember.data.block_streams import select_ranges

        blocks = list(streams[0])  # held by ray.get already; ranges may need a second pass
        selected = list(select_ranges(lambda: iter(blocks), self.ranges))
        return iter(selected or [b.slice(0, 0) for b in blocks[:1]])


class WholeAggregate:
    """ember's aggregation of the whole input (no keys): one row, even for no input rows."""

    def __init__(self, aggs: tuple[Any, ...]) -> None:
        self.aggs = aggs

    def __call__(self, streams: list[Iterator[pa.Table]], context: Any) -> Iterator[pa.Table]:
        import itertools

        from ember.data.execute.all_to_all import streamed_aggregate

        first = next(streams[0], None)
        if first is not None:  # (Ray's empty blocks carry no columns to check against)
            for agg in self.aggs:
                agg.validate(first.schema.names)
        blocks = itertools.chain([first] if first is not None else [], streams[0])
        yield pa.Table.from_pylist([streamed_aggregate(blocks, self.aggs)])
