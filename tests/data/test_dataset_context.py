"""Dataset.context: Ray's per-lineage context (a read copies the process-wide Ray settings; derived
datasets share it; union/mix/split copy it), with ember's own settings read from the process-wide
context when the dataset runs."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ember.data
from ember.data import DataContext


@pytest.fixture
def files(tmp_path):
    for i in range(2):
        pq.write_table(pa.table({"x": list(range(10 * i, 10 * i + 10))}), tmp_path / f"{i}.parquet")
    return str(tmp_path)


def _progress_lines(capfd, ds):
    ds.take_all()
    return [line for line in capfd.readouterr().err.splitlines() if line.startswith("ember.data:")]


def test_a_setting_on_a_dataset_applies_to_its_lineage_and_no_other(files, capfd):
    ds = ember.data.read_parquet(files)
    derived = ds.map(lambda r: {"x": r["x"] + 1})
    derived.context.verbose_progress = True  # set on the child: Ray shares one context along the lineage
    assert _progress_lines(capfd, ds) and _progress_lines(capfd, derived)
    assert not _progress_lines(capfd, ember.data.read_parquet(files))  # another read: its own context
    assert DataContext.get_current().verbose_progress is False


def test_union_mix_and_split_start_from_a_copy(files, capfd):
    ds = ember.data.read_parquet(files)
    ds.context.verbose_progress = True
    combined_ones = (ds.union(ds), ds.mix(ds), *ds.split(2), *ds.split_at_indices([5]))  # split runs ds
    capfd.readouterr()
    for combined in combined_ones:
        assert combined.context.verbose_progress is True  # copied from the first input
        combined.context.verbose_progress = False
        assert not _progress_lines(capfd, combined)
    assert ds.context.verbose_progress is True and _progress_lines(capfd, ds)


def test_a_read_freezes_the_process_wide_settings_as_they_are_then(files, capfd):
    ds = ember.data.read_parquet(files)
    derived = ds.map(lambda r: r)
    context = DataContext.get_current()
    context.verbose_progress = True
    try:
        assert ds.context.verbose_progress is False and not _progress_lines(
            capfd, ds
        )  # made before: unchanged
        assert derived.context.verbose_progress is False and not _progress_lines(capfd, derived)
        later = ember.data.read_parquet(files)  # made after: takes the new value
        assert later.context.verbose_progress is True and _progress_lines(capfd, later)
        assert _progress_lines(capfd, ds.union(later)) == []  # a union copies its first input's
    finally:
        context.verbose_progress = False


def test_embers_own_settings_are_read_when_the_dataset_runs(files):
    ds = ember.data.read_parquet(files)
    context = DataContext.get_current()
    before, context.execution, context.num_workers = (context.execution, context.num_workers), "inline", 1
    try:
        assert ds.context.resolved().execution == "inline" and ds.context.num_workers == 1
        ds.context.execution = "processes"  # set on the dataset: wins
        assert ds.context.resolved().execution == "processes"
    finally:
        context.execution, context.num_workers = before


def test_freezing_matches_ray(local_ray):
    """Ray copies the current context into a dataset at the read: a later change to the current one
    reaches only datasets read afterwards; derived datasets share the copy, union copies it."""
    for data in (local_ray.data, ember.data):
        current = data.DataContext.get_current()
        saved = current.execution_options.preserve_order
        try:
            current.execution_options.preserve_order = False
            ds = data.range(3)
            current.execution_options.preserve_order = True
            seen = [
                d.context.execution_options.preserve_order
                for d in (ds, ds.map(lambda r: r), ds.union(ds), data.range(3))
            ]
            assert seen == [False, False, False, True], data.__name__
            ds.context.execution_options.preserve_order = True  # on the dataset: its lineage sees it
            assert ds.map(lambda r: r).context.execution_options.preserve_order is True, data.__name__
        finally:
            current.execution_options.preserve_order = saved


def test_a_dataset_memory_budget_makes_only_it_spill(files):
    ds = ember.data.read_parquet(files).random_shuffle(seed=1)
    ds.context.memory_budget_bytes = 1  # every block past the budget: the shuffle runs out of core
    same = ember.data.read_parquet(files).random_shuffle(seed=1)
    assert ds.take_all() == same.take_all()
    assert "spilled" in ds.stats() and "spilled" not in same.stats()


def test_materialize_copy_and_shards_keep_the_context(files):
    ds = ember.data.read_parquet(files)
    ds.context.num_workers = 1
    materialized = ds.materialize()
    assert materialized.context is ds.context
    assert ember.data.Dataset.copy(ds).context is ds.context
    deep = ember.data.Dataset.copy(ds, _deep_copy=True).context
    assert deep is not ds.context and deep.num_workers == 1
    batches = materialized.iter_batches(batch_size=5).for_rank(2, 1)  # a materialized dataset shards too
    assert [b["x"].tolist() for b in batches] == [list(range(10, 15)), list(range(15, 20))]


def test_an_unknown_setting_is_refused():
    with pytest.raises(ember.errors.ConfigError, match="no setting 'target_max_block_size'"):
        ember.data.range(1).context.target_max_block_size = 1


def test_the_identities_match_rays(local_ray):
    ray = local_ray
    for data in (ray.data, ember.data):
        ds = data.range(3)
        assert ds.context is not data.DataContext.get_current()
        assert ds.map(lambda r: r).context is ds.context
        assert ds.union(ds).context is not ds.context and ds.mix(ds).context is not ds.context
        assert ds.zip(ds).context is ds.context and ds.join(ds, "inner", 1, on=("id",)).context is ds.context
        assert ds.groupby("id").count().context is ds.context
        assert all(part.context is not ds.context for part in ds.split(2) + ds.split_at_indices([1]))
        assert data.range(3).context is not ds.context
