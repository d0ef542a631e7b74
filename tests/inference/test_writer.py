"""The resumable parquet sink on its own: atomic files,
orphans adopted, leftovers cleaned, jobs kept apart."""

from __future__ import annotations

import json
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ember.data.write_resumable import MANIFEST, ResumableParquetWriter
from ember.errors import DataError

INPUTS = ["a.parquet", "b.parquet", "c.parquet"]


def killed_here(*args, **kwargs):
    raise SystemExit("killed")


def dead_pid():
    """The pid of a process that has exited (its temporary files are a killed writer's leftovers)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_resume_skips_finished_fragments_and_adopts_files_the_manifest_missed(tmp_path):
    writer = ResumableParquetWriter(tmp_path, INPUTS, {"model": "v1"})
    writer.write(0, pa.table({"y": [1, 2]}))
    # killed after renaming part-00001 into place but before the manifest recorded it
    writer._save = killed_here
    with pytest.raises(SystemExit):
        writer.write(1, pa.table({"y": [3]}))
    assert (tmp_path / "part-00001.parquet").exists()
    (tmp_path / f".part-00002.parquet.{dead_pid()}.x1y2z3.ember-tmp").write_bytes(b"half a file")
    resumed = ResumableParquetWriter(tmp_path, INPUTS, {"model": "v1"})
    assert resumed.todo() == [2] and resumed.adopted == [1]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "_manifest.json",
        "part-00000.parquet",
        "part-00001.parquet",
    ]
    resumed.write(2, None)  # an empty fragment: done, no file
    resumed.finish()
    manifest = json.loads((tmp_path / MANIFEST).read_text())
    assert manifest["complete"] and manifest["rows"] == 3
    assert pq.read_table(tmp_path)["y"].to_pylist() == [1, 2, 3]
    with pytest.raises(DataError, match="already written; it would duplicate rows"):
        resumed.write(0, pa.table({"y": [1, 2]}))


def test_other_inputs_or_another_job_are_refused_and_overwrite_starts_over(tmp_path):
    ResumableParquetWriter(tmp_path, INPUTS, {"model": "v1"}).write(0, pa.table({"y": [1]}))
    with pytest.raises(DataError, match=r"different job \(model changed\)"):
        ResumableParquetWriter(tmp_path, INPUTS, {"model": "v2"})
    with pytest.raises(DataError, match="holds results for other inputs"):
        ResumableParquetWriter(tmp_path, INPUTS[:2], {"model": "v1"})
    fresh = ResumableParquetWriter(tmp_path, INPUTS, {"model": "v2"}, overwrite=True)
    assert fresh.todo() == [0, 1, 2] and not (tmp_path / "part-00000.parquet").exists()


def test_foreign_part_files_without_a_manifest_are_not_overwritten_silently(tmp_path):
    pq.write_table(pa.table({"y": [1]}), tmp_path / "part-00000.parquet")
    before = (tmp_path / "part-00000.parquet").read_bytes()
    for overwrite in (False, True):
        with pytest.raises(DataError, match=r"holds files ember did not write \('part-00000.parquet'\)"):
            ResumableParquetWriter(tmp_path, INPUTS, overwrite=overwrite)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["part-00000.parquet"]
    assert (tmp_path / "part-00000.parquet").read_bytes() == before


def test_a_planted_symlink_never_redirects_a_write(tmp_path):
    """The old predictable temporary names (.part-00000.parquet.tmp-<pid>) were followed;
    ember.fs.atomic_write's are not."""
    import os

    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    out = tmp_path / "out"
    writer = ResumableParquetWriter(out, INPUTS, {"model": "v1"})
    for name in (
        f".part-00000.parquet.tmp-{os.getpid()}",
        f"._manifest.json.tmp-{os.getpid()}",
        f".part-00000.parquet.{os.getpid()}.ember-tmp",
    ):
        (out / name).symlink_to(victim)
    writer.write(0, pa.table({"y": [1, 2]}))
    writer.write(1, pa.table({"y": [3]}))
    assert victim.read_text() == "precious"
    assert not (out / "part-00000.parquet").is_symlink() and pq.read_table(out)["y"].to_pylist() == [1, 2, 3]


def test_input_files_changed_or_an_older_manifest_are_refused(tmp_path):
    files = [
        {"path": "/data/a.parquet", "bytes": 10, "mtime_ns": 1},
        {"path": "/data/b.parquet", "bytes": 20, "mtime_ns": 2},
    ]
    ResumableParquetWriter(tmp_path, INPUTS, {"model": "v1"}, input_files=files).write(
        0, pa.table({"y": [1]})
    )
    assert ResumableParquetWriter(tmp_path, INPUTS, {"model": "v1"}, input_files=files).todo() == [1, 2]
    touched = [files[0], {**files[1], "mtime_ns": 3}]
    with pytest.raises(
        DataError, match=r"input files changed since .* \(/data/b.parquet was modified\); resuming would mix"
    ):
        ResumableParquetWriter(tmp_path, INPUTS, {"model": "v1"}, input_files=touched)
    with pytest.raises(DataError, match=r"\(/data/b.parquet is gone\)"):
        ResumableParquetWriter(tmp_path, INPUTS, {"model": "v1"}, input_files=files[:1])
    fresh = ResumableParquetWriter(tmp_path, INPUTS, {"model": "v1"}, input_files=touched, overwrite=True)
    assert fresh.todo() == [0, 1, 2]

    manifest = json.loads((tmp_path / MANIFEST).read_text())  # as an ember without fingerprints wrote it
    del manifest["input_files_sha256"]
    (tmp_path / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(DataError, match="older ember that did not record its input files"):
        ResumableParquetWriter(tmp_path, INPUTS, {"model": "v1"}, input_files=touched)
