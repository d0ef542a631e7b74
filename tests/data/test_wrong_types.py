"""Wrong types and wrong arguments give one line from ember, naming the problem and the fix, never
Arrow's bare kernel error or a TypeError from deep inside: aggregations, filters, sort and groupby on
columns of the wrong type, DataContext settings (refused where they are set), column-name arguments,
renames that clash, and read_images' size / mode / decompression bombs."""

from __future__ import annotations

import io
import struct
import zlib

import numpy as np
import pytest
from PIL import Image

import ember.data
from ember.data.aggregate import Quantile, Std, Sum
from ember.data.expressions import col
from ember.errors import ConfigError, DataError


def _ds():
    return ember.data.from_items(
        [{"id": i, "s": str(i), "l": [i, i], "t": np.zeros(2) + i} for i in range(6)]
    )


def _one_line(call, error=DataError) -> str:
    with pytest.raises(error) as caught:
        call()
    text = str(caught.value)
    assert "\n" not in text, text
    return text


@pytest.mark.parametrize(
    "call, expected",
    [
        (lambda: _ds().sum("s"), "sum(s): column 's' holds string values, which Sum cannot aggregate"),
        (lambda: _ds().mean("s"), "mean(s): column 's' holds string values, which Mean cannot aggregate"),
        (lambda: _ds().std("s"), "std(s): column 's' holds string values, which Std cannot aggregate"),
        (
            lambda: _ds().max("l"),
            "max(l): column 'l' holds list<item: int64> values, which Max cannot aggregate",
        ),
        (lambda: _ds().min("t"), "min(t): column 't' holds extension<arrow.fixed_shape_tensor"),
        (lambda: _ds().aggregate(Quantile("s")), "quantile(s): column 's' holds string values"),
        (lambda: _ds().groupby("id").sum("s").take_all(), "sum(s): column 's' holds string values"),
        (
            lambda: _ds().groupby("id").mean("l").take_all(),
            "mean(l): column 'l' holds list<item: int64> values",
        ),
    ],
)
def test_aggregations_of_a_wrong_type_say_which_column(call, expected):
    text = _one_line(call)
    assert expected in text and "convert the column to numbers first" in text


@pytest.mark.parametrize(
    "call, expected",
    [
        (lambda: _ds().sort("l").take_all(), "sort: key column 'l' (list<item: int64>) cannot be ordered"),
        (
            lambda: _ds().sort(["id", "t"]).take_all(),
            "sort: key column 't' (extension<arrow.fixed_shape_tensor",
        ),
        (
            lambda: _ds().groupby("l").count().take_all(),
            "groupby: key column 'l' (list<item: int64>) cannot be ordered",
        ),
        (
            lambda: _ds().sort("nope").take_all(),
            "no column 'nope'; the dataset has columns ['id', 's', 'l', 't']",
        ),
    ],
)
def test_sort_and_groupby_keys_of_a_wrong_type_or_missing(call, expected):
    assert expected in _one_line(call)


@pytest.mark.parametrize("expr", [col("s") > 3, "s > 3"])
def test_a_filter_comparing_unlike_types_names_the_column_types(expr):
    text = _one_line(lambda: _ds().select_columns(["id", "s"]).filter(expr=expr).take_all())
    assert "filter(expr=(s > 3)) cannot compare these types" in text and "s: string" in text


def test_right_types_still_aggregate_sort_and_filter():
    ds = _ds().select_columns(["id", "s"])
    assert ds.sum("id") == 15 and ds.min("s") == "0"
    assert [r["id"] for r in ds.sort("s", descending=True).take_all()] == [5, 4, 3, 2, 1, 0]
    assert ds.filter(expr=col("s") > "3").count() == 2


@pytest.mark.parametrize(
    "name, value, expected",
    [
        (
            "memory_budget_bytes",
            "1GB",
            "DataContext.memory_budget_bytes = '1GB'; use a positive integer number of bytes",
        ),
        ("memory_budget_bytes", -5, "DataContext.memory_budget_bytes = -5; use a positive integer"),
        ("memory_budget_bytes", 0, "DataContext.memory_budget_bytes = 0; use a positive integer"),
        ("memory_budget_bytes", 2.5, "DataContext.memory_budget_bytes = 2.5"),
        ("max_inflight_bytes", None, "DataContext.max_inflight_bytes = None"),
        ("target_rows_per_block", True, "DataContext.target_rows_per_block = True"),
        ("num_workers", 0, "DataContext.num_workers = 0; use a positive integer, or None for all cores"),
        ("execution", "gpu", "DataContext.execution = 'gpu'; use 'auto', 'inline', 'processes' or 'ray'"),
        ("scratch_dir", 3, "DataContext.scratch_dir = 3; use a folder path"),
    ],
)
def test_data_context_settings_are_refused_where_they_are_set(name, value, expected):
    current = ember.data.DataContext.get_current()
    before = getattr(current, name)
    assert expected in _one_line(lambda: setattr(current, name, value), ConfigError)
    assert getattr(current, name) == before  # nothing was stored
    ds = ember.data.range(3)
    assert expected in _one_line(lambda: setattr(ds.context, name, value), ConfigError)
    assert expected in _one_line(lambda: ember.data.DataContext(**{name: value}), ConfigError)
    assert ds.count() == 3  # the dataset still runs with the settings it had


