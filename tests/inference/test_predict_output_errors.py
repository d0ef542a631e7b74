"""`ember predict --output` into a folder it cannot write (read-only, a full disk, a file-size limit) is one
line from ember naming the output folder, not a traceback. Real CLI processes; the disk cases use a real
tmpfs where this test may mount one (root), and RLIMIT_FSIZE (a write past it fails like a full disk)."""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.inference.conftest import REPO
from tests.inference.test_predict_safety import TINY, one_line_error, tiny  # noqa: F401  (fixture used by name)


def predict(ckpt, data, output, preexec_fn=None):
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "ember.cli",
            "predict",
            "--ckpt",
            str(ckpt),
            "--data",
            str(data),
            "--output",
            str(output),
            *TINY,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        # these processes write no bytecode cache: under a file-size limit (one test's) Python commits a .pyc
        # cut short at the limit (its write does not check the count), and every later import of it fails
        env={**os.environ, "PYTHONPATH": str(REPO), "PYTHONDONTWRITEBYTECODE": "1"},
        preexec_fn=preexec_fn,
    )


@contextlib.contextmanager
def tmpfs(where: Path, options: str):
    """A real tmpfs mounted at `where` (skips where this process may not mount one)."""
    where.mkdir()
    if (
        os.geteuid() != 0
        or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], capture_output=True
        ).returncode
        != 0
    ):
        pytest.skip("mounting a tmpfs needs root")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=True)


def fill(path: Path) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    try:
        with contextlib.suppress(OSError):
            while True:
                os.write(fd, b"x" * 4096)
    finally:
        os.close(fd)


def file_size_limit(limit: int):
    def apply() -> None:  # in the child: a write past `limit` bytes fails with EFBIG instead of killing it
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def test_a_file_size_limit_is_one_line_naming_the_output_folder(tiny, tmp_path):  # noqa: F811
    ckpt, data = tiny
    out = tmp_path / "out"
    done = predict(ckpt, data, out, preexec_fn=file_size_limit(300))
    one_line_error(
        done,
        f"ember predict: error: cannot write into the output folder {out} (File too large); "
        "free some space, fix the folder's permissions, or write elsewhere",
    )
    assert not [p for p in out.iterdir() if p.name.endswith(".ember-tmp")]  # no temporary left


def test_a_read_only_output_folder_is_one_line(tiny, tmp_path):  # noqa: F811
    ckpt, data = tiny
    with tmpfs(tmp_path / f"ro-{uuid.uuid4().hex[:6]}", "ro,size=1m") as folder:
        done = predict(ckpt, data, folder / "out")
    one_line_error(done, f"cannot write into the output folder {folder / 'out'} (Read-only file system)")


def test_a_full_disk_is_one_line(tiny, tmp_path):  # noqa: F811
    ckpt, data = tiny
    with tmpfs(tmp_path / f"full-{uuid.uuid4().hex[:6]}", "size=64k") as folder:
        fill(folder / "filler")  # the user's file fills the disk
        done = predict(ckpt, data, folder / "out")
        one_line_error(
            done, f"cannot write into the output folder {folder / 'out'} (No space left on device)"
        )
        assert (folder / "filler").stat().st_size > 0
        assert not [p for p in (folder / "out").iterdir() if p.name.endswith(".ember-tmp")]
