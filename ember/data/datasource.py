"""Ray Data's plug-in API for custom sources: ``Datasource``, ``ReadTask``, ``BlockMetadata`` and
``read_datasource``.

A Datasource subclass written for Ray (``from ray.data.datasource import Datasource, ReadTask``,
``from ray.data.block import BlockMetadata``) runs on ember with only its imports changed:
``read_datasource`` asks it for ``get_read_tasks(parallelism, per_task_row_limit=None,
data_context=...)`` when the Dataset executes, and each ``ReadTask`` becomes one of ember's read
tasks (a fragment: one task, fused with the maps after it, in a worker or a Ray task). Blocks may be
pyarrow Tables, pandas DataFrames or dicts of columns, as in Ray.

Nothing here unpickles anything: the read functions are the user's own code.

The writing side of ``ray.data.datasource`` (``Datasink``, ``WriteResult``, ``TaskContext``,
``FilenameProvider``, ``SaveMode``) and the readers' options it holds (``Partitioning``,
``PathPartitionFilter``, ``FileShuffleConfig``) are importable from here too, so Ray's import lines
change by one word.

Example:
    >>> import ember.data, pyarrow as pa
    >>> from ember.data.datasource import BlockMetadata, Datasource, ReadTask
    >>> class Squares(Datasource):
    ...     def __init__(self, n):
    ...         super().__init__()
    ...         self.n = n
    ...     def estimate_inmemory_data_size(self):
    ...         return self.n * 8
    ...     def get_read_tasks(self, parallelism, per_task_row_limit=None, data_context=None):
    ...         edges = [self.n * i // parallelism for i in range(parallelism + 1)]
    ...         return [ReadTask(lambda a=a, b=b: [pa.table({"x": [i * i for i in range(a, b)]})],
    ...                          BlockMetadata(b - a, (b - a) * 8, None, None))
    ...                 for a, b in zip(edges, edges[1:]) if b > a]
    >>> ember.data.read_datasource(Squares(4), override_num_blocks=2).take_all()
    [{'x': 0}, {'x': 1}, {'x': 4}, {'x': 9}]
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

# Importable from here as from Ray's ray.data.datasource (`X as X`: an explicit re-export).
from ember.data.datasink import Datasink as Datasink
from ember.data.datasink import TaskContext as TaskContext
from ember.data.datasink import WriteResult as WriteResult
from ember.data.filename_provider import FilenameProvider as FilenameProvider
from ember.data.read.partitioning import Partitioning as Partitioning
from ember.data.read.partitioning import PathPartitionFilter as PathPartitionFilter
from ember.data.read.shuffle import FileShuffleConfig as FileShuffleConfig
from ember.data.write import SaveMode as SaveMode
from ember.errors import ConfigError, DataError

#: Ray's defaults for choosing the number of read tasks when the caller does not (``parallelism=-1``).
READ_OP_MIN_NUM_BLOCKS = 200
TARGET_MIN_BLOCK_SIZE = 1024**2
TARGET_MAX_BLOCK_SIZE = 128 * 1024**2


@dataclass(frozen=True)
class BlockMetadata:
    """What a ReadTask knows before it runs: rows and bytes it will produce (None: unknown), the
    files it reads. The field order is Ray's (``BlockMetadata(num_rows, size_bytes, exec_stats,
    task_exec_stats, input_files)``), so positional calls written for Ray mean the same here.

    Example:
        >>> BlockMetadata(10, 80, None, None).num_rows
        10
        >>> BlockMetadata(num_rows=1, size_bytes=None, exec_stats=None, input_files=["a.csv"]).input_files
        ('a.csv',)
    """

    num_rows: int | None
    size_bytes: int | None
    exec_stats: Any = None
    task_exec_stats: Any = None
    input_files: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.input_files is not None and not isinstance(self.input_files, tuple):
            object.__setattr__(self, "input_files", tuple(self.input_files))


class ReadTask:
    """One unit of reading: calling it yields the blocks its ``read_fn`` returns (a list or a
    generator of pyarrow Tables / pandas DataFrames), cut to ``per_task_row_limit`` rows when set.

    Example:
        >>> import pyarrow as pa
        >>> task = ReadTask(lambda: [pa.table({"a": [1, 2, 3]})], BlockMetadata(3, 24, None, None),
        ...                 per_task_row_limit=2)
        >>> [block.num_rows for block in task()], task.metadata.num_rows
        ([2], 3)
    """

    def __init__(
        self,
        read_fn: Callable[[], Iterable[Any]],
        metadata: BlockMetadata,
        schema: Any = None,
        per_task_row_limit: int | None = None,
    ) -> None:
        self._read_fn = read_fn
        self._metadata = metadata
        self._schema = schema
        self._per_task_row_limit = per_task_row_limit

    @property
    def metadata(self) -> BlockMetadata:
        """What is known before reading (rows, bytes, files)."""
        return self._metadata

    @property
    def schema(self) -> Any:
        """The schema of the blocks, when the datasource gave one."""
        return self._schema

    @property
    def read_fn(self) -> Callable[[], Iterable[Any]]:
        """The function that reads the blocks."""
        return self._read_fn

    @property
    def per_task_row_limit(self) -> int | None:
        """At most this many rows come out of the task (None: all)."""
        return self._per_task_row_limit

    def __call__(self) -> Iterator[Any]:
        blocks = self._read_fn()
        if not hasattr(blocks, "__iter__") or hasattr(blocks, "column_names") or hasattr(blocks, "columns"):
            raise DataError(
                f"a ReadTask's read function returned a {type(blocks).__name__}; it must return an "
                "iterable of blocks, e.g. [table] instead of table"
            )
        if self._per_task_row_limit is None:
            yield from blocks
            return
        from ember.data.block import batch_to_block

        left = self._per_task_row_limit
        for block in blocks:
            if left <= 0:
                break
            block = batch_to_block(block, "a ReadTask's read function")
            yield block.slice(0, left)
            left -= block.num_rows


class Datasource:
    """A custom source, as in Ray: subclass it and implement ``get_read_tasks`` and
    ``estimate_inmemory_data_size``; read it with ``ember.data.read_datasource``.

    Example:
        >>> class Nothing(Datasource):
        ...     def get_read_tasks(self, parallelism, per_task_row_limit=None, data_context=None):
        ...         return []
        ...     def estimate_inmemory_data_size(self):
        ...         return 0
        >>> Nothing().get_name()
        'Nothing'
    """

    def __init__(self) -> None:
        self._predicate_expr = None
        self._projection_map = None

    def get_name(self) -> str:
        """A readable name for the read (the class name without a ``Datasource`` suffix).

        Example:
            >>> type("SQLiteDatasource", (Datasource,), {})().get_name()
            'SQLite'
        """
        name = type(self).__name__
        return name[: -len("Datasource")] if name.endswith("Datasource") and name != "Datasource" else name

    def estimate_inmemory_data_size(self) -> int | None:
        """Bytes the data takes in memory, or None if unknown (sets how many read tasks to ask for)."""
        raise NotImplementedError

    def get_read_tasks(
        self, parallelism: int, per_task_row_limit: int | None = None, data_context: Any = None
    ) -> list[ReadTask]:
        """The read tasks, about ``parallelism`` of them; each reads a disjoint part of the data."""
        raise NotImplementedError

    @property
    def supports_distributed_reads(self) -> bool:
        """False: the reads must run on the driver's machine (ember's local reads always do)."""
        return True

    def supports_projection_pushdown(self) -> bool:
        """Whether column selection can be pushed into the read (ember never pushes it: always False)."""
        return False

    def supports_predicate_pushdown(self) -> bool:
        """Whether filters can be pushed into the read (ember never pushes them: always False)."""
        return False


def _implements(datasource: Any, method: str) -> bool:
    own = getattr(type(datasource), method, None)
    return (
        own is not None
        and own is not getattr(Datasource, method)
        and not _is_rays_base(type(datasource), method)
    )


def _is_rays_base(cls: type, method: str) -> bool:
    """True when ``method`` is inherited unchanged from Ray's own Datasource base class."""
    for klass in cls.__mro__:
        if method in vars(klass):
            return klass.__module__ == "ray.data.datasource.datasource" and klass.__name__ == "Datasource"
    return False


