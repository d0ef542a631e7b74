"""Sinks: one file per output block (``part-00000.parquet``, ...), Ray's save modes, and a manifest.

Every file is written with `ember.fs.atomic_write` (an exclusive, unpredictable temporary name in the
target folder, then a rename), so a crash never leaves a half-written file under its final name and a
planted symlink never redirects a write. A whole write is committed by the folder's manifest
(`ember.data.manifest`), written last: a reader never sees a mix of two writes or part of one.

``mode`` is Ray's ``SaveMode`` (default ``append``): what to do when the folder already exists.
``overwrite`` removes only the files ember's manifest lists and refuses a folder holding anything else.
"""

from __future__ import annotations

import contextlib
import enum
import json
import os
import secrets
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from ember.data.block import Block, block_to_numpy, block_to_rows
from ember.data.manifest import Manifest, part_index
from ember.data.ray_args import check_options, named_parameters
from ember.data.read.paths import _strip_local, is_remote
from ember.data.schema import format_type
from ember.errors import ConfigError, DataError
from ember.fs import atomic_write, remove_stale_temporaries


class SaveMode(str, enum.Enum):
    """What a ``write_*`` call does when its folder exists (Ray Data's ``SaveMode``; strings work too).

    Example:
        >>> import ember.data, tempfile
        >>> out = tempfile.mkdtemp()
        >>> _ = ember.data.range(3).write_parquet(out)
        >>> _ = ember.data.range(2).write_parquet(out, mode=ember.data.SaveMode.OVERWRITE)
        >>> ember.data.read_parquet(out).count()
        2
        >>> ember.data.range(9).write_parquet(out, mode="ignore")   # the folder exists: nothing written
        []
    """

    #: Add this write's files beside what is there (Ray's default).
    APPEND = "append"
    #: Replace what ember wrote there before; refuse a folder holding files ember did not write.
    OVERWRITE = "overwrite"
    #: Write nothing when the folder exists.
    IGNORE = "ignore"
    #: Refuse when the folder exists.
    ERROR = "error"


def save_mode(mode: Any, where: str) -> SaveMode:
    """``mode`` as a SaveMode: ember's or Ray's enum member, or its string value."""
    value = getattr(mode, "value", mode)
    try:
        return SaveMode(value)
    except ValueError:
        names = ", ".join(repr(m.value) for m in SaveMode)
        raise ConfigError(f"{where}(mode={mode!r}); use one of {names} (or ember.data.SaveMode)") from None


def write_blocks(blocks: Iterator[Block], path: str, extension: str, write_file: Callable[[Block, Any], None],
                 mode: Any = SaveMode.APPEND, where: str = "write") -> list[str]:
    """Write each non-empty block to ``path/part-NNNNN.<extension>``; returns the file paths."""
    mode = save_mode(mode, where)
    filesystem, directory, exists = _output_dir(os.fspath(path))
    if exists and mode is SaveMode.ERROR:
        raise DataError(f"{where}: {directory} already exists (mode='error'); write to a new folder, "
                        "or pass mode='append' or mode='overwrite'")
    if exists and mode is SaveMode.IGNORE:
        return []
    try:
        return _write(blocks, filesystem, directory, extension, write_file, mode, where)
    except OSError as e:  # a read-only folder, a full disk: one line, not pyarrow's traceback
        reason = e.strerror or str(e)
        raise DataError(f"{where}: cannot write into {directory} ({reason}); free some space or fix the folder's "
                        "permissions, or write elsewhere") from None


def _write(blocks: Iterator[Block], filesystem: Any, directory: str, extension: str,
           write_file: Callable[[Block, Any], None], mode: SaveMode, where: str) -> list[str]:
    _make_dir(filesystem, directory)
    if filesystem is None:
        remove_stale_temporaries(directory)
    manifest = Manifest.load(filesystem, directory)
    _drop_superseded(manifest, filesystem, directory, _list(filesystem, directory))
    names = _list(filesystem, directory)
    visible = [n for n in names if not n.startswith((".", "_"))]
    replaced = _replaced_files(manifest, visible, directory, mode, where)
    first = 1 + max([i for i in map(part_index, names) if i is not None], default=-1)
    write_id = secrets.token_hex(8)
    manifest.begin(write_id, first, extension)
    written: list[str] = []
    try:
        rows = _write_files(blocks, filesystem, directory, extension, first, write_file, written)
    except BaseException:  # an error (not a kill): take back this write's files, leave the folder as it was
        with contextlib.suppress(OSError):  # if even that fails, the pending record keeps readers out
            for name in written:
                _remove(filesystem, f"{directory}/{name}")
            manifest.abandon(write_id)
        raise
    manifest.commit(write_id, written, rows, replaced if mode is SaveMode.OVERWRITE else None)
    _drop_superseded(manifest, filesystem, directory, replaced)
    return [f"{directory}/{name}" for name in written]


