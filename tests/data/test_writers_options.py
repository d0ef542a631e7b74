"""Ray's write options: ``filename_provider=``, ``arrow_open_stream_args=``, ``min_bytes_per_file=``, and
the ``Datasink`` plug-in API with a sink written for Ray (``ray.data.Datasink``), run by ember and by Ray."""

from __future__ import annotations

import gzip
import os
import sqlite3
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

import ember.data
from ember.errors import ConfigError, DataError


class Numbered(ember.data.FilenameProvider):
    def get_filename_for_task(self, write_uuid, task_index):
        return f"out_{task_index:06}.{self.file_format}"


def names(files) -> list[str]:
    return [os.path.basename(f) for f in files]


def blocks(n: int = 30, count: int = 3) -> ember.data.Dataset:
    return ember.data.from_items([{"id": i, "x": i * 0.5} for i in range(n)], override_num_blocks=count)


# ---------------------------------------------------------------------- filename_provider


def test_a_provider_names_every_file_and_the_files_read_back(tmp_path):
    files = blocks().write_json(str(tmp_path / "j"), filename_provider=Numbered(file_format="json"))
    assert names(files) == ["out_000000.json", "out_000001.json", "out_000002.json"]
    assert ember.data.read_json(str(tmp_path / "j")).count() == 30


def test_parquet_names_follow_rays_template(tmp_path):
    class WithUuid(ember.data.FilenameProvider):
        def get_filename_for_task(self, write_uuid, task_index):
            return f"out_{write_uuid}_{task_index}.parquet"

    files = blocks(10, 2).write_parquet(str(tmp_path / "p"), filename_provider=WithUuid())
    assert [n.replace(n.split("_")[1], "U") for n in names(files)] == [
        "out_U_0-0.parquet",
        "out_U_1-0.parquet",
    ]
    files = blocks(10, 2).write_parquet(
        str(tmp_path / "q"), filename_provider=Numbered(file_format="parquet"), mode="overwrite"
    )
    assert names(files) == ["out_000000-0.parquet", "out_000001-0.parquet"]  # Ray's "{stem}-{i}{suffix}"


def test_parquet_append_refuses_a_name_without_the_write_uuid_as_ray_does(tmp_path, local_ray):
    with pytest.raises(DataError, match="without the write UUID"):
        blocks(10, 2).write_parquet(str(tmp_path / "p"), filename_provider=Numbered(file_format="parquet"))
    assert [n for n in os.listdir(tmp_path / "p") if not n.startswith("_")] == []

    class Local(ember.data.FilenameProvider):  # defined here: Ray's workers get it by value
        def get_filename_for_task(self, write_uuid, task_index):
            return f"out_{task_index:06}.parquet"

    with pytest.raises(Exception, match="Write UUID .* missing from filename template"):
        local_ray.data.range(10).write_parquet(str(tmp_path / "r"), filename_provider=Local())


def test_the_default_provider_is_rays_naming(tmp_path):
    files = blocks(10, 2).write_csv(
        str(tmp_path / "c"), filename_provider=ember.data.FilenameProvider("ds", "csv")
    )
    uuids = {name.split("_")[1] for name in names(files)}
    assert len(uuids) == 1 and [n.split("_", 2)[2] for n in names(files)] == ["000000.csv", "000001.csv"]
    assert all(n.startswith("ds_") for n in names(files))


def test_images_get_rays_row_file_names(tmp_path):
    ds = ember.data.from_items([{"image": np.full((2, 2, 3), i, np.uint8)} for i in range(2)])
    files = ds.write_images(str(tmp_path / "i"), "image", filename_provider=Numbered(file_format="png"))
    assert names(files) == ["out_000000_000000_000000.png", "out_000001_000000_000000.png"]


def test_a_provider_of_rays_deprecated_methods_only_is_refused():
    class Old(ember.data.FilenameProvider):
        def get_filename_for_block(self, block, write_uuid, task_index, block_index):
            return f"{task_index}.csv"

    with pytest.raises(ConfigError, match="override get_filename_for_task"):
        blocks().write_csv("/tmp/never-written", filename_provider=Old())
    assert not os.path.exists("/tmp/never-written")


@pytest.mark.parametrize(
    "name, problem",
    [
        ("a/b.csv", "without folders"),
        ("_hidden.csv", "hidden"),
        (".dot.csv", "hidden"),
        ("same.csv", "twice"),
    ],
)
def test_a_bad_name_is_refused_and_nothing_is_left(tmp_path, name, problem):
    class Fixed(ember.data.FilenameProvider):
        def get_filename_for_task(self, write_uuid, task_index):
            return name

    with pytest.raises(DataError, match=problem):
        blocks().write_csv(str(tmp_path / "c"), filename_provider=Fixed())
    assert [n for n in os.listdir(tmp_path / "c") if not n.startswith("_")] == []