def test_a_valid_budget_is_kept_and_used():
    ds = ember.data.range(2000).random_shuffle(seed=1)
    ds.context.memory_budget_bytes = 4096  # tiny: spills
    assert sorted(r["id"] for r in ds.take_all()) == list(range(2000))


@pytest.mark.parametrize(
    "call, expected",
    [
        (
            lambda: _ds().select_columns(3),
            "Dataset.select_columns(cols=3); pass a column name or a list of column names",
        ),
        (
            lambda: _ds().drop_columns([3]),
            "Dataset.drop_columns(cols=[3]); pass a column name or a list of column names",
        ),
        (lambda: _ds().rename_columns({"id": 3}), "Dataset.rename_columns(names={'id': 3}); pass a dict"),
        (
            lambda: _ds().add_column(3, lambda b: b["id"]),
            "Dataset.add_column(col=3); the new column's name must be",
        ),
        (lambda: _ds().std("id", ddof="x"), "Std(ddof='x'); use an integer >= 0"),
        (lambda: _ds().aggregate(Quantile("id", q="x")), "Quantile(q='x'); use a fraction in [0, 1]"),
        (lambda: _ds().aggregate(Std("id", ddof=-1)), "Std(ddof=-1)"),
    ],
)
def test_argument_types_are_refused_at_the_call(call, expected):
    assert expected in _one_line(call, ConfigError)


def test_a_rename_that_makes_two_columns_of_one_name_is_refused():
    text = _one_line(lambda: _ds().rename_columns({"id": "s"}).take_all())
    assert "rename_columns would give two columns the name 's'" in text
    text = _one_line(lambda: _ds().rename_columns(["a", "a", "b", "c"]).take_all())
    assert "two columns the name 'a'" in text


def test_sum_takes_an_aggregation_of_the_right_type():
    assert _ds().aggregate(Sum("id")) == {"sum(id)": 15}


# ---------------------------------------------------------------------------------------- read_images


@pytest.fixture
def images(tmp_path):
    folder = tmp_path / "images"
    folder.mkdir()
    Image.fromarray(np.arange(4 * 6 * 3, dtype=np.uint8).reshape(4, 6, 3)).save(folder / "a.png")
    return folder


@pytest.mark.parametrize(
    "options, expected",
    [
        ({"size": (0, 3)}, "read_images(size=(0, 3)); pass (height, width) as two positive integers"),
        ({"size": (3,)}, "read_images(size=(3,)); pass (height, width)"),
        ({"size": "big"}, "read_images(size='big'); pass (height, width)"),
        ({"size": (2.5, 3)}, "read_images(size=(2.5, 3))"),
        ({"mode": "XYZ"}, "read_images(mode='XYZ') is not a Pillow image mode; pass one of 1, CMYK"),
        ({"mode": 3}, "read_images(mode=3) is not a Pillow image mode"),
    ],
)
def test_read_images_checks_size_and_mode_at_the_call(images, options, expected):
    assert expected in _one_line(lambda: ember.data.read_images(str(images), **options), ConfigError)


def test_read_images_resizes_then_converts_as_ray_does(images):
    row = ember.data.read_images(str(images), size=(2, 3), mode="L").take_all()[0]
    with Image.open(images / "a.png") as image:
        expected = np.asarray(image.resize((3, 2), resample=Image.BILINEAR).convert("L"))
    assert row["image"].shape == (2, 3) and np.array_equal(row["image"], expected)


def test_a_decompression_bomb_is_refused_in_one_line(images):
    """A PNG whose header claims 30000 x 30000 pixels (900 M): Pillow's bomb check, as ember's line."""
    buffer = io.BytesIO()
    Image.fromarray(np.zeros((4, 4), np.uint8)).save(buffer, "PNG")
    raw = bytearray(buffer.getvalue())
    raw[16:24] = struct.pack(">II", 30000, 30000)  # IHDR width, height
    raw[29:33] = struct.pack(">I", zlib.crc32(bytes(raw[12:29])))  # its checksum
    bomb = images / "bomb.png"
    bomb.write_bytes(bytes(raw))
    text = _one_line(lambda: ember.data.read_images(str(images)).take_all())
    assert f"read_images: {bomb} is refused as a decompression bomb" in text
    assert "raise PIL.Image.MAX_IMAGE_PIXELS" in text
