"""Turn user paths (file, folder, glob, list, local://, s3://...) into a filesystem and file list."""

from __future__ import annotations

import glob
import os
from collections.abc import Callable
from typing import Any

from ember.data.manifest import NAME as MANIFEST
from ember.data.manifest import check_readable
from ember.data.ray_errors import DataFileNotFoundError, DataValueError
from ember.errors import ConfigError, DataError
from ember.fs.storage import is_url, local_path

_GLOB_CHARS = set("*?[")


def strip_local(path: str) -> str:
    return local_path(path)  # ember.fs's one URL parser: "s3:/bucket" is refused, never a local folder


def is_remote(path: str) -> bool:
    return is_url(path)


def resolve_paths(
    paths: str | os.PathLike | list,
    source: str,
    extensions: tuple[str, ...] | None = None,
    filesystem: Any = None,
    ignore_missing_paths: bool = False,
) -> tuple[Any, list[str]]:
    """The filesystem and the sorted files that ``paths`` names; a one-line DataError if none.
    ``ignore_missing_paths`` (Ray's name) skips paths that do not exist instead of refusing them."""
    items = [os.fspath(p) for p in (paths if isinstance(paths, (list, tuple)) else [paths])]
    if not items:
        raise DataError(f"{source} got an empty list of paths; pass a file, folder, glob or list of them")
    if ignore_missing_paths:
        items = [
            p
            for p in items
            if is_remote(p)
            or filesystem is not None
            or _GLOB_CHARS & set(p)
            or os.path.lexists(os.path.expanduser(strip_local(p)))
        ] or items[:1]
    if filesystem is not None or any(is_remote(p) for p in items):
        return _resolve_remote(items, source, extensions, filesystem)
    files: list[str] = []
    for item in items:
        files.extend(_expand_local(strip_local(item), source, extensions))
    if not files:
        # Ray raises ValueError ("No input files found to read ...")
        raise DataValueError(
            f"{source}: no files{_ext_text(extensions)} under {items}; check the path and extension"
        )
    return None, _committed_only(None, files, source)


def _committed_only(filesystem: Any, files: list[str], source: str) -> list[str]:
    """Refuse files from a folder whose last ember write did not finish; skip files an overwrite replaced."""
    skipped: set[str] = set()
    for folder in dict.fromkeys(f.rsplit("/", 1)[0] if "/" in f else "." for f in files):
        if _exists(filesystem, f"{folder}/{MANIFEST}"):
            skipped |= {f"{folder}/{name}" for name in check_readable(filesystem, folder, source)}
    return [f for f in files if f not in skipped] if skipped else files


def _exists(filesystem: Any, path: str) -> bool:
    if filesystem is None:
        return os.path.exists(path)
    import pyarrow.fs as pafs

    return filesystem.get_file_info(path).type != pafs.FileType.NotFound


def _ext_text(extensions: tuple[str, ...] | None) -> str:
    return f" ending in {', '.join(extensions)}" if extensions else ""


def _denied(source: str, path: str) -> DataError:
    return DataError(
        f"{source}: permission denied reading {path!r}; fix its permissions (chmod) or run as its owner"
    )


def _expand_local(path: str, source: str, extensions: tuple[str, ...] | None) -> list[str]:
    path = os.path.expanduser(path)
    if _GLOB_CHARS & set(path):
        return sorted(
            p
            for p in glob.glob(path, recursive=True)
            if os.path.isfile(p) and os.path.basename(p) != MANIFEST
        )  # the manifest is not data
    try:
        os.stat(path)
    except PermissionError:  # a folder on the way cannot be searched: not "no such file"
        raise _denied(source, path) from None
    except OSError:
        raise DataFileNotFoundError(f"{source}: no such file or folder {path!r}; check the path") from None
    if os.path.isfile(path):
        if not os.access(path, os.R_OK):
            raise _denied(source, path)
        return [path]
    if os.path.isdir(path):
        found: list[str] = []

        def unreadable(error: OSError) -> None:
            if isinstance(error, PermissionError):
                raise _denied(source, error.filename or path)
            raise error

        for root, dirs, names in os.walk(path, onerror=unreadable):
            dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")))
            found.extend(
                os.path.join(root, n)
                for n in names
                if not n.startswith((".", "_")) and (not extensions or n.lower().endswith(extensions))
            )
        return sorted(found)
    raise DataError(f"{source}: {path!r} is neither a file nor a folder; pass a file, folder or glob")


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
                if i.type == pafs.FileType.File
                and (not extensions or i.path.lower().endswith(extensions))
                and not _hidden(i.path[len(path) :])  # as for local folders: no manifest, no temporaries
            ]
            files.extend(sorted(found))
        elif info.type == pafs.FileType.File:
            files.append(path)
        else:
            raise DataFileNotFoundError(
                f"{source}: no such file or folder {item!r}; check the path and credentials"
            )
        filesystem = fs
    return filesystem, _committed_only(filesystem, files, source)


