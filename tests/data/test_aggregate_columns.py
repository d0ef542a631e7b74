"""A groupby aggregation carries only the columns it reads through its partitioning (and its spill).

``groupby("key").count()`` over rows with a wide payload used to collect, and past the memory budget
spill, every payload byte; now the blocks are cut to the keys and the aggregated columns first, when
every aggregation says which columns it reads. A custom ``AggregateFn`` (whose function may read any
column) keeps every column. Checked through ``Dataset.stats()``, which reports bytes spilled.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember.data
from ember.data.aggregate import AggregateFn, Count, Mean
from ember.errors import DataError


@pytest.fixture
def small_budget(tmp_path):
    ctx = ember.data.DataContext.get_current()
    saved = ctx.memory_budget_bytes, ctx.scratch_dir
    ctx.memory_budget_bytes, ctx.scratch_dir = 256 * 1024, str(tmp_path)
    yield
    ctx.memory_budget_bytes, ctx.scratch_dir = saved


def _wide(rows: int = 4000) -> ember.data.Dataset:
    """Rows of a key in [0, 10), a value, and a 512-byte payload: ~2 MB, 8x the budget above."""
    rng = np.random.default_rng(0)
    items = [
        {"key": int(k), "x": float(i), "payload": bytes(512)} for i, k in enumerate(rng.integers(0, 10, rows))
    ]
    return ember.data.from_items(items, override_num_blocks=8)


def _expected(ds: ember.data.Dataset) -> dict[int, tuple[int, float]]:
    rows = ds.take_all()
    keys = sorted({r["key"] for r in rows})
    return {
        k: (sum(r["key"] == k for r in rows), float(np.mean([r["x"] for r in rows if r["key"] == k])))
        for k in keys
    }


def test_builtin_aggregations_partition_only_the_columns_they_read(small_budget):
    ds = _wide()
    grouped = ds.groupby("key").aggregate(Count(), Mean("x"))
    rows = grouped.take_all()
    assert {r["key"]: (r["count()"], r["mean(x)"]) for r in rows} == _expected(ds)
    assert list(rows[0]) == ["key", "count()", "mean(x)"]
    assert "spilled" not in grouped.stats()  # 4000 keys and values fit in 256 KB; the payloads would not


def test_a_custom_aggregation_still_sees_every_column(small_budget):
    payload_bytes = AggregateFn(
        init=lambda k: 0,
        merge=lambda a, b: a + b,
        name="payload_bytes",
        accumulate_row=lambda acc, row: acc + len(row["payload"]),
    )
    grouped = _wide().groupby("key").aggregate(payload_bytes)
    rows = grouped.take_all()
    assert sum(r["payload_bytes"] for r in rows) == 4000 * 512
    assert "spilled" in grouped.stats()  # the payloads went through the partitioning, past the budget


def test_a_missing_column_is_still_named_in_one_line():
    with pytest.raises(DataError, match="no such column"):
        _wide(100).groupby("key").aggregate(Mean("nope")).take_all()
