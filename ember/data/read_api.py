"""The public constructors: ``read_*`` for files, ``from_*`` for memory, ``range`` for generated data.

Paths are checked when the Dataset is built (a missing file fails at once, with its name); file
contents are read only when the Dataset executes.
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import numpy as np
import pyarrow as pa

from ember.data.block import batch_to_block
from ember.data.context import DataContext
from ember.data.dataset import Dataset
from ember.data.plan import Read
from ember.data.ray_args import ray_compatible
from ember.data.read import csv_json_text, files, memory, orc, parquet
from ember.data.read.partitioning import FileColumns, Partitioning, extension_suffixes, select_files
from ember.data.read.paths import COMPRESSED, resolve_paths, with_open_stream_args, without_skipped
from ember.data.read.shuffle import FileShuffleConfig, is_drawn, resolve_shuffle, shuffled_files
from ember.data.read.task import ReadTask, Source
from ember.data.read.tensor_columns import check_tensor_column_schema
from ember.errors import ConfigError, DataError

if TYPE_CHECKING:
    import pandas
    import torch

#: The ``paths`` of the ``read_*`` functions: Ray's ``str | list[str]``, and path objects.
_Paths: TypeAlias = "str | os.PathLike[str] | list[str] | list[os.PathLike[str]]"


def _dataset(name: str, make_tasks: Callable[[], list[ReadTask]]) -> Dataset:
    return Dataset(Read(Source(name, make_tasks)))


def _memory_dataset(name: str, make_tasks: Callable[[], list[ReadTask]], in_memory: bool = True) -> Dataset:
    """A read of data already in memory: its schema is its first block's (cheap: no file is opened).
    ``in_memory=False`` for the generated ranges, which Ray leaves lazy."""
    source = Source(name, make_tasks, in_memory=in_memory)
    source.schema = lambda: _first_schema(source)
    return Dataset(Read(source))


def _first_schema(source: Source) -> pa.Schema | None:
    for task in source.tasks():
        for block in task.read():
            return block.schema
    return None


def _rows_per_block() -> int:
    return DataContext.get_current().target_rows_per_block


HIVE = Partitioning("hive")  # Ray's default for parquet, CSV and JSON: key=value folders become columns


def _files(
    paths: _Paths,
    source: str,
    extensions: tuple[str, ...] | None,
    filesystem: Any,
    file_extensions: list[str] | None,
    partition_filter: Any,
    ignore_missing_paths: bool = False,
) -> tuple[Any, list[str]]:
    """The filesystem and files to read: listed, narrowed to ``file_extensions`` and ``partition_filter``."""
    if file_extensions is not None:
        extensions = extension_suffixes(file_extensions)
    fs, found = resolve_paths(paths, source, extensions, filesystem, ignore_missing_paths)
    return fs, select_files(found, source, file_extensions, partition_filter)


def _columns(include_paths: bool, partitioning: Any) -> FileColumns:
    if partitioning is not None and not isinstance(partitioning, Partitioning):  # e.g. Ray's own Partitioning
        partitioning = Partitioning(
            getattr(partitioning, "style", "hive"),
            getattr(partitioning, "base_dir", None),
            getattr(partitioning, "field_names", None),
            dict(getattr(partitioning, "field_types", None) or {}),
        )
    return FileColumns(include_paths, partitioning)


def _file_dataset(
    name: str,
    found: list[str],
    shuffle: FileShuffleConfig | None,
    make_tasks: Callable[[list[str]], list[ReadTask]],
    schema: Any = None,
) -> Dataset:
    """A read of ``found`` by ``make_tasks(files)``; with ``shuffle``, the files' order is drawn per epoch."""
    if shuffle is None:
        return Dataset(Read(Source(name, lambda: make_tasks(found), schema=schema)))

    def source(config: FileShuffleConfig) -> Source:
        made = Source(
            name,
            lambda: make_tasks(shuffled_files(found, config, 0)),
            schema=schema,
            epoch_tasks=lambda epoch: make_tasks(shuffled_files(found, config, epoch)),
        )
        if is_drawn(shuffle):  # no seed given: a new order on every execution, as Ray's
            made.drawn_seed = config.seed
            made.reseeded = lambda seed: source(FileShuffleConfig(seed=int(seed) % 2**31))
        return made

    return Dataset(Read(source(shuffle)))


