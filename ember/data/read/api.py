"""The public constructors: ``read_*`` for files, ``from_*`` for memory, ``range`` for generated data.

Paths are checked when the Dataset is built (a missing file fails at once, with its name); file
contents are read only when the Dataset executes.
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np
import pyarrow as pa

from ember.data.block import batch_to_block
from ember.data.context import DataContext
from ember.data.dataset import Dataset
from ember.data.plan import Read
from ember.data.ray_args import ray_compatible
from ember.data.read import csv_json_text, files, memory, parquet
from ember.data.read.paths import resolve_paths
from ember.data.read.task import Source
from ember.errors import DataError


def _dataset(name: str, make_tasks) -> Dataset:
    return Dataset(Read(Source(name, make_tasks)))


def _rows_per_block() -> int:
    return DataContext.get_current().target_rows_per_block


@ray_compatible
def read_parquet(paths: Any, *, columns: list[str] | None = None, filesystem: Any = None, allow_pickle: bool = False,
                 **_: Any) -> Dataset:
    """Read parquet files (a file, folder, glob or list); one task per row group.

    Columns of pickled Python objects (what ember stores for values Arrow cannot hold) are only
    read with ``allow_pickle=True``: unpickling runs code, so pass it only for files you trust.
    ``count()`` and ``schema()`` work either way (they read metadata only). All files must have
    the same columns and types.

    Example:
        >>> import ember.data, tempfile
        >>> out = tempfile.mkdtemp()
        >>> _ = ember.data.range(5).write_parquet(out)
        >>> ember.data.read_parquet(out).count()
        5
    """
    fs, paths_found = resolve_paths(paths, "read_parquet", (".parquet", ".pq"), filesystem)
    return Dataset(Read(Source("ReadParquet", lambda: parquet.parquet_tasks(fs, paths_found, columns, allow_pickle),
                               schema=lambda: parquet.parquet_schema(fs, paths_found, columns))))


@ray_compatible
def read_csv(paths: Any, *, filesystem: Any = None, parse_options: Any = None, convert_options: Any = None,
             read_options: Any = None, **_: Any) -> Dataset:
    """Read CSV files (first line is the header); streamed in chunks, one task per file.

    Example:
        >>> import ember.data, tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "a.csv")
        >>> _ = open(path, "w").write("x,y\\n1,2\\n3,4\\n")
        >>> ember.data.read_csv(path).take_all()
        [{'x': 1, 'y': 2}, {'x': 3, 'y': 4}]
    """
    fs, found = resolve_paths(paths, "read_csv", (".csv", ".csv.gz", ".tsv"), filesystem)
    options = {k: v for k, v in dict(parse_options=parse_options, convert_options=convert_options,
                                       read_options=read_options).items() if v is not None}
    return _dataset("ReadCSV", lambda: csv_json_text.csv_tasks(fs, found, options))


@ray_compatible
def read_json(paths: Any, *, filesystem: Any = None, **_: Any) -> Dataset:
    """Read JSON lines files (one object per line); one task per file.

    Example:
        >>> import ember.data, tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "a.jsonl")
        >>> _ = open(path, "w").write('{"x": 1}\\n{"x": 2}\\n')
        >>> ember.data.read_json(path).take_all()
        [{'x': 1}, {'x': 2}]
    """
    fs, found = resolve_paths(paths, "read_json", (".json", ".jsonl", ".json.gz", ".jsonl.gz"), filesystem)
    return _dataset("ReadJSON", lambda: csv_json_text.file_tasks(fs, found, csv_json_text.read_json_file))


@ray_compatible
def read_text(paths: Any, *, encoding: str = "utf-8", drop_empty_lines: bool = True, filesystem: Any = None,
              **_: Any) -> Dataset:
    """Read text files, one row per line, in column ``text``.

    Example:
        >>> import ember.data, tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "a.txt")
        >>> _ = open(path, "w").write("hello\\nworld\\n")
        >>> ember.data.read_text(path).take_all()
        [{'text': 'hello'}, {'text': 'world'}]
    """
    fs, found = resolve_paths(paths, "read_text", None, filesystem)
    return _dataset("ReadText", lambda: csv_json_text.file_tasks(
        fs, found, lambda f, p: csv_json_text.read_text_file(f, p, encoding, drop_empty_lines)))


@ray_compatible
def read_images(paths: Any, *, size: tuple[int, int] | None = None, mode: str | None = None,
                include_paths: bool = False, filesystem: Any = None, **_: Any) -> Dataset:
    """Decode images with Pillow into column ``image`` (HWC uint8 ndarrays); ``size`` is (height, width).

    Example:
        >>> import ember.data, tempfile, numpy as np
        >>> from PIL import Image
        >>> folder = tempfile.mkdtemp()
        >>> Image.fromarray(np.zeros((4, 6, 3), np.uint8)).save(f"{folder}/0.png")
        >>> print(ember.data.read_images(folder).schema())
        Column  Type
        ------  ----
        image   numpy.ndarray(shape=(4, 6, 3), dtype=uint8)
    """
    fs, found = resolve_paths(paths, "read_images", files.IMAGE_EXTENSIONS, filesystem)
    reader = files.image_reader(size, mode, include_paths)
    return _dataset("ReadImages", lambda: files.grouped_tasks(fs, found, reader, cpu_heavy=True))


@ray_compatible
def read_numpy(paths: Any, *, include_paths: bool = False, filesystem: Any = None, allow_pickle: bool = False,
               **_: Any) -> Dataset:
    """Read .npy files; rows are the first axis of each array, in column ``data``.

    Object arrays (pickled Python objects) need ``allow_pickle=True`` (Ray's and numpy's name):
    unpickling runs code, so pass it only for files you trust.

    Example:
        >>> import ember.data, tempfile, numpy as np
        >>> path = tempfile.mkdtemp() + "/a.npy"; np.save(path, np.arange(6).reshape(3, 2))
        >>> ember.data.read_numpy(path).count()
        3
    """
    fs, found = resolve_paths(paths, "read_numpy", (".npy",), filesystem)
    return _dataset("ReadNumpy", lambda: files.numpy_file_tasks(fs, found, include_paths, allow_pickle))


@ray_compatible
def read_binary_files(paths: Any, *, include_paths: bool = False, filesystem: Any = None, **_: Any) -> Dataset:
    """Read whole files as bytes, one row per file, in column ``bytes``.

    Example:
        >>> import ember.data, tempfile
        >>> path = tempfile.mkdtemp() + "/a.bin"; _ = open(path, "wb").write(b"\\x00\\x01")
        >>> ember.data.read_binary_files(path).take(1)
        [{'bytes': b'\\x00\\x01'}]
    """
    fs, found = resolve_paths(paths, "read_binary_files", None, filesystem)
    return _dataset("ReadBinary", lambda: files.grouped_tasks(fs, found, files.binary_reader(include_paths)))


def from_items(items: list) -> Dataset:
    """A Dataset from a list of dicts (or of values, stored in column ``item``).

    Example:
        >>> import ember.data
        >>> ember.data.from_items([{"a": 1}, {"a": 2}]).take_all()
        [{'a': 1}, {'a': 2}]
    """
    items = list(items)
    return _dataset("FromItems", lambda: memory.items_tasks(items, _rows_per_block()))


def from_numpy(arrays: np.ndarray | list[np.ndarray]) -> Dataset:
    """A Dataset from ndarrays; rows are the first axis, in column ``data``.

    Example:
        >>> import ember.data, numpy as np
        >>> print(ember.data.from_numpy(np.ones((2, 100))).schema())
        Column  Type
        ------  ----
        data    numpy.ndarray(shape=(100,), dtype=double)
    """
    arrays = [arrays] if isinstance(arrays, np.ndarray) else list(arrays)
    return _dataset("FromNumpy", lambda: memory.numpy_tasks(arrays, _rows_per_block()))


def from_pandas(dfs: Any) -> Dataset:
    """A Dataset from one pandas DataFrame or a list of them.

    Example:
        >>> import ember.data, pandas as pd
        >>> ember.data.from_pandas(pd.DataFrame({"a": [1, 2]})).count()
        2
    """
    dfs = dfs if isinstance(dfs, list) else [dfs]
    blocks = [batch_to_block(df, "from_pandas") for df in dfs]
    return _dataset("FromPandas", lambda: memory.block_tasks(blocks, "from_pandas"))


def from_arrow(tables: pa.Table | list[pa.Table]) -> Dataset:
    """A Dataset from one pyarrow Table or a list of them.

    Example:
        >>> import ember.data, pyarrow as pa
        >>> ember.data.from_arrow(pa.table({"a": [1, 2]})).take(1)
        [{'a': 1}]
    """
    tables = tables if isinstance(tables, list) else [tables]
    for table in tables:
        if not isinstance(table, pa.Table):
            raise DataError(f"from_arrow got a {type(table).__name__}; pass pyarrow Tables")
    return _dataset("FromArrow", lambda: memory.block_tasks(tables, "from_arrow"))


def from_torch(dataset: Any) -> Dataset:
    """A Dataset from a torch map-style or iterable dataset; each item goes in column ``item``.

    Example:
        >>> import ember.data, torch
        >>> ds = ember.data.from_torch(torch.utils.data.TensorDataset(torch.arange(3)))
        >>> ds.count()
        3
    """
    return _dataset("FromTorch", lambda: memory.torch_tasks(dataset, _rows_per_block()))


def range(n: int, *, override_num_blocks: int | None = None) -> Dataset:  # noqa: A001 - Ray's name
    """A Dataset of integers 0..n-1 in column ``id``.

    Example:
        >>> import ember.data
        >>> ember.data.range(3).take_all()
        [{'id': 0}, {'id': 1}, {'id': 2}]
    """
    rows = _block_rows(n, override_num_blocks)
    return _dataset("Range", lambda: memory.range_tasks(n, rows))


def range_tensor(n: int, *, shape: tuple[int, ...] = (1,), override_num_blocks: int | None = None) -> Dataset:
    """A Dataset of n tensors of ``shape`` filled with their row index, in column ``data``.

    Example:
        >>> import ember.data
        >>> ember.data.range_tensor(2, shape=(2, 2)).take(1)[0]["data"].tolist()
        [[0, 0], [0, 0]]
    """
    rows = _block_rows(n, override_num_blocks)
    return _dataset("RangeTensor", lambda: memory.range_tasks(n, rows, tuple(shape)))


def _block_rows(n: int, num_blocks: int | None) -> int:
    if num_blocks:
        return builtins.max(1, -(-n // num_blocks))
    return _rows_per_block()
