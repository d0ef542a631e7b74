"""ember.fs.storage: paths and URLs to a filesystem, RemotePath, and whole-object writes."""

from __future__ import annotations

from pathlib import Path

import pytest
from _s3 import keys, s3_client

from ember.errors import MalformedURLError
from ember.fs import RemotePath, atomic_write, is_url, resolve, storage_path


def test_local_paths_and_file_urls_are_paths(tmp_path):
    assert storage_path(str(tmp_path)) == tmp_path
    assert storage_path(f"file://{tmp_path}/a") == tmp_path / "a"
    assert storage_path(f"local://{tmp_path}/a") == tmp_path / "a"
    assert isinstance(storage_path("s3://b/k"), RemotePath) and isinstance(
        storage_path("memory://x"), RemotePath
    )
    assert not is_url("relative/dir") and is_url("gs://b/x")


def test_remote_path_names():
    p = storage_path("s3://bucket/runs/version_0/checkpoints/last.ckpt")
    assert (p.name, p.suffix, p.stem) == ("last.ckpt", ".ckpt", "last")
    assert str(p.parent) == "s3://bucket/runs/version_0/checkpoints"
    assert p.parent / "last.ckpt" == p
    assert storage_path("s3://bucket/runs") in p.parents
    assert str(storage_path("s3://bucket/runs/") / "x") == "s3://bucket/runs/x"


def test_schemes_resolve_to_their_filesystems(s3_server):
    import pyarrow.fs as pafs

    assert isinstance(resolve("/tmp/x")[0], pafs.LocalFileSystem)
    assert isinstance(resolve("memory://m/x")[0], pafs.PyFileSystem)
    s3_client().create_bucket(Bucket="resolve-me")
    filesystem, path = resolve("s3://resolve-me/a/b")
    assert isinstance(filesystem, pafs.S3FileSystem) and path == "resolve-me/a/b"
    filesystem, path = resolve("gs://anonymous@some-bucket/x")  # no request is made until it is used
    assert type(filesystem).__name__ == "GcsFileSystem" and path == "some-bucket/x"


def test_unknown_scheme_is_one_line():
    with pytest.raises(
        MalformedURLError, match=r"^'nosuch://x/y': unknown URL scheme 'nosuch://'; ember reads"
    ):
        resolve("nosuch://x/y")


def test_a_failed_write_never_replaces_the_object(bucket):
    url = f"s3://{bucket}/state/model.ckpt"
    with atomic_write(url) as f:
        f.write(b"old complete contents")
    with pytest.raises(RuntimeError, match="killed mid-write"), atomic_write(url) as f:
        f.write(b"half of the new")
        raise RuntimeError("killed mid-write")
    assert storage_path(url).read_bytes() == b"old complete contents"
    with pytest.raises(RuntimeError), atomic_write(f"s3://{bucket}/state/new.bin") as f:
        f.write(b"x" * 1000)
        raise RuntimeError
    assert keys(bucket, "state/") == ["state/model.ckpt"]


def test_remote_path_listing_exists_remove(bucket):
    folder = storage_path(f"s3://{bucket}/d")
    (folder / "a.txt").write_text("a")
    (folder / "sub" / "b.txt").write_bytes(b"bb")
    assert folder.exists() and folder.is_dir() and (folder / "a.txt").is_file()
    assert [p.name for p in folder.iterdir()] == ["a.txt", "sub"]
    assert [str(p) for p in folder.rglob("*.txt")] == [f"s3://{bucket}/d/a.txt", f"s3://{bucket}/d/sub/b.txt"]
    assert (folder / "sub" / "b.txt").stat().st_size == 2
    (folder / "a.txt").unlink()
    (folder / "a.txt").unlink(missing_ok=True)
    with pytest.raises(FileNotFoundError):
        (folder / "a.txt").read_bytes()
    assert not (folder / "a.txt").exists()


def test_no_local_folder_named_after_a_scheme(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with atomic_write("memory://nowhere-local/x.bin") as f:
        f.write(b"1")
    assert list(Path(tmp_path).iterdir()) == []
