"""Runs of whole batches are converted once and handed out as slices (ember/data/transforms.batch_runs,
iterate.TorchBatches / NumpyBatches): the batches must be exactly those of converting every batch on its
own, checked here against pyarrow's own conversion of the same rows."""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

import ember.data
from ember.data.ray_errors import DataRuntimeError, DataTypeError
from ember.data.transforms import batch_runs, rebatch

# blocks of uneven sizes: batches that span blocks, blocks smaller than a batch, runs cut at RUN_ROWS
BLOCK_ROWS = (7, 300, 3, 1, 9000, 250)


def _table(rows: int, start: int) -> pa.Table:
    rng = np.random.default_rng(start)
    images = rng.integers(0, 256, size=(rows, 4, 3), dtype=np.uint8)
    return pa.table(
        {
            "image": pa.FixedShapeTensorArray.from_numpy_ndarray(images),
            "label": np.arange(start, start + rows, dtype=np.int64),
            "weight": rng.random(rows).astype(np.float32),
        }
    )


def _tables() -> list[pa.Table]:
    starts = itertools.accumulate(BLOCK_ROWS, initial=0)
    return [_table(rows, start) for rows, start in zip(BLOCK_ROWS, starts, strict=False)]


def _pyarrow_batches(
    table: pa.Table, batch_size: int, drop_last: bool = False
) -> list[dict[str, np.ndarray]]:
    """The reference: pyarrow's own numpy conversion of each batch's rows."""
    out = []
    for start in range(0, table.num_rows, batch_size):
        piece = table.slice(start, batch_size).combine_chunks()
        if drop_last and piece.num_rows < batch_size:
            break
        out.append(
            {
                "image": piece.column("image").chunk(0).to_numpy_ndarray(),
                "label": piece.column("label").to_numpy(),
                "weight": piece.column("weight").to_numpy(),
            }
        )
    return out


def _assert_same(
    batches: list[dict], expected: list[dict[str, np.ndarray]], dtypes: dict | None = None
) -> None:
    assert len(batches) == len(expected)
    for got, want in zip(batches, expected, strict=True):
        assert list(got) == list(want)
        for name, values in want.items():
            reference = torch.from_numpy(values.copy())
            if dtypes and name in dtypes:
                reference = reference.to(dtypes[name])
            assert got[name].dtype == reference.dtype and torch.equal(got[name], reference), name


@pytest.mark.parametrize("span_blocks", [False, True])
@pytest.mark.parametrize("batch_size", [1, 2, 256, 1000, 9000, 20000])
def test_runs_cut_exactly_the_batches_rebatch_cuts(batch_size, span_blocks):
    tables = _tables()
    runs = list(batch_runs(iter(tables), batch_size, run_rows=2048, span_blocks=span_blocks))
    sliced = [run.slice(start, batch_size) for run in runs for start in range(0, run.num_rows, batch_size)]
    rebatched = list(rebatch(iter(tables), batch_size))
    assert [b.num_rows for b in sliced] == [b.num_rows for b in rebatched]
    assert all(a.equals(b) for a, b in zip(sliced, rebatched, strict=True))
    # a run holds whole batches only (or is the last, short one), and no more than run_rows unless one batch
    # is more
    assert all(run.num_rows % batch_size == 0 for run in runs[:-1])
    assert all(run.num_rows <= max(2048, batch_size) for run in runs)


def test_runs_span_only_blocks_of_one_schema():
    """int32 then int64 blocks: concatenating them changes the type, so the batch across them comes alone."""
    tables = [
        pa.table({"x": pa.array(range(5), pa.int32())}),
        pa.table({"x": pa.array(range(5, 12), pa.int64())}),
    ]
    runs = list(batch_runs(iter(tables), 2, span_blocks=True))
    assert [run.num_rows for run in runs] == [4, 2, 6]
    sliced = [run.slice(start, 2) for run in runs for start in range(0, run.num_rows, 2)]
    assert all(a.equals(b) for a, b in zip(sliced, rebatch(iter(tables), 2), strict=True))
    batches = list(ember.data.from_arrow(tables).iter_torch_batches(batch_size=2))
    assert [b["x"].dtype for b in batches] == [
        torch.int32,
        torch.int32,
        torch.int64,
        torch.int64,
        torch.int64,
        torch.int64,
    ]
    assert torch.equal(torch.cat([b["x"].long() for b in batches]), torch.arange(12))


