"""Opening a parquet file never runs code from it: pickled Python-object columns need allow_pickle=True."""

from __future__ import annotations

import os
import pickle
from fractions import Fraction

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ember.data
from ember.data.tensor_types import PythonObjectType
from ember.errors import DataError


class _Payload:
    """Unpickling it creates the marker file: proof that code from the file ran."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def crafted_file(tmp_path) -> tuple[str, str]:
    marker = str(tmp_path / "PWNED")
    storage = pa.array([pickle.dumps(_Payload(marker))] * 3, type=pa.large_binary())
    table = pa.table({"id": [0, 1, 2], "obj": pa.ExtensionArray.from_storage(PythonObjectType(), storage)})
    path = str(tmp_path / "crafted.parquet")
    pq.write_table(table, path)
    return path, marker


REFUSAL = (
    r"^read_parquet: column 'obj' of .*crafted\.parquet holds pickled Python objects, and unpickling a file "
    r"can run code; pass allow_pickle=True only if you trust the file, or leave the column out with columns=$"
)


@pytest.mark.parametrize(
    "consume",
    [
        lambda ds: ds.take_all(),
        lambda ds: ds.take(1),
        lambda ds: list(ds.iter_batches()),
        lambda ds: list(ds.iter_torch_batches(collate_fn=lambda b: b)),
        lambda ds: ds.to_pandas(),
        lambda ds: ds.map(lambda r: r).take_all(),
        lambda ds: ds.materialize(),
    ],
)
def test_reading_a_pickled_column_is_refused_and_runs_nothing(tmp_path, consume):
    path, marker = crafted_file(tmp_path)
    ds = ember.data.read_parquet(path)
    with pytest.raises(DataError, match=REFUSAL[1:-1]):
        consume(ds)
    assert not os.path.exists(marker)


def test_count_and_schema_stay_available_and_run_nothing(tmp_path):
    path, marker = crafted_file(tmp_path)
    ds = ember.data.read_parquet(path)
    assert ds.count() == 3
    assert ds.columns() == ["id", "obj"]
    assert "<class 'object'>" in str(ds.schema())
    assert ember.data.read_parquet(path, columns=["id"]).take_all() == [{"id": 0}, {"id": 1}, {"id": 2}]
    assert not os.path.exists(marker)


def test_the_opt_in_unpickles(tmp_path):
    path, marker = crafted_file(tmp_path)
    ember.data.read_parquet(path, allow_pickle=True).take(1)
    assert os.path.exists(marker)  # the opt-in does what it says


def test_reads_in_worker_processes_are_refused_too(tmp_path):
    path, marker = crafted_file(tmp_path)
    context = ember.data.DataContext.get_current()
    previous, context.execution = context.execution, "processes"
    try:
        with pytest.raises(DataError, match=REFUSAL[1:-1]):
            ember.data.read_parquet(path).map_batches(lambda b: b).take_all()
    finally:
        context.execution = previous
    assert not os.path.exists(marker)


def test_own_python_objects_round_trip_with_the_opt_in(tmp_path):
    ember.data.from_items([{"x": Fraction(1, 3)}, {"x": Fraction(2, 3)}]).write_parquet(tmp_path)
    with pytest.raises(DataError, match="column 'x' of .* holds pickled Python objects"):
        ember.data.read_parquet(tmp_path).take_all()
    assert ember.data.read_parquet(tmp_path, allow_pickle=True).take_all() == [
        {"x": Fraction(1, 3)},
        {"x": Fraction(2, 3)},
    ]


def test_a_table_read_with_pyarrow_itself_is_not_unpickled(tmp_path):
    """ember registers the type with pyarrow, so pq.read_table rebuilds the column; ember still refuses it."""
    path, marker = crafted_file(tmp_path)
    table = pq.read_table(path)
    with pytest.raises(
        DataError,
        match=r"^a column of pickled Python objects \(ember.python_object\) came from "
        r"outside ember, and unpickling it could run code; read the file with "
        r"ember.data.read_parquet\(path, allow_pickle=True\) if you trust it$",
    ):
        ember.data.from_arrow(table).take_all()
    with pytest.raises(DataError, match="came from outside ember"):
        ember.data.from_arrow(table).map_batches(lambda b: b, batch_size=1).take_all()
    assert not os.path.exists(marker)


def test_own_python_objects_still_travel_between_workers():
    context = ember.data.DataContext.get_current()
    previous, context.execution = context.execution, "processes"
    try:
        ds = ember.data.from_items([{"x": Fraction(i, 7)} for i in range(6)]).map_batches(
            lambda b: b, batch_size=2
        )
        assert [r["x"] for r in ds.take_all()] == [Fraction(i, 7) for i in range(6)]
    finally:
        context.execution = previous


def test_read_numpy_takes_rays_allow_pickle_and_refuses_objects_without_it(tmp_path):
    marker = str(tmp_path / "PWNED")
    array = np.empty(2, dtype=object)
    array[0], array[1] = _Payload(marker), _Payload(marker)
    np.save(tmp_path / "objects.npy", array, allow_pickle=True)
    with pytest.raises(
        DataError,
        match=r"read_numpy: .*objects\.npy holds pickled Python objects, and unpickling a "
        r"file can run code; pass allow_pickle=True only if you trust the file$",
    ):
        ember.data.read_numpy(tmp_path / "objects.npy").take_all()
    assert not os.path.exists(marker)
    np.save(
        tmp_path / "fractions.npy",
        np.array([Fraction(1, 3), Fraction(1, 2)], dtype=object),
        allow_pickle=True,
    )
    rows = ember.data.read_numpy(tmp_path / "fractions.npy", allow_pickle=True).take_all()
    assert [r["data"] for r in rows] == [Fraction(1, 3), Fraction(1, 2)]