def _per_file(
    name: str,
    fs: Any,
    found: list[str],
    columns: FileColumns,
    read_file: Any,
    shuffle: FileShuffleConfig | None = None,
) -> Dataset:
    return _file_dataset(
        name,
        found,
        shuffle,
        lambda files: columns.wrap_tasks(csv_json_text.file_tasks(fs, files, read_file), files),
    )


@ray_compatible
def read_parquet(
    paths: _Paths,
    *,
    columns: list[str] | None = None,
    filesystem: Any = None,
    allow_pickle: bool = False,
    filter: Any = None,
    include_paths: bool = False,  # noqa: A002 - Ray's name (a pyarrow argument)
    partitioning: Partitioning | None = HIVE,
    partition_filter: Callable[[list[str]], list[str]] | None = None,
    file_extensions: list[str] | None = None,
    ignore_missing_paths: bool = False,
    shuffle: Literal["files"] | FileShuffleConfig | None = None,
    tensor_column_schema: dict[str, Any] | None = None,
    include_row_hash: bool = False,
    skip_paths: str | list[str] | None = None,
    schema: pa.Schema | None = None,
    **_: Any,
) -> Dataset:
    """Read parquet files (a file, folder, glob or list); one task per row group.

    Folders named ``key=value`` add a string column ``key`` (Ray's hive ``partitioning``; pass
    ``partitioning=None`` to turn it off); ``partition_filter`` (`PathPartitionFilter`) skips folders
    without opening their files; ``filter`` (a pyarrow compute expression, or an
    ``ember.data.expressions`` one) keeps the matching rows; ``include_paths=True`` adds column ``path``.

    Columns of pickled Python objects (what ember stores for values Arrow cannot hold) are only
    read with ``allow_pickle=True``: unpickling runs code, so pass it only for files you trust.
    ``count()`` and ``schema()`` work either way (they read metadata only). All files must have
    the same columns and types.

    As in Ray: ``tensor_column_schema={column: (dtype, shape)}`` reads binary columns of raw NumPy
    buffers as tensors; ``include_row_hash=True`` adds a ``row_hash`` uint64 column, Ray's hash of
    (file, row position) (not with ``filter``, whose positions Ray counts after filtering: filter
    after reading instead); ``skip_paths`` (a path or list) leaves out those files and folders,
    whether or not they exist; ``schema`` (a ``pyarrow.Schema``, one of Ray's pyarrow arguments) reads
    the files as that schema: its columns, in its order and types, null where a file lacks one.

    Example:
        >>> import ember.data, tempfile
        >>> import pyarrow.compute as pc
        >>> out = tempfile.mkdtemp()
        >>> _ = ember.data.range(5).write_parquet(out)
        >>> ember.data.read_parquet(out).count()
        5
        >>> ember.data.read_parquet(out, filter=pc.field("id") >= 3).take_all()
        [{'id': 3}, {'id': 4}]
        >>> import pyarrow as pa
        >>> ember.data.read_parquet(out, schema=pa.schema([("id", pa.float32())])).take(2)
        [{'id': 0.0}, {'id': 1.0}]
    """
    order = resolve_shuffle(shuffle, "read_parquet")
    if include_row_hash and filter is not None:
        raise ConfigError(
            "read_parquet(include_row_hash=True, filter=...): Ray numbers rows after its filter; "
            "read with include_row_hash=True, then ds.filter(expr=...)"
        )
    tensors = None if tensor_column_schema is None else check_tensor_column_schema(tensor_column_schema)
    paths, skipped = without_skipped(paths, skip_paths)
    fs, found = _files(
        paths,
        "read_parquet",
        (".parquet", ".pq"),
        filesystem,
        file_extensions,
        partition_filter,
        ignore_missing_paths,
    )
    found = [f for f in found if not skipped(f)]
    extra = _columns(include_paths, partitioning)
    if filter is not None and hasattr(filter, "to_pyarrow"):
        filter = filter.to_pyarrow()  # noqa: A001
    row_hash = bool(include_row_hash)
    if schema is not None and not isinstance(schema, pa.Schema):
        raise ConfigError(f"read_parquet(schema={schema!r}); pass a pyarrow.Schema")
    return _file_dataset(
        "ReadParquet",
        found,
        order,
        lambda files: parquet.parquet_tasks(
            fs, files, columns, allow_pickle, extra, filter, row_hash, tensors, schema
        ),
        schema=lambda: parquet.parquet_schema(fs, found, columns, extra, row_hash, tensors, schema),
    )


