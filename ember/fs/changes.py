"""Every rename, link, copy, delete and temporary folder ember makes, in one place (DESIGN decision 15).

Code outside `ember.fs` never calls ``os.remove``, ``shutil.rmtree``, ``os.replace``, ``os.symlink``,
``Path.write_*`` and the like (tests/test_choke_points_fs.py reads the source and fails if it does); it
calls these functions, which give the same guarantees everywhere:

- nothing is written through a link: files are written by `atomic_write` (exclusive temporary file,
  renamed over the name), links are made under a temporary name and renamed over theirs;
- deletes of whole folders (`remove_tree`) need the root they must be strictly below; a link there is
  never followed (the link alone goes, never what it points at), and a path outside the root is refused;
- temporary folders (`temporary_folder`) are created exclusively under an unpredictable name, and only
  `remove_temporary_folder` deletes them again (it refuses anything that is not such a folder);
- a whole folder (a checkpoint of shards) is written as such a temporary folder and swapped in under its
  name in one step (`replace_with_folder`), as a file is by `atomic_write`.
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ember.errors import ConfigError, UnsafePathError
from ember.fs.atomic import SUFFIX, atomic_write, fsync_folder, replace_with_new_entry, umask
from ember.fs.confine import refuse_link, within
from ember.fs.storage import RemotePath, is_url, storage_path

#: Every temporary folder ember makes starts with this, so `remove_temporary_folder` knows its own.
TEMPORARY_PREFIX = "ember-"


def write_bytes(path: str | os.PathLike[str] | RemotePath, data: bytes) -> None:
    """Write a whole file atomically (never through a link planted at `path`)."""
    with atomic_write(path, "wb") as f:
        f.write(data)


def write_text(path: str | os.PathLike[str] | RemotePath, text: str, encoding: str = "utf-8") -> None:
    """Write a whole text file atomically (never through a link planted at `path`)."""
    with atomic_write(path, "w", encoding=encoding) as f:
        f.write(text)


def copy_file(source: str | os.PathLike[str], target: str | os.PathLike[str] | RemotePath) -> None:
    """Copy `source`'s bytes to `target` atomically (a link
    at `target` is replaced, never written through)."""
    with open(source, "rb") as reader, atomic_write(target, "wb") as writer:
        shutil.copyfileobj(reader, writer, 8 << 20)


def remove_file(
    path: str | os.PathLike[str] | RemotePath, missing_ok: bool = True, *, filesystem: Any = None
) -> None:
    """Delete one file (a link: the link itself, never its target), locally or on an object store
    (a URL, or a path on the `pyarrow.fs.FileSystem` given as `filesystem`)."""
    if filesystem is not None and type(filesystem).__name__ != "LocalFileSystem":
        filesystem.delete_file(path.url if isinstance(path, RemotePath) else os.fspath(path))
        return
    path = storage_path(path) if not isinstance(path, RemotePath) else path
    if isinstance(path, Path) and path.is_dir() and not path.is_symlink():
        raise IsADirectoryError(errno.EISDIR, "ember.fs.remove_file deletes files, not folders", str(path))
    path.unlink(missing_ok=missing_ok)


def remove_tree(path: str | os.PathLike[str], root: str | os.PathLike[str]) -> bool:
    """Delete folder `path`, which must lie strictly below `root`; returns whether something was deleted.

    A link at `path` is removed as a link (its target is never touched); a `path` that is `root`
    itself or leads outside it (``..``, an absolute record, a link on the way) is refused in one line."""
    path, root = Path(path), Path(root)
    if os.path.islink(path) and within(root, path.parent) and ".." not in path.parts:
        path.unlink()
        return True
    if os.path.islink(path) or not within(root, path) or os.path.realpath(path) == os.path.realpath(root):
        raise UnsafePathError(
            f"{str(path)!r} is not below {str(root)!r}; ember deletes only inside the folder "
            "it writes, so it was left alone"
        )
    if not path.exists():
        return False
    shutil.rmtree(path)  # rmtree never follows links inside the tree (it unlinks them)
    return True


@contextmanager
def temporary_folder(
    prefix: str, dir: str | os.PathLike[str] | None = None, suffix: str = ""
) -> Iterator[Path]:
    """A fresh, private folder (mode 0700, exclusive, unpredictable name) removed when the block ends."""
    folder = make_temporary_folder(prefix, dir, suffix)
    try:
        yield folder
    finally:
        remove_temporary_folder(folder)


def make_temporary_folder(prefix: str, dir: str | os.PathLike[str] | None = None, suffix: str = "") -> Path:
    """Create a fresh private folder that only `remove_temporary_folder` deletes again."""
    if not prefix.startswith((TEMPORARY_PREFIX, ".")):
        prefix = TEMPORARY_PREFIX + prefix
    return Path(tempfile.mkdtemp(prefix=prefix, dir=dir, suffix=suffix))


def remove_temporary_folder(folder: str | os.PathLike[str]) -> None:
    """Delete a folder `make_temporary_folder` created (errors ignored: best effort at the end of a run).

    Refuses anything else: a link, or a folder whose name is not one of ember's temporary names."""
    folder = Path(folder)
    name = folder.name
    if os.path.islink(folder) or not (name.startswith(TEMPORARY_PREFIX) or name.endswith(SUFFIX)):
        raise UnsafePathError(f"{str(folder)!r} is not a temporary folder ember made; it was left alone")
    shutil.rmtree(folder, ignore_errors=True)


