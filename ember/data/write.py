"""Sinks: one file per output block (``part-00000.parquet``, ...), Ray's save modes, and a manifest.

Every file is written with `ember.fs.atomic_write` (an exclusive, unpredictable temporary name in the
target folder, then a rename), so a crash never leaves a half-written file under its final name and a
planted symlink never redirects a write. A whole write is committed by the folder's manifest
(`ember.data.manifest`), written last: a reader never sees a mix of two writes or part of one.

``mode`` is Ray's ``SaveMode`` (default ``append``): what to do when the folder already exists.
``overwrite`` removes only the files ember's manifest lists and refuses a folder holding anything else.

Every format goes through one mechanism: the driver plans the files (`ember.data.write_layout`),
names each and records it before it is written, and the jobs writing them (`ember.data.write_job`)
run here or, with ``execution="ray"``, in Ray tasks beside the blocks (`ember.data.write_run`): the
driver then sees only row counts, and commits the same manifest. So a write on Ray gives the same
files, names and guarantees as a local one: on an error every file of the write is taken back once
the tasks in flight have stopped; a killed driver leaves the write pending (readers refuse the
folder, ``overwrite`` replaces it). On a multi-node cluster a local path must be a folder every
node sees (a shared filesystem); ``s3://`` and other object stores need nothing more.
"""

from __future__ import annotations

import contextlib
import enum
import json
import logging
import os
import uuid
from collections.abc import Callable, Iterator
from typing import Any, TypedDict

import numpy as np
import pyarrow as pa

from ember.data.block import Block, block_to_numpy, block_to_rows
from ember.data.filename_provider import check_name, check_provider, task_file_name
from ember.data.manifest import Manifest, part_index
from ember.data.ray_args import SCHEDULING_ONLY, check_options, named_parameters
from ember.data.ray_errors import DataValueError  # Ray raises ValueError here
from ember.data.read.paths import is_remote, strip_local
from ember.data.schema import format_type
from ember.data.write_job import FileJob, check_open_args
from ember.data.write_layout import check_min_bytes, plan_files
from ember.data.write_run import WriteInput, run_jobs
from ember.errors import ConfigError, DataError
from ember.fs import make_folders, remove_file, remove_stale_temporaries

logger = logging.getLogger(__name__)


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


def write_blocks(
    source: WriteInput | Iterator[Block],
    path: str,
    extension: str,
    write_file: Callable[[Block, Any], None],
    mode: Any = SaveMode.APPEND,
    where: str = "write",
    *,
    min_rows_per_file: int | None = None,
    max_rows_per_file: int | None = None,
    min_bytes_per_file: int | None = None,
    partition_cols: list[str] | None = None,
    filesystem: Any = None,
    filename_provider: Any = None,
    arrow_open_stream_args: Any = None,
    row_files: bool = False,
) -> list[str]:
    """Write each non-empty block to ``path/part-NNNNN.<extension>``; returns the file paths.

    ``source``: a `WriteInput` (the plan, so that with ``execution="ray"`` every file is written by a
    Ray task beside its blocks, ``write_run.py``) or an iterator of blocks (written here).
    ``min_rows_per_file``/``max_rows_per_file``/``min_bytes_per_file`` set which rows go into which
    file (`ember.data.write_layout`). ``partition_cols`` writes each distinct value combination into
    its own ``col=value/`` folder (each with its own manifest) and leaves those columns out of the
    files, as Ray does (on the driver, also on Ray). ``filename_provider`` (Ray's ``FilenameProvider``)
    names the files; ``row_files`` marks a writer of one file per row (``write_images``).
    ``arrow_open_stream_args``: see `ember.data.write_job`.
    """
    mode = save_mode(mode, where)
    check_rows_per_file(min_rows_per_file, max_rows_per_file, where)
    check_min_bytes(min_bytes_per_file, where, min_rows_per_file, max_rows_per_file)
    check_provider(filename_provider, where)
    open_args = check_open_args(arrow_open_stream_args, where)
    if partition_cols and filename_provider is not None:
        raise ConfigError(
            f"{where}(partition_cols=..., filename_provider=...) is not supported; ember names "
            "partitioned files part-NNNNN: drop one of the two"
        )
    if not isinstance(source, WriteInput):
        blocks = source
        source = WriteInput(None, lambda: blocks)
    filesystem, directory, exists = _output_dir(os.fspath(path), filesystem)
    if exists and mode is SaveMode.ERROR:
        raise DataValueError(
            f"{where}: {directory} already exists (mode='error'); write to a new folder, "
            "or pass mode='append' or mode='overwrite'"
        )
    if exists and mode is SaveMode.IGNORE:
        return []
    if partition_cols and mode is SaveMode.OVERWRITE:
        raise DataError(
            f"{where}(partition_cols=..., mode='overwrite') is not supported: ember only removes files "
            "its manifest lists, folder by folder; remove the folder first, or write to a new one"
        )
    layout = {"min_rows": min_rows_per_file, "max_rows": max_rows_per_file, "min_bytes": min_bytes_per_file}
    naming = _Naming(filename_provider, extension, row_files)
    try:
        if partition_cols:
            return _write_partitioned(
                _local_files(source.stream(), layout),
                filesystem,
                directory,
                naming,
                write_file,
                open_args,
                mode,
                where,
                list(partition_cols),
            )
        folder = _FolderWrite(filesystem, directory, naming, mode, where)
        return folder.run(source, layout, write_file, open_args)
    except OSError as e:  # a read-only folder, a full disk: one line, not pyarrow's traceback
        reason = e.strerror or str(e)
        raise DataError(
            f"{where}: cannot write into {directory} ({reason}); free some space or fix the folder's "
            "permissions, or write elsewhere"
        ) from None