def test_appending_a_name_already_in_the_folder_is_refused_overwrite_replaces_it(tmp_path):
    out = str(tmp_path / "c")
    blocks(10, 2).write_csv(out, filename_provider=Numbered(file_format="csv"))
    with pytest.raises(DataError, match="already in the folder"):
        blocks(10, 2).write_csv(out, filename_provider=Numbered(file_format="csv"))
    assert ember.data.read_csv(out).count() == 10  # the first write is intact
    blocks(4, 1).write_csv(out, filename_provider=Numbered(file_format="csv"), mode="overwrite")
    assert sorted(n for n in os.listdir(out) if not n.startswith("_")) == ["out_000000.csv"]
    assert ember.data.read_csv(out).count() == 4


def test_partition_cols_with_a_provider_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="partition_cols"):
        blocks().write_parquet(str(tmp_path / "p"), partition_cols=["id"], filename_provider=Numbered())


def test_ember_names_files_as_ray_does_with_the_same_provider(local_ray, tmp_path):
    from ray.data.datasource import FilenameProvider

    class RaysProvider(FilenameProvider):  # written for Ray, used unchanged by ember
        def get_filename_for_task(self, write_uuid, task_index):
            return f"part_{task_index:03d}.csv"

    rows = [{"id": i} for i in range(12)]
    local_ray.data.from_items(rows, override_num_blocks=3).write_csv(
        str(tmp_path / "ray"), filename_provider=RaysProvider()
    )
    ember.data.from_items(rows, override_num_blocks=3).write_csv(
        str(tmp_path / "ember"), filename_provider=RaysProvider()
    )
    ray_files = sorted(n for n in os.listdir(tmp_path / "ray"))
    assert ray_files == sorted(n for n in os.listdir(tmp_path / "ember") if not n.startswith("_"))
    for name in ray_files:  # the same rows in each file
        ours = ember.data.read_csv(str(tmp_path / "ember" / name)).take_all()
        assert ours == ember.data.read_csv(str(tmp_path / "ray" / name)).take_all()


# ---------------------------------------------------------------------- arrow_open_stream_args


def test_compression_is_applied_and_detected_from_the_name(tmp_path):
    files = blocks(5, 1).write_json(str(tmp_path / "j"), arrow_open_stream_args={"compression": "gzip"})
    assert gzip.decompress(Path(files[0]).read_bytes()).startswith(b'{"id": 0')

    class Gz(ember.data.FilenameProvider):
        def get_filename_for_task(self, write_uuid, task_index):
            return f"rows_{task_index}.json.gz"  # pyarrow's "detect": a .gz name is written gzipped

    files = blocks(5, 1).write_json(str(tmp_path / "g"), filename_provider=Gz(), arrow_open_stream_args={})
    assert gzip.decompress(Path(files[0]).read_bytes()).startswith(b'{"id": 0')
    files = blocks(5, 1).write_json(
        str(tmp_path / "n"), filename_provider=Gz(), arrow_open_stream_args={"compression": None}
    )
    assert Path(files[0]).read_bytes().startswith(b'{"id": 0')


@pytest.mark.parametrize(
    "args, match",
    [({"metadata": {"a": "b"}}, "'metadata'"), ({"compression": "zip"}, "'zip'"), ("gzip", "pass a dict")],
)
def test_open_stream_args_ember_cannot_honour_are_refused(tmp_path, args, match):
    with pytest.raises(ConfigError, match=match):
        blocks().write_csv(str(tmp_path / "c"), arrow_open_stream_args=args)
    assert not (tmp_path / "c").exists()


# ---------------------------------------------------------------------- min_bytes_per_file


def test_min_bytes_per_file_combines_whole_blocks_until_the_size(tmp_path):
    ds = ember.data.range(1000, override_num_blocks=10)  # blocks of 100 int64 rows: 800 bytes each
    files = ds.write_parquet(str(tmp_path / "p"), min_bytes_per_file=1700)
    assert [pq.read_metadata(f).num_rows for f in files] == [300, 300, 300, 100]
    assert pq.read_table(tmp_path / "p").column("id").to_pylist() == list(range(1000))