def make_folders(path: str | os.PathLike[str] | RemotePath) -> Path | RemotePath:
    """`path` as a folder, with any missing parents (``mkdir -p``): the one way ember creates folders.

    A file already standing at `path` or at one of its parents is one error naming it, rather than
    ``FileExistsError`` / ``NotADirectoryError`` from deep inside a feature; nothing is changed then."""
    target = storage_path(path)
    try:
        target.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        assert isinstance(target, Path)  # an object store has no files in the way of a prefix
        in_the_way = next((p for p in (target, *target.parents) if p.exists() and not p.is_dir()), target)
        raise ConfigError(
            f"{in_the_way} is a file, so the folder {target} cannot be made; move the file or choose "
            "another folder"
        ) from None
    return target


def rename(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
    """Rename `source` over `target` atomically (a link at `target` is replaced, never followed); the
    folder is fsynced so the rename survives a power cut."""
    os.replace(source, target)
    fsync_folder(Path(target).parent)


def replace_with_folder(
    folder: str | os.PathLike[str], final: str | os.PathLike[str], entry: str | None = None
) -> None:
    """Put `folder` (a temporary folder `make_temporary_folder` made beside `final`) under the name `final` in
    one step, then delete what was there (an earlier folder or file, or a link: the link itself, never its
    target). With `entry`, the file `folder/entry` goes under the name `final` instead (replacing a folder
    there, which a file rename cannot), and `folder` goes afterwards. A reader, or a process killed at any
    point, finds the old entry or the complete new one under `final`, never a mix: Linux swaps the two names
    atomically (renameat2 RENAME_EXCHANGE); where it cannot, the old entry is first renamed aside (a short
    moment without either)."""
    folder, final = Path(folder), Path(final)
    if not folder.name.endswith(SUFFIX) or os.path.islink(folder) or folder.parent != final.parent:
        raise UnsafePathError(f"{str(folder)!r} is not a temporary folder ember made beside {str(final)!r}")
    source = folder / entry if entry is not None else folder
    if entry is None:
        os.chmod(folder, 0o777 & ~umask())  # what mkdir would give it, not the temporary folder's 0700
    old: Path | None = None
    if not os.path.lexists(final):
        os.rename(source, final)
    elif _exchange(source, final):  # `source` now holds the old entry
        old = source
    else:
        old = final.parent / f".{final.name}.{os.getpid()}.{os.urandom(6).hex()}{SUFFIX}"
        os.rename(final, old)
        os.rename(source, final)
    if old is not None:
        _remove_swapped_out(old)
    if entry is not None:
        shutil.rmtree(folder, ignore_errors=True)
    fsync_folder(final.parent)


def _exchange(a: Path, b: Path) -> bool:
    """Swap two directory entries atomically (Linux renameat2 RENAME_EXCHANGE); False where unsupported."""
    import ctypes
    import sys

    if not sys.platform.startswith("linux"):
        return False
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):  # a libc without it (glibc < 2.28, musl)
        return False
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    error = ctypes.get_errno()
    if error in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):  # the file system cannot swap
        return False
    raise OSError(error, os.strerror(error), str(b))