@ray_compatible
def read_orc(
    paths: _Paths,
    *,
    filesystem: Any = None,
    partition_filter: Callable[[list[str]], list[str]] | None = None,
    partitioning: Partitioning | None = None,
    include_paths: bool = False,
    ignore_missing_paths: bool = False,
    file_extensions: list[str] | None = None,
    shuffle: Literal["files"] | FileShuffleConfig | None = None,
    **_: Any,
) -> Dataset:
    """Read ORC files (a file, folder, glob or list); one task per file, one block per stripe.

    As in Ray, ``partitioning`` is off by default (pass ``Partitioning("hive")`` to read
    ``key=value`` folders as columns); ``include_paths``, ``partition_filter``, ``file_extensions``
    (default ``["orc"]``) and ``ignore_missing_paths`` as in `read_parquet`. All files must have the
    same columns and types.

    Example:
        >>> import ember.data, tempfile
        >>> out = tempfile.mkdtemp()
        >>> _ = ember.data.range(5).write_orc(out)
        >>> ember.data.read_orc(out).take(2)
        [{'id': 0}, {'id': 1}]
    """
    order = resolve_shuffle(shuffle, "read_orc")
    fs, found = _files(
        paths,
        "read_orc",
        (".orc",),
        filesystem,
        ["orc"] if file_extensions is None else file_extensions,
        partition_filter,
        ignore_missing_paths,
    )
    extra = _columns(include_paths, partitioning)

    def tasks(files: list[str]) -> list[ReadTask]:
        first = (files[0], orc.orc_schema(fs, files[0])) if len(files) > 1 else None
        return extra.wrap_tasks(
            csv_json_text.file_tasks(fs, files, lambda f, p: orc.read_orc_file(f, p, first)), files
        )

    return _file_dataset("ReadORC", found, order, tasks)


@ray_compatible
def read_csv(
    paths: _Paths,
    *,
    filesystem: Any = None,
    parse_options: Any = None,
    convert_options: Any = None,
    read_options: Any = None,
    include_paths: bool = False,
    partitioning: Partitioning | None = HIVE,
    partition_filter: Callable[[list[str]], list[str]] | None = None,
    file_extensions: list[str] | None = None,
    ignore_missing_paths: bool = False,
    shuffle: Literal["files"] | FileShuffleConfig | None = None,
    arrow_open_stream_args: dict[str, Any] | None = None,
    **_: Any,
) -> Dataset:
    """Read CSV files (first line is the header); streamed in chunks, one task per file.

    Names ending in .gz, .bz2, .zst, .lz4 or .br are decompressed. ``include_paths``,
    ``partitioning``, ``partition_filter`` and ``file_extensions`` as in `read_parquet`.

    Example:
        >>> import ember.data, tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "a.csv")
        >>> _ = open(path, "w").write("x,y\\n1,2\\n3,4\\n")
        >>> ember.data.read_csv(path).take_all()
        [{'x': 1, 'y': 2}, {'x': 3, 'y': 4}]
    """
    order = resolve_shuffle(shuffle, "read_csv")
    fs, found = _files(
        paths,
        "read_csv",
        (".csv", ".tsv") + tuple(f".csv{c}" for c in COMPRESSED),
        filesystem,
        file_extensions,
        partition_filter,
        ignore_missing_paths,
    )
    fs = with_open_stream_args(fs, arrow_open_stream_args, "read_csv")
    options = {
        k: v
        for k, v in dict(
            parse_options=parse_options, convert_options=convert_options, read_options=read_options
        ).items()
        if v is not None
    }
    extra = _columns(include_paths, partitioning)
    return _file_dataset(
        "ReadCSV",
        found,
        order,
        lambda files: extra.wrap_tasks(csv_json_text.csv_tasks(fs, files, options), files),
    )


