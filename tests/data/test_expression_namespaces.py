"""Ray Data 2.60's DataType and expression namespaces in ember.data: ``ember.data.datatype.DataType``,
``Expr.cast``, ``Expr.str`` / ``.list`` / ``.struct`` / ``.map`` / ``.dt`` / ``.arr``, ``Operation`` and
``with_columns(unnest(...))``, compared with real ray.data on the same input."""

from __future__ import annotations

import datetime
import sys

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import ember.data
from ember.data.datatype import DataType, TypeCategory
from ember.data.expressions import BinaryExpr, Operation, UnaryExpr, col, evaluate, lit, udf, unnest, uuid
from ember.errors import ConfigError

ray = pytest.importorskip("ray")
import ray.data.datatype as ray_datatype  # noqa: E402
import ray.data.expressions as ray_expressions  # noqa: E402

TABLE = pa.table(
    {
        "id": [0, 1, 2, 3],
        "s": ["Alice", " bob-x ", "Cé", "a1b2"],
        "items": pa.array([[3, 1, 2], [5, None, 4], [], None], pa.list_(pa.int64())),
        "nested": pa.array([[[1, 2], [3]], [None, [4]], [], None], pa.list_(pa.list_(pa.int64()))),
        "fixed": pa.array([[2, 1], [4, 3], [6, 5], [8, 7]], pa.list_(pa.int64(), 2)),
        "user": pa.array(
            [{"name": "A", "age": 30}, {"name": "B", "age": 4}, {"name": None, "age": 5}, None],
            pa.struct([("name", pa.string()), ("age", pa.int32())]),
        ),
        "m": pa.array([[("a", 1), ("b", 2)], [], None, [("c", 3)]], pa.map_(pa.string(), pa.int64())),
        "t": pa.array(
            [
                datetime.datetime(2024, 5, 1, 13, 45, 30),
                datetime.datetime(1999, 12, 31, 23, 59, 59),
                datetime.datetime(2000, 1, 1),
                None,
            ],
            pa.timestamp("us"),
        ),
        "f": [1.5, -2.25, 3.0, 100.75],
    }
)


def namespace_exprs(col, DataType):
    """The same expressions, built with either library's ``col`` and ``DataType``."""
    return {
        "len": col("s").str.len(),
        "byte_len": col("s").str.byte_len(),
        "upper": col("s").str.upper(),
        "lower": col("s").str.lower(),
        "title": col("s").str.title(),
        "swapcase": col("s").str.swapcase(),
        "capitalize": col("s").str.capitalize(),
        "is_alpha": col("s").str.is_alpha(),
        "is_alnum": col("s").str.is_alnum(),
        "is_ascii": col("s").str.is_ascii(),
        "starts": col("s").str.starts_with("A"),
        "starts_ci": col("s").str.starts_with("a", ignore_case=True),
        "ends": col("s").str.ends_with("x "),
        "contains": col("s").str.contains("b"),
        "match": col("s").str.match("%b%"),
        "find": col("s").str.find("b"),
        "count": col("s").str.count("b"),
        "find_regex": col("s").str.find_regex("[0-9]"),
        "count_regex": col("s").str.count_regex("[0-9]"),
        "match_regex": col("s").str.match_regex("^[a-z]"),
        "reverse": col("s").str.reverse(),
        "slice": col("s").str.slice(1, 3),
        "replace": col("s").str.replace("-", "+"),
        "replace_regex": col("s").str.replace_regex("[0-9]", "#"),
        "replace_slice": col("s").str.replace_slice(0, 1, "Z"),
        "split": col("s").str.split("b"),
        "split_regex": col("s").str.split_regex("[0-9]"),
        "split_ws": col("s").str.split_whitespace(),
        "extract": col("s").str.extract("(?P<d>[0-9])"),
        "repeat": col("s").str.repeat(2),
        "center": col("s").str.center(9, "*"),
        "lpad": col("s").str.lpad(6),
        "rpad": col("s").str.rpad(6, "."),
        "pad": col("s").str.pad(7, "_", side="both"),
        "strip": col("s").str.strip(),
        "lstrip": col("s").str.lstrip(" b"),
        "rstrip": col("s").str.rstrip("x "),
        "list_len": col("items").list.len(),
        "list_first": col("fixed").list[0],
        "list_get": col("fixed").list.get(1),
        "list_slice": col("items").list[1:3],
        "list_step": col("items").list[::2],
        "list_sort": col("items").list.sort(),
        "list_sort_desc": col("items").list.sort("descending", "at_start"),
        "fixed_sort": col("fixed").list.sort(),
        "flatten": col("nested").list.flatten(),
        "age": col("user").struct["age"],
        "name": col("user").struct.field("name"),
        "first": col("user").struct[0],
        "by_index": col("user").struct.field_by_index(1),
        "keys": col("m").map.keys(),
        "values": col("m").map.values(),
        "year": col("t").dt.year(),
        "month": col("t").dt.month(),
        "day": col("t").dt.day(),
        "hour": col("t").dt.hour(),
        "minute": col("t").dt.minute(),
        "second": col("t").dt.second(),
        "strftime": col("t").dt.strftime("%Y/%m/%d"),
        "ceil_day": col("t").dt.ceil("day"),
        "floor_hour": col("t").dt.floor("hour"),
        "round_min": col("t").dt.round("minute"),
        "to_list": col("fixed").arr.to_list(),
        "as_int": col("f").cast(DataType.int64(), safe=False),
        "as_str": col("id").cast(DataType.string()),
        "as_float": (col("id") % 2).cast(DataType.float32()),
        "chained": col("s").str.strip().str.upper().str.len() * 2,
    }


