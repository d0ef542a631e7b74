"""read_parquet's Ray 2.60 arguments include_row_hash=, skip_paths=, tensor_column_schema=, compared
with Ray's read of the same files."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import ember.data
from ember.errors import ConfigError, DataError


@pytest.fixture
def folder(tmp_path):
    """Two files (one in a subfolder); a.parquet has 3 row groups and its own stale row_hash column."""
    pq.write_table(
        pa.table({"x": list(range(10)), "row_hash": [7] * 10}), tmp_path / "a.parquet", row_group_size=4
    )
    (tmp_path / "sub").mkdir()
    pq.write_table(pa.table({"x": list(range(10, 13)), "row_hash": [7] * 3}), tmp_path / "sub" / "b.parquet")
    return tmp_path


def _by_x(rows):
    return sorted(rows, key=lambda r: r["x"])


def test_row_hash_is_rays(local_ray, folder):
    ray = local_ray
    theirs = ray.data.read_parquet(str(folder), include_row_hash=True, include_paths=True).take_all()
    ours = ember.data.read_parquet(str(folder), include_row_hash=True, include_paths=True)
    assert _by_x(ours.take_all()) == _by_x(theirs) and len(theirs) == 13
    assert ours.schema().types[ours.schema().names.index("row_hash")] == pa.uint64()
    # the same on every read, and with columns= listing it
    kept = ember.data.read_parquet(str(folder), include_row_hash=True, columns=["x", "row_hash"]).take_all()
    assert _by_x(kept) == _by_x([{"x": r["x"], "row_hash": r["row_hash"]} for r in theirs])


def test_row_hash_with_a_filter_is_refused(folder):
    with pytest.raises(ConfigError, match=r"ds\.filter\(expr=\.\.\.\)"):
        ember.data.read_parquet(str(folder), include_row_hash=True, filter=pc.field("x") > 3)


def test_skip_paths_is_rays(local_ray, folder):
    ray = local_ray
    context = ray.data.DataContext.get_current()
    before, context.use_datasource_v2 = (
        context.use_datasource_v2,
        True,
    )  # Ray 2.60 reads skip_paths on V2 only
    try:
        for skip in (str(folder / "sub"), [str(folder / "a.parquet"), str(folder / "gone.parquet")]):
            theirs = ray.data.read_parquet(str(folder), skip_paths=skip).take_all()
            assert _by_x(ember.data.read_parquet(str(folder), skip_paths=skip).take_all()) == _by_x(theirs)
        paths = [str(folder / "a.parquet"), str(folder / "missing.parquet")]  # a skipped path need not exist
        theirs = ray.data.read_parquet(paths, skip_paths=paths[1]).take_all()
        assert _by_x(ember.data.read_parquet(paths, skip_paths=paths[1]).take_all()) == _by_x(theirs)
    finally:
        context.use_datasource_v2 = before
    with pytest.raises(DataError, match="nothing is left to read"):
        ember.data.read_parquet(str(folder), skip_paths=str(folder))


def test_tensor_column_schema_is_rays(local_ray, tmp_path):
    ray = local_ray
    images = np.arange(5 * 2 * 3, dtype=np.float32).reshape(5, 2, 3)
    pq.write_table(
        pa.table({"id": list(range(5)), "img": [a.tobytes() for a in images]}), tmp_path / "t.parquet"
    )
    schema = {"img": (np.float32, (2, 3))}
    theirs = ray.data.read_parquet(str(tmp_path), tensor_column_schema=schema).take_all()
    ours = ember.data.read_parquet(str(tmp_path), tensor_column_schema=schema).take_all()
    assert [r["id"] for r in ours] == [r["id"] for r in theirs]
    for a, b in zip(ours, theirs, strict=True):
        assert a["img"].dtype == b["img"].dtype and np.array_equal(a["img"], b["img"])
    batch = next(
        iter(ember.data.read_parquet(str(tmp_path), tensor_column_schema=schema).iter_batches(batch_size=5))
    )
    assert np.array_equal(batch["img"], images)
    with pytest.raises(DataError, match="does not hold float32 tensors of shape"):
        ember.data.read_parquet(str(tmp_path), tensor_column_schema={"img": (np.float32, (4, 4))}).take_all()


def test_schema_reads_the_files_as_that_schema_as_ray_does(tmp_path, local_ray):
    folder = tmp_path / "k=1"
    folder.mkdir()
    pq.write_table(pa.table({"a": [1.0, 2.0], "v": ["x", "y"], "dropped": [1, 2]}), folder / "a.parquet")
    schema = pa.schema([("a", pa.float32()), ("v", pa.string()), ("missing", pa.int8())])
    ours = ember.data.read_parquet(str(tmp_path), schema=schema)
    theirs = local_ray.data.read_parquet(str(tmp_path), schema=schema)
    assert (
        ours.take_all()
        == theirs.take_all()
        == [{"a": 1.0, "v": "x", "missing": None, "k": "1"}, {"a": 2.0, "v": "y", "missing": None, "k": "1"}]
    )
    assert ours.schema().types == theirs.schema().types  # the partition column is a string, as Ray's
