"""Operators over several inputs: Join (out of core past the budget) and Zip (streaming).

Join: both sides are collected (``all_to_all.Collected``); when both fit, pyarrow joins them in
memory; otherwise both are range-partitioned on the first key with the same boundaries (drawn from
both sides' samples), so matching rows share a bucket, and each pair of buckets is joined alone.
Rows with a null key never match (SQL semantics) and stay in the outer joins' output.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from ember.data.block import concat_blocks
from ember.data.context import DataContext
from ember.data.execute.all_to_all import Collected, range_bucket, sample_boundaries
from ember.data.execute.spill import Buckets, Scratch
from ember.data.plan import Join
from ember.data.ray_errors import DataValueError
from ember.errors import DataError

JOIN_TYPES = {
    "inner": "inner",
    "left_outer": "left outer",
    "right_outer": "right outer",
    "full_outer": "full outer",
}


def join(
    node: Join,
    left_blocks: Iterator[pa.Table],
    right_blocks: Iterator[pa.Table],
    context: DataContext,
    stats: dict[str, Any],
) -> Iterator[pa.Table]:
    """The joined rows of ``node``'s two inputs."""
    left = Collected(left_blocks, context, node.on[0], "left")
    right = Collected(right_blocks, context, node.right_on[0], "right")
    scratch: Scratch | None = None
    try:
        if not left.spilled and not right.spilled:
            if left.rows or right.rows or left.schema is not None:
                yield _join_tables(node, _whole(left), _whole(right))
            return
        scratch = Scratch(context.scratch_root())
        n = max(node.num_partitions or 1, left.buckets_needed() + right.buckets_needed())
        boundaries = sample_boundaries(left.samples + right.samples, n)
        sides = []
        for side, keys, label in ((left, node.on, "left"), (right, node.right_on, "right")):
            buckets = Buckets(scratch, len(boundaries) + 2, label)
            for block in side.stream():
                buckets.add(block, range_bucket(block.column(keys[0]), boundaries))
            buckets.finish()
            side.close()
            sides.append(buckets)
        for a, b in zip(sides[0].runs, sides[1].runs, strict=True):
            lt, rt = a.read_all(), b.read_all()
            a.remove()
            b.remove()
            if lt is None and rt is None:
                continue
            out = _join_tables(
                node, lt if lt is not None else _empty(left), rt if rt is not None else _empty(right)
            )
            if out.num_rows:
                yield out
    finally:
        stats["spilled_bytes"] = stats.get("spilled_bytes", 0) + sum(
            s.spilled_bytes for s in (left.scratch, right.scratch, scratch) if s is not None
        )
        left.close()
        right.close()
        if scratch is not None:
            scratch.close()


def _whole(side: Collected) -> pa.Table:
    blocks = list(side.stream())
    if blocks:
        return concat_blocks(blocks)
    return _empty(side)


def _empty(side: Collected) -> pa.Table:
    """``side``'s columns, no rows; refused when it produced no blocks at all (its columns unknown)."""
    if side.schema is None:
        raise DataError(
            "join: one side produced no blocks at all, so its columns are unknown; "
            "give it at least an empty block with its columns"
        )
    return side.schema.empty_table()


def _join_tables(node: Join, left: pa.Table, right: pa.Table) -> pa.Table:
    for table, keys, side in ((left, node.on, "left"), (right, node.right_on, "right")):
        missing = [k for k in keys if k not in table.column_names]
        if missing:
            raise DataError(
                f"join: the {side} dataset has no column {missing[0]!r}; it has {table.column_names}"
            )
    shared = (set(left.column_names) - set(node.on)) & (set(right.column_names) - set(node.right_on))
    if shared and (node.left_suffix or "") == (
        node.right_suffix or ""
    ):  # Arrow would give two same-named columns
        raise DataValueError(
            f"join: both datasets have the column(s) {sorted(shared)}; pass left_suffix= or "
            "right_suffix= so that the joined columns get different names (Ray refuses them too)"
        )
    try:
        return left.join(
            right,
            keys=list(node.on),
            right_keys=list(node.right_on),
            join_type=JOIN_TYPES[node.join_type],
            left_suffix=node.left_suffix,
            right_suffix=node.right_suffix,
            use_threads=False,
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        first = str(e).splitlines()[0]
        raise DataError(
            f"join: {first}; pass left_suffix=/right_suffix= for columns both sides have, "
            "and join on keys of the same type"
        ) from None


def zip_streams(streams: list[Iterator[pa.Table]]) -> Iterator[pa.Table]:
    """Row i of every stream side by side; a duplicate column name from input j becomes ``name_j``."""
    first, others = streams[0], [_Rows(s) for s in streams[1:]]
    produced = 0
    for block in first:
        if block.num_rows == 0:
            continue
        out = block
        for j, other in enumerate(others, start=1):
            part = other.take(block.num_rows)
            if part is None:
                raise DataValueError(
                    f"zip: dataset {j} has fewer rows than the first (more than {produced}); "
                    "zip datasets with equal row counts"
                )
            for name, column in zip(part.column_names, part.columns, strict=True):
                out = out.append_column(f"{name}_{j}" if name in out.column_names else name, column)
        produced += block.num_rows
        yield out
    for j, other in enumerate(others, start=1):
        extra = other.remaining()
        if extra:
            raise DataValueError(
                f"zip: dataset {j} has {produced + extra} rows but the first has {produced}; "
                "zip datasets with equal row counts"
            )


class _Rows:
    """Pulls exactly n rows at a time from a block stream."""

    def __init__(self, blocks: Iterator[pa.Table]) -> None:
        self.blocks, self.pending, self.rows = blocks, None, 0

    def take(self, n: int) -> pa.Table | None:
        parts: list[pa.Table] = []
        need = n
        while need:
            if self.pending is None or self.pending.num_rows == 0:
                self.pending = next(self.blocks, None)
                if self.pending is None:
                    return None
                continue
            part = self.pending.slice(0, need)
            self.pending = self.pending.slice(part.num_rows)
            parts.append(part)
            need -= part.num_rows
        self.rows += n
        return concat_blocks(parts)

    def remaining(self) -> int:
        rest = self.pending.num_rows if self.pending is not None else 0
        return rest + sum(b.num_rows for b in self.blocks)
