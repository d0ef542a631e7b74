"""Folder partitions (``year=2024/month=01/part.parquet`` -> columns ``year``, ``month``), partition
filters, ``include_paths`` and ``file_extensions``: what every file reader adds around its files.

Partition values are strings, as in Ray (``Partitioning.field_types`` casts them). A column the file
itself holds wins over the folder's value, as in Ray. Parsing reads only the path, never the file.

Example:
    >>> hive_partitions("/data/year=2024/month=01/a.parquet")
    {'year': '2024', 'month': '01'}
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from ember.data.ray_errors import DataValueError
from ember.data.read.task import ReadTask
from ember.errors import ConfigError, DataError


def hive_partitions(path: str, base_dir: str | None = None) -> dict[str, str]:
    """The ``key=value`` folders of ``path`` (below ``base_dir`` if given), in order.

    Example:
        >>> hive_partitions("/d/k=a%20b/x.csv")
        {'k': 'a b'}
    """
    folders = _folders(path, base_dir)
    pairs = [segment.split("=", 1) for segment in folders if "=" in segment]
    return {urllib.parse.unquote(k): urllib.parse.unquote(v) for k, v in pairs}


def _folders(path: str, base_dir: str | None) -> list[str]:
    if base_dir:
        base = base_dir.rstrip("/") + "/"
        if not path.startswith(base):
            return []
        path = path[len(base) :]
    return path.split("/")[:-1]


@dataclass
class Partitioning:
    """How folder names encode columns (Ray's ``Partitioning``): ``"hive"`` (``key=value/``) or ``"dir"``
    (``value/`` with ``field_names`` naming the levels). ``field_types`` casts values (default: strings).

    Example:
        >>> Partitioning("dir", base_dir="/d", field_names=["year"]).parse("/d/2024/a.csv")
        {'year': '2024'}
        >>> Partitioning("hive", field_types={"year": int}).parse("/d/year=2024/a.csv")
        {'year': 2024}
    """

    style: str = "hive"
    base_dir: str | None = None
    field_names: list[str] | None = None
    field_types: dict[str, Any] = field(default_factory=dict)
    filesystem: Any = None

    def __post_init__(self) -> None:
        if self.style not in ("hive", "dir"):
            raise ConfigError(f"Partitioning(style={self.style!r}); use 'hive' (key=value folders) or 'dir'")
        if self.style == "dir" and not self.field_names:
            raise ConfigError("Partitioning('dir') needs field_names=[...] naming each folder level")

    def parse(self, path: str) -> dict[str, Any]:
        """The partition values of one file path (an empty dict for a file outside any partition)."""
        if self.style == "hive":
            values: dict[str, Any] = hive_partitions(path, self.base_dir)
        else:
            folders = _folders(path, self.base_dir)
            names = self.field_names or []
            if folders and len(folders) != len(names):
                raise DataError(
                    f"{path} is {len(folders)} folders below {self.base_dir!r}, but Partitioning "
                    f"field_names has {len(names)} names {names}; fix base_dir or field_names"
                )
            values = dict(zip(names, folders, strict=False))
        for name, kind in self.field_types.items():
            if name in values:
                values[name] = kind(values[name]) if callable(kind) else values[name]
        return values


class PathPartitionFilter:
    """Keeps the files whose partition values pass ``filter_fn(dict of str)`` (Ray's ``PathPartitionFilter``).

    Example:
        >>> keep_2024 = PathPartitionFilter.of(lambda d: d.get("year") == "2024")
        >>> keep_2024(["/d/year=2023/a.csv", "/d/year=2024/b.csv"])
        ['/d/year=2024/b.csv']
    """

    def __init__(self, partitioning: Partitioning, filter_fn: Callable[[dict[str, Any]], bool]) -> None:
        self.partitioning, self.filter_fn = partitioning, filter_fn

    @classmethod
    def of(
        cls,
        filter_fn: Callable[[dict[str, Any]], bool],
        style: str = "hive",
        base_dir: str | None = None,
        field_names: list[str] | None = None,
        field_types: dict[str, Any] | None = None,
        filesystem: Any = None,
    ) -> PathPartitionFilter:
        """A filter over the partitions that ``style`` (and ``base_dir``, ``field_names``) parse."""
        return cls(Partitioning(style, base_dir, field_names, field_types or {}, filesystem), filter_fn)

    def __call__(self, paths: list[str]) -> list[str]:
        return [p for p in paths if self.filter_fn(self.partitioning.parse(p))]


@dataclass
class FileColumns:
    """The columns a reader adds to each file's rows: its ``path`` and its partition values."""

    include_paths: bool = False
    partitioning: Partitioning | None = None

    def values(self, path: str) -> dict[str, Any]:
        out = dict(self.partitioning.parse(path)) if self.partitioning is not None else {}
        if self.include_paths:
            out["path"] = path
        return out

    def wrap_tasks(self, tasks: list[ReadTask], paths: list[str]) -> list[ReadTask]:
        """``tasks`` (task i reads file ``paths[i]``) with the columns appended to every block."""
        if not self.include_paths and self.partitioning is None:
            return tasks
        for task, path in zip(tasks, paths, strict=True):
            task.read = _appending(task.read, self.values(path))
        return tasks


def _appending(
    read: Callable[[], Iterator[pa.Table]], values: dict[str, Any]
) -> Callable[[], Iterator[pa.Table]]:
    def read_with_columns() -> Iterator[pa.Table]:
        for block in read():
            yield append_constants(block, values)

    return read_with_columns


def append_constants(block: pa.Table, values: dict[str, Any]) -> pa.Table:
    """``block`` with one constant column per item of ``values`` it does not already hold (typed by the
    value even when the block is empty: an empty block carries the schema).

    Example:
        >>> append_constants(pa.table({"a": pa.array([], pa.int64())}), {"k": "1"}).schema.field("k").type
        DataType(string)
    """
    for name, value in values.items():
        if name not in block.column_names:
            kind = pa.scalar(value).type
            block = block.append_column(name, pa.array([value] * block.num_rows, type=kind))
    return block


def select_files(
    files: list[str],
    source: str,
    file_extensions: list[str] | None,
    partition_filter: Callable[[list[str]], list[str]] | None,
) -> list[str]:
    """``files`` narrowed to ``file_extensions`` (Ray's form: ``["csv", "csv.gz"]``) and
    ``partition_filter``."""
    if file_extensions is not None:
        files = [f for f in files if f.lower().endswith(extension_suffixes(file_extensions))]
        if not files:
            # Ray raises ValueError ("No input files found to read with the following file extensions")
            raise DataValueError(
                f"{source}: no files ending in {extension_suffixes(file_extensions)}; check the path "
                "or file_extensions="
            )
    if partition_filter is not None:
        files = list(partition_filter(files))
        if not files:
            raise DataValueError(f"{source}: partition_filter kept none of the files; loosen the filter")
    return files


def extension_suffixes(file_extensions: list[str] | str) -> tuple[str, ...]:
    """Ray's ``["csv", ".TSV"]`` as ``(".csv", ".tsv")``."""
    items = [file_extensions] if isinstance(file_extensions, str) else list(file_extensions)
    return tuple("." + e.lower().lstrip(".") for e in items)