def _remove_swapped_out(entry: Path) -> None:
    """The entry a replacement moved to ember's temporary name: a link or file is unlinked, a folder
    removed."""
    if os.path.islink(entry) or not entry.is_dir():
        entry.unlink(missing_ok=True)
    else:
        shutil.rmtree(entry, ignore_errors=True)


def copy_tree(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
    """Copy folder `source` into `target` (a fresh folder ember made: nothing planted can be in it)."""
    shutil.copytree(source, target, dirs_exist_ok=True)


def symlink(target: str | os.PathLike[str], path: str | os.PathLike[str]) -> None:
    """Make `path` a symbolic link to `target`, atomically: made under a temporary name, renamed over."""
    replace_with_new_entry(Path(path), lambda temporary: os.symlink(target, temporary))


def truncate_torn_tail(path: str | os.PathLike[str]) -> bool:
    """Cut an unfinished last line (a writer killed mid-append) so the next append starts a line of its own.

    The file is opened without following a link. Returns whether something was cut."""
    flags = os.O_RDWR | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return False
    except OSError as e:
        if e.errno == errno.ELOOP:
            refuse_link(path)
        raise
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            return False
        os.lseek(fd, max(0, size - 1), os.SEEK_SET)
        if os.read(fd, 1) == b"\n":
            return False
        keep = _last_line_end(fd, size)
        os.ftruncate(fd, keep)
        return True
    finally:
        os.close(fd)


def _last_line_end(fd: int, size: int) -> int:
    """The offset just after the last newline of the file (0 when it has none)."""
    block = 1 << 16
    end = size
    while end > 0:
        start = max(0, end - block)
        os.lseek(fd, start, os.SEEK_SET)
        chunk = os.read(fd, end - start)
        found = chunk.rfind(b"\n")
        if found >= 0:
            return start + found + 1
        end = start
    return 0


def open_own(
    path: str | os.PathLike[str] | RemotePath,
    mode: str = "r",
    newline: str | None = None,
    encoding: str | None = None,
) -> Any:
    """Open a file ember wrote earlier for reading, refusing a link planted at its name (its target's
    content would otherwise be copied into ember's next write)."""
    if mode not in ("r", "rb"):
        raise ValueError(f"open_own reads ('r' or 'rb'), not {mode!r}")
    if isinstance(path, RemotePath) or is_url(path):
        return storage_path(path).open(mode, encoding=encoding, newline=newline)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as e:
        if e.errno == errno.ELOOP:
            refuse_link(path)
        raise
    if mode == "rb":
        return os.fdopen(fd, "rb")
    return os.fdopen(fd, "r", newline=newline, encoding=encoding)


@contextmanager
def written_by(path: str | os.PathLike[str]) -> Iterator[Path]:
    """For a writer that only takes a file name (``cProfile.dump_stats``, ``export_chrome_trace``,
    ``torch.jit.save``): yields a name inside a fresh private folder next to `path`, and moves the
    finished file to `path` atomically. A link planted at `path` is replaced, never written through."""
    if is_url(path):
        with temporary_folder("written-") as folder:
            scratch = folder / "file"
            yield scratch
            copy_file(scratch, path)
        return
    final = Path(path)
    final.parent.mkdir(parents=True, exist_ok=True)
    with temporary_folder(f".{final.name}.{os.getpid()}.", dir=final.parent, suffix=SUFFIX) as folder:
        scratch = folder / final.name
        yield scratch
        rename(scratch, final)
