"""Ray Data 2.60 Dataset methods users reach for that ember lacked (issue 15): random_sample,
Dataset.name/set_name, context, copy, explain, num_blocks, with_columns, train_test_split(stratify=),
streaming_train_test_split, ExecutionOptions, TaskPoolStrategy, DatasetContext. The last tests run the same
calls on real ray.data and compare."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ember.data
from ember.data.expressions import col, lit
from ember.errors import ConfigError, DataError


def test_random_sample_keeps_order_and_roughly_the_fraction():
    rows = ember.data.range(10_000, override_num_blocks=4).random_sample(0.2, seed=7).take_all()
    ids = [r["id"] for r in rows]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert 1600 < len(ids) < 2400


def test_random_sample_is_deterministic_for_a_seed_and_differs_across_seeds():
    ds = ember.data.range(5000, override_num_blocks=5)
    first = ds.random_sample(0.3, seed=1).take_all()
    assert first == ds.random_sample(0.3, seed=1).take_all()
    assert first != ds.random_sample(0.3, seed=2).take_all()


def test_random_sample_seeded_is_independent_of_parallelism(tmp_path):
    for i in range(3):
        pq.write_table(pa.table({"id": list(range(i * 1000, (i + 1) * 1000))}), tmp_path / f"{i}.parquet")
    ds = ember.data.read_parquet(str(tmp_path))
    serial = ds.random_sample(0.5, seed=3).take_all()
    parallel = ds.random_sample(0.5, seed=3).map(lambda r: r, concurrency=2).take_all()
    assert sorted(r["id"] for r in serial) == sorted(r["id"] for r in parallel)


def test_random_sample_extremes():
    ds = ember.data.range(100)
    assert ds.random_sample(0).count() == 0
    assert ds.random_sample(1).take_all() == ds.take_all()


@pytest.mark.parametrize("fraction", [-0.1, 1.5, "0.5", None])
def test_random_sample_refuses_a_fraction_outside_zero_one(fraction):
    with pytest.raises(ConfigError, match="fraction must be between 0 and 1"):
        ember.data.range(3).random_sample(fraction)


def test_random_sample_refuses_a_non_integer_seed():
    with pytest.raises(ConfigError, match="non-negative integer seed"):
        ember.data.range(3).random_sample(0.5, seed="x")


def labelled(n: int = 40) -> ember.data.Dataset:
    return ember.data.from_items([{"id": i, "label": i % 3 if i % 5 else 3} for i in range(n)])


# ---------------------------------------------------------------------------- name, context, copy, explain


def test_a_name_carries_to_derived_datasets_and_shows_in_stats_and_explain(capsys):
    ds = ember.data.range(6)
    assert ds.name is None
    ds.set_name("train")
    derived = ds.map(lambda r: r).filter(lambda r: r["id"] > 1).limit(3)
    assert derived.name == "train" and derived.materialize().name == "train"
    assert [r["id"] for r in derived.take_all()] == [2, 3, 4]
    assert derived.stats().splitlines()[0] == "Dataset train"
    derived.explain()
    assert "Logical Plan (train)" in capsys.readouterr().out
    with pytest.raises(ConfigError, match="set_name"):
        ds.set_name(3)


def test_copy_is_a_separate_dataset_object_with_the_same_rows():
    ds = ember.data.range(5).map(lambda r: {"id": r["id"] * 3})
    ds.set_name("a")
    twin = ember.data.Dataset.copy(ds)
    twin.set_name("b")
    assert (ds.name, twin.name) == ("a", "b")
    assert twin.take_all() == ds.take_all()
    materialized = ds.materialize()
    assert ember.data.Dataset.copy(materialized).num_blocks() == materialized.num_blocks()


def test_context_is_the_datasets_own_over_the_process_wide_one():
    ds = ember.data.range(1)
    assert (
        ds.context is not ember.data.DataContext.get_current()
    )  # per lineage (tests/data/test_dataset_context.py)
    assert (
        ds.context.resolved() == ember.data.DataContext.get_current()
    )  # nothing set on it: the process-wide values
    assert ember.data.DatasetContext is ember.data.DataContext


def test_explain_prints_one_line_per_typed_operator_inputs_indented(capsys):
    other = ember.data.range(3).sort("id")
    ds = (
        ember.data.range(10)
        .map(lambda r: r)
        .filter(lambda r: True)
        .select_columns(["id"])
        .union(other)
        .limit(4)
    )
    ds.explain()
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        "",
        "-------- Logical Plan --------",
        "Limit[Limit]",
        "+- Union[Union]",
        "   +- Project[SelectColumns]",
        "      +- Filter[Filter]",
        "         +- Map[Map]",
        "            +- Read[Range]",
        "   +- Sort[Sort]",
        "      +- Read[Range]",
    ]


def test_num_blocks_needs_a_materialized_dataset_as_in_ray():
    with pytest.raises(ConfigError, match=r"materialize\(\)\.num_blocks\(\)"):
        ember.data.range(10).num_blocks()
    assert ember.data.range(10, override_num_blocks=2).materialize().num_blocks() == 2


# ---------------------------------------------------------------------------- with_columns


def test_with_columns_evaluates_every_expression_on_the_input_columns():
    ds = ember.data.from_items([{"a": 1, "b": 10}, {"a": 2, "b": 20}])
    out = ds.with_columns({"a": col("a") * 100, "c": col("a") + col("b")}, {"d": lit(7)}).take_all()
    assert out == [{"a": 100, "b": 10, "c": 11, "d": 7}, {"a": 200, "b": 20, "c": 22, "d": 7}]
    assert ds.with_columns({}) is ds and ds.with_columns() is ds


def test_with_columns_refuses_what_is_not_a_mapping_of_expressions():
    ds = ember.data.range(2)
    with pytest.raises(ConfigError, match="mapping"):
        ds.with_columns([("x", col("id"))])
    with pytest.raises(DataError, match="expression"):
        ds.with_columns({"x": 3})


# ---------------------------------------------------------------------------- train/test splits


def test_stratified_split_keeps_each_class_proportion():
    train, test = labelled(40).train_test_split(0.25, stratify="label")
    train_rows, test_rows = train.take_all(), test.take_all()
    assert sorted(r["id"] for r in train_rows + test_rows) == list(range(40))
    for label in range(4):
        members = [r["id"] for r in labelled(40).take_all() if r["label"] == label]
        in_test = [r["id"] for r in test_rows if r["label"] == label]
        assert in_test == members[len(members) - int(len(members) * 0.25) :]  # a class's last rows
    assert [r["label"] for r in test_rows] == sorted(r["label"] for r in test_rows)  # classes in order


def test_stratified_split_with_a_row_count_and_the_refusals():
    train, test = labelled(40).train_test_split(10, stratify="label")
    assert train.count() + test.count() == 40 and 8 <= test.count() <= 10
    with pytest.raises(ConfigError, match="cannot be combined"):
        labelled().train_test_split(0.2, shuffle=True, stratify="label")
    with pytest.raises(ConfigError, match="no such column"):
        labelled().train_test_split(0.2, stratify="missing")
    with pytest.raises(ConfigError, match="between 0 and"):
        labelled(10).train_test_split(10)
    with pytest.raises(ConfigError, match="fraction"):
        labelled(10).train_test_split(1.5)


@pytest.mark.parametrize("options", [dict(seed=5), dict(), dict(split_type="hash", hash_column="id")])
def test_streaming_split_sides_are_disjoint_complete_and_stable(options):
    ds = ember.data.range(2000, override_num_blocks=4)
    train, test = ds.streaming_train_test_split(0.3, **options)
    train_ids, test_ids = [r["id"] for r in train.take_all()], [r["id"] for r in test.take_all()]
    assert not set(train_ids) & set(test_ids)
    assert sorted(train_ids + test_ids) == list(range(2000))
    assert train_ids == sorted(train_ids)  # rows keep their order
    assert 450 < len(test_ids) < 750
    assert [r["id"] for r in test.take_all()] == test_ids  # the same side on every run


def test_streaming_split_seeds_differ_and_bad_arguments_are_refused():
    ds = ember.data.range(500)
    first = ds.streaming_train_test_split(0.5, seed=1)[1].take_all()
    assert first == ds.streaming_train_test_split(0.5, seed=1)[1].take_all()
    assert first != ds.streaming_train_test_split(0.5, seed=2)[1].take_all()
    for bad, match in [
        (dict(test_size=1.0), "between 0 and 1"),
        (dict(test_size=0.2, split_type="hash"), "hash_column"),
        (dict(test_size=0.2, split_type="hash", hash_column="id", seed=1), "seed"),
        (dict(test_size=0.2, hash_column="id"), "hash_column"),
        (dict(test_size=0.2, split_type="modulo"), "split_type"),
    ]:
        with pytest.raises(ConfigError, match=match):
            ds.streaming_train_test_split(**bad)


# ------------------------------------------------------------------------- ExecutionOptions, TaskPoolStrategy


@pytest.fixture
def fresh_context():
    saved = ember.data.DataContext._current
    ember.data.DataContext._current = ember.data.DataContext()
    try:
        yield ember.data.DataContext.get_current()
    finally:
        ember.data.DataContext._current = saved


def test_execution_options_set_the_context_the_executor_reads(fresh_context, capfd):
    fresh_context.execution_options.verbose_progress = True
    ember.data.range(3).map(lambda r: r).take_all()
    assert "ember.data:" in capfd.readouterr().err  # one line per operator as it finishes
    fresh_context.execution_options = ember.data.ExecutionOptions(preserve_order=True, verbose_progress=False)
    ember.data.range(3).map(lambda r: r).take_all()
    assert "ember.data:" not in capfd.readouterr().err
    assert fresh_context.preserve_order is True
    fresh_context.execution_options.preserve_order = False
    assert fresh_context.preserve_order is False and fresh_context.execution_options.preserve_order is False


def test_execution_options_refuse_resource_limits_in_one_line(fresh_context):
    for name in ("resource_limits", "exclude_resources", "label_selector"):
        with pytest.raises(ConfigError, match="no cluster resources"):
            ember.data.ExecutionOptions(**{name: {"CPU": 1}})
    with pytest.raises(ConfigError, match="no cluster resources"):
        fresh_context.execution_options.resource_limits = {"CPU": 1}
    assert ember.data.ExecutionOptions().preserve_order is False  # Ray's constructor default


def _pid(batch):
    return {"pid": np.full(len(batch["id"]), os.getpid())}


def test_task_pool_strategy_sets_how_many_workers_run_a_function(fresh_context):
    ds = ember.data.range(400, override_num_blocks=8)
    inline = {r["pid"] for r in ds.map_batches(_pid, compute=ember.data.TaskPoolStrategy(size=1)).take_all()}
    assert inline == {os.getpid()}  # one worker: runs in this process
    pooled = {r["pid"] for r in ds.map_batches(_pid, compute=ember.data.TaskPoolStrategy(size=2)).take_all()}
    assert os.getpid() not in pooled and 1 <= len(pooled) <= 2
    assert ember.data.TaskPoolStrategy() == "tasks"


class _Identity:
    def __call__(self, batch):
        return batch


def test_compute_strategies_refused_where_ray_refuses_them():
    ds = ember.data.range(4)
    with pytest.raises(ConfigError, match="needs a callable class"):
        ds.map_batches(lambda b: b, compute=ember.data.ActorPoolStrategy(size=2))
    with pytest.raises(ConfigError, match="actor pool"):
        ds.map_batches(_Identity, compute=ember.data.TaskPoolStrategy(size=2))
    with pytest.raises(ConfigError, match="TaskPoolStrategy"):
        ember.data.TaskPoolStrategy(size=0)


# ---------------------------------------------------------------------------- summary


def _summary_rows() -> list[dict]:
    import datetime

    rng = np.random.default_rng(0)
    rows = []
    for i in range(50):
        rows.append(
            {
                "n": None if i % 7 == 0 else int(rng.integers(-3, 4)),
                "f": float("nan") if i % 11 == 0 else float(rng.normal()),
                "s": None if i % 9 == 0 else ["cat", "dog", "cat", "eel", "cat", "dog"][i % 6],
                "t": datetime.date(2024, 1, 1) + datetime.timedelta(days=i * 3),
                "b": i % 4 == 0,
            }
        )
    return rows


def test_summary_statistics_match_numpy_on_the_same_values():
    rows = _summary_rows()
    summary = ember.data.from_items(rows, override_num_blocks=4).summary()
    stats = {s: dict(summary.get_column_stats(s).itertuples(index=False)) for s in ("n", "s", "t", "b")}
    ints = np.array([r["n"] for r in rows if r["n"] is not None], dtype=float)
    n = stats["n"]
    assert n["count"] == 50 and n["min"] == ints.min() and n["max"] == ints.max()
    assert n["mean"] == pytest.approx(ints.mean()) and n["std"] == pytest.approx(ints.std())
    assert n["approx_quantile[0]"] == pytest.approx(np.median(ints))
    assert n["missing_pct"] == pytest.approx(100 * sum(r["n"] is None for r in rows) / 50)
    assert n["zero_pct"] == pytest.approx(100 * (ints == 0).sum() / len(ints))
    words = [r["s"] for r in rows if r["s"] is not None]
    assert [stats["s"][f"approx_topk[{i}]"] for i in range(3)] == [
        {"s": w, "count": words.count(w)} for w in ("cat", "dog", "eel")
    ]
    assert "mean" not in stats["s"] and stats["s"]["missing_pct"] == pytest.approx(100 * 6 / 50)
    assert (stats["t"]["min"], stats["t"]["max"]) == (rows[0]["t"], rows[-1]["t"]) and "mean" not in stats[
        "t"
    ]
    assert stats["b"]["mean"] == pytest.approx(np.mean([r["b"] for r in rows]))
    assert stats["b"]["approx_quantile[0]"] == 0.0
    frame = summary.to_pandas()
    assert list(frame.columns) == ["statistic", "b", "f", "n", "s", "t"]
    assert list(frame["statistic"]) == sorted(frame["statistic"])
    nan_share = sum(1 for r in rows if r["f"] != r["f"]) / 50
    assert frame.set_index("statistic")["f"]["missing_pct"] == pytest.approx(
        100 * nan_share
    )  # NaN is missing


def test_summary_of_chosen_columns_and_its_refusals():
    ds = ember.data.from_items(_summary_rows())
    summary = ds.summary(columns=["s"])
    assert summary.columns == ["s"] and summary.dataset_schema.names == ["n", "f", "s", "t", "b"]
    with pytest.raises(ConfigError, match="no column 'x'"):
        ds.summary(columns=["x"])
    with pytest.raises(ConfigError, match="aggregate"):
        ds.summary(override_dtype_agg_mapping={})
    with pytest.raises(ConfigError, match="no such column"):
        summary.get_column_stats("n")


# ---------------------------------------------------------------------------- against real Ray Data


@pytest.fixture(scope="module")
def ray_data(local_ray):
    """ray.data in input order (Ray's order across blocks is undefined otherwise; ember's is the input's)."""
    options = local_ray.data.DataContext.get_current().execution_options
    saved, options.preserve_order = options.preserve_order, True
    yield local_ray.data
    options.preserve_order = saved


def _rows(ds) -> list[dict]:
    return [{k: (v.item() if hasattr(v, "item") else v) for k, v in r.items()} for r in ds.take_all()]


@pytest.mark.slow  # starts Ray (~20 s)
def test_the_same_calls_on_ray_data_give_the_same_rows(ray_data):
    items = [{"id": i, "label": i % 3 if i % 5 else 3} for i in range(60)]
    ours, theirs = ember.data.from_items(items), ray_data.from_items(items)

    hashed = [
        _rows(side) for side in ours.streaming_train_test_split(0.3, split_type="hash", hash_column="id")
    ]
    ray_hashed = [
        _rows(side) for side in theirs.streaming_train_test_split(0.3, split_type="hash", hash_column="id")
    ]
    assert hashed == ray_hashed  # Ray's blake2b rule: row for row

    key = lambda r: r["id"]  # noqa: E731  (Ray's groupby does not promise an order)
    stratified = [sorted(_rows(side), key=key) for side in ours.train_test_split(0.25, stratify="label")]
    ray_stratified = [
        sorted(_rows(side), key=key) for side in theirs.train_test_split(0.25, stratify="label")
    ]
    assert stratified == ray_stratified

    import ray.data.expressions as rx

    exprs = {"id": col("id") * 2, "twice": col("id") + col("label")}
    ray_exprs = {"id": rx.col("id") * 2, "twice": rx.col("id") + rx.col("label")}
    assert _rows(ours.with_columns(exprs)) == _rows(theirs.with_columns(ray_exprs))

    first, second = ours.streaming_split(2, equal=True)
    assert _rows(first.materialize()) + _rows(second.materialize()) == _rows(theirs.iterator().materialize())
    assert [b["id"].tolist() for b in ours.iterator().iter_batches(batch_size=16)] == [
        b["id"].tolist() for b in theirs.iterator().iter_batches(batch_size=16)
    ]
