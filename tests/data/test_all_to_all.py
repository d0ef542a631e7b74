"""The all-to-all operators: exact (against pyarrow/pandas on the whole table), deterministic for a
seed, and the same whether they run in memory or spill to disk under a tiny memory budget."""

from __future__ import annotations

import os

import cloudpickle
import numpy as np
import pyarrow as pa
import pytest

import ember.data
from ember.data.aggregate import AbsMax, AggregateFn, Count, Max, Mean, Min, Quantile, Std, Sum
from ember.errors import ConfigError, DataError

N = 6000


def _table(n: int = N, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    key = rng.integers(0, 37, n)
    value = rng.normal(size=n)
    name = np.array([f"n{v:03d}" for v in rng.integers(0, 500, n)], dtype=object)
    value_with_nulls = pa.array(np.where(rng.random(n) < 0.05, np.nan, value), from_pandas=True)
    return pa.table(
        {
            "id": np.arange(n, dtype=np.int64),
            "key": key,
            "name": name,
            "value": value,
            "maybe": value_with_nulls,
            "payload": [b"x" * 200] * n,
        }
    )


def _dataset(table: pa.Table) -> ember.data.Dataset:
    return ember.data.from_arrow([table.slice(i, 500) for i in range(0, table.num_rows, 500)])


@pytest.fixture
def budget(tmp_path):
    """Run with a ~64 KB memory budget (the ~1.5 MB test data spills) and a private scratch folder."""
    ctx = ember.data.DataContext.get_current()
    saved = ctx.memory_budget_bytes, ctx.scratch_dir
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    ctx.scratch_dir = str(scratch)

    def run(fn, budget_bytes):
        ctx.memory_budget_bytes = budget_bytes
        try:
            return fn()
        finally:
            ctx.memory_budget_bytes = saved[0]

    yield run, scratch
    ctx.memory_budget_bytes, ctx.scratch_dir = saved


SMALL, LARGE = 64 * 1024, 1024**3


def both(budget, make):
    """``make()`` (a table) run in memory and out of core; asserts they are equal and returns it."""
    run, scratch = budget
    in_memory = run(make, LARGE)
    spilled = run(make, SMALL)
    assert in_memory.equals(spilled)
    assert list(scratch.iterdir()) == []  # the scratch folder is removed after each run
    return in_memory


def test_random_shuffle_is_a_permutation_deterministic_and_budget_independent(budget):
    table = _table()
    out = both(budget, lambda: _dataset(table).random_shuffle(seed=7).to_arrow())
    assert sorted(out.column("id").to_pylist()) == list(range(N))
    assert out.column("id").to_pylist() != list(range(N))
    assert out.equals(_dataset(table).random_shuffle(seed=7).to_arrow())
    assert not out.equals(_dataset(table).random_shuffle(seed=8).to_arrow())
    by_id = out.sort_by("id")
    assert by_id.equals(table)  # rows intact, bitwise


def test_random_shuffle_spills_and_says_so_in_stats(budget):
    run, _ = budget
    ds = _dataset(_table()).random_shuffle(seed=1)
    run(ds.to_arrow, SMALL)
    stats = ds.stats()
    assert "RandomShuffle" in stats and "spilled" in stats and "CPU" in stats and "peak RSS" in stats


def test_epochs_get_new_orders_and_resume_through_a_spilled_shuffle_is_exact(budget):
    run, _ = budget
    ds = (
        _dataset(_table(2000)).random_shuffle(seed=ember.data.RandomSeedConfig(seed=3)).select_columns(["id"])
    )

    def scenario():
        batches = ds.iter_batches(batch_size=128)
        epoch1 = [b["id"].tolist() for b in batches]
        epoch2 = [b["id"].tolist() for b in batches]
        resumed = ds.iter_batches(batch_size=128)
        it = iter(resumed)
        head = [next(it)["id"].tolist() for _ in range(5)]
        state = resumed.state_dict()
        again = ds.iter_batches(batch_size=128)
        again.load_state_dict(state)
        tail = [b["id"].tolist() for b in again]
        return epoch1, epoch2, head + tail

    epoch1, epoch2, resumed = run(scenario, SMALL)
    assert epoch1 != epoch2
    assert resumed == epoch1


def test_sort_multi_key_descending_with_nulls_matches_pyarrow(budget):
    table = _table()
    keys = [("maybe", "descending"), ("id", "ascending")]
    out = both(budget, lambda: _dataset(table).sort(["maybe", "id"], descending=[True, False]).to_arrow())
    assert out.equals(table.sort_by(keys))
    strings = both(budget, lambda: _dataset(table).sort(["name", "id"]).to_arrow())
    assert strings.equals(table.sort_by([("name", "ascending"), ("id", "ascending")]))


def test_sort_refuses_a_missing_column_in_one_line(budget):
    with pytest.raises(DataError, match="no column 'nope'"):
        _dataset(_table(100)).sort("nope").take_all()
    with pytest.raises(ConfigError, match="2 keys but 1 descending"):
        _dataset(_table(100)).sort(["id", "key"], descending=[True])


def test_groupby_aggregations_match_pandas(budget):
    table = _table()
    out = both(
        budget,
        lambda: (
            _dataset(table)
            .groupby("key")
            .aggregate(
                Count(),
                Sum("value"),
                Min("value"),
                Max("value"),
                Mean("value"),
                Std("value"),
                AbsMax("value"),
                Quantile("value", q=0.25),
                Count("maybe", ignore_nulls=True),
            )
            .to_arrow()
        ),
    )
    frame = table.to_pandas()
    expected = frame.groupby("key").agg(
        count=("id", "size"),
        s=("value", "sum"),
        lo=("value", "min"),
        hi=("value", "max"),
        mean=("value", "mean"),
        std=("value", "std"),
    )
    assert out.column("key").to_pylist() == expected.index.tolist()
    assert out.column("count()").to_pylist() == expected["count"].tolist()
    np.testing.assert_allclose(out.column("sum(value)").to_numpy(), expected["s"], rtol=1e-12)
    np.testing.assert_array_equal(out.column("min(value)").to_numpy(), expected["lo"])
    np.testing.assert_array_equal(out.column("max(value)").to_numpy(), expected["hi"])
    np.testing.assert_allclose(out.column("mean(value)").to_numpy(), expected["mean"], rtol=1e-12)
    np.testing.assert_allclose(out.column("std(value)").to_numpy(), expected["std"], rtol=1e-9)
    abs_max = frame.assign(a=frame["value"].abs()).groupby("key")["a"].max()
    np.testing.assert_array_equal(out.column("abs_max(value)").to_numpy(), abs_max)
    q = frame.groupby("key")["value"].quantile(0.25)
    np.testing.assert_allclose(out.column("quantile(value)").to_numpy(), q, rtol=1e-12)
    assert out.column("count(maybe)").to_pylist() == frame.groupby("key")["maybe"].count().tolist()


def test_groupby_shortcuts_multi_key_and_map_groups(budget):
    table = _table(3000)
    counts = both(budget, lambda: _dataset(table).groupby(["key", "name"]).count().to_arrow())
    expected = table.to_pandas().groupby(["key", "name"]).size()
    assert counts.column("count()").to_pylist() == expected.tolist()
    assert list(
        zip(counts.column("key").to_pylist(), counts.column("name").to_pylist(), strict=True)
    ) == list(expected.index)

    def summarize(batch):
        return {"key": batch["key"][:1], "rows": [len(batch["id"])], "first": batch["id"][:1]}

    groups = both(budget, lambda: _dataset(table).groupby("key").map_groups(summarize).to_arrow())
    frame = table.to_pandas()
    assert groups.column("rows").to_pylist() == frame.groupby("key").size().tolist()
    assert groups.column("first").to_pylist() == frame.groupby("key")["id"].min().tolist()


def test_every_column_aggregations_of_a_dataset_without_columns():
    # A dataset with no blocks at all has no schema (columns() is None): sum() over every column
    # iterated that None (TypeError: 'NoneType' object is not iterable), for a Dataset and a GroupedData.
    # Now Dataset's give Ray's None (tests/data/test_ray_parity.py compares), and GroupedData's the one line
    # a dataset with no columns gets.
    no_blocks = ember.data.range(3).flat_map(lambda row: [])
    assert no_blocks.columns() is None
    for empty in (no_blocks, ember.data.from_arrow(pa.table({}))):
        assert empty.sum() is None and empty.mean() is None
        with pytest.raises(ConfigError, match="GroupedData.aggregate\\(\\) needs at least one aggregation"):
            empty.groupby(None).mean()


def test_dataset_level_aggregations():
    ds = _dataset(_table(1000))
    frame = _table(1000).to_pandas()
    assert ds.sum("key") == frame["key"].sum()
    assert ds.min("value") == frame["value"].min()
    assert ds.max("value") == frame["value"].max()
    assert ds.mean("key") == pytest.approx(frame["key"].mean(), rel=1e-12)
    assert ds.std("value") == pytest.approx(frame["value"].std(), rel=1e-9)
    assert ds.sum(["id", "key"]) == {"sum(id)": frame["id"].sum(), "sum(key)": frame["key"].sum()}
    assert sorted(ds.unique("key")) == sorted(frame["key"].unique())
    custom = AggregateFn(
        init=lambda k: 0, merge=lambda a, b: a + b, name="n", accumulate_block=lambda acc, t: acc + t.num_rows
    )
    assert ds.aggregate(custom, Count()) == {"n": 1000, "count()": 1000}
    assert ember.data.from_items([{"a": 1}]).filter(lambda r: False).sum("a") is None
    with pytest.raises(ConfigError, match="two aggregations named 'sum\\(id\\)'"):
        ds.aggregate(Sum("id"), Sum("id"))
    with pytest.raises(DataError, match="Sum\\(on='nope'\\): no such column"):
        ds.aggregate(Sum("nope"))


def test_repartition_and_block_order(budget):
    run, _ = budget
    table = _table(3000)
    parts = run(lambda: _dataset(table).repartition(7).materialize(), SMALL)
    assert parts.num_blocks() == 7
    assert parts.to_arrow().equals(table)
    # a seedless shuffle draws anew on each run; copies of one dataset (what ranks get) draw alike
    frozen = cloudpickle.dumps(_dataset(table).repartition(4, shuffle=True))
    shuffled = both(budget, lambda: cloudpickle.loads(frozen).to_arrow())
    assert shuffled.sort_by("id").equals(table)
    order = both(budget, lambda: _dataset(table).randomize_block_order(seed=5).to_arrow())
    firsts = order.column("id").to_pylist()[::500]
    assert sorted(firsts) == list(range(0, 3000, 500)) and firsts != sorted(firsts)
    assert order.equals(_dataset(table).randomize_block_order(seed=5).to_arrow())


@pytest.mark.parametrize(
    "join_type, how",
    [("inner", "inner"), ("left_outer", "left"), ("right_outer", "right"), ("full_outer", "outer")],
)
def test_join_matches_pandas_merge(budget, join_type, how):
    left = _table(2000).select(["id", "key", "payload"])
    right = pa.table({"k": np.arange(0, 60, 2), "label": [f"L{i}" for i in range(30)]})

    def run_join():
        out = (
            _dataset(left)
            .join(ember.data.from_arrow(right), join_type, num_partitions=2, on=["key"], right_on=["k"])
            .to_arrow()
        )
        return out.sort_by([("id", "ascending"), ("label", "ascending")])

    out = both(budget, run_join)
    expected = left.to_pandas().merge(right.to_pandas(), left_on="key", right_on="k", how=how)
    assert out.num_rows == len(expected)
    labels = [label if isinstance(label, str) else None for label in expected["label"]]
    assert sorted(out.column("label").to_pylist(), key=str) == sorted(labels, key=str)


def test_join_suffixes_and_bad_arguments():
    left = ember.data.from_items([{"id": 1, "v": 1}, {"id": 2, "v": 2}])
    right = ember.data.from_items([{"id": 1, "v": 10}])
    out = left.join(right, "inner", 1, left_suffix="_l", right_suffix="_r").take_all()
    assert out == [{"id": 1, "v_l": 1, "v_r": 10}]
    with pytest.raises(ConfigError, match="join_type='cross'"):
        left.join(right, "cross", 1)
    with pytest.raises(DataError, match="no column 'nope'; the dataset has columns \\['id', 'v'\\]"):
        left.join(right, "inner", 1, on=["id"], right_on=["nope"]).take_all()


@pytest.mark.parametrize("budget_bytes", [LARGE, SMALL])
def test_a_join_side_with_no_blocks_at_all_is_refused_in_one_line_in_memory_and_spilled(budget, budget_bytes):
    # Spilled, a bucket with no rows of that side fell back on its schema, None without blocks: an
    # AttributeError ('NoneType' object has no attribute 'empty_table'), not the in-memory one line.
    run, scratch = budget
    right = _dataset(_table(2000).select(["id", "key", "payload"]))
    no_blocks = ember.data.range(10).limit(0)
    with pytest.raises(DataError, match="join: one side produced no blocks at all"):
        run(lambda: no_blocks.join(right, "left_outer", 2, on=["id"]).take_all(), budget_bytes)
    assert list(scratch.iterdir()) == []


def test_zip_and_its_row_count_check():
    a = ember.data.range(5, override_num_blocks=2)
    b = ember.data.from_items([{"id": i * 10} for i in range(5)])
    assert a.zip(b).take(2) == [{"id": 0, "id_1": 0}, {"id": 1, "id_1": 10}]
    with pytest.raises(DataError, match="zip: the datasets have \\[5, 4\\] rows"):
        a.zip(ember.data.range(4))
    with pytest.raises(DataError, match="zip: dataset 1 has 6 rows but the first has 5"):
        a.zip(ember.data.range(6).filter(lambda r: True)).take_all()


def test_split_arguments_are_checked_as_ray_does():
    ds = ember.data.range(10)
    with pytest.raises(ConfigError, match="must be sorted"):
        ds.split_at_indices([5, 2])
    with pytest.raises(ConfigError, match=">= 0"):
        ds.split_at_indices([-1, 2])
    with pytest.raises(ConfigError, match="at least one index"):
        ds.split_at_indices([])
    assert [d.count() for d in ds.split_at_indices([3, 30])] == [3, 7, 0]
    assert [d.count() for d in ds.split_proportionately([0.1, 0.2])] == [1, 2, 7]
    with pytest.raises(ConfigError, match="sum to less than 1"):
        ds.split_proportionately([0.5, 0.5])
    with pytest.raises(DataError, match="cannot give every split a row"):
        ember.data.range(2).split_proportionately([0.1, 0.1, 0.1])


class _ExprLike:
    """What ember.data.expressions' Expr offers: to_pyarrow()."""

    def __init__(self, expression):
        self.expression = expression

    def to_pyarrow(self):
        return self.expression


def test_filter_with_an_expression():
    import pyarrow.compute as pc

    ds = ember.data.range(10)
    assert [r["id"] for r in ds.filter(expr=pc.field("id") >= 7).take_all()] == [7, 8, 9]
    assert [r["id"] for r in ds.filter(expr=_ExprLike(pc.field("id") < 2)).take_all()] == [0, 1]
    with pytest.raises(ConfigError, match="exactly one of fn= .* or expr="):
        ds.filter()
    assert [r["id"] for r in ds.filter(expr="id > 7").take_all()] == [8, 9]  # Ray's string expressions
    with pytest.raises(DataError, match="filter\\(expr=.*failed"):
        ds.filter(expr=pc.field("nope") > 1).take_all()


class _Tagger:
    """A callable class: records which process built it and how many times it was built there."""

    built = 0

    def __init__(self):
        type(self).built += 1
        self.pid, self.build = os.getpid(), type(self).built

    def __call__(self, row):
        return [{"id": row["id"], "pid": self.pid, "build": self.build}]


class _KeepEven:
    def __init__(self, modulus):
        self.modulus = modulus

    def __call__(self, row):
        return row["id"] % self.modulus == 0


def test_flat_map_and_filter_with_callable_classes_run_on_a_worker_pool():
    rows = ember.data.range(40, override_num_blocks=8).flat_map(_Tagger, concurrency=2).take_all()
    assert [r["id"] for r in rows] == list(range(40))
    assert {r["build"] for r in rows} == {1}  # each worker built the class once
    assert os.getpid() not in {r["pid"] for r in rows}
    kept = ember.data.range(10).filter(_KeepEven, fn_constructor_args=(2,), concurrency=2).take_all()
    assert [r["id"] for r in kept] == [0, 2, 4, 6, 8]


def test_map_batches_batch_size_values():
    ds = ember.data.range(10, override_num_blocks=2)
    sizes = ds.map_batches(lambda b: {"n": [len(b["id"])]}, batch_size=None).take_all()
    assert [r["n"] for r in sizes] == [5, 5]  # None: whole blocks
    assert [r["n"] for r in ds.map_batches(lambda b: {"n": [len(b["id"])]}).take_all()] == [
        5,
        5,
    ]  # Ray's default
    assert [
        r["n"] for r in ds.map_batches(lambda b: {"n": [len(b["id"])]}, batch_size="default").take_all()
    ] == [5, 5]
    auto = ember.data.range(5000).map_batches(lambda b: {"n": [len(b["id"])]}, batch_size="auto").take_all()
    assert [r["n"] for r in auto] == [4096, 904]  # 8 bytes a row: 16 MiB holds each whole block
    wide = ember.data.from_items([{"x": b"y" * 4_000_000}] * 10)
    assert [
        r["n"] for r in wide.map_batches(lambda b: {"n": [len(b["x"])]}, batch_size="auto").take_all()
    ] == [4, 4, 2]
    with pytest.raises(ConfigError, match="batch_size='fast'"):
        ds.map_batches(lambda b: b, batch_size="fast")


def test_plan_holds_named_operators_only():
    from ember.data import plan

    ds = (
        ember.data.range(10)
        .map(lambda r: r)
        .random_shuffle(seed=1)
        .sort("id")
        .repartition(2)
        .groupby("id")
        .count()
    )
    node, names = ds._node, []
    while True:
        names.append(type(node).__name__)
        if not node.children():
            break
        node = node.children()[0]
    assert names == ["Aggregate", "Repartition", "Sort", "RandomShuffle", "Map", "Read"]
    assert plan.known_rows(ember.data.range(10).random_shuffle(seed=1).sort("id")._node) == 10