@pytest.mark.parametrize(
    "options, match",
    [
        ({"min_bytes_per_file": 0}, "positive"),
        ({"min_bytes_per_file": 10, "min_rows_per_file": 2}, "cannot be used"),
        ({"min_bytes_per_file": 10, "max_rows_per_file": 2}, "cannot be used"),
    ],
)
def test_min_bytes_per_file_is_checked_as_ray_checks_it(tmp_path, options, match):
    with pytest.raises(ConfigError, match=match):
        blocks().write_parquet(str(tmp_path / "p"), **options)


# ---------------------------------------------------------------------- Datasink


def test_min_rows_per_write_combines_whole_blocks_and_both_targets_are_refused():
    class Sizes(ember.data.Datasink):
        min_rows_per_write = 25

        def write(self, blocks, ctx):
            return [b.num_rows for b in blocks]

        def on_write_complete(self, write_result):
            self.result = write_result

    sink = Sizes()
    ember.data.range(100, override_num_blocks=10).write_datasink(sink)
    assert sink.result.write_returns == [[10, 10, 10]] * 3 + [[10]]
    assert sink.result.num_rows == 100 and sink.result.size_bytes == 800

    class Both(Sizes):
        min_bytes_per_write = 10

    with pytest.raises(ConfigError, match="only one"):
        ember.data.range(10).write_datasink(Both())


def test_a_failing_on_write_complete_calls_on_write_failed():
    class Broken(ember.data.Datasink):
        failed = None

        def write(self, blocks, ctx):
            return None

        def on_write_complete(self, write_result):
            raise RuntimeError("commit failed")

        def on_write_failed(self, error):
            self.failed = error

    sink = Broken()
    with pytest.raises(RuntimeError, match="commit failed"):
        ember.data.range(3).write_datasink(sink)
    assert str(sink.failed) == "commit failed"


def test_a_datasink_written_for_ray_gives_the_same_table_run_by_ember_and_by_ray(local_ray, tmp_path):
    from ray.data import Datasink

    class Insert(Datasink):  # a sink written against Ray's API, used unchanged by ember
        def __init__(self, path):
            self.path = path

        def on_write_start(self, schema=None):
            with sqlite3.connect(self.path) as db:
                db.execute("CREATE TABLE t (id INTEGER, x REAL, task INTEGER)")

        def write(self, blocks, ctx):
            with sqlite3.connect(self.path, timeout=30) as db:
                for block in blocks:
                    db.executemany(
                        "INSERT INTO t VALUES (?, ?, ?)",
                        [(r["id"], r["x"], ctx.task_idx) for r in block.to_pylist()],
                    )
            return ctx.kwargs["write_uuid"]

        def on_write_complete(self, write_result):
            with sqlite3.connect(self.path) as db:
                db.execute("CREATE TABLE done (rows INTEGER, uuids INTEGER)")
                db.execute(
                    "INSERT INTO done VALUES (?, ?)",
                    (
                        int(write_result.num_rows),  # Ray's: numpy
                        len(set(write_result.write_returns)),
                    ),
                )

    rows = [{"id": i, "x": i * 0.5} for i in range(30)]
    local_ray.data.from_items(rows).write_datasink(Insert(str(tmp_path / "ray.db")))
    ember.data.from_items(rows, override_num_blocks=3).write_datasink(Insert(str(tmp_path / "ember.db")))

    def read(path):
        with sqlite3.connect(path) as db:
            return (
                db.execute("SELECT id, x FROM t ORDER BY id").fetchall(),
                db.execute("SELECT * FROM done").fetchall(),
            )

    assert (
        read(tmp_path / "ember.db")
        == read(tmp_path / "ray.db")
        == ([(r["id"], r["x"]) for r in rows], [(30, 1)])
    )


@pytest.mark.parametrize("target", [{"min_rows_per_write": 25}, {"min_bytes_per_write": 200}, {}])
def test_write_calls_get_the_blocks_ray_gives_them(local_ray, target):
    from ray.data import Datasink

    class Sizes(Datasink):
        min_rows_per_write = target.get("min_rows_per_write")
        min_bytes_per_write = target.get("min_bytes_per_write")

        def write(self, blocks, ctx):
            return [len(b) for b in blocks]

        def on_write_complete(self, write_result):
            self.result = (
                write_result.write_returns,
                int(write_result.num_rows),
                int(write_result.size_bytes),
            )

    by_ray, by_ember = Sizes(), Sizes()
    context = local_ray.data.DataContext.get_current()
    before, context.execution_options.preserve_order = context.execution_options.preserve_order, True
    try:
        local_ray.data.range(100, override_num_blocks=10).write_datasink(by_ray)
    finally:
        context.execution_options.preserve_order = before
    ember.data.range(100, override_num_blocks=10).write_datasink(by_ember)
    assert by_ember.result == by_ray.result
