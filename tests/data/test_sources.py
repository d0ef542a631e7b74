"""Sources and paths: every read_* / from_* and their one-line errors."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
from PIL import Image

import ember.data
from ember.errors import DataError


def test_parquet_splits_by_row_group_and_paths_forms(tmp_path):
    table = pa.table({"x": np.arange(100)})
    pq.write_table(table, tmp_path / "a.parquet", row_group_size=25)
    pq.write_table(table, tmp_path / "b.parquet", row_group_size=50)
    ds = ember.data.read_parquet(tmp_path)
    assert ds.count() == 200
    ds.take_all()
    assert "6 tasks" in ds.stats()
    assert ember.data.read_parquet(str(tmp_path / "*.parquet")).count() == 200
    assert ember.data.read_parquet([str(tmp_path / "a.parquet")]).count() == 100
    assert ember.data.read_parquet(f"local://{tmp_path}/b.parquet").count() == 100
    assert ember.data.read_parquet(tmp_path, columns=["x"]).columns() == ["x"]


def test_missing_file_and_column_errors(tmp_path):
    with pytest.raises(
        DataError, match=r"read_parquet: no such file or folder '.*nope.parquet'; check the path"
    ):
        ember.data.read_parquet(tmp_path / "nope.parquet")
    pq.write_table(pa.table({"x": [1]}), tmp_path / "a.parquet")
    with pytest.raises(DataError, match=r"no column 'y' in .*a.parquet; it has columns \['x'\]"):
        ember.data.read_parquet(tmp_path, columns=["y"]).count()
    with pytest.raises(DataError, match=r"no column 'y'; the dataset has columns \['x'\]"):
        ember.data.read_parquet(tmp_path).select_columns(["y"]).take_all()


def test_corrupt_files_name_the_file(tmp_path):
    (tmp_path / "bad.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(DataError, match=r"bad.parquet is not a readable parquet file"):
        ember.data.read_parquet(tmp_path / "bad.parquet").take_all()
    (tmp_path / "bad.csv").write_text("a,b\n1,2\n3,4,5\n")
    with pytest.raises(DataError, match=r"read_csv: .*bad.csv is not valid CSV"):
        ember.data.read_csv(tmp_path / "bad.csv").take_all()
    (tmp_path / "bad.png").write_bytes(b"\x89PNG garbage")
    with pytest.raises(DataError, match=r"read_images: .*bad.png is not a readable image"):
        ember.data.read_images(tmp_path / "bad.png").take_all()


def test_csv_json_text(tmp_path):
    (tmp_path / "a.csv").write_text("x,y\n1,a\n2,b\n")
    assert ember.data.read_csv(tmp_path / "a.csv").take_all() == [{"x": 1, "y": "a"}, {"x": 2, "y": "b"}]
    (tmp_path / "a.jsonl").write_text("\n".join(json.dumps({"k": i}) for i in range(3)) + "\n")
    assert ember.data.read_json(tmp_path / "a.jsonl").count() == 3
    (tmp_path / "t.txt").write_text("one\n\ntwo\n")
    assert ember.data.read_text(tmp_path / "t.txt").take_all() == [{"text": "one"}, {"text": "two"}]


def test_images_size_mode_paths(tmp_path):
    for i in range(3):
        Image.fromarray(np.full((10 + i, 8, 3), i, np.uint8)).save(tmp_path / f"{i}.png")
    ds = ember.data.read_images(tmp_path, size=(4, 6), mode="L", include_paths=True)
    rows = ds.take_all()
    assert [r["image"].shape for r in rows] == [(4, 6)] * 3
    assert [r["path"].rsplit("/", 1)[1] for r in rows] == ["0.png", "1.png", "2.png"]
    ragged = ember.data.read_images(tmp_path).take_all()
    assert [r["image"].shape for r in ragged] == [(10, 8, 3), (11, 8, 3), (12, 8, 3)]


def test_numpy_and_binary_files(tmp_path):
    np.save(tmp_path / "a.npy", np.arange(12).reshape(4, 3))
    ds = ember.data.read_numpy(tmp_path / "a.npy")
    assert ds.count() == 4 and ds.take(1)[0]["data"].tolist() == [0, 1, 2]
    (tmp_path / "b.bin").write_bytes(b"\x01\x02")
    assert (
        ember.data.read_binary_files(tmp_path / "b.bin", include_paths=True).take(1)[0]["bytes"]
        == b"\x01\x02"
    )


def test_in_memory_sources():
    assert ember.data.from_items([1, 2]).take_all() == [{"item": 1}, {"item": 2}]
    assert ember.data.from_numpy(np.zeros((3, 2))).take_batch(3)["data"].shape == (3, 2)
    assert ember.data.from_pandas(pd.DataFrame({"a": [1, 2]})).take_all() == [{"a": 1}, {"a": 2}]
    assert ember.data.from_arrow(pa.table({"a": [1]})).count() == 1
    tds = torch.utils.data.TensorDataset(torch.arange(3))
    assert ember.data.from_torch(tds).count() == 3
    assert ember.data.range_tensor(5, shape=(2, 2)).take_batch(5)["data"][4].tolist() == [[4, 4], [4, 4]]
    assert ember.data.range(10, override_num_blocks=5).materialize().num_blocks() == 5


def test_building_a_dataset_reads_nothing(tmp_path):
    pq.write_table(pa.table({"x": [1]}), tmp_path / "a.parquet")
    calls = []
    ds = ember.data.read_parquet(tmp_path).map(lambda r: calls.append(1) or r).filter(lambda r: True)
    (tmp_path / "a.parquet").write_bytes(b"corrupted after the plan was built")
    assert calls == []
    with pytest.raises(DataError, match="a.parquet"):
        ds.take_all()
