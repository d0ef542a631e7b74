"""Blocks: tensor columns (fixed and variable shape) survive parquet; UDF outputs are validated."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
import torch

import ember.data
from ember.data.block import batch_to_block, block_to_numpy, concat_blocks
from ember.errors import DataError


def test_fixed_shape_tensor_parquet_round_trip(tmp_path):
    images = np.arange(4 * 3 * 5 * 2, dtype=np.uint8).reshape(4, 3, 5, 2)
    ds = ember.data.from_items([{"image": img, "label": i} for i, img in enumerate(images)])
    ds.write_parquet(tmp_path)
    back = ember.data.read_parquet(tmp_path)
    assert "ArrowTensorTypeV2(shape=(3, 5, 2), dtype=uint8)" in str(back.schema())
    batch = back.take_batch(4)
    np.testing.assert_array_equal(batch["image"], images)
    np.testing.assert_array_equal(batch["label"], np.arange(4))


def test_variable_shape_tensor_parquet_round_trip(tmp_path):
    arrays = [np.full((n, 2), n, dtype=np.float32) for n in (1, 3, 2)]
    ds = ember.data.from_items([{"x": a} for a in arrays])
    assert "ArrowVariableShapedTensorType(ndim=2, dtype=float)" in str(ds.schema())
    ds.write_parquet(tmp_path)
    rows = ember.data.read_parquet(tmp_path).take_all()
    for row, expected in zip(rows, arrays, strict=True):
        np.testing.assert_array_equal(row["x"], expected)
        assert row["x"].dtype == np.float32


def test_torch_outputs_are_stored_as_numpy():
    ds = ember.data.range(4).map_batches(lambda b: {"t": torch.ones(len(b["id"]), 2)})
    batch = ds.take_batch(4)
    assert isinstance(batch["t"], np.ndarray) and batch["t"].shape == (4, 2)


def test_fixed_and_ragged_blocks_concatenate():
    fixed = batch_to_block({"x": np.zeros((2, 3))})
    ragged = batch_to_block({"x": [np.zeros(2), np.zeros(4)]})
    table = concat_blocks([fixed, ragged])
    values = block_to_numpy(table)["x"]
    assert [v.shape for v in values] == [(3,), (3,), (2,), (4,)]


def test_udf_returning_non_dict_is_one_line_error():
    with pytest.raises(DataError, match=r"returned a list; return a dict of column name -> array"):
        ember.data.range(3).map_batches(lambda b: [1, 2, 3]).take_all()


def test_udf_returning_ragged_columns_is_one_line_error():
    with pytest.raises(DataError, match=r"columns of different lengths"):
        ember.data.range(3).map_batches(lambda b: {"a": np.zeros(3), "b": np.zeros(2)}).take_all()


def test_column_that_cannot_become_a_tensor():
    ds = ember.data.from_items([{"s": "text", "x": 1}])
    with pytest.raises(
        DataError, match=r"column 's' \(Python str values\) cannot become a torch tensor; drop it"
    ):
        next(iter(ds.iter_torch_batches()))


def test_numpy_batches_are_zero_copy_for_consumers_and_writable_for_udfs():
    table = pa.table({"x": np.arange(3)})
    assert not block_to_numpy(table)["x"].flags.writeable

    def double_in_place(batch):
        batch["x"] *= 2
        return batch

    assert ember.data.from_arrow(table).map_batches(double_in_place).take_batch(3)["x"].tolist() == [0, 2, 4]
    assert table["x"].to_pylist() == [0, 1, 2]  # the source block is untouched


def test_rows_keep_nulls_as_none_and_ints_as_ints_as_ray_rows_do():
    # numpy would turn a null into NaN and an int column with a null into floats; Ray's rows keep both.
    ds = ember.data.from_items([{"a": 1.0, "b": 1, "s": "x"}, {"a": None, "b": None, "s": None}])
    assert ds.take_all() == [{"a": 1.0, "b": 1, "s": "x"}, {"a": None, "b": None, "s": None}]
    assert ds.map(
        lambda row: {"b_missing": row["b"] is None, "b_type": type(row["b"]).__name__}
    ).take_all() == [{"b_missing": False, "b_type": "int"}, {"b_missing": True, "b_type": "NoneType"}]
    batch = ds.take_batch()  # batches stay numpy, as Ray's: NaN for the null float
    assert batch["a"][1] != batch["a"][1]