def _write_files(blocks: Iterator[Block], filesystem: Any, directory: str, extension: str, first: int,
                 write_file: Callable[[Block, Any], None], written: list[str]) -> int:
    rows = 0
    for block in blocks:
        if block.num_rows == 0:
            continue
        name = f"part-{first + len(written):05d}.{extension}"
        with atomic_write(f"{directory}/{name}", "wb", filesystem=filesystem) as f:
            write_file(block, f)
        written.append(name)
        rows += block.num_rows
    return rows


def _replaced_files(manifest: Manifest, visible: list[str], directory: str, mode: SaveMode, where: str) -> list[str]:
    """The files an overwrite replaces (all ember's own); refuses what would mix or delete a user's files."""
    pending = manifest.pending()
    if mode is SaveMode.APPEND:
        if pending is not None:
            raise DataError(f"{where}: the last write into {directory} did not finish; appending would mix its "
                            "partial rows in: pass mode='overwrite' to replace it")
        return []
    own = manifest.own_files(visible)
    foreign = [n for n in visible if n not in own]
    if foreign:
        shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
        raise DataError(f"{where}(mode='overwrite'): {directory} holds files ember did not write ({shown}); "
                        "overwrite only removes ember's own files: move them away or write to another folder")
    return own


def _drop_superseded(manifest: Manifest, filesystem: Any, directory: str, names: list[str]) -> None:
    """Delete the files an overwrite replaced (readers already skip them), then forget them."""
    doomed = [n for n in names if n in set(manifest.superseded)]
    for name in doomed:
        _remove(filesystem, f"{directory}/{name}")
    gone = [n for n in manifest.superseded if n in set(doomed) or n not in set(names)]
    manifest.forget_superseded(gone)


def _output_dir(path: str) -> tuple[Any, str, bool]:
    if is_remote(path):
        import pyarrow.fs as pafs

        from ember.fs import resolve

        filesystem, directory = resolve(path)
        return filesystem, directory, filesystem.get_file_info(directory).type != pafs.FileType.NotFound
    directory = os.path.expanduser(_strip_local(path))
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise DataError(f"cannot write into {directory}: it is a file; pass a folder path")
    return None, directory, os.path.exists(directory)


def _make_dir(filesystem: Any, directory: str) -> None:
    if filesystem is None:
        os.makedirs(directory, exist_ok=True)
    else:
        filesystem.create_dir(directory, recursive=True)


def _list(filesystem: Any, directory: str) -> list[str]:
    """Every entry's name: files, links and subfolders (readers descend into subfolders, so for an
    overwrite they count as what ember did not write)."""
    if filesystem is None:
        return sorted(os.listdir(directory))
    import pyarrow.fs as pafs

    infos = filesystem.get_file_info(pafs.FileSelector(directory, recursive=False))
    return sorted(i.base_name for i in infos)


def _remove(filesystem: Any, path: str) -> None:
    if filesystem is None:
        if os.path.lexists(path):
            os.remove(path)
    else:
        filesystem.delete_file(path)


def parquet_writer(**options: Any) -> Callable[[Block, Any], None]:
    """Options go to ``pyarrow.parquet.write_table`` (as in Ray); a wrong name fails here, before any work."""
    import pyarrow.parquet as pq

    own = named_parameters(pq.write_table, pq.ParquetWriter.__init__, but=("table", "where", "schema", "filesystem"))
    check_options("Dataset.write_parquet", options, own)
    options = {k: v for k, v in options.items() if k in own}  # Ray's scheduling-only arguments are not pyarrow's
    return lambda block, f: pq.write_table(block, f, **options)


def csv_writer(**options: Any) -> Callable[[Block, Any], None]:
    """Options go to ``pyarrow.csv.write_csv`` (as in Ray); a wrong name fails here, before any work."""
    import pyarrow.csv as pacsv

    own = named_parameters(pacsv.write_csv, but=("data", "output_file"))
    check_options("Dataset.write_csv", options, own)
    options = {k: v for k, v in options.items() if k in own}

    def write(block: Block, f: Any) -> None:
        _reject_nested(block, "write_csv")
        pacsv.write_csv(block, f, **options)

    return write


def _reject_nested(block: Block, sink: str) -> None:
    for field in block.schema:
        if isinstance(field.type, pa.ExtensionType) or pa.types.is_nested(field.type):
            raise DataError(
                f"{sink} cannot store column {field.name!r} of type {format_type(field.type)}; "
                "use write_parquet or write_numpy, or drop the column"
            )


def json_writer() -> Callable[[Block, Any], None]:
    def write(block: Block, f: Any) -> None:
        for row in block_to_rows(block):
            f.write((json.dumps(row, default=_json_default) + "\n").encode())

    return write


def _json_default(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, bytes):
        return value.decode("latin-1")
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def numpy_writer(column: str) -> Callable[[Block, Any], None]:
    def write(block: Block, f: Any) -> None:
        if column not in block.column_names:
            raise DataError(f"write_numpy: no column {column!r}; the dataset has columns {block.column_names}")
        values = block_to_numpy(block.select([column]))[column]
        if values.dtype == object:
            raise DataError(f"write_numpy: column {column!r} holds ragged or Python values; use write_parquet")
        np.save(f, values, allow_pickle=False)

    return write