class _Naming:
    """How a write names its files: ``part-NNNNN.<ext>`` from the folder's next number, or a provider's."""

    def __init__(self, provider: Any, extension: str, row_files: bool) -> None:
        self.provider, self.extension, self.row_files = provider, extension, row_files
        self.write_uuid = uuid.uuid4().hex  # Ray's write UUID: what a provider puts in its names

    def name(self, first: int, index: int) -> str:
        if self.provider is None:
            return f"part-{first + index:05d}.{self.extension}"
        return task_file_name(self.provider, self.write_uuid, index, self.extension, self.row_files)


class _FolderWrite:
    """One write into one folder: recorded as pending in its manifest, files added, then committed."""

    def __init__(self, filesystem: Any, directory: str, naming: _Naming, mode: SaveMode, where: str) -> None:
        self.filesystem, self.directory, self.naming, self.mode = filesystem, directory, naming, mode
        self.extension, self.where = naming.extension, where
        _make_dir(filesystem, directory)
        if filesystem is None:
            remove_stale_temporaries(directory)
        self.manifest = Manifest.load(filesystem, directory)
        _take_back_killed_write(self.manifest, filesystem, directory, where)
        _drop_superseded(self.manifest, filesystem, directory, _list(filesystem, directory))
        names = _list(filesystem, directory)
        visible = [n for n in names if not n.startswith((".", "_"))]
        self.replaced = _replaced_files(self.manifest, visible, directory, mode, where)
        self.present = set(names) - set(self.replaced)  # a provider's name must not reuse one of these
        self.first = 1 + max([i for i in map(part_index, names) if i is not None], default=-1)
        self.write_id = naming.write_uuid
        self.assigned: list[str] = []  # names handed to jobs: what a failure takes back
        self.written: list[str] = []
        self.rows = 0
        self.manifest.begin(self.write_id, self.first, self.extension)

    def job(
        self,
        index: int,
        pieces: list[tuple[int, int, int]],
        write_file: Callable[[Block, Any], None],
        open_args: dict[str, Any],
    ) -> FileJob:
        """The job writing file ``index`` of this write (named now, on the driver)."""
        name = self.naming.name(self.first, index)
        if self.naming.provider is not None:
            check_name(name, self.present | set(self.assigned), self.where)
            if self.extension == "parquet" and self.mode is SaveMode.APPEND and self.write_id not in name:
                raise DataError(
                    f"{self.where}: the filename provider returned {name!r}, without the write UUID; in "
                    "mode='append' Ray refuses that (files could be overwritten): include write_uuid in "
                    "the name, or pass mode='overwrite'"
                )
        self.assigned.append(name)
        return FileJob(f"{self.directory}/{name}", pieces, write_file, self.filesystem, open_args)

    def record(self, rows: int, node: Any) -> None:
        """File ``len(self.written)`` is complete under its name."""
        name = self.assigned[len(self.written)]
        if node is not None:
            logger.debug(
                "%s: %s/%s (%d rows) written on Ray node %s", self.where, self.directory, name, rows, node
            )
        self.written.append(name)
        self.rows += rows

    def add(self, block: Block, write_file: Callable[[Block, Any], None], open_args: dict[str, Any]) -> None:
        """Write one more file (a partitioned write, here on the driver)."""
        if block.num_rows:
            self.record(
                self.job(len(self.assigned), [(0, 0, block.num_rows)], write_file, open_args)([block]), None
            )

    def abandon(self) -> None:
        """An error (not a kill): take back this write's files, leave the folder as it was."""
        with contextlib.suppress(OSError):  # if even that fails, the pending record keeps readers out
            for name in self.assigned:
                _remove(self.filesystem, f"{self.directory}/{name}")
            self.manifest.abandon(self.write_id)

    def commit(self) -> list[str]:
        overwrite = self.mode is SaveMode.OVERWRITE
        replaced = [
            n for n in self.replaced if n not in set(self.written)
        ]  # a provider may reuse an old name
        self.manifest.commit(self.write_id, self.written, self.rows, replaced if overwrite else None)
        _drop_superseded(self.manifest, self.filesystem, self.directory, replaced)
        return [f"{self.directory}/{name}" for name in self.written]

    def run(
        self,
        source: WriteInput,
        layout: dict[str, Any],
        write_file: Callable[[Block, Any], None],
        open_args: dict[str, Any],
    ) -> list[str]:
        from ember.data.write_ray import JobsStillRunning

        try:
            results = run_jobs(source, layout, lambda i, pieces: self.job(i, pieces, write_file, open_args))
            with contextlib.closing(results):
                for rows, node in results:
                    self.record(rows, node)
        except JobsStillRunning:
            raise  # files may still appear: the pending record stays, readers refuse the folder
        except BaseException:
            self.abandon()
            raise
        return self.commit()


