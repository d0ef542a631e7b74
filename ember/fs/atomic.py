"""Atomic writes: a file under its final name is always complete, and a planted link never redirects one.

Every write goes to a temporary file created *exclusively* (``O_CREAT | O_EXCL``, by `tempfile.mkstemp`)
in the target folder under an unpredictable name, is flushed and fsynced, and is then renamed over the
final name (atomic on POSIX); the folder is fsynced so the rename survives a power cut. Because the
temporary name is random and created exclusively, a symlink planted in advance cannot be followed; a
symlink at the *final* name is replaced by the rename, never written through.

Temporary names look like ``.<final name>.<pid>.<random>.ember-tmp``: the pid lets the next run remove
the leftovers of a killed writer (`remove_stale_temporaries`) without touching a live writer's file.

Object stores (a URL such as ``s3://`` or ``memory://``, or a `pyarrow.fs.FileSystem` other than the
local one) have no rename: there the bytes are collected in a local spool file first and uploaded in
one stream only when the block finished without an error. The store makes the object visible when its
upload completes, so a failed or killed writer never leaves a partial object under the final key (an
interrupted multipart upload stays invisible); manifests and markers are written last by the callers.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from ember.fs.storage import RemotePath, is_url, local_path, resolve, write_whole

SUFFIX = ".ember-tmp"
_TEMPORARY = re.compile(r"^\..+\.(\d+)\.[^.]+" + re.escape(SUFFIX) + "$")


@contextmanager
def atomic_write(
    path: str | os.PathLike[str] | RemotePath,
    mode: str = "wb",
    *,
    filesystem: Any = None,
    encoding: str | None = None,
    newline: str | None = None,
) -> Iterator[IO[Any]]:
    """Open a file whose contents appear under `path` only if the block finishes without an error.

    Example:
        >>> import tempfile, pathlib
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> with atomic_write(folder / "hello.txt", "w") as f:
        ...     _ = f.write("hi")
        >>> (folder / "hello.txt").read_text()
        'hi'
        >>> sorted(p.name for p in folder.iterdir())   # no temporary file is left behind
        ['hello.txt']
    """
    if mode not in ("wb", "w"):
        raise ValueError(f"atomic_write opens files for writing ('w' or 'wb'), not {mode!r}")
    if isinstance(path, RemotePath):
        path = path.url  # a RemotePath is always a URL: resolved below, as its text would be
    if filesystem is None and is_url(path):
        filesystem, path = resolve(path)
    if filesystem is not None and not _is_local(filesystem):
        with write_whole(filesystem, os.fspath(path), mode, encoding, newline) as f:
            yield f
        return
    final = Path(local_path(path))
    folder = final.parent
    folder.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=folder, prefix=f".{final.name}.{os.getpid()}.", suffix=SUFFIX)
    try:
        os.fchmod(fd, _new_file_mode())  # mkstemp's 0600 would make every file private, unlike open()
        with os.fdopen(fd, mode, encoding=encoding, newline=newline) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, final)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    fsync_folder(folder)


def _new_file_mode() -> int:
    """The permissions ``open(path, "w")`` would give a new file: 0666 less the umask."""
    return 0o666 & ~umask()


def umask() -> int:
    """The process's umask (read without changing it where Linux allows)."""
    try:
        with open("/proc/self/status") as status:  # reads the umask without changing it (Linux)
            return next(int(line.split()[1], 8) for line in status if line.startswith("Umask:"))
    except (OSError, StopIteration, ValueError):
        mask = os.umask(0o022)
        os.umask(mask)
        return mask


def atomic_link(source: str | os.PathLike[str], path: str | os.PathLike[str]) -> None:
    """Make `path` a hard link to `source`, atomically: a reader sees the old file or the new one.

    The link is made under an unpredictable temporary name (`os.link` never overwrites or follows
    what is there) and renamed over `path`. Raises OSError where hard links are not possible.

    Example:
        >>> import tempfile, pathlib
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (folder / "epoch=1.ckpt").write_bytes(b"weights")
        >>> atomic_link(folder / "epoch=1.ckpt", folder / "last.ckpt")
        >>> (folder / "last.ckpt").read_bytes()
        b'weights'
    """
    if is_url(source) or is_url(path):
        raise OSError(errno.EXDEV, "object stores have no hard links", str(path))
    final = Path(local_path(path))
    replace_with_new_entry(final, lambda temporary: os.link(source, temporary))
    fsync_folder(final.parent)


def replace_with_new_entry(final: Path, make: Any) -> None:
    """`make(temporary)` creates a directory entry (a link) under an unpredictable temporary name beside
    `final`, which is then renamed over `final`: atomic, and nothing already at `final` is followed."""
    temporary = final.parent / f".{final.name}.{os.getpid()}.{secrets.token_hex(6)}{SUFFIX}"
    make(temporary)
    try:
        os.replace(temporary, final)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def fsync_folder(folder: str | os.PathLike[str]) -> None:
    """Make a rename inside `folder` durable (a no-op where folders cannot be opened)."""
    if sys.platform == "win32":
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def is_temporary(name: str) -> bool:
    """Whether a file name is one of `atomic_write`'s temporary files.

    Example:
        >>> is_temporary(".last.ckpt.4242.k3j_x9.ember-tmp"), is_temporary("last.ckpt")
        (True, False)
    """
    return _TEMPORARY.match(name) is not None


def remove_stale_temporaries(folder: str | os.PathLike[str] | RemotePath) -> list[Path]:
    """Delete the temporary files of writers that are no longer running; returns what was removed.

    Only ember's own temporary names are considered (`is_temporary`), and a file whose writer's
    process is still alive is left alone, so two runs sharing a folder never break each other.
    """
    if isinstance(folder, RemotePath) or is_url(
        folder
    ):  # object stores have no temporaries (an unfinished upload is never visible), but
        resolve(
            folder
        )  # a missing bucket, refused credentials or a dead endpoint is said now, before any work
        return []
    folder = Path(local_path(folder))
    removed: list[Path] = []
    try:
        entries = list(folder.iterdir())
    except OSError:  # no folder yet, or unreadable: nothing of ours to clean
        return removed
    for entry in entries:
        match = _TEMPORARY.match(entry.name)
        if match is None or _alive(int(match.group(1))) or not entry.is_file() or entry.is_symlink():
            continue
        entry.unlink(missing_ok=True)
        removed.append(entry)
    return removed


def process_alive(pid: int) -> bool:
    """Whether process `pid` still runs (this process counts as alive): owner checks for leftovers.

    Example:
        >>> process_alive(os.getpid())
        True
    """
    return _alive(pid)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def _is_local(filesystem: Any) -> bool:
    return type(filesystem).__name__ == "LocalFileSystem"
