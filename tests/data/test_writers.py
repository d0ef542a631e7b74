"""Writers: Ray's save modes, a manifest that commits each write, atomic files, and no planted link followed.

Whatever the mode, a reader never sees two writes mixed or part of one, and a user's own files in the
target folder are never overwritten or deleted.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ember.data
from ember.data import SaveMode
from ember.errors import ConfigError, DataError

MANIFEST = "_ember_write.json"


def ids(folder) -> list[int]:
    return sorted(r["id"] for r in ember.data.read_parquet(folder).take_all())


def visible(folder) -> list[str]:
    return sorted(p.name for p in Path(folder).iterdir() if not p.name.startswith("."))


def test_a_second_smaller_write_never_reads_back_as_a_mix(tmp_path):
    # Before: 10 files of 10 rows, then 3 files of 10 rows over part-00000..00002: 100 rows, 70 old + 30 new.
    ember.data.range(100, override_num_blocks=10).write_parquet(tmp_path)
    new = ember.data.range(30, override_num_blocks=3).map(lambda r: {"id": r["id"] + 1000})
    new.write_parquet(tmp_path, mode="overwrite")
    assert ids(tmp_path) == list(range(1000, 1030))
    assert visible(tmp_path) == [MANIFEST, "part-00010.parquet", "part-00011.parquet", "part-00012.parquet"]


def test_append_is_rays_default_and_keeps_both_complete_writes(tmp_path):
    ember.data.range(100, override_num_blocks=10).write_parquet(tmp_path)
    ember.data.range(30, override_num_blocks=3).map(lambda r: {"id": r["id"] + 1000}).write_parquet(tmp_path)
    assert ids(tmp_path) == list(range(100)) + list(range(1000, 1030))
    writes = json.loads((tmp_path / MANIFEST).read_text())["writes"]
    assert [(w["state"], len(w["files"]), w["rows"]) for w in writes] == [
        ("committed", 10, 100),
        ("committed", 3, 30),
    ]


def test_ignore_and_error_modes_look_at_whether_the_folder_exists(tmp_path):
    ember.data.range(5).write_parquet(tmp_path / "a")
    before = (tmp_path / "a" / "part-00000.parquet").read_bytes()
    assert ember.data.range(9).write_parquet(tmp_path / "a", mode=SaveMode.IGNORE) == []
    with pytest.raises(
        DataError,
        match=r"a already exists \(mode='error'\); write to a new folder, or pass "
        r"mode='append' or mode='overwrite'$",
    ):
        ember.data.range(9).write_parquet(tmp_path / "a", mode="error")
    assert (tmp_path / "a" / "part-00000.parquet").read_bytes() == before
    assert ids(tmp_path / "a") == list(range(5))
    assert len(ember.data.range(2).write_json(tmp_path / "new", mode="error")) == 1


def test_rays_own_savemode_enum_is_accepted(tmp_path):
    ray_data = pytest.importorskip("ray.data")
    ember.data.range(5).write_parquet(tmp_path)
    ember.data.range(2).write_parquet(tmp_path, mode=ray_data.SaveMode.OVERWRITE)
    assert ids(tmp_path) == [0, 1]
    assert [m.value for m in SaveMode] == ["append", "overwrite", "ignore", "error"]
    assert ray_data.SaveMode.APPEND.value == SaveMode.APPEND.value


def test_an_unknown_mode_is_one_line_before_any_work(tmp_path):
    with pytest.raises(
        ConfigError,
        match=r"^Dataset\.write_csv\(mode='replace'\); use one of 'append', 'overwrite', "
        r"'ignore', 'error' \(or ember.data.SaveMode\)$",
    ):
        ember.data.range(3).write_csv(tmp_path / "out", mode="replace")
    assert not (tmp_path / "out").exists()


def test_a_users_own_files_are_never_overwritten_or_deleted(tmp_path):
    mine = pa.table({"id": [-1, -2]})
    pq.write_table(mine, tmp_path / "part-00000.parquet")
    (tmp_path / "notes.txt").write_text("mine")
    before = (tmp_path / "part-00000.parquet").read_bytes()
    # append: ember's files take free names; the user's file is still read, untouched
    files = ember.data.range(3).write_parquet(tmp_path)
    assert [Path(f).name for f in files] == ["part-00001.parquet"]
    assert (tmp_path / "part-00000.parquet").read_bytes() == before
    assert ids(tmp_path) == [-2, -1, 0, 1, 2]
    # overwrite: refused in one line, nothing removed
    with pytest.raises(
        DataError,
        match=r"mode='overwrite'\): .* holds files ember did not write \(notes.txt, "
        r"part-00000.parquet\); overwrite only removes ember's own files",
    ):
        ember.data.range(4).write_parquet(tmp_path, mode="overwrite")
    assert (tmp_path / "part-00000.parquet").read_bytes() == before
    assert (tmp_path / "notes.txt").read_text() == "mine"
    assert ids(tmp_path) == [-2, -1, 0, 1, 2]
    # a subfolder is read too, so it blocks an overwrite as well
    other = tmp_path.parent / f"{tmp_path.name}-2"
    ember.data.range(3).write_parquet(other)
    (other / "old").mkdir()
    pq.write_table(mine, other / "old" / "data.parquet")
    with pytest.raises(DataError, match=r"holds files ember did not write \(old\)"):
        ember.data.range(4).write_parquet(other, mode="overwrite")


def test_a_failing_write_takes_back_its_files_and_leaves_the_previous_write(tmp_path):
    ember.data.range(20, override_num_blocks=2).write_parquet(tmp_path)

    def explode(batch):
        if batch["id"][0] >= 10:
            raise RuntimeError("boom")
        return batch

    failing = ember.data.range(20, override_num_blocks=2).map_batches(explode, batch_size=10)
    with pytest.raises(DataError, match="boom"):
        failing.write_parquet(tmp_path, mode="overwrite")
    assert ids(tmp_path) == list(range(20))
    assert visible(tmp_path) == [MANIFEST, "part-00000.parquet", "part-00001.parquet"]


def test_planted_symlinks_never_redirect_a_write(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    out = tmp_path / "out"
    out.mkdir()
    pid = os.getpid()
    # the old predictable temporary names, for this and the next pids, and the manifest's
    for name in [f".part-{i:05d}.parquet.tmp-{p}" for i in range(3) for p in range(pid, pid + 3)]:
        (out / name).symlink_to(victim)
    (out / f".{MANIFEST}.tmp-{pid}").symlink_to(victim)
    files = ember.data.range(30, override_num_blocks=3).write_parquet(out)
    assert victim.read_text() == "precious"
    assert ids(out) == list(range(30))
    # a link at a final name is replaced by the rename, never written through
    (out / "part-00003.parquet").unlink(missing_ok=True)
    (out / "part-00003.parquet").symlink_to(victim)
    ember.data.range(1).write_json(tmp_path / "j")
    (tmp_path / "j" / "part-00001.json").symlink_to(victim)
    assert [Path(f).name for f in ember.data.range(1).write_json(tmp_path / "j")] == ["part-00002.json"]
    assert victim.read_text() == "precious"
    assert len(files) == 3


def test_a_link_planted_at_the_next_final_name_after_listing_is_replaced_not_followed(tmp_path, monkeypatch):
    import ember.data.write as sinks

    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    out = tmp_path / "out"
    real = sinks._FolderWrite.job

    def plant_then_job(self, index, *args):
        if index == 0:  # after the folder was listed, before the first file
            (Path(self.directory) / f"part-{self.first:05d}.{self.extension}").symlink_to(victim)
        return real(self, index, *args)

    monkeypatch.setattr(sinks._FolderWrite, "job", plant_then_job)
    ember.data.range(4).write_parquet(out)
    assert victim.read_text() == "precious"
    assert not (out / "part-00000.parquet").is_symlink()
    assert ids(out) == [0, 1, 2, 3]


WRITER = textwrap.dedent("""
    import sys, time
    import ember.data

    ember.data.DataContext.get_current().execution = "inline"

    def slow(batch):
        if batch["id"][0] >= 5000:
            time.sleep(600)  # the parent SIGKILLs us here, after five files
        return batch

    ember.data.range(10000, override_num_blocks=10).map_batches(slow, batch_size=1000).write_parquet(
        sys.argv[1], mode=sys.argv[2])
