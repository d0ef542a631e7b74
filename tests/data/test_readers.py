"""Reader options (Ray Data 2.60 names): include_paths, partitions, filters, compression, JSON arrays."""

from __future__ import annotations

import bz2
import gzip

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from PIL import Image

import ember.data
from ember.data import Partitioning, PathPartitionFilter
from ember.data.expressions import col
from ember.errors import DataError


def _one_file_per_reader(folder):
    pq.write_table(pa.table({"x": [1, 2]}), folder / "a.parquet")
    (folder / "a.csv").write_text("x\n1\n2\n")
    (folder / "a.jsonl").write_text('{"x": 1}\n{"x": 2}\n')
    (folder / "a.txt").write_text("one\ntwo\n")
    Image.fromarray(np.zeros((2, 2, 3), np.uint8)).save(folder / "a.png")
    np.save(folder / "a.npy", np.arange(2))
    (folder / "a.bin").write_bytes(b"\x00")


@pytest.mark.parametrize(
    "reader, name, rows",
    [
        ("read_parquet", "a.parquet", 2),
        ("read_csv", "a.csv", 2),
        ("read_json", "a.jsonl", 2),
        ("read_text", "a.txt", 2),
        ("read_images", "a.png", 1),
        ("read_numpy", "a.npy", 2),
        ("read_binary_files", "a.bin", 1),
    ],
)
def test_include_paths_on_every_file_reader_gives_each_row_its_file(tmp_path, reader, name, rows):
    _one_file_per_reader(tmp_path)
    ds = getattr(ember.data, reader)(str(tmp_path / name), include_paths=True)
    got = ds.take_all()
    assert [r["path"] for r in got] == [str(tmp_path / name)] * rows
    assert "path" in ds.columns()
    assert "path" not in getattr(ember.data, reader)(str(tmp_path / name)).columns()


def test_read_json_reads_json_lines_and_a_json_array_alike(tmp_path):
    (tmp_path / "lines.jsonl").write_text('{"a": 1, "b": "x"}\n{"a": 2, "b": "y"}\n')
    (tmp_path / "array.json").write_text('[\n  {"a": 3, "b": "z"},\n  {"a": 4, "b": "w"}\n]\n')
    assert ember.data.read_json(tmp_path / "array.json").take_all() == [
        {"a": 3, "b": "z"},
        {"a": 4, "b": "w"},
    ]
    assert [r["a"] for r in ember.data.read_json(tmp_path).take_all()] == [3, 4, 1, 2]  # sorted file names
    (tmp_path / "bad.json").write_text("[1, 2]")
    with pytest.raises(DataError, match="bad.json holds a JSON array of non-objects"):
        ember.data.read_json(tmp_path / "bad.json").take_all()
    (tmp_path / "broken.json").write_text('{"a": 1}\n{"a": ')
    with pytest.raises(DataError, match="broken.json is not valid JSON"):
        ember.data.read_json(tmp_path / "broken.json").take_all()


def _hive(tmp_path):
    for year in (2023, 2024):
        for month in ("01", "02"):
            folder = tmp_path / f"year={year}" / f"month={month}"
            folder.mkdir(parents=True)
            pq.write_table(pa.table({"v": [year * 100 + int(month)]}), folder / "part.parquet")
    return tmp_path


def test_hive_folders_become_string_columns_and_schema_shows_them_without_reading(tmp_path):
    ds = ember.data.read_parquet(_hive(tmp_path))
    assert ds.schema().names == ["v", "year", "month"]
    rows = ds.take_all()
    assert rows[0] == {"v": 202301, "year": "2023", "month": "01"}
    assert [(r["year"], r["month"]) for r in rows] == [
        ("2023", "01"),
        ("2023", "02"),
        ("2024", "01"),
        ("2024", "02"),
    ]
    assert ember.data.read_parquet(tmp_path, partitioning=None).columns() == ["v"]
    assert ember.data.read_parquet(tmp_path, columns=["month", "v"]).take(1) == [{"month": "01", "v": 202301}]
    typed = ember.data.read_parquet(tmp_path, partitioning=Partitioning("hive", field_types={"year": int}))
    assert typed.take(1)[0]["year"] == 2023


def test_partition_filter_skips_folders_and_a_filter_can_use_partition_columns(tmp_path):
    _hive(tmp_path)
    only = PathPartitionFilter.of(lambda d: d["year"] == "2024")
    assert [r["v"] for r in ember.data.read_parquet(tmp_path, partition_filter=only).take_all()] == [
        202401,
        202402,
    ]
    assert ember.data.read_parquet(tmp_path, filter=pc.field("month") == "02").count() == 2
    with pytest.raises(DataError, match="partition_filter kept none of the files"):
        ember.data.read_parquet(tmp_path, partition_filter=PathPartitionFilter.of(lambda d: False))


