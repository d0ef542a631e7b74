"""The all-to-all operators, in memory while their input fits the budget and out of core past it.

``DataContext.memory_budget_bytes`` bounds what an operator holds. Its input is collected in memory
up to a quarter of the budget; past that everything is written to one spill file (``spill.Run``) and
the operator partitions it into buckets small enough (an eighth of the budget each) to process one
at a time: a bucket, its sorted copy, the output blocks in flight and the allocator's slack then
stay within the budget. Both paths compute the same thing, so the output does not depend on the budget:

- RandomShuffle: every row gets a 64-bit key hashed from (seed, epoch, row number); the output is
  the rows ordered by key. Out of core: bucket = the key's top bits, each bucket sorted by key.
- Sort: external distribution sort: bucket boundaries from a sample of the first key (rows with
  an equal first key share a bucket; null/NaN last), each bucket sorted in memory (stable).
- Aggregate / MapGroups: the same range partitioning, so each group lies in one bucket; groups
  come out in key order (as Ray's groupby).
- Repartition: counts rows, then cuts the (spilled) stream into ``n`` blocks.
- StreamingRepartition (``repartition(target_num_rows_per_block=)``): streams, re-cutting blocks to
  that many rows; nothing is collected.
- HashRepartition (``repartition(n, keys=)``): each row goes to the bucket of its keys' hash (a
  spill file per bucket out of core); bucket i is output block i, sorted by the keys with ``sort``.
- Sort with ``boundaries``: the sorted rows are cut at the boundaries, one block per range.
- RandomizeBlockOrder: blocks re-read from the spill file in an order drawn from (seed, epoch).
- Join (``join.py``): both sides range-partitioned with shared boundaries, joined bucket by bucket.

The scratch folder is removed on success, on failure and when the consumer stops early.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ember.data.aggregate import aggregate_table
from ember.data.aggregate.base import accumulated, finalized
from ember.data.block import batch_to_block, block_nbytes, block_to_batch, concat_blocks
from ember.data.context import DataContext
from ember.data.execute.spill import Buckets, Run, Scratch
from ember.data.plan import (
    Aggregate,
    AllToAll,
    HashRepartition,
    MapGroups,
    RandomizeBlockOrder,
    RandomShuffle,
    Repartition,
    Sort,
    StreamingRepartition,
    order_epoch,
)
from ember.data.ray_errors import DataTypeError, DataValueError
from ember.errors import DataError

_KEY = "__ember_shuffle_key"
_SAMPLE_PER_BLOCK = 64


class Collected:
    """An operator's input: in memory while it fits a quarter of the budget, else in one spill file."""

    def __init__(
        self,
        blocks: Iterator[pa.Table],
        context: DataContext,
        sample_key: str | None = None,
        label: str = "input",
    ) -> None:
        self.context, self.budget = context, max(1, context.memory_budget_bytes)
        self.memory: list[pa.Table] | None = []
        self.scratch: Scratch | None = None
        self.run: Run | None = None
        self.rows = self.nbytes = self.blocks = 0
        self.samples: list[Any] = []
        self.schema: pa.Schema | None = None
        for block in blocks:
            self._add(block, sample_key, label)

    def _add(self, block: pa.Table, sample_key: str | None, label: str) -> None:
        if block.num_rows == 0:
            if self.schema is None:
                self.schema = block.schema
            return
        self.schema = self.schema or block.schema
        if sample_key is not None:
            _check_column(block, sample_key)
            index = np.linspace(0, block.num_rows - 1, min(block.num_rows, _SAMPLE_PER_BLOCK)).astype(
                np.int64
            )
            self.samples.append(block.column(sample_key).take(pa.array(index)))
        self.rows += block.num_rows
        self.nbytes += block_nbytes(block)
        self.blocks += 1
        if self.memory is not None:
            self.memory.append(block)
            if self.nbytes > self.budget // 4:
                self.scratch = Scratch(self.context.scratch_root())
                self.run = Run(self.scratch, label)
                for held in self.memory:
                    self.run.write(held)
                self.memory = None
        else:
            self.spill_files()[1].write(block)

    @property
    def spilled(self) -> bool:
        return self.memory is None

    def spill_files(self) -> tuple[Scratch, Run]:
        """The spill folder and the one file the input went into (only once ``spilled``)."""
        assert self.scratch is not None and self.run is not None  # both set when the memory list is let go
        return self.scratch, self.run

    def stream(self) -> Iterator[pa.Table]:
        return iter(self.memory) if self.memory is not None else self.spill_files()[1].blocks()

    def buckets_needed(self) -> int:
        return max(1, math.ceil(self.nbytes / max(1, self.budget // 8)))

    def rows_per_block(self) -> int:
        """The input's average block size: what the output is cut into."""
        return max(1, -(-self.rows // max(1, self.blocks)))

    def close(self) -> None:
        if self.scratch is not None:
            self.scratch.close()


def run(
    node: AllToAll, blocks: Iterator[pa.Table], epoch: int, context: DataContext, stats: dict[str, Any]
) -> Iterator[pa.Table]:
    """The output blocks of ``node`` given its input ``blocks``; fills ``stats['spilled_bytes']``."""
    if isinstance(node, StreamingRepartition):  # needs no more than one block at a time
        yield from _rechunked(blocks, node.target_num_rows_per_block)
        return
    sample_key = node.keys[0] if isinstance(node, (Sort, Aggregate, MapGroups)) and node.keys else None
    if isinstance(node, Aggregate):
        blocks = _columns_aggregated(blocks, node)
    collected = Collected(blocks, context, sample_key)
    try:
        if isinstance(node, RandomShuffle):
            out = _shuffled(collected, node.seed, order_epoch(node, epoch), collected.rows_per_block())
        elif isinstance(node, RandomizeBlockOrder):
            out = _reordered(collected, node.seed, order_epoch(node, epoch))
        elif isinstance(node, Sort):
            out = _sorted(collected, node)
        elif isinstance(node, Repartition):
            out = _repartitioned(collected, node, epoch)
        elif isinstance(node, HashRepartition):
            out = _hash_partitioned(collected, node)
        elif isinstance(node, Aggregate):
            out = _aggregated(collected, node)
        elif isinstance(node, MapGroups):
            out = _mapped_groups(collected, node)
        else:
            raise TypeError(f"unknown all-to-all operator {node!r}")
        yield from out
    finally:
        stats["spilled_bytes"] = stats.get("spilled_bytes", 0) + (
            collected.scratch.spilled_bytes if collected.scratch else 0
        )
        collected.close()


# ---------------------------------------------------------------------------- shuffle


def shuffle_keys(seed: int, epoch: int, first_row: int, n: int) -> np.ndarray:
    """64-bit keys for rows [first_row, first_row + n): splitmix64 of the row number, salted by (seed, epoch).

    Example:
        >>> bool((shuffle_keys(1, 0, 0, 4) == shuffle_keys(1, 0, 0, 4)).all())
        True
    """
    salt = np.random.default_rng([int(seed) % 2**63, int(epoch)]).integers(0, 2**63, dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = np.arange(first_row, first_row + n, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15) + salt
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def _keyed(blocks: Iterator[pa.Table], seed: int, epoch: int) -> Iterator[pa.Table]:
    row = 0
    for block in blocks:
        yield block.append_column(_KEY, pa.array(shuffle_keys(seed, epoch, row, block.num_rows)))
        row += block.num_rows


def _by_key(table: pa.Table) -> pa.Table:
    order = np.argsort(table.column(_KEY).to_numpy(), kind="stable")
    return table.take(pa.array(order)).drop_columns([_KEY])


def _shuffled(collected: Collected, seed: int, epoch: int, rows_per_block: int) -> Iterator[pa.Table]:
    if not collected.spilled:
        if collected.rows:
            yield from _cut(
                _by_key(concat_blocks(list(_keyed(collected.stream(), seed, epoch)))), rows_per_block
            )
        return
    bits = max(1, math.ceil(math.log2(collected.buckets_needed())))
    scratch, spilled = collected.spill_files()
    buckets = Buckets(scratch, 2**bits, "shuffle")
    for block in _keyed(collected.stream(), seed, epoch):
        ids = (block.column(_KEY).to_numpy() >> np.uint64(64 - bits)).astype(np.int64)
        buckets.add(block, ids)
    spilled.remove()
    yield from _cut_stream(_bucket_tables(buckets, _by_key), rows_per_block)


# ---------------------------------------------------------------------------- sort and groups


def sorted_table(table: pa.Table, order: list[tuple[str, str]], where: str) -> pa.Table:
    """``table.sort_by(order)``; a key column of a type Arrow cannot order (lists, tensors, maps) is
    refused in one line naming the column and its type."""
    try:
        return table.sort_by(order)
    except (pa.ArrowTypeError, pa.ArrowNotImplementedError) as e:
        names = [name for name, _ in order]
        unsortable = [
            f"{n!r} ({table.schema.field(n).type})"
            for n in names
            if n in table.schema.names and not _orderable(table.schema.field(n).type)
        ] or [repr(n) for n in names]
        raise DataTypeError(
            f"{where}: key column {', '.join(unsortable)} cannot be ordered ({str(e).strip()}); "
            "use a key of numbers, strings, booleans or dates (compute one with with_column)"
        ) from None


def _orderable(type_: pa.DataType) -> bool:
    return not (
        pa.types.is_nested(type_) or isinstance(type_, pa.BaseExtensionType) or pa.types.is_null(type_)
    )


def _sort_keys(keys: tuple[str, ...], descending: tuple[bool, ...]) -> list[tuple[str, str]]:
    return [(k, "descending" if d else "ascending") for k, d in zip(keys, descending, strict=True)]


def _sorted(collected: Collected, node: Sort) -> Iterator[pa.Table]:
    order = _sort_keys(node.keys, node.descending)

    def sort(table: pa.Table) -> pa.Table:
        _check_column(table, *node.keys)
        return sorted_table(table, order, "sort")

    tables = _partitioned(collected, node.keys[0], node.descending[0], sort)
    if node.boundaries:
        yield from _cut_at_boundaries(
            tables, node.keys[0], node.descending[0], node.boundaries, collected.schema
        )
    else:
        yield from _cut_stream(tables, collected.rows_per_block())


def _cut_at_boundaries(
    tables: Iterator[pa.Table],
    key: str,
    descending: bool,
    boundaries: tuple[float, ...],
    schema: pa.Schema | None,
) -> Iterator[pa.Table]:
    """Sorted ``tables`` as one block per range of ``key`` that ``boundaries`` make (Ray's
    ``sort(boundaries=)``): values below the first, between each pair, from the last on; in sort
    order, empty ranges as empty blocks, null/NaN keys in the last block."""
    edges = np.asarray(boundaries)
    order = list(range(len(edges) + 1))
    order = order[::-1] if descending else order
    rank = {r: i for i, r in enumerate(order)}  # range -> its place in the output
    pending: list[pa.Table] = []
    place = 0  # the output block being filled
    for table in tables:
        ranks = _boundary_ranks(table.column(key), edges, rank)
        starts = np.flatnonzero(np.diff(ranks, prepend=-1)).tolist() + [table.num_rows]
        for a, b in zip(starts[:-1], starts[1:], strict=True):
            while place < ranks[a]:
                yield concat_blocks(pending) if pending else table.slice(0, 0)
                pending, place = [], place + 1
            pending.append(table.slice(a, b - a))
    if pending:
        empty = pending[0].slice(0, 0)
    elif schema is not None:
        empty = schema.empty_table()
    else:
        return
    while place < len(order):
        yield concat_blocks(pending) if pending else empty
        pending, place = [], place + 1


def _boundary_ranks(column: pa.ChunkedArray, edges: np.ndarray, rank: dict[int, int]) -> np.ndarray:
    """Each row's output place: the rank of ``searchsorted(edges, value, 'right')``; null/NaN last."""
    invalid = column.is_null().to_numpy(zero_copy_only=False)
    if pa.types.is_floating(column.type):
        invalid = invalid | pc.fill_null(pc.is_nan(column), False).to_numpy(zero_copy_only=False)
    values = (
        pc.fill_null(column, 0).to_numpy(zero_copy_only=False)
        if invalid.any()
        else column.to_numpy(zero_copy_only=False)
    )
    ranges = np.searchsorted(edges, values, side="right")
    ranks = np.array([rank[r] for r in range(len(edges) + 1)], dtype=np.int64)[ranges]
    ranks[invalid] = len(edges)
    return ranks


def _partitioned(collected: Collected, key: str, descending: bool, process) -> Iterator[pa.Table]:
    """``process(table)`` on the whole input (in memory) or on each range bucket of ``key`` in order."""
    if not collected.spilled:
        if collected.rows:
            yield process(concat_blocks(list(collected.stream())))
        return
    boundaries = sample_boundaries(collected.samples, collected.buckets_needed())
    scratch, spilled = collected.spill_files()
    buckets = Buckets(scratch, len(boundaries) + 2, "range")
    for block in collected.stream():
        buckets.add(block, range_bucket(block.column(key), boundaries))
    spilled.remove()
    order = list(range(len(boundaries) + 1))
    order = (order[::-1] if descending else order) + [len(boundaries) + 1]  # null/NaN keys last either way
    for index in order:
        table = buckets.runs[index].read_all()
        buckets.runs[index].remove()
        if table is not None and table.num_rows:
            yield process(table)
        del table
        pa.default_memory_pool().release_unused()  # hand the bucket's pages back before the next one


def sample_boundaries(samples: list[pa.ChunkedArray | pa.Array], buckets: int) -> np.ndarray:
    """``buckets - 1`` ascending split points from a sample of the key column (duplicates removed)."""
    values = pa.chunked_array(
        [c for s in samples for c in (s.chunks if isinstance(s, pa.ChunkedArray) else [s])]
    )
    values = _valid(values)
    if buckets <= 1 or len(values) == 0:
        return values.to_numpy(zero_copy_only=False)[:0]
    ordered = np.sort(values.to_numpy(zero_copy_only=False), kind="stable")
    picks = ordered[(np.arange(1, buckets) * len(ordered)) // buckets]
    return np.unique(picks)


def _valid(values: pa.ChunkedArray) -> pa.ChunkedArray:
    values = values.drop_null()
    if pa.types.is_floating(values.type):
        values = values.filter(pc.invert(pc.is_nan(values)))
    return values


def range_bucket(column: pa.ChunkedArray, boundaries: np.ndarray) -> np.ndarray:
    """Bucket of each row: ``searchsorted(boundaries, value, 'right')``; null/NaN go to the last bucket."""
    invalid = column.is_null().to_numpy(zero_copy_only=False)
    if pa.types.is_floating(column.type):
        invalid = invalid | pc.fill_null(pc.is_nan(column), False).to_numpy(zero_copy_only=False)
    try:
        values = (
            column.to_numpy(zero_copy_only=False)
            if not invalid.any()
            else pc.fill_null(column, _filler(column.type, boundaries)).to_numpy(zero_copy_only=False)
        )
        ids = np.searchsorted(boundaries, values, side="right").astype(np.int64)
    except (TypeError, pa.ArrowException) as e:
        raise DataError(
            f"cannot range-partition a column of type {column.type} ({e}); sort or group by a "
            "number, string or timestamp column"
        ) from None
    ids[invalid] = len(boundaries) + 1
    return ids


def _filler(type_: pa.DataType, boundaries: np.ndarray) -> Any:
    if len(boundaries):
        return pa.scalar(boundaries[0]).cast(type_)
    return pa.scalar("" if pa.types.is_string(type_) or pa.types.is_large_string(type_) else 0).cast(type_)


def groups(table: pa.Table, keys: tuple[str, ...]) -> Iterator[tuple[tuple, pa.Table]]:
    """(key values, rows) of each group of a table, in key order (nulls last)."""
    _check_column(table, *keys)
    table = sorted_table(table, [(k, "ascending") for k in keys], "groupby")
    if table.num_rows == 0:
        return
    changes = np.zeros(table.num_rows, dtype=bool)
    changes[0] = True
    for key in keys:
        column = table.column(key)
        same = pc.fill_null(pc.equal(column.slice(1), column.slice(0, table.num_rows - 1)), False)
        both_null = pc.and_(column.slice(1).is_null(), column.slice(0, table.num_rows - 1).is_null())
        same = pc.or_(same, both_null)
        if pa.types.is_floating(column.type):  # NaN keys form one group (Ray), though NaN != NaN
            nan = pc.fill_null(pc.is_nan(column), False)
            same = pc.or_(same, pc.and_(nan.slice(1), nan.slice(0, table.num_rows - 1)))
        changes[1:] |= ~same.to_numpy(zero_copy_only=False)
    starts = np.flatnonzero(changes).tolist() + [table.num_rows]
    for a, b in zip(starts[:-1], starts[1:], strict=True):
        group = table.slice(a, b - a)
        yield tuple(group.column(k)[0].as_py() for k in keys), group


def _aggregated(collected: Collected, node: Aggregate) -> Iterator[pa.Table]:
    columns = collected.schema.names if collected.schema is not None else []
    for agg in node.aggs:
        agg.validate(columns)
    if not node.keys:  # one row for the whole dataset, streamed block by block
        yield pa.Table.from_pylist([streamed_aggregate(collected.stream(), node.aggs)])
        return

    def aggregate(table: pa.Table) -> pa.Table:
        rows = []
        for key, group in groups(table, node.keys):
            row = dict(zip(node.keys, key, strict=True))
            row.update(aggregate_table(group, node.aggs, key[0] if len(key) == 1 else key))
            rows.append(row)
        return pa.Table.from_pylist(rows)

    tables = list(_partitioned(collected, node.keys[0], False, aggregate))
    if tables:
        yield concat_blocks(tables) if len(tables) > 1 else tables[0]


def _columns_aggregated(blocks: Iterator[pa.Table], node: Aggregate) -> Iterator[pa.Table]:
    """The input blocks cut to the group keys and the columns the aggregations read, when every
    aggregation says which it reads: ``groupby("key").count()`` over rows with a 1 KB payload then
    collects (and, past the memory budget, spills) 8-byte keys instead of the payload. A column the
    data lacks is left to the usual one-line error."""
    reads = [agg.columns_read() for agg in node.aggs]
    if any(columns is None for columns in reads):
        return blocks
    wanted = list(dict.fromkeys([*node.keys, *(c for columns in reads for c in columns)]))
    return (block.select(wanted) if set(wanted) <= set(block.schema.names) else block for block in blocks)


def streamed_aggregate(blocks: Iterator[pa.Table], aggs: tuple[Any, ...]) -> dict[str, Any]:
    accs = []
    for agg in aggs:
        agg.key = None
        accs.append(agg.init())
    schema = None
    for block in blocks:
        schema = block.schema
        accs = [accumulated(agg, acc, block) for agg, acc in zip(aggs, accs, strict=True)]
    return {agg.name: finalized(agg, acc, schema) for agg, acc in zip(aggs, accs, strict=True)}


def _mapped_groups(collected: Collected, node: MapGroups) -> Iterator[pa.Table]:
    from ember.data.transforms import call_user, udf_name

    fn = node.fn
    assert fn is not None  # GroupedData.map_groups always gives one (None: the dataclass default)

    def apply(table: pa.Table) -> Iterator[pa.Table]:
        for key, group in groups(table, node.keys):
            batch = block_to_batch(group, node.batch_format, writable=True)
            result = call_user(fn, "map_groups", f"group {key}", batch, *node.fn_args, **node.fn_kwargs)
            yield batch_to_block(result, f"map_groups {udf_name(fn)}")

    if not node.keys:
        if collected.rows:
            table = concat_blocks(list(collected.stream()))
            yield batch_to_block(
                fn(block_to_batch(table, node.batch_format, writable=True), *node.fn_args, **node.fn_kwargs),
                "map_groups",
            )
        return
    for blocks in _partitioned(collected, node.keys[0], False, apply):
        yield from blocks


# ---------------------------------------------------------------------------- block order and repartition


def _reordered(collected: Collected, seed: int, epoch: int) -> Iterator[pa.Table]:
    order = np.random.default_rng([int(seed) % 2**63, int(epoch)]).permutation(collected.blocks)
    if not collected.spilled:
        held = collected.memory or []
        yield from (held[i] for i in order)
        return
    spilled = collected.spill_files()[1]
    for index in order:
        yield spilled.block(int(index))


def _repartitioned(collected: Collected, node: Repartition, epoch: int) -> Iterator[pa.Table]:
    stream: Iterator[pa.Table] = collected.stream()
    if node.shuffle:
        stream = _shuffled(collected, node.seed, epoch, collected.rows_per_block())
    edges = np.linspace(0, collected.rows, node.n + 1).astype(np.int64)
    yield from _cut_at(stream, [int(b - a) for a, b in zip(edges[:-1], edges[1:], strict=True)])


def _rechunked(blocks: Iterator[pa.Table], rows: int) -> Iterator[pa.Table]:
    """The stream re-cut into blocks of exactly ``rows`` rows (the last one shorter), in order."""
    pending: list[pa.Table] = []
    have = 0
    for block in blocks:
        offset = 0
        while offset < block.num_rows:
            take = min(rows - have, block.num_rows - offset)
            pending.append(block.slice(offset, take))
            have, offset = have + take, offset + take
            if have == rows:
                yield concat_blocks(pending)
                pending, have = [], 0
    if pending:
        yield concat_blocks(pending)


def key_hash(block: pa.Table, keys: tuple[str, ...]) -> np.ndarray:
    """A 64-bit hash of each row's ``keys``, the same in every process and run (pandas' fixed-key
    SipHash of each value, combined column by column).

    Example:
        >>> t = pa.table({"k": ["a", "b", "a"]})
        >>> h = key_hash(t, ("k",)); bool(h[0] == h[2]), bool(h[0] == h[1])
        (True, False)
    """
    import pandas as pd

    _check_column(block, *keys)
    combined = np.zeros(block.num_rows, dtype=np.uint64)
    for key in keys:
        values = (
            pd.Series(block.column(key).to_pylist(), dtype=object)
            if _nested(block.column(key).type)
            else block.column(key).to_pandas()
        )
        hashed = pd.util.hash_pandas_object(values, index=False).to_numpy()
        with np.errstate(over="ignore"):
            combined = combined * np.uint64(0x100000001B3) ^ hashed
    return combined


def _nested(type_: pa.DataType) -> bool:
    return pa.types.is_list(type_) or pa.types.is_struct(type_) or pa.types.is_large_list(type_)


def _hash_partitioned(collected: Collected, node: HashRepartition) -> Iterator[pa.Table]:
    if collected.rows == 0:
        if collected.schema is not None:
            yield from (collected.schema.empty_table() for _ in range(node.n))
        return

    def finish(table: pa.Table) -> pa.Table:
        return (
            sorted_table(table, [(k, "ascending") for k in node.keys], "repartition") if node.sort else table
        )

    def partitions(block: pa.Table) -> np.ndarray:
        return (key_hash(block, node.keys) % np.uint64(node.n)).astype(np.int64)

    assert collected.schema is not None  # set by the first block (there are rows)
    empty = collected.schema.empty_table()
    if not collected.spilled:
        table = concat_blocks(list(collected.stream()))
        ids = partitions(table)
        for index in range(node.n):
            yield finish(table.filter(pa.array(ids == index)))
        return
    scratch, spilled = collected.spill_files()
    buckets = Buckets(scratch, node.n, "hash")
    for block in collected.stream():
        buckets.add(block, partitions(block))
    spilled.remove()
    for run_ in buckets.runs:
        table = run_.read_all()
        run_.remove()
        yield finish(table) if table is not None and table.num_rows else empty
        del table
        pa.default_memory_pool().release_unused()


# ---------------------------------------------------------------------------- helpers


def _bucket_tables(buckets: Buckets, process) -> Iterator[pa.Table]:
    for bucket in buckets.runs:
        table = bucket.read_all()
        bucket.remove()
        if table is not None and table.num_rows:
            yield process(table)
        del table
        pa.default_memory_pool().release_unused()


def _cut(table: pa.Table, rows: int) -> Iterator[pa.Table]:
    for start in range(0, table.num_rows, rows):
        yield table.slice(start, rows)


def _cut_stream(tables: Iterator[pa.Table], rows: int) -> Iterator[pa.Table]:
    for table in tables:
        yield from _cut(table, rows)


def _cut_at(blocks: Iterator[pa.Table], sizes: list[int]) -> Iterator[pa.Table]:
    """Blocks of exactly ``sizes[i]`` rows each (an empty block for a size of 0), from a stream."""
    pending: list[pa.Table] = []
    have = 0
    target = iter(sizes)
    want = next(target, None)
    for block in blocks:
        offset = 0
        while want is not None and offset < block.num_rows:
            take = min(want - have, block.num_rows - offset)
            pending.append(block.slice(offset, take))
            have += take
            offset += take
            if have == want:
                yield concat_blocks(pending) if pending else block.slice(0, 0)
                pending, have, want = [], 0, next(target, None)
                while want == 0:
                    yield block.slice(0, 0)
                    want = next(target, None)
    while want is not None:
        if pending:
            yield concat_blocks(pending)
            pending = []
        want = next(target, None)


def _check_column(table: pa.Table, *names: str) -> None:
    for name in names:
        if name not in table.column_names:
            raise DataValueError(f"no column {name!r}; the dataset has columns {table.column_names}")
