"""Turn user paths (file, folder, glob, list, local://, s3://...) into a filesystem and file list."""

from __future__ import annotations

import glob
import os
from typing import Any

from ember.errors import DataError

_GLOB_CHARS = set("*?[")


def _strip_local(path: str) -> str:
    for prefix in ("local://", "file://"):
        if path.startswith(prefix):
            return path[len(prefix) :]
    return path


def is_remote(path: str) -> bool:
    return "://" in _strip_local(path)


def resolve_paths(
    paths: str | os.PathLike | list, source: str, extensions: tuple[str, ...] | None = None, filesystem: Any = None
) -> tuple[Any, list[str]]:
    """The filesystem and the sorted files that ``paths`` names; a one-line DataError if none."""
    items = [os.fspath(p) for p in (paths if isinstance(paths, (list, tuple)) else [paths])]
    if not items:
        raise DataError(f"{source} got an empty list of paths; pass a file, folder, glob or list of them")
    if filesystem is not None or any(is_remote(p) for p in items):
        return _resolve_remote(items, source, extensions, filesystem)
    files: list[str] = []
    for item in items:
        files.extend(_expand_local(_strip_local(item), source, extensions))
    if not files:
        raise DataError(f"{source}: no files{_ext_text(extensions)} under {items}; check the path and extension")
    return None, files


def _ext_text(extensions: tuple[str, ...] | None) -> str:
    return f" ending in {', '.join(extensions)}" if extensions else ""


def _expand_local(path: str, source: str, extensions: tuple[str, ...] | None) -> list[str]:
    path = os.path.expanduser(path)
    if _GLOB_CHARS & set(path):
        return sorted(p for p in glob.glob(path, recursive=True) if os.path.isfile(p))
    if os.path.isfile(path):
        return [path]
    if os.path.isdir(path):
        found = []
        for root, dirs, names in os.walk(path):
            dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")))
            found.extend(
                os.path.join(root, n)
                for n in names
                if not n.startswith((".", "_")) and (not extensions or n.lower().endswith(extensions))
            )
        return sorted(found)
    raise DataError(f"{source}: no such file or folder {path!r}; check the path")


def _resolve_remote(
    items: list[str], source: str, extensions: tuple[str, ...] | None, filesystem: Any
) -> tuple[Any, list[str]]:
    import pyarrow.fs as pafs

    files: list[str] = []
    for item in items:
        fs, path = (filesystem, item) if filesystem is not None else _filesystem_for(item, source)
        info = fs.get_file_info(path)
        if info.type == pafs.FileType.Directory:
            selector = pafs.FileSelector(path, recursive=True)
            found = [
                i.path
                for i in fs.get_file_info(selector)
                if i.type == pafs.FileType.File and (not extensions or i.path.lower().endswith(extensions))
            ]
            files.extend(sorted(found))
        elif info.type == pafs.FileType.File:
            files.append(path)
        else:
            raise DataError(f"{source}: no such file or folder {item!r}; check the path and credentials")
        filesystem = fs
    return filesystem, files


def _filesystem_for(uri: str, source: str) -> tuple[Any, str]:
    import pyarrow.fs as pafs

    try:
        return pafs.FileSystem.from_uri(uri)
    except (pafs.ArrowInvalid, ValueError, OSError) as arrow_error:
        try:
            import fsspec

            fs, path = fsspec.core.url_to_fs(uri)
            return pafs.PyFileSystem(pafs.FSSpecHandler(fs)), path
        except ImportError:
            raise DataError(f"{source}: cannot open {uri!r} ({arrow_error}); install fsspec and the filesystem's package") from None


def open_input(filesystem: Any, path: str) -> Any:
    """A readable binary file object for ``path``."""
    if filesystem is None:
        return open(path, "rb")
    return filesystem.open_input_file(path)
