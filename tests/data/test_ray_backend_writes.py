"""Writes with execution="ray": each Ray task writes its own files; the driver only commits.

Every format goes through one mechanism (``ember/data/write_run.py``): the driver plans the files
from Ray's block references and row counts, Ray tasks write them, the manifest commits them. The
result must be the files a local write of the same data makes -- same names, same rows in each,
same manifest guarantees -- and the blocks must never pass through the driver.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3

os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # read when Ray is first imported
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import numpy as np  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
import pytest  # noqa: E402

import ember.data  # noqa: E402
from ember.errors import DataError  # noqa: E402
from tests.data._ray_sinks import SQLiteSink  # noqa: E402  (importable by Ray's workers, unlike this module)

ray = pytest.importorskip("ray")


@pytest.fixture
def on_ray(ray_execution):
    return ray_execution


def rows(n: int = 50, blocks: int = 4) -> ember.data.Dataset:
    data = [{"id": i, "x": i * 0.5, "name": f"r{i}", "v": np.full(3, i, np.float32)} for i in range(n)]
    return ember.data.from_items(data, override_num_blocks=blocks).map_batches(lambda b: b, batch_size=None)


def folder_contents(folder) -> dict[str, bytes]:
    """Every data file of a folder (not the manifest) by name, with its bytes."""
    return {
        name: (folder / name).read_bytes() for name in sorted(os.listdir(folder)) if not name.startswith("_")
    }


def committed(folder) -> list[str]:
    manifest = json.loads((folder / "_ember_write.json").read_text())
    return [name for w in manifest["writes"] if w["state"] == "committed" for name in w["files"]]


@pytest.mark.parametrize(
    "writer, options",
    [
        ("write_parquet", {}),
        ("write_parquet", {"min_rows_per_file": 15}),
        ("write_parquet", {"max_rows_per_file": 5}),
        ("write_csv", {"min_rows_per_file": 20}),
        ("write_json", {}),
        ("write_numpy", {"column": "v"}),
        ("write_tfrecords", {}),
        ("write_orc", {}),
        ("write_webdataset", {}),
        ("write_images", {"column": "image"}),
    ],
)
def test_each_format_written_by_ray_tasks_equals_the_local_write(on_ray, tmp_path, writer, options):
    ds = rows() if writer in ("write_parquet", "write_json", "write_numpy") else rows().drop_columns(["v"])
    if writer == "write_webdataset":
        ds = ds.map(lambda r: {"__key__": f"k{r['id']}", "txt": r["name"], "cls": r["id"]})
    if writer == "write_images":
        ds = rows(6, 2).map(lambda r: {"image": np.full((4, 4, 3), r["id"], np.uint8)})
    local = getattr(ds, writer)(str(tmp_path / "local"), **options)
    remote = on_ray(lambda: getattr(ds, writer)(str(tmp_path / "ray"), **options))
    assert [os.path.basename(f) for f in remote] == [os.path.basename(f) for f in local]
    assert folder_contents(tmp_path / "ray") == folder_contents(tmp_path / "local")  # byte for byte
    assert committed(tmp_path / "ray") == committed(tmp_path / "local")


def test_the_blocks_are_written_on_ray_not_on_the_driver(on_ray, tmp_path, caplog):
    driver_pid = os.getpid()

    def record_pid(block, f):  # a writer that notes which process wrote the file
        import pyarrow.parquet as pq_

        pq_.write_table(block.append_column("pid", [[os.getpid()] * block.num_rows]), f)

    import ember.data.write as sinks

    ds = rows()
    with caplog.at_level(logging.DEBUG, logger="ember.data.write"):
        on_ray(lambda: sinks.write_blocks(ds._write_input(), str(tmp_path / "out"), "parquet", record_pid))
    pids = set(pq.read_table(tmp_path / "out").column("pid").to_pylist())
    assert pids and driver_pid not in pids
    assert len([r for r in caplog.records if "written on Ray node" in r.getMessage()]) == 4


def test_modes_and_the_manifest_on_ray_match_a_local_write(on_ray, tmp_path):
    out = tmp_path / "out"
    on_ray(lambda: rows(10, 2).write_parquet(str(out)))
    on_ray(lambda: rows(6, 1).write_parquet(str(out)))  # append: new numbers, beside the first write
    assert sorted(os.listdir(out)) == [
        "_ember_write.json",
        "part-00000.parquet",
        "part-00001.parquet",
        "part-00002.parquet",
    ]
    assert on_ray(lambda: rows(3, 1).write_parquet(str(out), mode="ignore")) == []
    with pytest.raises(DataError, match="already exists"):
        on_ray(lambda: rows(3, 1).write_parquet(str(out), mode="error"))
    on_ray(lambda: rows(4, 1).write_parquet(str(out), mode="overwrite"))
    assert ember.data.read_parquet(str(out)).count() == 4
    assert committed(out) == ["part-00003.parquet"]


def test_a_task_that_fails_leaves_the_folder_as_it_was(on_ray, tmp_path):
    out = tmp_path / "out"
    rows(10, 2).write_parquet(str(out))
    before = folder_contents(out)

    def fails_on_big_ids(batch):
        if batch["id"].max() >= 30:
            raise ValueError("bad batch")
        return batch

    broken = rows(50, 5).map_batches(fails_on_big_ids, batch_size=None)
    with pytest.raises(Exception, match="bad batch"):
        on_ray(lambda: broken.write_parquet(str(out)))
    assert folder_contents(out) == before  # no file of the failed write is left, the first one is intact
    assert ember.data.read_parquet(str(out)).count() == 10


def test_a_failing_write_task_takes_back_every_file_of_its_write(on_ray, tmp_path):
    def fails_in_the_third_file(block, f):
        if block.column("id")[0].as_py() >= 20:
            raise OSError(28, "No space left on device")
        pq.write_table(block, f)

    import ember.data.write as sinks

    out = tmp_path / "out"
    with pytest.raises(Exception, match="No space left"):
        on_ray(
            lambda: sinks.write_blocks(
                rows(40, 4)._write_input(), str(out), "parquet", fails_in_the_third_file
            )
        )
    assert folder_contents(out) == {}
    assert json.loads((out / "_ember_write.json").read_text())["writes"] == []


def test_filename_provider_and_compression_on_ray_equal_the_local_write(on_ray, tmp_path):
    class Named(ember.data.FilenameProvider):
        def get_filename_for_task(self, write_uuid, task_index):
            return f"scores_{task_index:03d}.csv.gz"

    ds = rows(30, 3).drop_columns(["v"])
    local = ds.write_csv(str(tmp_path / "local"), filename_provider=Named())
    remote = on_ray(lambda: ds.write_csv(str(tmp_path / "ray"), filename_provider=Named()))
    assert (
        [os.path.basename(f) for f in remote]
        == [os.path.basename(f) for f in local]
        == ["scores_000.csv.gz", "scores_001.csv.gz", "scores_002.csv.gz"]
    )
    assert folder_contents(tmp_path / "ray") == folder_contents(tmp_path / "local")
    import gzip

    assert gzip.decompress((tmp_path / "ray" / "scores_001.csv.gz").read_bytes()).startswith(
        b'"id","x","name"'
    )


def table_rows(path):
    with sqlite3.connect(path) as db:
        return db.execute("SELECT id, name FROM t ORDER BY id").fetchall()


@pytest.mark.parametrize("where", ["local", "ray"])
def test_a_sqlite_datasink_runs_locally_and_on_ray(on_ray, tmp_path, where):
    sink = SQLiteSink(str(tmp_path / "db.sqlite"))
    ds = rows(20, 4)
    if where == "ray":
        on_ray(lambda: ds.write_datasink(sink))
    else:
        ds.write_datasink(sink)
    assert table_rows(sink.path) == [(i, f"r{i}") for i in range(20)]
    assert sink.started == ["id", "x", "name", "v"]
    result = sink.completed
    assert result.num_rows == 20 and [n for _, n, _ in result.write_returns] == [5, 5, 5, 5]
    assert [name.rsplit("_", 1)[1] for name, _, _ in result.write_returns] == ["0", "1", "2", "3"]  # task_idx
    assert ({pid for _, _, pid in result.write_returns} != {os.getpid()}) == (where == "ray")


def test_a_failing_datasink_write_calls_on_write_failed(on_ray, tmp_path):
    class Failing(SQLiteSink):
        def write(self, blocks, ctx):
            if ctx.task_idx == 2:
                raise ValueError("task 2 failed")
            return super().write(blocks, ctx)

    for run in (lambda f: f(), on_ray):
        sink = Failing(str(tmp_path / f"db{id(run)}.sqlite"))
        with pytest.raises(Exception, match="task 2 failed"):
            run(lambda sink=sink: rows(20, 4).write_datasink(sink))
        assert sink.completed is None and "task 2 failed" in str(sink.failed)


KILLED_DRIVER = """
import os, sys, time
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
import ray
import pyarrow.parquet as pq
import ember.data
import ember.data.write as sinks