@pytest.mark.parametrize("batch_size", [1, 64, 256, 5000])
def test_torch_batches_equal_pyarrows_conversion_of_each_batch(tmp_path, batch_size):
    path = tmp_path / "data.parquet"
    table = pa.concat_tables(_tables())
    pq.write_table(table, path, row_group_size=2900)  # several row groups: several blocks
    batches = list(ember.data.read_parquet(str(path)).iter_torch_batches(batch_size=batch_size))
    _assert_same(batches, _pyarrow_batches(table, batch_size))
    assert all(t.is_contiguous() for batch in batches for t in batch.values())


def test_dtypes_drop_last_and_uneven_blocks():
    tables = _tables()
    dtypes = {"image": torch.float32, "label": torch.int32}
    ds = ember.data.from_arrow(tables)
    batches = list(ds.iter_torch_batches(batch_size=256, dtypes=dtypes, drop_last=True, prefetch_batches=0))
    _assert_same(batches, _pyarrow_batches(pa.concat_tables(tables), 256, drop_last=True), dtypes)


def test_kept_batches_are_never_overwritten_and_in_place_edits_stay_in_their_batch():
    ds = ember.data.from_arrow(_tables())
    batches = list(ds.iter_torch_batches(batch_size=64))  # all kept while the pass goes on
    for batch in batches:
        batch["image"].add_(1)  # a consumer may modify its batch
        batch["label"].zero_()
    expected = _pyarrow_batches(pa.concat_tables(_tables()), 64)
    for got, want in zip(batches, expected, strict=True):
        assert torch.equal(got["image"], torch.from_numpy(want["image"] + np.uint8(1)))
        assert not got["label"].any()
    again = list(ds.iter_torch_batches(batch_size=64))  # the next epoch does not see those edits
    _assert_same(again, expected)


def test_resume_mid_run_gives_the_rest_of_the_epoch():
    ds = ember.data.from_arrow(_tables())
    whole = list(ds.iter_torch_batches(batch_size=100, prefetch_batches=0))
    for done in (1, 5, 37, len(whole) - 1):
        it = ds.iter_torch_batches(batch_size=100, prefetch_batches=2)
        batches = iter(it)
        for _ in range(done):
            next(batches)
        state = it.state_dict()
        batches.close()
        resumed = ds.iter_torch_batches(batch_size=100)
        resumed.load_state_dict(state)
        rest = list(resumed)
        assert len(rest) == len(whole) - done
        for got, want in zip(rest, whole[done:], strict=True):
            assert all(torch.equal(got[k], want[k]) for k in want)


def test_nulls_in_a_run_convert_as_each_batch_would():
    """A batch without nulls keeps int64; one with a null becomes float64 with NaN (pyarrow's rule)."""
    table = pa.table({"x": pa.array([1, 2, None, 4, 5, 6, 7, 8], pa.int64())})
    batches = list(ember.data.from_arrow(table).iter_batches(batch_size=2))
    expected = [table.slice(i, 2).column("x").to_numpy(zero_copy_only=False) for i in range(0, 8, 2)]
    assert (
        [b["x"].dtype for b in batches]
        == [e.dtype for e in expected]
        == [np.int64, np.float64, np.int64, np.int64]
    )
    assert all(np.array_equal(b["x"], e, equal_nan=True) for b, e in zip(batches, expected, strict=True))


def test_numpy_batches_are_read_only_views_equal_to_pyarrows():
    tables = _tables()
    batches = list(ember.data.from_arrow(tables).iter_batches(batch_size=128))
    expected = _pyarrow_batches(pa.concat_tables(tables), 128)
    assert len(batches) == len(expected)
    for got, want in zip(batches, expected, strict=True):
        for name in want:
            assert got[name].dtype == want[name].dtype and np.array_equal(got[name], want[name])
    # inside a block a batch is a view of Arrow's memory, which no one may write (as before)
    assert not batches[5]["label"].flags.writeable


def test_string_and_ragged_columns_still_refused_on_the_first_batch():
    strings = ember.data.from_arrow(pa.table({"s": ["a"] * 600, "x": list(range(600))}))
    with pytest.raises(DataTypeError, match="'s'"):
        next(iter(strings.iter_torch_batches(batch_size=100)))
    ragged = ember.data.from_items([{"v": np.zeros(i % 3 + 1)} for i in range(600)])
    with pytest.raises(DataRuntimeError, match="'v'"):
        next(iter(ragged.iter_torch_batches(batch_size=100)))