@ray_compatible
def read_json(
    paths: _Paths,
    *,
    filesystem: Any = None,
    lines: bool = False,
    include_paths: bool = False,
    partitioning: Partitioning | None = HIVE,
    partition_filter: Callable[[list[str]], list[str]] | None = None,
    file_extensions: list[str] | None = None,
    ignore_missing_paths: bool = False,
    shuffle: Literal["files"] | FileShuffleConfig | None = None,
    arrow_open_stream_args: dict[str, Any] | None = None,
    **_: Any,
) -> Dataset:
    """Read JSON files: JSON lines (one object per line) or one JSON array of objects; one task per file.

    Names ending in .gz, .bz2, .zst, .lz4 or .br are decompressed. ``include_paths``,
    ``partitioning``, ``partition_filter`` and ``file_extensions`` as in `read_parquet`.

    Example:
        >>> import ember.data, tempfile, os
        >>> folder = tempfile.mkdtemp()
        >>> _ = open(os.path.join(folder, "a.jsonl"), "w").write('{"x": 1}\\n{"x": 2}\\n')
        >>> _ = open(os.path.join(folder, "b.json"), "w").write('[{"x": 3}]')
        >>> ember.data.read_json(folder).take_all()
        [{'x': 1}, {'x': 2}, {'x': 3}]
    """
    order = resolve_shuffle(shuffle, "read_json")
    fs, found = _files(
        paths,
        "read_json",
        tuple(f"{e}{c}" for e in (".json", ".jsonl") for c in ("",) + COMPRESSED),
        filesystem,
        file_extensions,
        partition_filter,
        ignore_missing_paths,
    )
    fs = with_open_stream_args(fs, arrow_open_stream_args, "read_json")
    return _per_file(
        "ReadJSON", fs, found, _columns(include_paths, partitioning), csv_json_text.read_json_file, order
    )


@ray_compatible
def read_text(
    paths: _Paths,
    *,
    encoding: str = "utf-8",
    drop_empty_lines: bool = True,
    filesystem: Any = None,
    include_paths: bool = False,
    partitioning: Partitioning | None = None,
    partition_filter: Callable[[list[str]], list[str]] | None = None,
    file_extensions: list[str] | None = None,
    ignore_missing_paths: bool = False,
    shuffle: Literal["files"] | FileShuffleConfig | None = None,
    arrow_open_stream_args: dict[str, Any] | None = None,
    **_: Any,
) -> Dataset:
    """Read text files, one row per line, in column ``text`` (compressed names are decompressed).

    Example:
        >>> import ember.data, tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "a.txt")
        >>> _ = open(path, "w").write("hello\\nworld\\n")
        >>> ember.data.read_text(path).take_all()
        [{'text': 'hello'}, {'text': 'world'}]
    """
    order = resolve_shuffle(shuffle, "read_text")
    fs, found = _files(
        paths, "read_text", None, filesystem, file_extensions, partition_filter, ignore_missing_paths
    )
    fs = with_open_stream_args(fs, arrow_open_stream_args, "read_text")
    return _per_file(
        "ReadText",
        fs,
        found,
        _columns(include_paths, partitioning),
        lambda f, p: csv_json_text.read_text_file(f, p, encoding, drop_empty_lines),
        order,
    )