def test_hive_partitions_on_csv_and_json(tmp_path):
    (tmp_path / "split=train").mkdir()
    (tmp_path / "split=test").mkdir()
    (tmp_path / "split=train" / "a.csv").write_text("x\n1\n")
    (tmp_path / "split=test" / "a.csv").write_text("x\n2\n")
    assert ember.data.read_csv(tmp_path).take_all() == [{"x": 2, "split": "test"}, {"x": 1, "split": "train"}]
    (tmp_path / "split=test" / "b.jsonl").write_text('{"y": 5}\n')
    assert ember.data.read_json(tmp_path).take_all() == [{"y": 5, "split": "test"}]


def test_read_parquet_filter_with_pyarrow_or_ember_expressions_keeps_exact_rows(tmp_path):
    ember.data.range(1000, override_num_blocks=4).write_parquet(tmp_path)
    by_pyarrow = ember.data.read_parquet(
        tmp_path,
        filter=pc.equal(pc.subtract(pc.field("id"), pc.multiply(pc.divide(pc.field("id"), 7), 7)), 0),
    )
    by_ember = ember.data.read_parquet(tmp_path, filter=(col("id") % 7) == 0)
    expected = [i for i in range(1000) if i % 7 == 0]
    assert [r["id"] for r in by_pyarrow.take_all()] == expected
    assert [r["id"] for r in by_ember.take_all()] == expected
    assert by_pyarrow.count() == len(expected)
    with pytest.raises(DataError, match="read_parquet: filter=.*cannot be applied"):
        ember.data.read_parquet(tmp_path, filter=pc.field("nope") > 1).take_all()


def test_compressed_csv_json_and_text_are_decompressed(tmp_path):
    with gzip.open(tmp_path / "a.csv.gz", "wt") as f:
        f.write("x,y\n1,a\n2,b\n")
    with bz2.open(tmp_path / "b.csv.bz2", "wt") as f:
        f.write("x,y\n3,c\n")
    assert ember.data.read_csv(tmp_path / "a.csv.gz").take_all() == [{"x": 1, "y": "a"}, {"x": 2, "y": "b"}]
    assert ember.data.read_csv(tmp_path).count() == 3
    with gzip.open(tmp_path / "c.jsonl.gz", "wt") as f:
        f.write('{"z": 1}\n')
    assert ember.data.read_json(tmp_path / "c.jsonl.gz").take_all() == [{"z": 1}]
    with gzip.open(tmp_path / "t.txt.gz", "wt") as f:
        f.write("hello\n")
    assert ember.data.read_text(tmp_path / "t.txt.gz").take_all() == [{"text": "hello"}]


def test_file_extensions_narrow_the_files_read(tmp_path):
    (tmp_path / "a.csv").write_text("x\n1\n")
    (tmp_path / "b.tsv").write_text("x\n2\n")
    (tmp_path / "c.data").write_text("x\n3\n")
    assert ember.data.read_csv(tmp_path, file_extensions=["data"]).take_all() == [{"x": 3}]
    assert ember.data.read_csv(tmp_path, file_extensions=["csv", "data"]).count() == 2
    assert ember.data.read_text(tmp_path, file_extensions=["tsv"]).take_all() == [
        {"text": "x"},
        {"text": "2"},
    ]
    with pytest.raises(DataError, match="no files ending in \\('.parquet',\\)"):
        ember.data.read_csv(tmp_path / "a.csv", file_extensions=["parquet"])


def test_from_items_override_num_blocks_cuts_blocks():
    ds = ember.data.from_items([{"i": i} for i in range(10)], override_num_blocks=5)
    assert [b.num_rows for b in ds.iter_internal_blocks()] == [2, 2, 2, 2, 2]
    assert [r["i"] for r in ds.take_all()] == list(range(10))


def test_ignore_missing_paths_skips_what_is_not_there(tmp_path):
    (tmp_path / "a.csv").write_text("x\n1\n")
    with pytest.raises(DataError, match="no such file or folder"):
        ember.data.read_csv([tmp_path / "a.csv", tmp_path / "gone.csv"])
    ds = ember.data.read_csv([tmp_path / "a.csv", tmp_path / "gone.csv"], ignore_missing_paths=True)
    assert ds.take_all() == [{"x": 1}]
