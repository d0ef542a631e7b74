"""Ray Data's ``Datasink`` plug-in API: a user's own sink, driven by ``Dataset.write_datasink(sink)``.

The contract is Ray's (``ray/data/datasource/datasink.py``), so a sink written for Ray -- a
subclass of ``ray.data.Datasink`` -- runs on ember unchanged, locally and with ``execution="ray"``:

1. ``on_write_start(schema)`` on the driver, before the first ``write`` (``schema``: the first
   non-empty block's ``pyarrow.Schema``); not called when the dataset has no rows;
2. ``write(blocks, ctx)`` once per *write task*: ``blocks`` an iterable of ``pyarrow.Table`` blocks,
   ``ctx`` a task context with ``task_idx`` (0, 1, ... in order), ``op_name`` and ``kwargs``
   (``{"write_uuid": ...}``, one per ``write_datasink`` call). Locally the tasks run one after
   another on the driver; on Ray each runs in a Ray task beside its blocks (on the driver's node
   when ``supports_distributed_writes`` is False). Its return value is collected;
3. ``on_write_complete(WriteResult(num_rows, size_bytes, write_returns))`` on the driver, with the
   returns in task order; if it raises, ``on_write_failed(error)`` is called and the error raised;
4. ``on_write_failed(error)`` when any step failed (best effort, as in Ray), then the error is raised.

Which blocks a task gets: one block each by default; ``min_rows_per_write`` / ``min_bytes_per_write``
combine consecutive whole blocks until they hold that many rows / in-memory bytes (Ray's
bundling; a sink may not set both). A sink written for Ray gets Ray's own ``TaskContext`` and
``WriteResult`` classes (built by ember), others get ember's, with the same fields.

Example:
    >>> import ember.data
    >>> class Collect(Datasink):
    ...     def __init__(self):
    ...         self.rows = []
    ...     def write(self, blocks, ctx):
    ...         return sum(b.num_rows for b in blocks)
    ...     def on_write_complete(self, write_result):
    ...         self.rows = write_result.write_returns
    >>> sink = Collect()
    >>> # Ray's range: 10 // 3 rows per block
    >>> ember.data.range(10, override_num_blocks=3).write_datasink(sink)
    >>> sink.rows
    [3, 3, 3, 1]
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ember.errors import ConfigError

WRITE_UUID_KWARG_NAME = "write_uuid"  #: Ray's key of the write's UUID in ``ctx.kwargs``


@dataclass
class WriteResult:
    """What ``on_write_complete`` receives: rows and in-memory bytes written, every ``write`` return value.

    Example:
        >>> WriteResult(num_rows=3, size_bytes=24, write_returns=["a"]).num_rows
        3
    """

    num_rows: int
    size_bytes: int
    write_returns: list[Any]


@dataclass
class TaskContext:
    """The ``ctx`` of one ``Datasink.write`` call (Ray's ``TaskContext`` fields a sink reads).

    Example:
        >>> TaskContext(task_idx=2, op_name="Write").kwargs
        {}
    """

    task_idx: int
    op_name: str = "Write"
    kwargs: dict[str, Any] = field(default_factory=dict)


class Datasink:
    """Base class of a sink (Ray's ``Datasink``): override ``write``, and the callbacks you need.

    Example:
        >>> class Count(Datasink):
        ...     def write(self, blocks, ctx):
        ...         return sum(b.num_rows for b in blocks)
        >>> Count().get_name(), Count().supports_distributed_writes
        ('Count', True)
    """

    def on_write_start(self, schema: Any = None) -> None:
        """Called on the driver before the first ``write`` with the data's ``pyarrow.Schema``.

        Example:
            >>> Datasink().on_write_start(None)
        """

    def write(self, blocks: Iterable[Any], ctx: Any) -> Any:
        """Write ``blocks`` (``pyarrow.Table``); the return value goes to ``WriteResult.write_returns``.

        Example:
            >>> Datasink().write([], TaskContext(0))
            Traceback (most recent call last):
            ...
            NotImplementedError
        """
        raise NotImplementedError

    def on_write_complete(self, write_result: Any) -> None:
        """Called on the driver after every ``write`` succeeded (commit here).

        Example:
            >>> Datasink().on_write_complete(WriteResult(0, 0, []))
        """

    def on_write_failed(self, error: Exception) -> None:
        """Called on the driver when the write failed (best effort).

        Example:
            >>> Datasink().on_write_failed(ValueError("x"))
        """

    def get_name(self) -> str:
        """The sink's name without a leading ``_`` or a trailing ``Datasink`` (Ray's rule).

        Example:
            >>> class _SQLiteDatasink(Datasink): ...
            >>> _SQLiteDatasink().get_name()
            'SQLite'
        """
        name = type(self).__name__.removeprefix("_")
        return name.removesuffix("Datasink") if name.endswith("Datasink") else name

    @property
    def supports_distributed_writes(self) -> bool:
        """False: on Ray, every ``write`` runs on the driver's node.

        Example:
            >>> Datasink().supports_distributed_writes
            True
        """
        return True

    @property
    def min_rows_per_write(self) -> int | None:
        """Rows each ``write`` call gets at least (whole blocks combined; the last call may get fewer).

        Example:
            >>> Datasink().min_rows_per_write is None
            True
        """
        return None

    @property
    def min_bytes_per_write(self) -> int | None:
        """In-memory bytes each ``write`` call gets at least (whole blocks combined).

        Example:
            >>> Datasink().min_bytes_per_write is None
            True
        """
        return None


class SinkJob:
    """One write task: ``sink.write(blocks, ctx)``; returns (its return value, rows, bytes)."""

    def __init__(self, sink: Any, ctx: Any, pieces: list[tuple[int, int, int]]) -> None:
        self.sink, self.ctx, self.pieces = sink, ctx, pieces

    def __call__(self, blocks: list[Any]) -> tuple[Any, int, int]:
        from ember.data.block import block_nbytes

        parts = [blocks[i].slice(start, rows) for i, start, rows in self.pieces]
        returned = self.sink.write(iter(parts), self.ctx)
        return returned, sum(p.num_rows for p in parts), sum(block_nbytes(p) for p in parts)


def write_datasink(source: Any, sink: Any) -> None:
    """Run ``sink`` over ``source`` (a `WriteInput`), by the contract in the module's text."""
    layout = _layout(sink)
    from_ray = _is_rays(sink)
    write_uuid = uuid.uuid4().hex
    op_name = f"Write{sink.get_name()}" if hasattr(sink, "get_name") else "Write"

    def make_job(index: int, pieces: list[tuple[int, int, int]]) -> SinkJob:
        return SinkJob(sink, _context(from_ray, index, op_name, write_uuid), pieces)

    from ember.data.write_run import run_jobs

    try:
        distributed = getattr(sink, "supports_distributed_writes", True)
        results = list(
            run_jobs(source, layout, make_job, on_first=sink.on_write_start, driver_node_only=not distributed)
        )
        returns = [returned for (returned, _rows, _bytes), _node in results]
        rows = sum(r for (_, r, _), _node in results)
        size = sum(b for (_, _, b), _node in results)
        sink.on_write_complete(_result(from_ray, rows, size, returns))
    except Exception as error:
        sink.on_write_failed(error)
        raise


def _layout(sink: Any) -> dict[str, Any]:
    rows, size = getattr(sink, "min_rows_per_write", None), getattr(sink, "min_bytes_per_write", None)
    if rows is not None and size is not None:
        raise ConfigError(
            f"{type(sink).__name__} sets both min_rows_per_write and min_bytes_per_write; set only "
            "one (as Ray requires)"
        )
    for name, value in (("min_rows_per_write", rows), ("min_bytes_per_write", size)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ConfigError(f"{type(sink).__name__}.{name} is {value!r}; return a positive count or None")
    return {"whole_rows": rows, "min_bytes": size}


def _is_rays(sink: Any) -> bool:
    """Whether ``sink`` is a ``ray.data.Datasink`` (then it gets Ray's TaskContext and WriteResult)."""
    return any(k.__module__.startswith("ray.data") and k.__name__ == "Datasink" for k in type(sink).__mro__)


def _context(from_ray: bool, index: int, op_name: str, write_uuid: str) -> Any:
    kwargs = {WRITE_UUID_KWARG_NAME: write_uuid}
    if from_ray:
        from ray.data._internal.execution.interfaces import TaskContext as RayTaskContext

        return RayTaskContext(task_idx=index, op_name=op_name, kwargs=kwargs)
    return TaskContext(task_idx=index, op_name=op_name, kwargs=kwargs)


def _result(from_ray: bool, rows: int, size: int, returns: list[Any]) -> Any:
    if from_ray:
        from ray.data.datasource import WriteResult as RayWriteResult

        return RayWriteResult(num_rows=rows, size_bytes=size, write_returns=returns)
    return WriteResult(num_rows=rows, size_bytes=size, write_returns=returns)
