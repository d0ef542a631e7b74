"""The one atomic-write helper: complete files or none, no link followed, stale temporaries removed."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ember.fs import atomic_write, is_temporary, remove_stale_temporaries


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "data.bin"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError), atomic_write(target) as f:
        f.write(b"half")
        raise RuntimeError("disk on fire")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["data.bin"]


def test_a_planted_symlink_at_the_final_name_is_replaced_not_followed(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "result.txt").symlink_to(victim)
    with atomic_write(tmp_path / "out" / "result.txt", "w") as f:
        f.write("new")
    assert victim.read_text() == "precious"
    assert not (tmp_path / "out" / "result.txt").is_symlink()
    assert (tmp_path / "out" / "result.txt").read_text() == "new"


def test_temporary_names_are_unpredictable_and_created_exclusively(tmp_path):
    seen = set()
    for _ in range(3):
        with atomic_write(tmp_path / "x", "w"):
            (name,) = [p.name for p in tmp_path.iterdir() if p.name != "x"]
            assert is_temporary(name)
            seen.add(name)
    assert len(seen) == 3


def test_stale_temporaries_of_dead_writers_are_removed_and_live_ones_kept(tmp_path):
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    dead_pid = int(dead.stdout)
    stale = tmp_path / f".last.ckpt.{dead_pid}.abc123{'.ember-tmp'}"
    live = tmp_path / f".last.ckpt.{os.getpid()}.def456.ember-tmp"
    users = tmp_path / ".last.ckpt.tmp"  # not ours: never touched
    for p in (stale, live, users):
        p.write_bytes(b"x")
    assert remove_stale_temporaries(tmp_path) == [stale]
    assert live.exists() and users.exists() and not stale.exists()


def test_remote_filesystems_get_the_object_whole(tmp_path):
    import pyarrow.fs as pafs

    fs = pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem())
    with atomic_write("a.txt", "w", filesystem=fs) as f:
        f.write("remote")
    assert (tmp_path / "a.txt").read_text() == "remote"


def test_appending_never_follows_a_link_planted_at_the_log_name(tmp_path):
    from ember.errors import EmberError
    from ember.fs import open_for_append

    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (tmp_path / "metrics.csv").symlink_to(victim)
    with pytest.raises(EmberError, match="metrics.csv is a symbolic link"):
        open_for_append(tmp_path / "metrics.csv")
    assert victim.read_text() == "precious"


def test_the_csv_logger_refuses_a_planted_metrics_link(tmp_path):
    from ember.errors import EmberError
    from ember.loggers import CSVLogger

    logger = CSVLogger(tmp_path, name="run", version=0)
    logger.log_metrics({"loss": 1.0}, step=0)
    logger.save()
    metrics = next(tmp_path.rglob("metrics.csv"))
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    metrics.unlink()
    metrics.symlink_to(victim)  # planted mid-run: the logger's next save appends to metrics.csv
    logger.log_metrics({"loss": 0.5}, step=1)
    with pytest.raises(EmberError, match="symbolic link"):
        logger.save()
    assert victim.read_text() == "precious"
