"""The resumable parquet sink on its own: atomic files, orphans adopted, leftovers cleaned, jobs kept apart."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ember.data.write_resumable import MANIFEST, ResumableParquetWriter
from ember.errors import DataError

INPUTS = ["a.parquet", "b.parquet", "c.parquet"]


def test_resume_skips_finished_fragments_and_adopts_files_the_manifest_missed(tmp_path):
    writer = ResumableParquetWriter(tmp_path, INPUTS, {"model": "v1"})
    writer.write(0, pa.table({"y": [1, 2]}))
    # killed after renaming part-00001 into place but before the manifest recorded it
    pq.write_table(pa.table({"y": [3]}), tmp_path / "part-00001.parquet")
    (tmp_path / ".part-00002.parquet.tmp-999").write_bytes(b"half a file")
    resumed = ResumableParquetWriter(tmp_path, INPUTS, {"model": "v1"})
    assert resumed.todo() == [2] and resumed.adopted == [1]
    assert not (tmp_path / ".part-00002.parquet.tmp-999").exists()
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
    with pytest.raises(DataError, match="no _manifest.json; they were not written by a resumable job"):
        ResumableParquetWriter(tmp_path, INPUTS)