ray.init(address=sys.argv[1], log_to_driver=False)
ember.data.DataContext.get_current().execution = "ray"

# in a Ray task: files 0-4 written, the rest wait
def slow_after_five_files(block, f, pause=float(sys.argv[3])):
    if block.column("id")[0].as_py() >= 500:
        time.sleep(pause)
    pq.write_table(block, f)

ds = ember.data.range(1000, override_num_blocks=10).map_batches(lambda b: b, batch_size=None)
sinks.write_blocks(ds._write_input(), sys.argv[2], "parquet", slow_after_five_files, mode="overwrite")
"""


@pytest.mark.slow
def test_a_driver_killed_mid_write_on_ray_leaves_a_pending_write_that_overwrite_replaces(local_ray, tmp_path):
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "out"
    ember.data.range(30, override_num_blocks=3).write_parquet(str(out))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")])}
    address = local_ray.get_runtime_context().gcs_address
    driver = subprocess.Popen([sys.executable, "-c", KILLED_DRIVER, address, str(out), "8"], env=env)
    try:
        deadline = time.monotonic() + 120
        while len(list(out.glob("part-*.parquet"))) < 3 + 5:  # the first write's 3 and the Ray tasks' first 5
            assert driver.poll() is None, "the driver ended before it was killed"
            assert time.monotonic() < deadline, "the Ray tasks wrote no files"
            time.sleep(0.05)
    finally:
        driver.send_signal(signal.SIGKILL)
        driver.wait()
    with pytest.raises(DataError, match="did not finish"):
        ember.data.read_parquet(str(out))
    ember.data.range(7).write_parquet(str(out), mode="overwrite")
    time.sleep(
        10
    )  # the killed driver's sleeping tasks (8 s) never add a file: Ray ended them with their driver
    assert sorted(ember.data.read_parquet(str(out)).to_pandas()["id"]) == list(range(7))
    visible = [n for n in os.listdir(out) if not n.startswith(("_", "."))]
    # one file: the killed write's files (its writer is gone) were ember's own and went with the overwrite
    assert len(visible) == 1 and visible[0].startswith("part-")
    # a task killed with its driver may leave a temporary (hidden from readers); the next write removes it
    ember.data.range(1).write_parquet(str(out))
    after = sorted(n for n in os.listdir(out) if not n.startswith("_"))
    assert len(after) == 2 and visible[0] in after


def test_an_empty_dataset_commits_an_empty_write_on_ray_as_locally(on_ray, tmp_path):
    empty = rows(10, 2).filter(lambda r: r["id"] < 0)
    assert (
        on_ray(lambda: empty.write_parquet(str(tmp_path / "ray")))
        == empty.write_parquet(str(tmp_path / "l"))
        == []
    )
    assert committed(tmp_path / "ray") == committed(tmp_path / "l") == []
