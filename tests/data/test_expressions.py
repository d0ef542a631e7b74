"""ember.data.expressions (col / lit), with_column, rename_columns with a list, schema() and size_bytes()."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pytest

import ember.data
from ember.data.expressions import col, lit
from ember.data.expressions.core import evaluate
from ember.errors import DataError


def test_with_column_computes_arithmetic_comparison_and_boolean_expressions():
    ds = ember.data.from_items([{"a": i, "b": 10 - i} for i in range(5)])
    out = (
        ds.with_column("sum", col("a") + col("b"))
        .with_column("big", (col("a") * 3 > col("b")) & ~(col("a") == lit(4)))
        .with_column("ratio", col("a") / lit(2.0))
    )
    rows = out.take_all()
    assert [r["sum"] for r in rows] == [10] * 5
    assert [r["big"] for r in rows] == [False, False, False, True, False]
    assert [r["ratio"] for r in rows] == [0.0, 0.5, 1.0, 1.5, 2.0]


def test_with_column_replaces_an_existing_column_in_place():
    rows = ember.data.from_items([{"a": 1, "b": 2}]).with_column("a", col("a") - 1).take_all()
    assert rows == [{"a": 0, "b": 2}]


def test_string_plus_concatenates_and_is_in_keeps_listed_values():
    ds = ember.data.from_items([{"s": "x", "n": 1}, {"s": "y", "n": 2}, {"s": "z", "n": 3}])
    rows = ds.with_column("t", col("s") + lit("!")).with_column("keep", col("n").is_in([1, 3])).take_all()
    assert [(r["t"], r["keep"]) for r in rows] == [("x!", True), ("y!", False), ("z!", True)]


def test_is_in_and_not_in_keep_the_negate_method():
    # They stored their flag as an attribute named `negate`, which hid Expr.negate():
    # `col("n").is_in([1]).negate()` raised "TypeError: 'bool' object is not callable".
    table = pa.table({"n": [1, 2]})
    for expr in (col("n").is_in([1, 3]), col("n").not_in([1, 3])):
        assert repr(expr.negate()) == f"negate({expr!r})"
        with pytest.raises(DataError, match="negate_checked"):  # as for any boolean: Arrow has no -bool
            evaluate(expr.negate(), table)
    assert evaluate(col("n").not_in([1, 3]), table).to_pylist() == [False, True]


def test_to_pyarrow_is_a_pyarrow_expression_that_filters_a_real_parquet_dataset(tmp_path):
    ember.data.range(20).write_parquet(tmp_path)
    expr = ((col("id") % 3) == 0) & (col("id") >= 9)
    assert isinstance(expr.to_pyarrow(), pc.Expression)
    table = pads.dataset(str(tmp_path), format="parquet", exclude_invalid_files=True).to_table(
        filter=expr.to_pyarrow()
    )
    assert sorted(table.column("id").to_pylist()) == [9, 12, 15, 18]


def test_expressions_refuse_python_boolean_logic_and_unknown_columns():
    with pytest.raises(DataError, match="combine conditions with & | ~"):
        (col("a") > 1) and (col("a") < 3)  # noqa: B015 - the point is that `and` refuses
    with pytest.raises(DataError, match="no column 'nope'; the dataset has columns \\['id'\\]"):
        ember.data.range(2).with_column("x", col("nope") + 1).take_all()
    with pytest.raises(DataError, match="takes an expression"):
        ember.data.range(2).with_column("x", lambda r: r)


def test_with_column_type_mismatch_is_one_line():
    ds = ember.data.from_items([{"s": "x"}])
    with pytest.raises(DataError, match="cannot be computed on columns \\['s'\\]"):
        ds.with_column("y", col("s") * 2).take_all()


def test_rename_columns_with_a_list_renames_by_position_and_checks_the_count():
    ds = ember.data.from_items([{"a": 1, "b": 2}])
    assert ds.rename_columns(["x", "y"]).columns() == ["x", "y"]
    with pytest.raises(DataError, match="got 1 names \\['x'\\] for 2 columns"):
        ds.rename_columns(["x"]).take_all()


def test_schema_names_types_and_tensor_columns_as_ray_prints_them():
    ds = ember.data.from_items([{"x": np.zeros((2, 3), np.float32), "label": 1, "name": "a"}])
    schema = ds.schema()
    assert schema.names == ["x", "label", "name"]
    assert schema.types[1:] == [pa.int64(), pa.string()]
    assert "ArrowTensorTypeV2(shape=(2, 3), dtype=float)" in str(schema)


def test_size_bytes_is_the_arrow_size_of_the_data():
    assert ember.data.range(1000).size_bytes() == 8000
    assert ember.data.range_tensor(10, shape=(4, 4)).size_bytes() >= 10 * 16 * 8