def _local_files(blocks: Iterator[Block], layout: dict[str, Any]) -> Iterator[Block]:
    """The blocks of each file, re-cut here by `plan_files` (a partitioned write)."""
    from ember.data.block import block_nbytes, concat_blocks

    items = ((block, 0, block.num_rows, block_nbytes(block)) for block in blocks)
    for pieces in plan_files(items, **layout):
        yield concat_blocks([block.slice(start, rows) for block, start, rows in pieces])


def _write_partitioned(
    blocks: Iterator[Block],
    filesystem: Any,
    directory: str,
    naming: _Naming,
    write_file: Callable[[Block, Any], None],
    open_args: dict[str, Any],
    mode: SaveMode,
    where: str,
    columns: list[str],
) -> list[str]:
    folders: dict[tuple[Any, ...], _FolderWrite] = {}
    try:
        for block in blocks:
            for values, piece in _partition_pieces(block, columns, where):
                if values not in folders:
                    sub = "/".join(f"{c}={_quote(v)}" for c, v in zip(columns, values, strict=True))
                    folders[values] = _FolderWrite(filesystem, f"{directory}/{sub}", naming, mode, where)
                folders[values].add(piece, write_file, open_args)
    except BaseException:
        for folder in folders.values():
            folder.abandon()
        raise
    return [path for key in sorted(folders, key=str) for path in folders[key].commit()]


def _partition_pieces(
    block: Block, columns: list[str], where: str
) -> Iterator[tuple[tuple[Any, ...], Block]]:
    """(partition values, rows of ``block`` with those values, without the partition columns)."""
    import pyarrow.compute as pc

    missing = [c for c in columns if c not in block.column_names]
    if missing:
        raise DataError(
            f"{where}: partition_cols names {missing[0]!r}, which is not a column (columns: "
            f"{block.column_names})"
        )
    keys = block.select(columns).group_by(columns).aggregate([]).to_pylist()
    data = block.drop_columns(columns)
    for key in keys:
        mask = None
        for c in columns:
            value = key[c]
            test = pc.is_null(block.column(c)) if value is None else pc.equal(block.column(c), value)
            mask = test if mask is None else pc.and_(mask, test)
        yield tuple(key[c] for c in columns), data.filter(mask)


def _quote(value: Any) -> str:
    import urllib.parse

    return "__HIVE_DEFAULT_PARTITION__" if value is None else urllib.parse.quote(str(value), safe="")