@ray_compatible
def read_images(
    paths: _Paths,
    *,
    size: tuple[int, int] | None = None,
    mode: str | None = None,
    include_paths: bool = False,
    filesystem: Any = None,
    partitioning: Partitioning | None = None,
    partition_filter: Callable[[list[str]], list[str]] | None = None,
    file_extensions: list[str] | None = None,
    ignore_missing_paths: bool = False,
    shuffle: Literal["files"] | FileShuffleConfig | None = None,
    arrow_open_file_args: dict[str, Any] | None = None,
    **_: Any,
) -> Dataset:
    """Decode images with Pillow into column ``image`` (HWC uint8 ndarrays); ``size`` is (height, width).
    ``arrow_open_file_args`` open each file as Ray does: as ``open_input_stream`` arguments (e.g.
    ``{"compression": "gzip"}`` for gzipped images, ``buffer_size``).

    Example:
        >>> import ember.data, tempfile, numpy as np
        >>> from PIL import Image
        >>> folder = tempfile.mkdtemp()
        >>> Image.fromarray(np.zeros((4, 6, 3), np.uint8)).save(f"{folder}/0.png")
        >>> print(ember.data.read_images(folder).schema())
        Column  Type
        ------  ----
        image   ArrowTensorTypeV2(shape=(4, 6, 3), dtype=uint8)
    """
    size = files.check_image_options(size, mode)
    order = resolve_shuffle(shuffle, "read_images")
    fs, found = _files(
        paths,
        "read_images",
        files.IMAGE_EXTENSIONS,
        filesystem,
        file_extensions,
        partition_filter,
        ignore_missing_paths,
    )
    fs = with_open_stream_args(fs, arrow_open_file_args, "read_images", "arrow_open_file_args")
    reader = files.with_row_columns(
        files.image_reader(size, mode, False), _columns(include_paths, partitioning)
    )
    return _file_dataset(
        "ReadImages", found, order, lambda paths: files.grouped_tasks(fs, paths, reader, cpu_heavy=True)
    )


@ray_compatible
def read_numpy(
    paths: _Paths,
    *,
    include_paths: bool = False,
    filesystem: Any = None,
    allow_pickle: bool = False,
    partitioning: Partitioning | None = None,
    partition_filter: Callable[[list[str]], list[str]] | None = None,
    file_extensions: list[str] | None = None,
    ignore_missing_paths: bool = False,
    shuffle: Literal["files"] | FileShuffleConfig | None = None,
    arrow_open_stream_args: dict[str, Any] | None = None,
    **_: Any,
) -> Dataset:
    """Read .npy files; rows are the first axis of each array, in column ``data``.

    Object arrays (pickled Python objects) need ``allow_pickle=True`` (Ray's and numpy's name):
    unpickling runs code, so pass it only for files you trust.

    Example:
        >>> import ember.data, tempfile, numpy as np
        >>> path = tempfile.mkdtemp() + "/a.npy"; np.save(path, np.arange(6).reshape(3, 2))
        >>> ember.data.read_numpy(path).count()
        3
    """
    order = resolve_shuffle(shuffle, "read_numpy")
    fs, found = _files(
        paths, "read_numpy", (".npy",), filesystem, file_extensions, partition_filter, ignore_missing_paths
    )
    fs = with_open_stream_args(fs, arrow_open_stream_args, "read_numpy")
    extra = _columns(include_paths, partitioning)
    return _file_dataset(
        "ReadNumpy",
        found,
        order,
        lambda paths: extra.wrap_tasks(files.numpy_file_tasks(fs, paths, False, allow_pickle), paths),
    )


@ray_compatible
def read_binary_files(
    paths: _Paths,
    *,
    include_paths: bool = False,
    filesystem: Any = None,
    partitioning: Partitioning | None = None,
    partition_filter: Callable[[list[str]], list[str]] | None = None,
    file_extensions: list[str] | None = None,
    ignore_missing_paths: bool = False,
    shuffle: Literal["files"] | FileShuffleConfig | None = None,
    arrow_open_stream_args: dict[str, Any] | None = None,
    **_: Any,
) -> Dataset:
    """Read whole files as bytes, one row per file, in column ``bytes``.

    Example:
        >>> import ember.data, tempfile
        >>> path = tempfile.mkdtemp() + "/a.bin"; _ = open(path, "wb").write(b"\\x00\\x01")
        >>> ember.data.read_binary_files(path).take(1)
        [{'bytes': b'\\x00\\x01'}]
    """
    order = resolve_shuffle(shuffle, "read_binary_files")
    fs, found = _files(
        paths, "read_binary_files", None, filesystem, file_extensions, partition_filter, ignore_missing_paths
    )
    fs = with_open_stream_args(fs, arrow_open_stream_args, "read_binary_files")
    reader = files.with_row_columns(files.binary_reader(False), _columns(include_paths, partitioning))
    return _file_dataset("ReadBinary", found, order, lambda paths: files.grouped_tasks(fs, paths, reader))


