"""read_orc / Dataset.write_orc (Ray Data 2.60's ORC source and sink): round trips, the file options
shared with the parquet reader/writer, and files exchanged with real ray.data both ways."""

from __future__ import annotations

import datetime
import os

import numpy as np
import pyarrow as pa
import pyarrow.orc as orc
import pytest

import ember.data
from ember.data import Partitioning
from ember.errors import ConfigError, DataError

TABLE = pa.table(
    {
        "i": pa.array([1, None, 3, 4], pa.int64()),
        "f": pa.array([0.5, 1.5, None, -2.0], pa.float64()),
        "s": ["a", "bb", None, "dddd"],
        "b": [True, False, None, True],
        "t": pa.array([datetime.datetime(2024, 1, d) for d in (1, 2, 3, 4)], pa.timestamp("ns")),
        "l": pa.array([[1, 2], [], None, [3]], pa.list_(pa.int64())),
        "st": pa.array(
            [{"x": 1, "y": "p"}, {"x": 2, "y": "q"}, None, {"x": 4, "y": None}],
            pa.struct([("x", pa.int64()), ("y", pa.string())]),
        ),
    }
)


def test_round_trip_keeps_values_types_and_nulls(tmp_path):
    files = ember.data.from_arrow(TABLE).write_orc(str(tmp_path))
    assert [os.path.basename(f) for f in files] == ["part-00000.orc"]
    back = ember.data.read_orc(str(tmp_path)).to_arrow()
    assert back.schema == TABLE.schema
    assert back.equals(TABLE)


def test_each_block_is_a_file_and_rows_come_back_in_order(tmp_path):
    ds = ember.data.range(100).repartition(4)
    assert len(ds.write_orc(str(tmp_path))) == 4
    assert [r["id"] for r in ember.data.read_orc(str(tmp_path)).take_all()] == list(range(100))
    again = tmp_path / "min_rows"
    assert len(ember.data.range(10).write_orc(str(again), min_rows_per_file=4)) == 3


def test_every_stripe_is_one_block(tmp_path):
    path = str(tmp_path / "many.orc")
    values = np.arange(200_000, dtype=np.int64)
    orc.write_table(pa.table({"v": values}), path, stripe_size=64 * 1024)
    stripes = orc.ORCFile(path).nstripes
    assert stripes > 1
    ds = ember.data.read_orc(path)
    sizes = [len(b["v"]) for b in ds.iter_batches(batch_size=None)]
    assert len(sizes) == stripes and sum(sizes) == len(values)
    assert np.array_equal(np.concatenate([b["v"] for b in ds.iter_batches(batch_size=None)]), values)


def test_include_paths_partitioning_and_file_extensions(tmp_path):
    for year in (2023, 2024):
        folder = tmp_path / f"year={year}"
        folder.mkdir()
        orc.write_table(pa.table({"v": [year * 10, year * 10 + 1]}), str(folder / "a.orc"))
    (tmp_path / "notes.txt").write_text("not orc")
    plain = ember.data.read_orc(str(tmp_path))  # Ray's default: no partition columns for ORC
    assert plain.columns() == ["v"] and plain.count() == 4
    hive = ember.data.read_orc(str(tmp_path), partitioning=Partitioning("hive"), include_paths=True)
    rows = hive.take_all()
    assert {(r["year"], r["v"]) for r in rows} == {
        ("2023", 20230),
        ("2023", 20231),
        ("2024", 20240),
        ("2024", 20241),
    }
    assert all(r["path"].endswith(f"year={r['year']}/a.orc") for r in rows)
    with pytest.raises(DataError, match="not a readable ORC file"):  # file_extensions picks the .txt file
        ember.data.read_orc(str(tmp_path), file_extensions=["txt"]).take_all()
    with pytest.raises(DataError):
        ember.data.read_orc(str(tmp_path / "missing"))
    some_missing = [str(tmp_path / "year=2023" / "a.orc"), str(tmp_path / "missing")]
    assert ember.data.read_orc(some_missing, ignore_missing_paths=True).count() == 2


def test_save_modes_as_for_parquet(tmp_path):
    out = str(tmp_path / "out")
    ember.data.range(3).write_orc(out)
    ember.data.range(2).write_orc(out)  # append, Ray's default
    assert ember.data.read_orc(out).count() == 5
    ember.data.range(4).write_orc(out, mode="overwrite")
    assert ember.data.read_orc(out).count() == 4
    assert ember.data.range(9).write_orc(out, mode="ignore") == []
    with pytest.raises(DataError, match="mode='error'"):
        ember.data.range(9).write_orc(out, mode="error")


def test_writer_options_reach_pyarrow_and_the_options_function_wins(tmp_path):
    files = ember.data.range(5).write_orc(str(tmp_path / "z"), compression="zstd")
    assert orc.ORCFile(files[0]).compression == "ZSTD"
    files = ember.data.range(5).write_orc(
        str(tmp_path / "fn"), compression="zstd", arrow_orc_args_fn=lambda: {"compression": "snappy"}
    )
    assert orc.ORCFile(files[0]).compression == "SNAPPY"
    with pytest.raises(ConfigError, match="compression"):
        ember.data.range(5).write_orc(str(tmp_path / "bad"), compresion="zstd")


def test_tensor_columns_and_mismatched_files_are_refused_in_one_line(tmp_path):
    tensors = ember.data.from_numpy(np.zeros((3, 2, 2), np.float32))
    with pytest.raises(DataError, match="write_parquet"):
        tensors.write_orc(str(tmp_path / "t"))
    orc.write_table(pa.table({"a": [1]}), str(tmp_path / "x.orc"))
    orc.write_table(pa.table({"a": ["text"]}), str(tmp_path / "y.orc"))
    with pytest.raises(DataError, match="read_orc"):
        ember.data.read_orc(str(tmp_path)).take_all()
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "z.orc").write_bytes(b"not an orc file")
    with pytest.raises(DataError, match="not a readable ORC file"):
        ember.data.read_orc(str(tmp_path / "bad")).take_all()


ray = pytest.importorskip("ray")


def test_files_exchange_with_ray_both_ways(local_ray, tmp_path):
    ember.data.from_arrow(TABLE).write_orc(str(tmp_path / "ours"))
    read_by_ray = ray.data.read_orc(str(tmp_path / "ours")).to_arrow_refs()
    theirs = pa.concat_tables(ray.get(read_by_ray))
    assert theirs.select(TABLE.column_names).equals(TABLE)
    ray.data.from_arrow(TABLE).write_orc(str(tmp_path / "theirs"))
    assert ember.data.read_orc(str(tmp_path / "theirs")).to_arrow().equals(TABLE)