def check_rows_per_file(min_rows: int | None, max_rows: int | None, where: str) -> None:
    for name, value in (("min_rows_per_file", min_rows), ("max_rows_per_file", max_rows)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ConfigError(f"{where}({name}={value!r}); use a positive row count")
    if min_rows is not None and max_rows is not None and min_rows > max_rows:
        raise ConfigError(
            f"{where}(min_rows_per_file={min_rows}, max_rows_per_file={max_rows}); the minimum "
            "must not exceed the maximum"
        )


def _replaced_files(
    manifest: Manifest, visible: list[str], directory: str, mode: SaveMode, where: str
) -> list[str]:
    """The files an overwrite replaces (all ember's own); refuses what would mix or delete a user's files."""
    pending = manifest.pending()
    if mode is SaveMode.APPEND:
        if pending is not None:
            raise DataError(
                f"{where}: the last write into {directory} did not finish; appending would mix its "
                "partial rows in: pass mode='overwrite' to replace it"
            )
        return []
    own = manifest.own_files(visible)
    foreign = [n for n in visible if n not in own]
    if foreign:
        shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
        raise DataError(
            f"{where}(mode='overwrite'): {directory} holds files ember did not write ({shown}); "
            "overwrite only removes ember's own files: move them away or write to another folder"
        )
    return own


def _take_back_killed_write(manifest: Manifest, filesystem: Any, directory: str, where: str) -> None:
    """A write into this folder that was killed before it committed left files that are ember's own and
    no reader uses: remove them and forget the write, so running the same job again just works (the
    committed files stay as they are)."""
    killed = manifest.killed_write()
    if killed is None:
        return
    doomed = manifest.uncommitted_files(_list(filesystem, directory))
    for name in doomed:
        _remove(filesystem, f"{directory}/{name}")
    manifest.abandon(killed["id"])
    logger.warning(
        "%s: removed %d file(s) of an earlier write into %s that was killed before it finished "
        "(process %s); committed files are untouched",
        where,
        len(doomed),
        directory,
        killed.get("pid"),
    )


def _drop_superseded(manifest: Manifest, filesystem: Any, directory: str, names: list[str]) -> None:
    """Delete the files an overwrite replaced (readers already skip them), then forget them."""
    doomed = [n for n in names if n in set(manifest.superseded)]
    for name in doomed:
        _remove(filesystem, f"{directory}/{name}")
    gone = [n for n in manifest.superseded if n in set(doomed) or n not in set(names)]
    manifest.forget_superseded(gone)


def _output_dir(path: str, filesystem: Any = None) -> tuple[Any, str, bool]:
    if filesystem is not None:  # a pyarrow filesystem (Ray's filesystem=): the path is on it, as given
        import pyarrow.fs as pafs

        if not isinstance(filesystem, pafs.FileSystem):
            raise ConfigError(
                f"filesystem={type(filesystem).__name__}; pass a pyarrow.fs.FileSystem (wrap an fsspec "
                "one with pyarrow.fs.PyFileSystem(pyarrow.fs.FSSpecHandler(fs)))"
            )
        directory = path.rstrip("/")
        info = filesystem.get_file_info(directory)
        if info.type == pafs.FileType.File:
            raise DataError(f"cannot write into {directory}: it is a file; pass a folder path")
        return filesystem, directory, info.type != pafs.FileType.NotFound
    if is_remote(path):
        import pyarrow.fs as pafs

        from ember.fs import resolve

        filesystem, directory = resolve(path)
        return filesystem, directory, filesystem.get_file_info(directory).type != pafs.FileType.NotFound
    directory = os.path.expanduser(strip_local(path))
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise DataError(f"cannot write into {directory}: it is a file; pass a folder path")
    return None, directory, os.path.exists(directory)


def _make_dir(filesystem: Any, directory: str) -> None:
    if filesystem is None:
        make_folders(directory)
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
    remove_file(path, filesystem=filesystem)


def parquet_writer(
    arrow_parquet_args_fn: Callable[[], dict[str, Any]] | None = None, **options: Any
) -> Callable[[Block, Any], None]:
    """Options go to ``pyarrow.parquet.write_table`` (as in Ray), with ``arrow_parquet_args_fn()``'s
    entries (called per file, so they need not pickle) taking precedence (Ray's rule); a wrong option
    name fails here, before any work.

    Example:
        >>> write = parquet_writer(lambda: {"compression": "zstd"}, compression="snappy")
    """
    import pyarrow.parquet as pq

    own = named_parameters(
        pq.write_table, pq.ParquetWriter.__init__, but=("table", "where", "schema", "filesystem")
    )
    check_options("Dataset.write_parquet", options, own)
    options = {
        k: v for k, v in options.items() if k in own
    }  # Ray's scheduling-only arguments are not pyarrow's
    return lambda block, f: pq.write_table(block, f, **_resolved(options, arrow_parquet_args_fn))


def _resolved(options: dict[str, Any], args_fn: Callable[[], dict[str, Any]] | None) -> dict[str, Any]:
    """``options`` updated with ``args_fn()`` (Ray's ``_resolve_kwargs``: the function's entries win)."""
    return {**options, **args_fn()} if args_fn is not None else options


def csv_writer(
    arrow_csv_args_fn: Callable[[], dict[str, Any]] | None = None, **options: Any
) -> Callable[[Block, Any], None]:
    """Options go to ``pyarrow.csv.write_csv`` (as in Ray), with ``arrow_csv_args_fn()``'s entries
    taking precedence; a wrong option name fails here, before any work.

    Example:
        >>> import pyarrow.csv
        >>> write = csv_writer(lambda: {"write_options": pyarrow.csv.WriteOptions(delimiter=";")})
    """
    import pyarrow.csv as pacsv

    own = named_parameters(pacsv.write_csv, but=("data", "output_file"))
    check_options("Dataset.write_csv", options, own)
    options = {k: v for k, v in options.items() if k in own}

    def write(block: Block, f: Any) -> None:
        _reject_nested(block, "write_csv")
        pacsv.write_csv(block, f, **_resolved(options, arrow_csv_args_fn))

    return write


def orc_writer(
    arrow_orc_args_fn: Callable[[], dict[str, Any]] | None = None, **options: Any
) -> Callable[[Block, Any], None]:
    """Options go to ``pyarrow.orc.write_table`` (as in Ray), with ``arrow_orc_args_fn()``'s entries
    taking precedence (Ray's rule); a wrong option name fails here, before any work.

    Example:
        >>> write = orc_writer(compression="zstd")
        >>> orc_writer(compresion="zstd")
        Traceback (most recent call last):
        ...
        ember.errors.ConfigError: Dataset.write_orc() has no argument 'compresion'; did you mean
        'compression'?
    """
    import pyarrow.orc as orc

    own = named_parameters(orc.write_table, but=("table", "where"))
    check_options("Dataset.write_orc", options, own)
    options = {
        k: v for k, v in options.items() if k in own
    }  # Ray's scheduling-only arguments are not pyarrow's

    def write(block: Block, f: Any) -> None:
        for field in block.schema:
            if isinstance(field.type, pa.BaseExtensionType):  # ORC has no extension types (tensors)
                raise DataError(
                    f"write_orc cannot store column {field.name!r} of type {format_type(field.type)}; "
                    "use write_parquet, or drop the column"
                )
        if not block.num_columns:
            raise DataError("write_orc needs at least one column")
        extra = arrow_orc_args_fn() if arrow_orc_args_fn is not None else {}
        orc.write_table(block, f, **{**options, **extra})

    return write


def _reject_nested(block: Block, sink: str) -> None:
    for field in block.schema:
        if isinstance(field.type, pa.ExtensionType) or pa.types.is_nested(field.type):
            raise DataError(
                f"{sink} cannot store column {field.name!r} of type {format_type(field.type)}; "
                "use write_parquet or write_numpy, or drop the column"
            )


def json_writer(
    pandas_json_args_fn: Callable[[], dict[str, Any]] | None = None, **pandas_json_args: Any
) -> Callable[[Block, Any], None]:
    """JSON lines, one object per row. With ``pandas_json_args`` or ``pandas_json_args_fn`` (whose
    entries win), each block is written as Ray writes it: ``DataFrame.to_json(f, orient="records",
    lines=True, **args)``, ``orient``/``lines`` overridable; a wrong argument name fails here.

    Example:
        >>> write = json_writer(lambda: {"double_precision": 3}, date_unit="s")
        >>> json_writer(orientt="records")
        Traceback (most recent call last):
        ...
        ember.errors.ConfigError: Dataset.write_json() has no argument 'orientt'; did you mean 'orient'?
    """
    pandas_json_args = {k: v for k, v in pandas_json_args.items() if k not in SCHEDULING_ONLY}
    if pandas_json_args or pandas_json_args_fn is not None:
        return _pandas_json_writer(pandas_json_args_fn, pandas_json_args)

    def write(block: Block, f: Any) -> None:
        for row in block_to_rows(block):
            f.write((json.dumps(row, default=_json_default) + "\n").encode())

    return write


def _pandas_json_writer(
    args_fn: Callable[[], dict[str, Any]] | None, options: dict[str, Any]
) -> Callable[[Block, Any], None]:
    import pandas as pd

    own = named_parameters(pd.DataFrame.to_json, but=("path_or_buf",))
    check_options("Dataset.write_json", options, own)
    options = {k: v for k, v in options.items() if k in own}

    def write(block: Block, f: Any) -> None:
        args = _resolved(options, args_fn)
        orient, lines = args.pop("orient", "records"), args.pop("lines", True)
        # integers with nulls stay integers (Ray's Arrow-backed pandas frames keep them; float64 would write
        # 3.0)
        frame = block.to_pandas(integer_object_nulls=True)
        f.write(frame.to_json(orient=orient, lines=lines, **args).encode())

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
            raise DataError(
                f"write_numpy: no column {column!r}; the dataset has columns {block.column_names}"
            )
        values = block_to_numpy(block.select([column]))[column]
        if values.dtype == object:
            raise DataError(
                f"write_numpy: column {column!r} holds ragged or Python values; use write_parquet"
            )
        np.save(f, values, allow_pickle=False)

    return write


class FileLayout(TypedDict):
    """`write_blocks`'s row-count keywords (`file_layout`)."""

    min_rows_per_file: int | None
    max_rows_per_file: int | None


def file_layout(
    where: str,
    min_rows_per_file: int | None = None,
    max_rows_per_file: int | None = None,
    num_rows_per_file: int | None = None,
) -> FileLayout:
    """Ray's row-count options as `write_blocks` keywords; ``num_rows_per_file`` is Ray's deprecated name
    for ``min_rows_per_file``.

    Example:
        >>> file_layout("write_csv", num_rows_per_file=10)
        {'min_rows_per_file': 10, 'max_rows_per_file': None}
    """
    if num_rows_per_file is not None:
        if min_rows_per_file is not None and min_rows_per_file != num_rows_per_file:
            raise ConfigError(
                f"{where}: pass min_rows_per_file or num_rows_per_file (its deprecated name), not both"
            )
        min_rows_per_file = num_rows_per_file
    check_rows_per_file(min_rows_per_file, max_rows_per_file, where)
    return {"min_rows_per_file": min_rows_per_file, "max_rows_per_file": max_rows_per_file}


def image_writer(column: str, file_format: str) -> Callable[[Block, Any], None]:
    """Writes the one row of a block as an image file (``write_images`` writes a file per row)."""

    def write(block: Block, f: Any) -> None:
        from PIL import Image

        if column not in block.column_names:
            raise DataError(
                f"write_images: no column {column!r}; the dataset has columns {block.column_names}"
            )
        image = block_to_numpy(block.select([column]))[column][0]
        try:
            Image.fromarray(np.asarray(image)).save(
                f, format="jpeg" if file_format.lower() == "jpg" else file_format
            )
        except (TypeError, ValueError, KeyError, OSError) as e:
            raise DataError(
                f"write_images: column {column!r} cannot be saved as {file_format} ({e}); pass HWC or HW "
                "uint8 arrays and a format Pillow knows (png, jpeg, ...)"
            ) from None

    return write


def sql_write(blocks: Iterator[Block], sql: str, connection_factory: Callable[[], Any]) -> int:
    """Insert every row with ``cursor.executemany(sql, rows)`` in ONE transaction: committed after the
    last block, rolled back on any error (so a failed write leaves the table as it was). Returns the rows."""
    from ember.data.read.sql import connect

    connection = connect(connection_factory, "write_sql")
    rows = 0
    try:
        cursor = connection.cursor()
        for block in blocks:
            if block.num_rows:
                values = [tuple(row.values()) for row in block_to_rows(block)]
                cursor.executemany(sql, [tuple(_sql_value(v) for v in row) for row in values])
                rows += block.num_rows
        connection.commit()
    except BaseException:
        with contextlib.suppress(Exception):
            connection.rollback()
        raise
    finally:
        with contextlib.suppress(Exception):
            connection.close()
    return rows


def _sql_value(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        raise DataError(
            "write_sql: a column holds arrays, which a SQL row cannot; drop it or map it to scalars"
        )
    return value
