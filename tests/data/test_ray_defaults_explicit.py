"""Ray 2.60's default values, passed explicitly, are accepted by ember.data as Ray accepts them and
give what leaving them out gives (``fn_args=None`` used to crash inside a worker); wrong UDF
argument types are refused at the call, in one line."""

from __future__ import annotations

import inspect

import pytest

import ember.data
from ember.data.expressions import col
from ember.errors import ConfigError

ray_data = pytest.importorskip("ray.data")  # reads the installed Ray's signatures; starts nothing
ray_grouped = pytest.importorskip("ray.data.grouped_data")

#: what each method needs besides Ray's defaults (None: not called with keywords alone)
REQUIRED = {
    "add_column": {"col": "y", "fn": lambda b: b["x"]},
    "drop_columns": {"cols": ["k"]},
    "flat_map": {"fn": lambda r: [r, r]},
    "groupby": {"key": "k"},
    "limit": {"limit": 3},
    "map": {"fn": lambda r: {"id": r["id"] + 1}},
    "map_batches": {"fn": lambda b: b},
    "random_sample": {"fraction": 0.5, "seed": 1},
    "rename_columns": {"names": {"x": "z"}},
    "select_columns": {"cols": ["id"]},
    "set_name": {"name": "n"},
    "sort": {"key": "id"},
    "split": {"n": 2},
    "split_at_indices": {"indices": [2]},
    "split_proportionately": {"proportions": [0.5]},
    "streaming_split": {"n": 2},
    "streaming_train_test_split": {"test_size": 0.5, "seed": 1},
    "train_test_split": {"test_size": 0.5},
    "unique": {"column": "k"},
    "filter": {"fn": lambda r: r["id"] > 2},
    "with_column": {"column_name": "w", "expr": col("x") + 1},
    "repartition": {"num_blocks": 2},
    "random_shuffle": {"seed": 3},
    "randomize_block_order": {"seed": 3},
    "map_groups": {"fn": lambda b: b},
    "copy": None,
    "join": None,
    "with_columns": None,
    "mix": None,
    "zip": None,
    "union": None,
    "show": None,
    "aggregate": None,
}


def _data():
    return ember.data.from_items([{"id": i, "x": float(i), "k": i % 3} for i in range(8)])


def _result(out):
    if type(out).__name__ == "GroupedData":
        return out.count().take_all()
    if isinstance(out, ember.data.Dataset):
        return out.take_all()
    if isinstance(out, (list, tuple)) and out and isinstance(out[0], ember.data.Dataset):
        return [d.take_all() for d in out]
    if isinstance(out, (list, tuple)) and out and isinstance(out[0], ember.data.DataIterator):
        return [list(i.iter_rows()) for i in out]
    if hasattr(out, "__iter__") and not isinstance(out, (dict, str, list, tuple)):
        return [repr(b) for b in out]
    return out if not hasattr(out, "take_all") else out.take_all()


def _calls(ray_class, make):
    for name, ray_method in inspect.getmembers(ray_class, inspect.isfunction):
        if name.startswith(("_", "write")) or REQUIRED.get(name, {}) is None or not hasattr(make(), name):
            continue
        required = REQUIRED.get(name, {})
        params = inspect.signature(ray_method).parameters
        if any(
            p.default is inspect.Parameter.empty and n not in required
            for n, p in params.items()
            if n != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
        ):
            continue  # needs an argument this table does not give
        defaults = {
            n: p.default
            for n, p in params.items()
            if p.default is not inspect.Parameter.empty and not n.startswith("_")
        }
        yield name, required, {**defaults, **required}


@pytest.mark.parametrize(
    "ray_class, make",
    [
        ("Dataset", _data),
        ("GroupedData", lambda: _data().groupby("k")),
        ("DataIterator", lambda: _data().iterator()),
    ],
)
def test_every_ray_default_passed_explicitly_changes_nothing(ray_class, make):
    cls = {
        "Dataset": ray_data.Dataset,
        "GroupedData": ray_grouped.GroupedData,
        "DataIterator": ray_data.DataIterator,
    }[ray_class]
    checked = 0
    for name, required, explicit in _calls(cls, make):
        if name in ("stats", "get_context", "to_torch"):
            continue  # timings / a context object / deprecated: compared elsewhere
        try:
            with_defaults = _result(getattr(make(), name)(**explicit))
            without = _result(getattr(make(), name)(**required))
        except ember.errors.EmberError as error:
            pytest.fail(f"{ray_class}.{name}({explicit}) -> {error}")
        assert repr(with_defaults) == repr(without), f"{ray_class}.{name} differs with Ray's defaults passed"
        checked += 1
    assert checked >= {"Dataset": 40, "GroupedData": 8, "DataIterator": 4}[ray_class]


@pytest.mark.parametrize(
    "method, fn, expected",
    [
        ("map", lambda r, k=0: {"id": r["id"] + k}, [{"id": 0}, {"id": 1}, {"id": 2}]),
        ("flat_map", lambda r: [r], [{"id": 0}, {"id": 1}, {"id": 2}]),
        ("filter", lambda r: r["id"] != 1, [{"id": 0}, {"id": 2}]),
        ("map_batches", lambda b: b, [{"id": 0}, {"id": 1}, {"id": 2}]),
    ],
)
def test_none_udf_arguments_are_none_given(method, fn, expected):
    ds = getattr(ember.data.range(3), method)(
        fn, fn_args=None, fn_kwargs=None, fn_constructor_args=None, fn_constructor_kwargs=None
    )
    assert ds.take_all() == expected


class AddK:
    def __init__(self, k=None):
        self.k = k or 0

    def __call__(self, row, extra=0):
        return {"id": row["id"] + self.k + extra}


def test_none_udf_arguments_for_a_callable_class():
    ds = ember.data.range(3).map(
        AddK,
        fn_args=None,
        fn_kwargs=None,
        fn_constructor_args=None,
        fn_constructor_kwargs=None,
        concurrency=1,
    )
    assert ds.take_all() == [{"id": 0}, {"id": 1}, {"id": 2}]
    ds = ember.data.range(3).map(AddK, fn_args=[1], fn_constructor_args=[10], concurrency=1)
    assert ds.take_all() == [{"id": 11}, {"id": 12}, {"id": 13}]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (
            {"fn_args": 3},
            "Dataset.map(fn_args=3); pass a tuple or list of extra positional arguments, or None",
        ),
        ({"fn_args": "ab"}, "Dataset.map(fn_args='ab'); pass a tuple or list"),
        (
            {"fn_kwargs": [1]},
            "Dataset.map(fn_kwargs=[1]); pass a dict of keyword arguments (str keys), or None",
        ),
        (
            {"fn_constructor_args": (1,)},
            "Dataset.map: fn_constructor_args/fn_constructor_kwargs only apply to a "
            "callable class; pass fn_args/fn_kwargs for a function",
        ),
    ],
)
def test_wrong_udf_arguments_are_refused_at_the_call(kwargs, message):
    with pytest.raises(ConfigError) as error:
        ember.data.range(3).map(lambda r: r, **kwargs)
    assert message in str(error.value) and "\n" not in str(error.value)