def check_datasource(datasource: Any) -> None:
    """Refuse, in one line, what ``read_datasource`` cannot read: no ``get_read_tasks`` (Ray's legacy
    ``create_reader``/``prepare_read`` API, deprecated since Ray 2.9) or not a Datasource at all."""
    if not hasattr(datasource, "get_read_tasks"):
        raise ConfigError(
            f"read_datasource got a {type(datasource).__name__}; pass an instance of a "
            "ember.data.Datasource subclass"
        )
    if isinstance(datasource, type):
        raise ConfigError(
            f"read_datasource got the class {datasource.__name__}; pass an instance, "
            f"e.g. {datasource.__name__}(...)"
        )
    if not (
        _implements(datasource, "get_read_tasks") and _implements(datasource, "estimate_inmemory_data_size")
    ):
        raise ConfigError(
            f"read_datasource: {type(datasource).__name__} must implement get_read_tasks and "
            "estimate_inmemory_data_size (Ray's create_reader/prepare_read API, deprecated in "
            "Ray 2.9, is not supported)"
        )


def parallelism_for(datasource: Any, parallelism: int, override_num_blocks: int | None) -> int:
    """How many read tasks to ask for: ``override_num_blocks`` or ``parallelism`` when given, else
    Ray's rule: at least 2 per CPU, at most one per MiB of estimated data (up to 200), and at least
    one per 128 MiB.

    Example:
        >>> class Small(Datasource):
        ...     def estimate_inmemory_data_size(self):
        ...         return 3 * 1024**2
        ...     def get_read_tasks(self, parallelism, per_task_row_limit=None, data_context=None):
        ...         return []
        >>> parallelism_for(Small(), -1, 4), parallelism_for(Small(), 7, None)
        (4, 7)
    """
    if parallelism != -1 and (
        isinstance(parallelism, bool) or not isinstance(parallelism, int) or parallelism < 1
    ):
        raise ConfigError(
            f"read_datasource(parallelism={parallelism!r}); use -1 (automatic) or a positive integer"
        )
    if override_num_blocks is not None:
        if (
            isinstance(override_num_blocks, bool)
            or not isinstance(override_num_blocks, int)
            or override_num_blocks < 1
        ):
            raise ConfigError(
                f"read_datasource(override_num_blocks={override_num_blocks!r}); use a positive integer"
            )
        return override_num_blocks
    if parallelism != -1:
        return parallelism
    size = datasource.estimate_inmemory_data_size()
    reasonable, safe = READ_OP_MIN_NUM_BLOCKS, 1
    if isinstance(size, (int, float)) and size == size:  # not None, not NaN
        reasonable = max(1, int(size / TARGET_MIN_BLOCK_SIZE))
        safe = max(1, int(size / TARGET_MAX_BLOCK_SIZE))
    return max(min(READ_OP_MIN_NUM_BLOCKS, reasonable), safe, 2 * (os.cpu_count() or 1))


def get_read_tasks(datasource: Any, parallelism: int) -> list[Any]:
    """``datasource.get_read_tasks(parallelism, per_task_row_limit=None, data_context=...)``, passing the
    keyword arguments its signature takes (Ray always passes both; older sources take only parallelism)."""
    from ember.data.context import DataContext

    accepted = inspect.signature(datasource.get_read_tasks).parameters
    takes_any = any(p.kind is p.VAR_KEYWORD for p in accepted.values())
    options = {
        name: value
        for name, value in (("per_task_row_limit", None), ("data_context", DataContext.get_current()))
        if takes_any or name in accepted
    }
    tasks = datasource.get_read_tasks(parallelism, **options)
    if tasks is None or not all(callable(t) and hasattr(t, "metadata") for t in tasks):
        raise DataError(
            f"{type(datasource).__name__}.get_read_tasks must return a list of ReadTask "
            f"(got {type(tasks).__name__})"
        )
    return list(tasks)
