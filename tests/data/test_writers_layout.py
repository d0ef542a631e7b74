"""Writers' layout options (Ray 2.60 names): rows per file, partition_cols, write_images, JSON/CSV/numpy
round trips."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest
from PIL import Image

import ember.data
from ember.errors import ConfigError, DataError


def _rows_per_file(folder, ext):
    return [
        pq.ParquetFile(p).metadata.num_rows if ext == "parquet" else None
        for p in sorted(folder.glob(f"*.{ext}"))
    ]


def test_min_and_max_rows_per_file_set_the_rows_in_each_file(tmp_path):
    ds = ember.data.range(10, override_num_blocks=5)  # blocks of 2 rows
    ds.write_parquet(tmp_path / "min", min_rows_per_file=4)
    assert _rows_per_file(tmp_path / "min", "parquet") == [4, 4, 2]
    ember.data.range(10, override_num_blocks=1).write_parquet(tmp_path / "max", max_rows_per_file=3)
    assert _rows_per_file(tmp_path / "max", "parquet") == [3, 3, 3, 1]
    ds.write_parquet(tmp_path / "num", num_rows_per_file=5)  # Ray's older name for min_rows_per_file
    assert _rows_per_file(tmp_path / "num", "parquet") == [5, 5]
    assert sorted(r["id"] for r in ember.data.read_parquet(tmp_path / "min").take_all()) == list(range(10))
    ds.write_json(tmp_path / "json", min_rows_per_file=10)
    (only,) = (tmp_path / "json").glob("part-*.json")
    assert [json.loads(line)["id"] for line in only.read_text().splitlines()] == list(range(10))


def test_rows_per_file_arguments_are_checked_before_any_work(tmp_path):
    with pytest.raises(ConfigError, match="min_rows_per_file=0\\); use a positive row count"):
        ember.data.range(3).write_csv(tmp_path / "a", min_rows_per_file=0)
    with pytest.raises(ConfigError, match="the minimum must not exceed the maximum"):
        ember.data.range(3).write_parquet(tmp_path / "a", min_rows_per_file=5, max_rows_per_file=2)
    assert not (tmp_path / "a").exists()


def test_partition_cols_write_hive_folders_that_read_back_as_columns(tmp_path):
    rows = [{"year": 2023 + i % 2, "city": ["a b", "c"][i % 3 == 0], "v": i} for i in range(12)]
    files = ember.data.from_items(rows).write_parquet(tmp_path / "out", partition_cols=["year", "city"])
    folders = sorted({f.rsplit("/", 2)[-3].rsplit("/", 1)[-1] + "/" + f.rsplit("/", 2)[-2] for f in files})
    assert folders == ["year=2023/city=a%20b", "year=2023/city=c", "year=2024/city=a%20b", "year=2024/city=c"]
    one = pq.read_table(next((tmp_path / "out" / "year=2023" / "city=c").glob("*.parquet")))
    assert one.column_names == ["v"]  # the partition columns live in the folder names only
    back = ember.data.read_parquet(tmp_path / "out").take_all()
    assert sorted((r["v"], r["year"], r["city"]) for r in back) == sorted(
        (r["v"], str(r["year"]), r["city"]) for r in rows
    )
    with pytest.raises(DataError, match="partition_cols=..., mode='overwrite'\\) is not supported"):
        ember.data.from_items(rows).write_parquet(tmp_path / "out", partition_cols=["year"], mode="overwrite")
    with pytest.raises(DataError, match="partition_cols names 'nope', which is not a column"):
        ember.data.from_items(rows).write_parquet(tmp_path / "other", partition_cols=["nope"])
    assert not list((tmp_path / "other").rglob("*.parquet"))


def test_write_images_writes_one_decodable_file_per_row(tmp_path):
    images = [np.random.default_rng(i).integers(0, 255, (6, 5, 3), dtype=np.uint8) for i in range(3)]
    ds = ember.data.from_items([{"image": im, "label": i} for i, im in enumerate(images)])
    files = ds.write_images(tmp_path / "png", column="image")
    assert [f.rsplit("/", 1)[1] for f in files] == ["part-00000.png", "part-00001.png", "part-00002.png"]
    for path, image in zip(files, images, strict=True):
        assert np.array_equal(np.asarray(Image.open(path)), image)  # PNG is lossless: bitwise equal
    jpgs = ds.write_images(tmp_path / "jpg", "image", file_format="jpeg")
    assert Image.open(jpgs[0]).format == "JPEG"
    assert ember.data.read_images(tmp_path / "png").count() == 3
    with pytest.raises(DataError, match="write_images: no column 'img'"):
        ds.write_images(tmp_path / "bad", "img")


def test_write_csv_and_numpy_round_trip_through_the_readers(tmp_path):
    ds = ember.data.from_items([{"a": i, "b": f"s{i}"} for i in range(7)])
    ds.write_csv(tmp_path / "csv", min_rows_per_file=3)
    assert len(list((tmp_path / "csv").glob("*.csv"))) == 3
    assert ember.data.read_csv(tmp_path / "csv").take_all() == ds.take_all()
    arrays = ember.data.range_tensor(6, shape=(2, 2))
    arrays.write_numpy(tmp_path / "npy", column="data", num_rows_per_file=4)
    back = ember.data.read_numpy(tmp_path / "npy").take_all()
    assert [r["data"].tolist() for r in back] == [[[i, i], [i, i]] for i in range(6)]


def test_writers_take_a_pyarrow_filesystem_and_keep_the_manifest_on_it(tmp_path):
    import pyarrow.fs as pafs

    fs = pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem())
    ember.data.range(6).write_parquet("out", filesystem=fs, min_rows_per_file=3)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "_ember_write.json",
        "part-00000.parquet",
        "part-00001.parquet",
    ]
    assert ember.data.read_parquet("out", filesystem=fs).count() == 6
    ember.data.range(2).write_json("out-json", filesystem=fs)
    assert ember.data.read_json(str(tmp_path / "out-json")).take_all() == [{"id": 0}, {"id": 1}]
    with pytest.raises(ConfigError, match="pass a pyarrow.fs.FileSystem"):
        ember.data.range(2).write_parquet("x", filesystem="local")