def _hidden(relative: str) -> bool:
    return any(part.startswith((".", "_")) for part in relative.split("/") if part)


def _filesystem_for(uri: str, source: str) -> tuple[Any, str]:
    from ember.fs import resolve

    return resolve(
        uri
    )  # ember's one filesystem layer: s3://, gs://, memory://, ...; StorageError in one line


def open_input(filesystem: Any, path: str) -> Any:
    """A readable binary file object for ``path``."""
    if filesystem is None:
        try:
            return open(path, "rb")
        except PermissionError:
            raise _denied("read", path) from None
    return filesystem.open_input_file(path)


COMPRESSED = (".gz", ".bz2", ".zst", ".lz4", ".br")


def open_stream(filesystem: Any, path: str) -> Any:
    """A readable binary stream for ``path``, decompressed when its name ends in .gz, .bz2, .zst, .lz4 or
    .br."""
    if not path.lower().endswith(COMPRESSED):
        return open_input(filesystem, path)
    import pyarrow as pa

    if filesystem is None:
        try:
            return pa.input_stream(path, compression="detect")
        except PermissionError:
            raise _denied("read", path) from None
    return filesystem.open_input_stream(path, compression="detect")


#: What ``pyarrow.fs.FileSystem.open_input_stream`` takes besides the path: Ray's ``arrow_open_stream_args``.
OPEN_STREAM_ARGS = ("compression", "buffer_size")


def with_open_stream_args(
    filesystem: Any, args: dict | None, source: str, name: str = "arrow_open_stream_args"
) -> Any:
    """``filesystem`` (None: the local one) opening every file with ``args`` (Ray's
    ``arrow_open_stream_args``,
    e.g. ``{"compression": "gzip"}``; ``read_images`` calls them ``arrow_open_file_args``), or ``filesystem``
    itself when there are none."""
    if args is None:
        return filesystem
    if not isinstance(args, dict) or set(args) - set(OPEN_STREAM_ARGS):
        raise ConfigError(
            f"{source}({name}={args!r}); pass a dict of "
            f"pyarrow.fs.FileSystem.open_input_stream arguments ({', '.join(OPEN_STREAM_ARGS)})"
        )
    if not args:
        return filesystem
    import pyarrow.fs as pafs

    return OpenWith(filesystem if filesystem is not None else pafs.LocalFileSystem(), dict(args))


class OpenWith:
    """A pyarrow filesystem whose files open as streams with fixed ``open_input_stream`` arguments; a
    compression named there applies whatever the file's name (as in Ray), else it follows the name.

    Example:
        >>> import gzip, tempfile
        >>> path = tempfile.mkdtemp() + "/a.txt"
        >>> _ = open(path, "wb").write(gzip.compress(b"hi"))
        >>> with with_open_stream_args(None, {"compression": "gzip"}, "read_text").open_input_file(path) as f:
        ...     f.read()
        b'hi'
    """

    def __init__(self, filesystem: Any, args: dict) -> None:
        self.filesystem, self.args = filesystem, args

    def open_input_stream(self, path: str, compression: Any = "detect", buffer_size: Any = None) -> Any:
        options = {"compression": compression, "buffer_size": buffer_size}
        options.update(self.args)
        if options["compression"] is None:
            options["compression"] = "detect"  # Ray infers it from the name when none is given
        return self.filesystem.open_input_stream(path, **options)

    def open_input_file(self, path: str) -> Any:
        return self.open_input_stream(path)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.filesystem, name)


def without_skipped(paths: Any, skip_paths: Any) -> tuple[Any, Callable[[str], bool]]:
    """Ray's ``skip_paths``: the user paths left after dropping those named there (whether or not they
    exist), and a test for listed files: skipped when named there or inside a folder named there.

    Example:
        >>> kept, skipped = without_skipped(["/d/a.parquet", "/d/b"], "/d/b")
        >>> kept, skipped("/d/b/c.parquet"), skipped("/d/bc.parquet")
        (['/d/a.parquet'], True, False)
    """
    if not skip_paths:
        return paths, lambda _: False
    entries = [skip_paths] if isinstance(skip_paths, (str, os.PathLike)) else list(skip_paths)
    skip = {_comparable(os.fspath(e)) for e in entries}
    items = [os.fspath(p) for p in (paths if isinstance(paths, (list, tuple)) else [paths])]
    kept = [p for p in items if _comparable(p) not in skip]
    if not kept:
        raise DataError(f"every path in {items} is in skip_paths; nothing is left to read")

    def skipped(file: str) -> bool:
        path = _comparable(file)
        return any(path == s or path.startswith(s.rstrip("/") + "/") for s in skip)

    return kept, skipped


def _comparable(path: str) -> str:
    """A path as listing yields it: local ones absolute, remote ones without their scheme."""
    path = strip_local(path)
    if "://" in path:
        return path.split("://", 1)[1].rstrip("/")
    return os.path.abspath(os.path.expanduser(path))