@pytest.fixture(scope="module")
def ray_by_value(local_ray):
    """Ray's workers cannot import this test module by name: send its functions by value."""
    local_ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    return local_ray


def test_every_namespace_function_gives_what_ray_gives(ray_by_value):
    ours = ember.data.from_arrow(TABLE).with_columns(namespace_exprs(col, DataType)).take_all()
    theirs = ray.data.from_arrow(TABLE).with_columns(
        namespace_exprs(ray_expressions.col, ray_datatype.DataType)
    )
    theirs = sorted(theirs.take_all(), key=lambda row: row["id"])
    assert len(ours) == len(theirs) == 4
    for our_row, their_row in zip(ours, theirs, strict=True):
        assert our_row.keys() == their_row.keys()
        for name in our_row:
            assert _same(our_row[name], their_row[name]), (name, our_row[name], their_row[name])


def _same(ours, theirs) -> bool:
    """Equal values (numpy arrays compared by value: Ray hands list columns back as ndarrays in places)."""
    if isinstance(ours, np.ndarray) or isinstance(theirs, np.ndarray):
        return np.array_equal(np.asarray(ours, dtype=object), np.asarray(theirs, dtype=object))
    if isinstance(ours, list) and isinstance(theirs, list):
        return len(ours) == len(theirs) and all(_same(a, b) for a, b in zip(ours, theirs, strict=True))
    if isinstance(ours, dict) and isinstance(theirs, dict):
        return ours.keys() == theirs.keys() and all(_same(ours[k], theirs[k]) for k in ours)
    return ours == theirs or (ours != ours and theirs != theirs)  # NaN == NaN here


def test_namespace_filters_are_pyarrow_expressions_as_in_ray(ray_by_value):
    def condition(col):
        return col("s").str.starts_with("a", ignore_case=True) & (col("user").struct["age"] > 4)

    assert str(condition(col).to_pyarrow()) == str(condition(ray_expressions.col).to_pyarrow())
    ours = ember.data.from_arrow(TABLE).filter(expr=condition(col)).select_columns(["id"]).take_all()
    theirs = (
        ray.data.from_arrow(TABLE)
        .filter(expr=condition(ray_expressions.col))
        .select_columns(["id"])
        .take_all()
    )
    assert ours == theirs == [{"id": 0}]


def test_with_columns_takes_unnest_and_mappings_in_argument_order_as_ray(ray_by_value):
    def run(data, col, unnest, udf, DataType):
        @udf(return_dtype=DataType.struct([("sum", DataType.int64()), ("product", DataType.int64())]))
        def features(a, b):
            return pa.StructArray.from_arrays(
                [pc.add(a, b).combine_chunks(), pc.multiply(a, b).combine_chunks()], names=["sum", "product"]
            )

        return data.with_columns(
            {"a2": col("a") * 2}, unnest(features(col("a"), col("b"))), {"sum": col("a") - 1}
        ).take_all()

    rows = [{"a": 2, "b": 10}, {"a": 3, "b": 20}]
    ours = run(ember.data.from_items(rows), col, unnest, udf, DataType)
    theirs = run(
        ray.data.from_items(rows),
        ray_expressions.col,
        ray_expressions.unnest,
        ray_expressions.udf,
        ray_datatype.DataType,
    )
    assert ours == sorted(theirs, key=lambda row: row["a"])
    assert list(ours[0]) == ["a", "b", "a2", "sum", "product"]


def test_with_columns_refuses_other_arguments_with_rays_exception_kinds():
    ds = ember.data.range(2)
    with pytest.raises(TypeError, match="unnest"):
        ds.with_columns(col("id"))
    with pytest.raises(ValueError, match="with_column"):
        ds.with_columns({"x": ember.data.expressions.download("id")})