def test_a_run_holds_at_most_run_bytes_unless_one_batch_is_more():
    from ember.data.transforms import RUN_BYTES

    wide = pa.table({"x": pa.FixedShapeTensorArray.from_numpy_ndarray(np.zeros((1000, 64, 1024), np.uint8))})
    runs = list(batch_runs(iter([wide]), 10))
    assert sum(run.num_rows for run in runs) == 1000
    assert all(run.nbytes <= RUN_BYTES and run.num_rows % 10 == 0 for run in runs)
    assert [run.num_rows for run in batch_runs(iter([wide]), 300)] == [
        300,
        300,
        300,
        100,
    ]  # one batch: 19 MiB


@pytest.mark.parametrize("prefetch_batches", [0, 1, 3])
def test_prefetch_gives_the_same_batches_and_stops_its_thread(prefetch_batches):
    import threading

    ds = ember.data.from_arrow(_tables())
    expected = _pyarrow_batches(pa.concat_tables(_tables()), 256)
    _assert_same(list(ds.iter_torch_batches(batch_size=256, prefetch_batches=prefetch_batches)), expected)
    batches = iter(ds.iter_torch_batches(batch_size=256, prefetch_batches=prefetch_batches))
    next(batches)
    batches.close()  # stopping early
    assert not any(t.name == "ember-data-prefetch" for t in threading.enumerate())


@pytest.mark.parametrize("prefetch_batches", [0, 2])
def test_a_batch_that_fails_to_convert_comes_after_the_batches_before_it(prefetch_batches):
    """Rows that convert batch by batch (ragged: some batches' rows share one shape, one's do not)."""
    rows = [{"v": np.zeros(3 if i == 450 else 2)} for i in range(600)]
    delivered = []
    with pytest.raises(DataRuntimeError, match="'v'"):
        for batch in ember.data.from_items(rows).iter_torch_batches(
            batch_size=100, prefetch_batches=prefetch_batches
        ):
            delivered.append(batch["v"].shape)
    assert delivered == [(100, 2)] * 4


def test_batches_for_another_device_are_moved_batch_by_batch_with_their_shapes():
    ds = ember.data.from_arrow(_tables())
    expected = _pyarrow_batches(pa.concat_tables(_tables()), 256)
    batches = list(ds.iter_torch_batches(batch_size=256, device="meta", dtypes={"weight": torch.float64}))
    assert len(batches) == len(expected)
    for got, want in zip(batches, expected, strict=True):
        assert {k: (v.device.type, tuple(v.shape)) for k, v in got.items()} == {
            k: ("meta", v.shape) for k, v in want.items()
        }
        assert got["weight"].dtype == torch.float64 and got["image"].dtype == torch.uint8


def _per_batch_local_shuffle(tables, batch_size, buffer_size, rng):
    """The local shuffle batch by batch, as ember did before runs: the reference for the runs."""
    buffer = None
    for table in tables:
        buffer = table if buffer is None else pa.concat_tables([buffer, table])
        if buffer.num_rows >= buffer_size + batch_size:
            buffer = buffer.take(pa.array(rng.permutation(buffer.num_rows)))
            while buffer.num_rows >= buffer_size + batch_size:
                yield buffer.slice(0, batch_size)
                buffer = buffer.slice(batch_size)
    buffer = buffer.take(pa.array(rng.permutation(buffer.num_rows)))
    for start in range(0, buffer.num_rows, batch_size):
        yield buffer.slice(start, batch_size)


@pytest.mark.parametrize(("batch_size", "buffer_size"), [(64, 0), (256, 1000), (100, 20000)])
def test_local_shuffle_in_runs_gives_the_batch_by_batch_shuffle(batch_size, buffer_size):
    from ember.data.iterate import epoch_rng

    tables = _tables()
    ds = ember.data.from_arrow(tables)
    it = ds.iter_torch_batches(
        batch_size=batch_size, local_shuffle_buffer_size=buffer_size, local_shuffle_seed=7
    )
    for epoch in (0, 1):
        reference = _per_batch_local_shuffle(tables, batch_size, buffer_size, epoch_rng(7, epoch))
        expected = [_pyarrow_batches(batch, batch_size)[0] for batch in reference]
        _assert_same(list(it), expected)
    # resumed in the middle of epoch 1: the rest of the same shuffled batches
    whole = list(it)
    again = ds.iter_torch_batches(
        batch_size=batch_size, local_shuffle_buffer_size=buffer_size, local_shuffle_seed=7
    )
    again.load_state_dict({"version": 1, "epoch": 2, "batches": 5, "shuffle_seed": 7})
    rest = list(again)
    assert len(rest) == len(whole) - 5
    assert all(torch.equal(a[k], b[k]) for a, b in zip(rest, whole[5:], strict=True) for k in b)
