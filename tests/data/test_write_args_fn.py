"""The writers' ``*_args_fn`` (Ray 2.60): write arguments computed per file, their entries winning over
the keyword ones; write_json's pandas arguments. Compared byte for byte with Ray's files."""

from __future__ import annotations

import glob
import os

import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

import ember.data
from ember.errors import ConfigError

ROWS = [{"a": i, "b": i / 3, "s": f"x{i}"} for i in range(7)]


def _written(folder):
    return sorted(f for f in glob.glob(os.path.join(folder, "*")) if not os.path.basename(f).startswith("_"))


def _texts(folder):
    return [open(f).read() for f in _written(folder)]


CASES = [
    ("csv", {"arrow_csv_args_fn": lambda: {"write_options": pacsv.WriteOptions(delimiter=";")}}),
    ("json", {"pandas_json_args_fn": lambda: {"double_precision": 3}}),
    ("json", {"double_precision": 5, "pandas_json_args_fn": lambda: {"double_precision": 2}}),  # the fn wins
    ("json", {"orient": "records", "lines": True, "double_precision": 1}),
]


@pytest.mark.parametrize(("fmt", "kwargs"), CASES)
def test_files_match_rays_byte_for_byte(local_ray, tmp_path, fmt, kwargs):
    ray = local_ray
    theirs, ours = tmp_path / "ray", tmp_path / "ember"
    getattr(ray.data.from_items(ROWS).repartition(1), f"write_{fmt}")(str(theirs), **kwargs)
    getattr(ember.data.from_items(ROWS), f"write_{fmt}")(str(ours), **kwargs)
    assert _texts(ours) == _texts(theirs) and len(_texts(ours)) == 1


def test_arrow_parquet_args_fn_is_called_per_file_and_wins(tmp_path):
    calls = []

    def args():
        calls.append(1)
        return {"compression": "zstd"}

    files = ember.data.range(10).write_parquet(
        str(tmp_path), compression="snappy", max_rows_per_file=5, arrow_parquet_args_fn=args
    )
    assert len(files) == 2 and len(calls) == 2
    for f in files:
        assert pq.ParquetFile(f).metadata.row_group(0).column(0).compression == "ZSTD"
    assert ember.data.read_parquet(str(tmp_path)).take_all() == ember.data.range(10).take_all()


def test_write_json_keeps_its_own_writer_without_pandas_arguments(tmp_path):
    ember.data.from_items([{"v": [1, 2]}]).write_json(
        str(tmp_path), concurrency=2
    )  # scheduling-only: accepted
    assert _texts(tmp_path) == ['{"v": [1, 2]}\n']


def test_a_misspelled_pandas_argument_is_refused_before_writing(tmp_path):
    with pytest.raises(ConfigError, match="no argument 'double_precisio'; did you mean 'double_precision'"):
        ember.data.range(2).write_json(str(tmp_path / "out"), double_precisio=2)
    assert not (tmp_path / "out").exists()