# ----------------------------------------------------------------------------------------- DataType
def datatypes(DataType):
    """The same DataTypes, made with either library."""
    return [
        DataType.int8(),
        DataType.uint64(),
        DataType.float32(),
        DataType.string(),
        DataType.bool(),
        DataType.binary(),
        DataType.list(DataType.int64()),
        DataType.large_list(DataType.string()),
        DataType.fixed_size_list(DataType.float32(), 3),
        DataType.struct([("x", DataType.int64())]),
        DataType.map(DataType.string(), DataType.int64()),
        DataType.tensor((3, 4), DataType.float32()),
        DataType.variable_shaped_tensor(DataType.uint8(), ndim=3),
        DataType.temporal("timestamp", unit="s", tz="UTC"),
        DataType.temporal("time32"),
        DataType.temporal("date64"),
        DataType.temporal("duration"),
        DataType.from_numpy("int32"),
        DataType.from_numpy(np.dtype("<U3")),
        DataType.from_numpy("datetime64[ns]"),
        DataType.from_arrow(pa.dictionary(pa.int32(), pa.string())),
        DataType.from_arrow(pa.decimal128(5, 2)),
        DataType.from_arrow(pa.null()),
        DataType(int),
        DataType(str),
        DataType(bytes),
        DataType(datetime.date),
        DataType(object),
        DataType.infer_dtype(5),
        DataType.infer_dtype("x"),
        DataType.infer_dtype(np.float16(1)),
        DataType.infer_dtype([1, 2]),
        DataType.infer_dtype({"a": 1}),
        DataType.from_dtype(np.int8),
        DataType.from_dtype("float64"),
        DataType.from_dtype(float),
        DataType.from_dtype(pa.int16()),
    ]


PREDICATES = [
    "is_arrow_type",
    "is_numpy_type",
    "is_python_type",
    "is_list_type",
    "is_tensor_type",
    "is_struct_type",
    "is_map_type",
    "is_nested_type",
    "is_null_type",
    "is_boolean_type",
    "is_integer_type",
    "is_floating_type",
    "is_uint64_type",
    "is_numerical_type",
    "is_string_type",
    "is_binary_type",
    "is_temporal_type",
]


def test_datatypes_show_test_and_convert_as_rays():
    for ours, theirs in zip(datatypes(DataType), datatypes(ray_datatype.DataType), strict=True):
        assert repr(ours) == repr(theirs)
        for predicate in PREDICATES:
            assert getattr(ours, predicate)() == getattr(theirs, predicate)(), (repr(ours), predicate)
        for category in [*TypeCategory, "nope"]:
            assert ours.is_of(category) == theirs.is_of(getattr(category, "value", category)), (
                repr(ours),
                category,
            )
        assert ours.to_numpy_dtype() == theirs.to_numpy_dtype(), repr(ours)
        if not ours.is_python_type() and not ours.is_tensor_type():
            assert ours.to_arrow_dtype() == theirs.to_arrow_dtype()


def test_datatype_equality_is_within_one_type_system_as_in_ray():
    pairs = [
        (DataType.int64(), DataType.int64()),
        (DataType.int64(), DataType.from_numpy("int64")),
        (DataType(int), DataType(int)),
        (DataType.int64(), DataType.int32()),
    ]
    ray_pairs = [
        (ray_datatype.DataType.int64(), ray_datatype.DataType.int64()),
        (ray_datatype.DataType.int64(), ray_datatype.DataType.from_numpy("int64")),
        (ray_datatype.DataType(int), ray_datatype.DataType(int)),
        (ray_datatype.DataType.int64(), ray_datatype.DataType.int32()),
    ]
    assert [a == b for a, b in pairs] == [a == b for a, b in ray_pairs] == [True, False, True, False]
    assert len({DataType.int64(), DataType.int64(), DataType.from_numpy("int64")}) == 2


def test_datatype_refusals_raise_rays_exception_kinds():
    with pytest.raises(TypeError):
        DataType("int64")  # a name is not a type: DataType.from_dtype("int64") converts it
    with pytest.raises(ValueError, match="Python type"):
        DataType.int64().to_python_type()
    with pytest.raises(ValueError, match="time32"):
        DataType.temporal("time32", unit="us")
    with pytest.raises(ValueError, match="temporal_type"):
        DataType.temporal("week")
    with pytest.raises(ConfigError, match="cuDF"):
        DataType.int64().to_cudf_type()
    assert DataType(int).to_arrow_dtype([1, 2]) == pa.int64()