@ray_compatible
def read_webdataset(
    paths: _Paths,
    *,
    filesystem: Any = None,
    decoder: Any = True,
    suffixes: Any = None,
    include_paths: bool = False,
    expand_json: bool = False,
    partition_filter: Callable[[list[str]], list[str]] | None = None,
    file_extensions: list[str] | None = None,
    shuffle: Literal["files"] | FileShuffleConfig | None = None,
    arrow_open_stream_args: dict[str, Any] | None = None,
    **_: Any,
) -> Dataset:
    """Read WebDataset tar shards: members sharing a base name form one row (columns named by suffix,
    plus ``__key__`` and ``__url__``), decoded by suffix (``decoder=False`` keeps bytes); see
    ``ember.data.read.webdataset`` for the rules. One task per shard, streamed.

    Example:
        >>> import ember.data, tempfile, tarfile, io
        >>> path = tempfile.mkdtemp() + "/shard-0.tar"
        >>> with tarfile.open(path, "w") as tar:
        ...     for name, data in [("a.txt", b"hello"), ("a.cls", b"3")]:
        ...         info = tarfile.TarInfo(name); info.size = len(data); tar.addfile(info, io.BytesIO(data))
        >>> row = ember.data.read_webdataset(path).take(1)[0]
        >>> row["__key__"], row["txt"], row["cls"]
        ('a', 'hello', 3)
    """
    from ember.data.read.webdataset import webdataset_reader

    order = resolve_shuffle(shuffle, "read_webdataset")
    fs, found = _files(paths, "read_webdataset", (".tar",), filesystem, file_extensions, partition_filter)
    fs = with_open_stream_args(fs, arrow_open_stream_args, "read_webdataset")
    return _per_file(
        "ReadWebDataset",
        fs,
        found,
        _columns(include_paths, None),
        webdataset_reader(decoder, suffixes, expand_json),
        order,
    )


@ray_compatible
def read_tfrecords(
    paths: _Paths,
    *,
    filesystem: Any = None,
    include_paths: bool = False,
    partition_filter: Callable[[list[str]], list[str]] | None = None,
    file_extensions: list[str] | None = None,
    ignore_missing_paths: bool = False,
    shuffle: Literal["files"] | FileShuffleConfig | None = None,
    arrow_open_stream_args: dict[str, Any] | None = None,
    **_: Any,
) -> Dataset:
    """Read TFRecord files of ``tf.train.Example`` records (no TensorFlow needed); a feature with one
    value is a scalar column, with several a list column, as in Ray. Every record's CRCs are checked.

    Example:
        >>> import ember.data, tempfile
        >>> out = tempfile.mkdtemp()
        >>> _ = ember.data.from_items([{"label": 1, "x": [0.5, 2.0]}]).write_tfrecords(out)
        >>> ember.data.read_tfrecords(out).take_all()
        [{'label': 1, 'x': [0.5, 2.0]}]
    """
    from ember.data.read.tfrecords import read_tfrecords_file

    order = resolve_shuffle(shuffle, "read_tfrecords")
    fs, found = _files(
        paths, "read_tfrecords", None, filesystem, file_extensions, partition_filter, ignore_missing_paths
    )
    fs = with_open_stream_args(fs, arrow_open_stream_args, "read_tfrecords")
    return _per_file("ReadTFRecord", fs, found, _columns(include_paths, None), read_tfrecords_file, order)


@ray_compatible
def read_sql(
    sql: str,
    connection_factory: Callable[[], Any],
    *,
    sql_params: Any = None,
    shard_keys: list[str] | None = None,
    shard_hash_fn: str = "MD5",
    **_: Any,
) -> Dataset:
    """Rows of a SQL query through a DB-API 2 connection made by ``connection_factory()`` (sqlite3,
    psycopg, ...), fetched in blocks as the dataset streams. ``sql_params`` go to ``cursor.execute``.

    ``shard_keys``/``shard_hash_fn`` (Ray's way to split the query over connections) are accepted: ember reads
    the query through one connection, so the rows are the same and keep the query's order.

    Example:
        >>> import ember.data, sqlite3, tempfile
        >>> db = tempfile.mkdtemp() + "/a.db"
        >>> with sqlite3.connect(db) as c:
        ...     _ = c.execute("CREATE TABLE t (x INTEGER, y TEXT)")
        ...     _ = c.executemany("INSERT INTO t VALUES (?, ?)", [(1, "a"), (2, "b")])
        >>> query = "SELECT * FROM t WHERE x > ?"
        >>> ember.data.read_sql(query, lambda: sqlite3.connect(db), sql_params=(1,)).take_all()
        [{'x': 2, 'y': 'b'}]
    """
    from ember.data.read.sql import sql_reader

    if not callable(connection_factory) or hasattr(
        connection_factory, "cursor"
    ):  # a connection, not a factory
        raise DataError(
            "read_sql: connection_factory must be a function that returns a new DB-API connection, "
            "e.g. lambda: sqlite3.connect(path)"
        )
    reader = sql_reader(sql, connection_factory, sql_params)
    return _dataset("ReadSQL", lambda: [ReadTask(read=reader, description=f"query {sql}")])


