"""read_webdataset never returns a silently smaller dataset: a shard cut after a member (no tar end
marker) or with a damaged header is refused in one line naming the file; and members ``suffixes=``
leaves out are skipped unread, so a 1 GiB member (a sparse file here) costs neither memory nor time."""

from __future__ import annotations

import gzip
import io
import tarfile
import time
import tracemalloc

import pytest

import ember.data
from ember.errors import DataError

GiB = 1024**3


def _member(name: str, data: bytes) -> bytes:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    padding = b"\0" * (-len(data) % 512)
    return info.tobuf(format=tarfile.GNU_FORMAT) + data + padding


def _samples(n: int) -> list[bytes]:
    return [
        _member(f"{i:04d}.{suffix}", value)
        for i in range(n)
        for suffix, value in (("txt", f"text {i}".encode()), ("cls", str(i).encode()))
    ]


END = b"\0" * 1024  # the end-of-archive marker: two zero blocks


def _refused(path, message: str) -> str:
    with pytest.raises(DataError) as error:
        ember.data.read_webdataset(str(path)).take_all()
    text = str(error.value)
    assert message in text and str(path) in text and "\n" not in text
    return text


def test_a_complete_shard_reads_every_sample(tmp_path):
    path = tmp_path / "whole.tar"
    path.write_bytes(b"".join(_samples(3)) + END)
    rows = ember.data.read_webdataset(str(path)).take_all()
    assert [(r["__key__"], r["txt"], r["cls"]) for r in rows] == [
        ("0000", "text 0", 0),
        ("0001", "text 1", 1),
        ("0002", "text 2", 2),
    ]


def test_a_shard_cut_after_a_member_is_refused(tmp_path):
    path = tmp_path / "cut.tar"
    path.write_bytes(b"".join(_samples(3)[:4]))  # two whole samples, the rest and the end marker lost
    _refused(
        path, "ends after member '0001.cls' without the tar end-of-archive marker: the shard is cut short"
    )


def test_a_compressed_shard_cut_after_a_member_is_refused(tmp_path):
    """A .tar.gz streams (no seeking): the same check holds."""
    path = tmp_path / "cut.tar.gz"
    path.write_bytes(gzip.compress(b"".join(_samples(3)[:3])))
    _refused(path, "ends after member '0001.txt' without the tar end-of-archive marker")


def test_a_damaged_header_after_a_member_is_refused(tmp_path):
    path = tmp_path / "damaged.tar"
    path.write_bytes(b"".join(_samples(2)) + b"\x17" * 512 + b"".join(_samples(3)[4:]) + END)
    _refused(path, "ends after member '0001.cls' without the tar end-of-archive marker")


def test_a_shard_cut_inside_a_skipped_member_is_refused(tmp_path):
    path = tmp_path / "short.tar"
    info = tarfile.TarInfo("0000.bin")
    info.size = 4096
    path.write_bytes(_member("0000.txt", b"a") + info.tobuf(format=tarfile.GNU_FORMAT) + b"x" * 100)
    with pytest.raises(DataError) as error:
        ember.data.read_webdataset(str(path), suffixes=["txt"]).take_all()
    assert str(path) in str(error.value) and "\n" not in str(error.value)


def _sparse_shard(path, size: int) -> None:
    """A sample with a ``size``-byte ``bin`` member (a hole: nothing is written) and a small ``txt``."""
    info = tarfile.TarInfo("0000.bin")
    info.size = size
    with open(path, "wb") as f:
        f.write(info.tobuf(format=tarfile.GNU_FORMAT))
        f.seek(size, io.SEEK_CUR)
        f.write(_member("0000.txt", b"kept") + _member("0001.txt", b"next") + END)


def _read_measured(path, **options):
    tracemalloc.start()
    started = time.monotonic()
    try:
        rows = ember.data.read_webdataset(str(path), **options).take_all()
        return rows, tracemalloc.get_traced_memory()[1], time.monotonic() - started
    finally:
        tracemalloc.stop()


def test_a_1gib_member_left_out_by_suffixes_is_never_read(tmp_path):
    path = tmp_path / "big.tar"
    _sparse_shard(path, GiB)
    assert path.stat().st_size > GiB and path.stat().st_blocks * 512 < 10 * 1024**2  # sparse: no GiB on disk
    rows, peak, seconds = _read_measured(path, suffixes=["txt"])
    assert [(r["__key__"], r["txt"]) for r in rows] == [("0000", "kept"), ("0001", "next")]
    assert peak < 32 * 1024**2, f"peak {peak / 2**20:.0f} MiB: the left-out member was read into memory"
    assert seconds < 20


def test_a_large_member_left_out_of_a_compressed_shard_streams_past_in_bounded_memory(tmp_path):
    plain = tmp_path / "big.tar"
    _sparse_shard(plain, 96 * 1024**2)
    path = tmp_path / "big.tar.gz"
    with open(plain, "rb") as source, gzip.open(path, "wb", compresslevel=1) as target:
        while chunk := source.read(8 * 1024**2):
            target.write(chunk)
    rows, peak, _ = _read_measured(path, suffixes=lambda suffix: suffix == "txt")
    assert [r["txt"] for r in rows] == ["kept", "next"]
    assert peak < 32 * 1024**2, f"peak {peak / 2**20:.0f} MiB"