def test_cast_takes_only_arrow_datatypes_and_checks_by_default():
    table = pa.table({"x": [1.5, 300.0]})
    with pytest.raises(TypeError, match="DataType"):
        col("x").cast(pa.int64())
    with pytest.raises(TypeError, match="Python-type"):
        col("x").cast(DataType(int))
    with pytest.raises(ember.errors.DataError, match="cast"):
        evaluate(col("x").cast(DataType.int64()), table)  # 1.5 would lose its fraction
    assert evaluate(col("x").cast(DataType.int64(), safe=False), table).to_pylist() == [1, 300]


# ------------------------------------------------------------------------------- Operation, uuid, udf
def test_operation_builds_the_same_expressions_as_the_operators():
    table = pa.table({"x": [1, 2, None], "y": [True, False, True]})
    built = [
        BinaryExpr(Operation.ADD, col("x"), lit(5)),
        BinaryExpr(Operation.FLOORDIV, col("x"), lit(2)),
        BinaryExpr(Operation.AND, col("y"), lit(True)),
        UnaryExpr(Operation.NOT, col("y")),
        UnaryExpr(Operation.IS_NULL, col("x")),
    ]
    written = [col("x") + 5, col("x") // 2, col("y") & True, ~col("y"), col("x").is_null()]
    for a, b in zip(built, written, strict=True):
        assert repr(a) == repr(b) and evaluate(a, table).equals(evaluate(b, table))
    assert [op.value for op in Operation] == [op.value for op in ray_expressions.Operation]
    with pytest.raises(ConfigError, match="is_in"):
        BinaryExpr(Operation.IN, col("x"), lit([1]))


def test_uuid_without_dashes_is_32_hex_digits_per_row():
    rows = ember.data.range(5).with_column("u", uuid().str.replace("-", "")).take_all()
    assert len({row["u"] for row in rows}) == 5
    assert all(len(row["u"]) == 32 and int(row["u"], 16) >= 0 for row in rows)


def test_udf_takes_datatypes_including_python_types():
    @udf(return_dtype=DataType(object))
    def pairs(x):
        return [[v, v] for v in x.to_pylist()]

    @udf(return_dtype=DataType.int32())
    def plus_one(x):
        return pc.add(x, 1)

    rows = (
        ember.data.range(2)
        .with_column("p", pairs(col("id")))
        .with_column("q", plus_one(col("id")))
        .take_all()
    )
    assert rows == [{"id": 0, "p": [0, 0], "q": 1}, {"id": 1, "p": [1, 1], "q": 2}]

    ray_plus_one = ray_expressions.udf(return_dtype=ray_datatype.DataType.int32())(lambda x: pc.add(x, 1))
    assert repr(plus_one(col("id")).data_type) == repr(ray_plus_one(ray_expressions.col("id")).data_type)
    assert pairs(col("id")).data_type == DataType(object)
    assert udf(return_dtype=pa.int8())(lambda x: x)(col("id")).data_type == DataType.int8()


def expression_pairs(col, lit, uuid, DataType):
    """Pairs of expressions, built with either library, for structural equality and idempotence."""
    return [
        (col("a") + lit(1), col("a") + 1),
        (col("a") + 1, col("a") + 2),
        (col("a"), col("b")),
        (lit(1), lit(True)),
        (col("s").str.upper(), col("s").str.upper()),
        (col("s").str.upper(), col("s").str.lower()),
        (col("s").str.starts_with("A"), col("s").str.starts_with("B")),
        (col("x").list[0], col("x").list.get(0)),
        (col("x").cast(DataType.int64()), col("x").cast(DataType.int32())),
        ((col("a") > 1) & col("b").is_null(), (col("a") > 1) & col("b").is_null()),
        (col("a").is_in([1, 2]), col("a").is_in([1, 2])),
        (col("a").alias("b"), col("a").alias("c")),
        (uuid(), uuid()),
        (uuid().str.upper(), col("a")),
    ]


def test_structural_equality_and_idempotence_agree_with_ray():
    ours = expression_pairs(col, lit, uuid, DataType)
    theirs = expression_pairs(
        ray_expressions.col, ray_expressions.lit, ray_expressions.uuid, ray_datatype.DataType
    )
    assert [a.structurally_equals(b) for a, b in ours] == [a.structurally_equals(b) for a, b in theirs]
    assert [a.is_idempotent() for a, _ in ours] == [a.is_idempotent() for a, _ in theirs]
    assert ours[0][0].structurally_equals(ours[0][1]) and not ours[-2][0].is_idempotent()
    # Two identical casts: the same tree to ember; Ray builds each cast around a new closure, so it says
    # False.
    assert col("x").cast(DataType.int64()).structurally_equals(col("x").cast(DataType.int64()))


def test_static_type_methods_are_refused_in_one_line():
    schema = pa.schema([("a", pa.int64())])
    for method in ("get_type", "nullable", "to_field", "expand_projection"):
        with pytest.raises(ConfigError, match=method):
            getattr(col("a"), method)(schema)