@ray_compatible
def from_items(items: list[Any], *, override_num_blocks: int | None = None, **_: Any) -> Dataset:
    """A Dataset from a list of dicts (or of values, stored in column ``item``), cut into
    ``override_num_blocks`` blocks when given.

    Example:
        >>> import ember.data
        >>> ember.data.from_items([{"a": 1}, {"a": 2}]).take_all()
        [{'a': 1}, {'a': 2}]
        >>> ember.data.from_items(["a"] * 10, override_num_blocks=3).materialize().num_blocks()
        3
    """
    items = list(items)
    rows = _rows_per_block()
    return _memory_dataset("FromItems", lambda: memory.items_tasks(items, rows, override_num_blocks))


def from_numpy(ndarrays: np.ndarray | list[np.ndarray]) -> Dataset:
    """A Dataset from ndarrays; rows are the first axis, in column ``data``.

    Example:
        >>> import ember.data, numpy as np
        >>> print(ember.data.from_numpy(np.ones((2, 100))).schema())
        Column  Type
        ------  ----
        data    ArrowTensorTypeV2(shape=(100,), dtype=double)
    """
    arrays = [ndarrays] if isinstance(ndarrays, np.ndarray) else list(ndarrays)
    return _memory_dataset("FromNumpy", lambda: memory.numpy_tasks(arrays, _rows_per_block()))


def from_pandas(
    dfs: pandas.DataFrame | list[pandas.DataFrame], override_num_blocks: int | None = None
) -> Dataset:
    """A Dataset from one pandas DataFrame or a list of them; with ``override_num_blocks``, their rows
    are cut into that many blocks of sizes that differ by at most one (Ray's ``np.array_split``).

    Example:
        >>> import ember.data, pandas as pd
        >>> ember.data.from_pandas(pd.DataFrame({"a": [1, 2]})).count()
        2
        >>> ds = ember.data.from_pandas(pd.DataFrame({"a": [0, 1, 2, 3, 4]}), override_num_blocks=2)
        >>> [len(block["a"]) for block in ds.iter_batches(batch_size=None)]
        [3, 2]
    """
    dfs = dfs if isinstance(dfs, list) else [dfs]
    blocks = [batch_to_block(df, "from_pandas") for df in dfs]
    if override_num_blocks is not None:
        blocks = _split_evenly(pa.concat_tables(blocks), override_num_blocks)
    return _memory_dataset("FromPandas", lambda: memory.block_tasks(blocks, "from_pandas"))


def from_arrow(tables: pa.Table | list[pa.Table], *, override_num_blocks: int | None = None) -> Dataset:
    """A Dataset from one pyarrow Table or a list of them; with ``override_num_blocks``, their rows are
    cut into that many blocks of ceil(rows / n) rows, the last ones empty where rows run out (Ray's rule).

    Example:
        >>> import ember.data, pyarrow as pa
        >>> ember.data.from_arrow(pa.table({"a": [1, 2]})).take(1)
        [{'a': 1}]
        >>> ds = ember.data.from_arrow(pa.table({"a": [0, 1, 2, 3, 4]}), override_num_blocks=2)
        >>> [len(block["a"]) for block in ds.iter_batches(batch_size=None)]
        [3, 2]
    """
    tables = tables if isinstance(tables, list) else [tables]
    for table in tables:
        if not isinstance(table, pa.Table):
            raise DataError(f"from_arrow got a {type(table).__name__}; pass pyarrow Tables")
    if override_num_blocks is not None:
        tables = _split_in_ceil_slices(pa.concat_tables(tables), override_num_blocks)
    return _memory_dataset("FromArrow", lambda: memory.block_tasks(tables, "from_arrow"))