""")


def kill_mid_write(folder: Path, mode: str) -> None:
    process = subprocess.Popen([sys.executable, "-c", WRITER, str(folder), mode])
    try:
        deadline = time.monotonic() + 60
        while len(list(folder.glob("part-*.parquet"))) < 5 + (mode == "overwrite") * 3:
            assert process.poll() is None, "the writer ended before it was killed"
            assert time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()


@pytest.mark.slow
def test_sigkill_in_the_middle_of_a_write_is_a_one_line_error_never_partial_rows(tmp_path):
    folder = tmp_path / "out"
    ember.data.range(30, override_num_blocks=3).write_parquet(folder)
    kill_mid_write(folder, "overwrite")
    message = (
        r"^read_parquet: the last write into .*out did not finish \(it was killed, or process \d+ is still "
        r"writing\), so the folder holds part of its rows; write it again with mode='overwrite'$"
    )
    with pytest.raises(DataError, match=message):
        ember.data.read_parquet(folder)
    with pytest.raises(DataError, match=message):
        ember.data.read_parquet(str(folder / "*.parquet"))
    # the killed write's files are ember's own: the next write (append) removes them first, and the committed
    # write before it stays (docs/safety.md, "A killed write does not block its re-run")
    ember.data.range(3).write_parquet(folder)
    assert ids(folder) == sorted([*range(30), *range(3)])
    # overwrite replaces the killed write and the one before it; the killed writer's temporaries go too
    ember.data.range(7).write_parquet(folder, mode="overwrite")
    assert ids(folder) == list(range(7))
    assert [n for n in os.listdir(folder) if n.startswith(".")] == []


def test_a_read_only_folder_is_one_line_and_nothing_changes():
    from _privileges import in_a_child_without_root

    folder = tempfile.mkdtemp(dir="/tmp")  # outside pytest's root-only tmp_path, so the child can enter it
    try:
        ember.data.range(5).write_parquet(folder)
        os.chmod(folder, 0o555)
        before = sorted(os.listdir(folder))
        outcome = in_a_child_without_root(lambda: ember.data.range(3).write_parquet(folder))
        assert outcome == (
            f"DataError: Dataset.write_parquet: cannot write into {folder} (Permission denied); free "
            "some space or fix the folder's permissions, or write elsewhere"
        )
        assert sorted(os.listdir(folder)) == before
        assert ids(folder) == list(range(5))
    finally:
        os.chmod(folder, 0o755)
        shutil.rmtree(folder)


@pytest.fixture
def small_disk(tmp_path):
    """A 1 MiB tmpfs (needs root: mount)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs to fill needs root")
    mountpoint = tmp_path / "small"
    mountpoint.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mountpoint)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    yield mountpoint
    subprocess.run(["umount", str(mountpoint)], check=True)