def from_fragments(fragments: list[ReadTask], *, name: str = "Fragments") -> Dataset:
    """A Dataset that reads ``fragments``, in order: read tasks as ``Dataset.fragments()`` returns them
    (each with ``read()``, ``description``, ``num_rows``, ``cpu_heavy``), or copies of them with another
    ``read`` (``dataclasses.replace(task, read=...)``). ember's batch inference reads fragment by
    fragment through it (``ember.inference.job``); ``name`` names the read in ``stats()`` and errors.

    Example:
        >>> import dataclasses
        >>> first, second = ember.data.range(4, override_num_blocks=2).fragments()
        >>> ember.data.from_fragments([second, first]).take_batch(4)["id"].tolist()
        [2, 3, 0, 1]
    """
    tasks = list(fragments)
    return _dataset(name, lambda: tasks)


def from_torch(dataset: torch.utils.data.Dataset[Any], local_read: bool = False) -> Dataset:
    """A Dataset from a torch map-style or iterable dataset; each item goes in column ``item``.
    (``local_read``, Ray's choice of where its tasks read, changes nothing here: ember reads locally.)

    Example:
        >>> import ember.data, torch
        >>> ds = ember.data.from_torch(torch.utils.data.TensorDataset(torch.arange(3)))
        >>> ds.count()
        3
    """
    return _dataset("FromTorch", lambda: memory.torch_tasks(dataset, _rows_per_block()))


@ray_compatible
def range(n: int, *, override_num_blocks: int | None = None, **_: Any) -> Dataset:  # noqa: A001 - Ray's name
    """A Dataset of integers 0..n-1 in column ``id``.

    Example:
        >>> import ember.data
        >>> ember.data.range(3).take_all()
        [{'id': 0}, {'id': 1}, {'id': 2}]
    """
    rows = _range_block_rows(n, override_num_blocks)
    return _memory_dataset("Range", lambda: memory.range_tasks(n, rows), in_memory=False)


@ray_compatible
def range_tensor(
    n: int, *, shape: tuple[int, ...] = (1,), override_num_blocks: int | None = None, **_: Any
) -> Dataset:
    """A Dataset of n tensors of ``shape`` filled with their row index, in column ``data``.

    Example:
        >>> import ember.data
        >>> ember.data.range_tensor(2, shape=(2, 2)).take(1)[0]["data"].tolist()
        [[0, 0], [0, 0]]
    """
    rows = _range_block_rows(n, override_num_blocks)
    return _memory_dataset("RangeTensor", lambda: memory.range_tasks(n, rows, tuple(shape)), in_memory=False)


def _split_evenly(table: pa.Table, n: int) -> list[pa.Table]:
    """``n`` slices whose sizes differ by at most one, the larger first (``np.array_split``'s rule)."""
    if n <= 0:
        raise ConfigError("override_num_blocks must be > 0")
    size, extra = divmod(table.num_rows, n)
    starts = [i * size + builtins.min(i, extra) for i in builtins.range(n + 1)]
    return [table.slice(starts[i], starts[i + 1] - starts[i]) for i in builtins.range(n)]


def _split_in_ceil_slices(table: pa.Table, n: int) -> list[pa.Table]:
    """``n`` slices of ceil(rows / n) rows, empty ones at the end where the rows run out (Ray's
    from_arrow)."""
    if n <= 0:
        raise ConfigError("override_num_blocks must be > 0")
    size = builtins.max(1, -(-table.num_rows // n))
    return [table.slice(builtins.min(i * size, table.num_rows), size) for i in builtins.range(n)]


def _range_block_rows(n: int, num_blocks: int | None) -> int:
    # Ray's range cuts n // num_blocks rows per block (the remainder makes one more block: 10 rows in 4
    # asked blocks are 5 blocks of 2)
    if num_blocks:
        return builtins.max(1, n // num_blocks)
    return _rows_per_block()