def test_a_full_disk_is_one_line_and_the_previous_write_stays_readable(small_disk):
    out = small_disk / "out"
    ember.data.range(100).write_parquet(out)
    big = ember.data.range_tensor(64, shape=(64, 64), override_num_blocks=8).map_batches(
        lambda b: {
            "data": b["data"].astype(np.float64) + np.random.default_rng(0).random((len(b["data"]), 64, 64))
        }
    )
    with pytest.raises(
        DataError,
        match=r"^Dataset\.write_parquet: cannot write into .*out \(No space left on "
        r"device\); free some space",
    ):
        big.write_parquet(out, mode="overwrite")
    assert ids(out) == list(range(100))
    assert [n for n in os.listdir(out) if n.startswith(".")] == []


def test_written_files_get_the_permissions_open_would_give(tmp_path):
    # atomic_write's temporary comes from mkstemp (0600): without a chmod every dataset would be private
    old = os.umask(0o022)
    try:
        ember.data.range(3).write_parquet(tmp_path)
    finally:
        os.umask(old)
    assert {stat.S_IMODE(p.stat().st_mode) for p in tmp_path.iterdir()} == {0o644}


def test_a_deleted_part_of_a_committed_write_is_refused_not_read_in_part(tmp_path):
    ember.data.range(30, override_num_blocks=3).write_parquet(tmp_path)
    (tmp_path / "part-00001.parquet").unlink()
    with pytest.raises(
        DataError,
        match=r"^read_parquet: .*part-00001\.parquet is missing, but _ember_write\.json "
        r"lists it as part of a write, so reading would give part of its rows",
    ):
        ember.data.read_parquet(tmp_path)
    ember.data.range(4).write_parquet(tmp_path, mode="overwrite")
    assert ids(tmp_path) == [0, 1, 2, 3]
