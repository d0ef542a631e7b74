"""Dataset: the public, lazy API. Every method returns a new Dataset or consumes one.

A Dataset holds a logical plan (``ember.data.plan``); building one reads nothing. Consuming it
(iterating, ``take``, ``count``, writing) runs the plan on the local streaming executor.

Longer than the ~600-line guideline on purpose: it is Ray's one ``Dataset`` class, and each of its
~60 public methods is a few lines of argument checks plus a docstring with a doctested example;
the work lives in ``plan.py`` and ``execute/``.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, TypeVar, overload

import numpy as np
import pyarrow as pa

from ember.data import aggregate as aggs
from ember.data import arguments, plan
from ember.data import write as sinks
from ember.data.block import (
    Block,
    DataBatch,
    DataBatchColumn,
    UserDefinedFunction,
    block_to_batch,
    block_to_rows,
    concat_blocks,
)
from ember.data.block_streams import BlockStream
from ember.data.context import DataContext, DatasetScopedContext
from ember.data.data_iterator import DataIterator
from ember.data.execute.executor import ExecutionStats, Executor
from ember.data.execution_seed import execution_seed, with_execution_seed
from ember.data.iterate import BatchIterable, batch_converter, torch_converter
from ember.data.mix import MixStoppingCondition, mix_node
from ember.data.plan import (
    ActorMap,
    ClassUDF,
    Limit,
    MapGroups,
    Node,
    Read,
    Shard,
    Union,
    contains,
    describe,
    shard_range,
)
from ember.data.random_config import RandomSeedConfig, fixed_seed, order_seed
from ember.data.ray_args import RAY_REMOTE_OPTIONS, ray_compatible
from ember.data.ray_errors import DataValueError
from ember.data.read import memory
from ember.data.read.task import ReadTask, Source
from ember.data.schema import Schema
from ember.data.transforms import (
    AddColumn,
    DropColumns,
    ExprFilter,
    Filter,
    FlatMap,
    MapBatches,
    MapRows,
    RenameColumns,
    SelectColumns,
    Transform,
)
from ember.data.write_run import WriteInput
from ember.errors import ConfigError, DataError

if TYPE_CHECKING:
    import pandas
    import pyarrow.compute as pc
    import ray.data
    import torch

    from ember.data.expressions import Expr, UnnestExpr
    from ember.data.filename_provider import FilenameProvider
    from ember.data.grouped import GroupedData
    from ember.data.summary import DatasetSummary

#: What ``iter_torch_batches``' ``collate_fn`` returns, hence its batches (Ray's ``CollatedData``).
CollatedData = TypeVar("CollatedData")
#: Where ``iter_torch_batches`` puts the tensors (Ray's ``TorchDeviceType``).
TorchDeviceType: TypeAlias = "str | torch.device | int"


class ActorPoolStrategy:
    """Run a callable-class UDF on a pool of long-lived workers (Ray's name and arguments).

    ``size`` fixes the pool; otherwise it starts with ``initial_size`` workers (default ``min_size``,
    default 1) and grows to ``max_size`` (default: ``DataContext.num_workers``, all cores) while work
    waits, as Ray's autoscaling pool does (ember's never shrinks back). ``self.size`` is (start, max).
    ``max_tasks_in_flight_per_actor`` and ``max_concurrent_calls_per_actor`` only steer how Ray queues
    and batches calls on an actor, one UDF call running at a time (Ray's default): ember's workers take one
    call at a time, so they are checked and kept, never change a result. ``enable_true_multi_threading=True``
    with ``max_concurrent_calls_per_actor`` > 1 (UDF calls run at once in one actor's threads) is refused in
    one line: ember's workers run one call at a time. Wrong values raise ValueError, as Ray's.

    Example:
        >>> ember.data.ActorPoolStrategy(size=2).size
        (2, 2)
        >>> ember.data.ActorPoolStrategy(min_size=1, max_size=4, initial_size=3).size
        (3, 4)
        >>> ember.data.ActorPoolStrategy(size=2, initial_size=1)
        Traceback (most recent call last):
        ...
        ember.data.ray_errors.DataValueError: ActorPoolStrategy: min_size, max_size, and initial_size cannot
        be set at the same time as `size`
    """

    def __init__(
        self,
        size: int | None = None,
        *,
        min_size: int | None = None,
        max_size: int | None = None,
        initial_size: int | None = None,
        max_tasks_in_flight_per_actor: int | None = None,
        max_concurrent_calls_per_actor: int | None = None,
        enable_true_multi_threading: bool | None = None,
    ) -> None:
        low, high, start = _pool_sizes(size, min_size, max_size, initial_size)
        for name, value in (
            ("max_tasks_in_flight_per_actor", max_tasks_in_flight_per_actor),
            ("max_concurrent_calls_per_actor", max_concurrent_calls_per_actor),
        ):
            if value is not None and value < 1:
                raise DataValueError(f"ActorPoolStrategy: {name} must be >= 1, got: {value}")
        if enable_true_multi_threading and (max_concurrent_calls_per_actor or 1) > 1:
            # Ray then runs that many UDF calls at once on one actor, in threads; ember's workers run one at a
            # time
            raise DataValueError(
                "ActorPoolStrategy(enable_true_multi_threading=True, max_concurrent_calls_per_actor="
                f"{max_concurrent_calls_per_actor}): ember's workers run one UDF call at a time; "
                "for calls in parallel use more workers (size= or max_size=)"
            )
        self.min_size, self.max_size, self.initial_size = low, high, start
        self.max_tasks_in_flight_per_actor = max_tasks_in_flight_per_actor
        self.max_concurrent_calls_per_actor = max_concurrent_calls_per_actor
        self.enable_true_multi_threading = bool(enable_true_multi_threading)
        self.size = (start, max(start, high))


def _pool_sizes(
    size: int | None, min_size: int | None, max_size: int | None, initial_size: int | None
) -> tuple[int, int, int]:
    """(min, max, initial) workers, checked as Ray checks them; max defaults to ember's worker count."""
    if size is not None:
        if size < 1:
            raise DataValueError(f"ActorPoolStrategy: size must be >= 1, got {size}")
        if min_size is not None or max_size is not None or initial_size is not None:
            raise DataValueError(
                "ActorPoolStrategy: min_size, max_size, and initial_size cannot be set at the same "
                "time as `size`"
            )
        return size, size, size
    if min_size is not None and min_size < 1:
        raise DataValueError(f"ActorPoolStrategy: min_size must be >= 1, got {min_size}")
    low = min_size or 1
    if max_size is not None and low > max_size:
        raise DataValueError(f"ActorPoolStrategy: min_size ({low}) must be <= max_size ({max_size})")
    if initial_size is not None and not low <= initial_size <= (max_size or initial_size):
        raise DataValueError(
            f"ActorPoolStrategy: initial_size ({initial_size}) must be between min_size ({low}) "
            f"and max_size ({max_size})"
        )
    high = max_size or max(low, DataContext.get_current().workers())
    return low, high, initial_size or low


class TaskPoolStrategy:
    """Run a function UDF as tasks, at most ``size`` at a time (Ray's name; ``compute=`` of
    ``map_batches``, ``map``, ``flat_map`` and ``filter``): the same as ``concurrency=size``.

    Example:
        >>> ds = ember.data.range(4).map_batches(lambda b: b, compute=ember.data.TaskPoolStrategy(size=2))
        >>> ds.count()
        4
    """

    def __init__(self, size: int | None = None) -> None:
        if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 1):
            raise ConfigError(
                f"TaskPoolStrategy(size={size!r}); use an integer >= 1, or None for all workers"
            )
        self.size = size

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, TaskPoolStrategy) and self.size == other.size) or (
            other == "tasks" and self.size is None
        )

    def __repr__(self) -> str:
        return f"TaskPoolStrategy(size={self.size})"


#: ``compute=`` of the function-running methods (Ray's ``ComputeStrategy``); Ray's older strings "tasks" and
#: "actors" are taken too.
ComputeStrategy: TypeAlias = "TaskPoolStrategy | ActorPoolStrategy"


def _task_concurrency(fn: Callable[..., Any], compute: Any, concurrency: Any) -> Any:
    """The worker count for a function UDF: ``compute=TaskPoolStrategy(n)`` wins over ``concurrency``,
    as in Ray; an actor pool is refused for a function, as Ray refuses it."""
    if compute is None:
        return concurrency
    if isinstance(compute, TaskPoolStrategy):
        return compute.size
    if isinstance(compute, str) and compute == "tasks":
        return None
    if isinstance(compute, ActorPoolStrategy) or compute == "actors":
        raise ConfigError(
            f"compute={compute!r} needs a callable class (one instance per worker), but "
            f"{getattr(fn, '__name__', fn)!r} is a function; pass compute=TaskPoolStrategy(size=n)"
        )
    raise ConfigError(
        f"compute={compute!r}; pass ember.data.TaskPoolStrategy(size=n) or ActorPoolStrategy(size=n)"
    )


class Dataset:
    """A lazy, streaming dataset of Arrow blocks: a thin facade over a logical plan.

    Every method either adds one typed operator to the plan (``ember.data.plan``: Map, Filter,
    Sort, Join, ...) and returns a new Dataset, or runs the plan (iterating, ``count``, writing)
    on the local streaming executor, which spills all-to-all operators to disk past
    ``DataContext.memory_budget_bytes``.

    Example:
        >>> import ember.data
        >>> ds = ember.data.range(6).map(lambda row: {"id": row["id"], "sq": row["id"] ** 2})
        >>> ds.filter(lambda row: row["id"] % 2 == 0).take_all()
        [{'id': 0, 'sq': 0}, {'id': 2, 'sq': 4}, {'id': 4, 'sq': 16}]
    """

    def __init__(
        self, node: Node, *, name: str | None = None, context: DatasetScopedContext | None = None
    ) -> None:
        self._node = node
        self._name = name
        #: A read's copy of the process-wide settings (shared with its parent and children, as Ray's).
        self._context = DatasetScopedContext.of_current() if context is None else context
        self._last_stats: ExecutionStats | None = None
        self._schema_cache: pa.Schema | None = None  # what schema() fetched once (Ray keeps it too)
        self._executions = 0  # runs so far: seedless shuffles draw anew on each (execution_seed.py)

    def _child(self, node: Node) -> Dataset:
        """A Dataset of ``node`` (an operator on top of this one's plan) that keeps this one's name and
        context, as Ray's."""
        return Dataset(node, name=self._name, context=self._context)

    def _combined(self, node: Node) -> Dataset:
        """A Dataset of ``node`` combining this one with others: Ray's union and mix give it a copy of
        this one's context (its zip and join share it, as a derived dataset)."""
        return Dataset(node, name=self._name, context=self._context.copy())

    # ------------------------------------------------------------------ name, context, plan

    @property
    def name(self) -> str | None:
        """The name given by ``set_name`` (None by default); datasets derived from this one keep it.

        Example:
            >>> ds = ember.data.range(3); ds.set_name("train")
            >>> ds.name, ds.map(lambda r: r).name
            ('train', 'train')
        """
        return self._name

    def set_name(self, name: str | None) -> None:
        """Name this dataset (Ray uses it to tag metrics); it heads ``stats()`` and ``explain()``.

        Example:
            >>> ds = ember.data.range(3); ds.set_name("eval")
            >>> ds.stats().splitlines()[0]
            'Dataset eval'
        """
        if name is not None and not isinstance(name, str):
            raise ConfigError(f"Dataset.set_name({name!r}); pass a string or None")
        self._name = name

    @property
    def context(self) -> DatasetScopedContext:
        """The DataContext this dataset runs under: what is set on it applies to this dataset, the
        datasets derived from it and the one it came from (Ray shares one context along a lineage);
        ``union``/``mix`` start from a copy. A read copies the process-wide Ray settings as they are
        then (Ray's rule); ember's own are read when it runs (``ember/data/context.py``).

        Example:
            >>> ds = ember.data.range(10); ds.context.num_workers = 1
            >>> shuffled = ds.random_shuffle(seed=0)
            >>> shuffled.context is ds.context, ds.union(ds).context is ds.context
            (True, False)
        """
        return self._context

    @staticmethod
    def copy(ds: Dataset, _deep_copy: bool = False) -> Dataset:
        """A new Dataset object with the same plan and name (Ray's static ``Dataset.copy(ds)``); renaming
        the copy leaves ``ds`` as it is. Plans are never modified in place, so deep and shallow copies
        are the same.

        Example:
            >>> ds = ember.data.range(3); ds.set_name("a")
            >>> twin = ember.data.Dataset.copy(ds); twin.set_name("b")
            >>> ds.name, twin.name, twin.take_all() == ds.take_all()
            ('a', 'b', True)
        """
        context = ds._context.copy() if _deep_copy else ds._context  # Ray: a deep copy copies the context
        if isinstance(ds, MaterializedDataset):
            twin = MaterializedDataset(ds._blocks, context=context)
            twin._name = ds._name
            return twin
        return Dataset(ds._node, name=ds._name, context=context)

    def explain(self) -> None:
        """Print the logical plan: one line per operator (its type, then ``[`` what it does ``]``), the
        output on top and each input indented under it, as Ray's ``explain`` prints its logical plan.
        ember has no separate physical plan: its executor fuses the per-block operators above a read
        into one task per block.

        Example:
            >>> ember.data.range(3).filter(lambda r: True).union(ember.data.range(2)).explain()
            <BLANKLINE>
            -------- Logical Plan --------
            Union[Union]
            +- Filter[Filter]
               +- Read[Range]
            +- Read[Range]
        """
        header = f"-------- Logical Plan{f' ({self._name})' if self._name else ''} --------"
        print("\n" + header + "\n" + "\n".join(_plan_tree(self._node)))

    def num_blocks(self) -> int:
        """Only a materialized dataset knows its blocks (as in Ray): call ``materialize().num_blocks()``.
        Data given in memory (``from_items``, ``from_pandas``, ``from_numpy``, ``from_arrow``) counts as
        materialized, as Ray's ``from_*`` return a MaterializedDataset.

        Example:
            >>> ember.data.range(3).num_blocks()
            Traceback (most recent call last):
            ...
            ember.errors.ConfigError: Dataset.num_blocks(): the block count is known only once the dataset
            runs; use ds.materialize().num_blocks()
            >>> import pandas as pd
            >>> ember.data.from_pandas([pd.DataFrame({"a": [1]}), pd.DataFrame({"a": [2]})]).num_blocks()
            2
        """
        if isinstance(self._node, Read) and self._node.source.in_memory:
            return len(self._node.source.tasks())
        raise ConfigError(
            "Dataset.num_blocks(): the block count is known only once the dataset runs; "
            "use ds.materialize().num_blocks()"
        )

    # ------------------------------------------------------------------ transforms

    def _then(self, transform: Transform, concurrency: Any = None) -> Dataset:
        return self._child(
            plan.one_to_one(self._node, transform, concurrency if isinstance(concurrency, int) else None)
        )

    @ray_compatible
    def map(
        self,
        fn: UserDefinedFunction[dict[str, Any], dict[str, Any]],
        *,
        fn_args: Iterable[Any] | None = None,
        fn_kwargs: dict[str, Any] | None = None,
        fn_constructor_args: Iterable[Any] | None = None,
        fn_constructor_kwargs: dict[str, Any] | None = None,
        concurrency: int | tuple[int, int] | None = None,
        compute: ComputeStrategy | str | None = None,
        **_: Any,
    ) -> Dataset:
        """Apply ``fn(row) -> row`` to every row (rows are dicts).

        Example:
            >>> ember.data.range(2).map(lambda r: {"x": r["id"] + 1}).take_all()
            [{'x': 1}, {'x': 2}]
        """
        args, kwargs = _udf_args(
            "Dataset.map", fn, fn_args, fn_kwargs, fn_constructor_args, fn_constructor_kwargs
        )
        if isinstance(fn, type):
            return self._actors(
                fn,
                "map",
                (args, kwargs),
                None,
                fn_constructor_args,
                fn_constructor_kwargs,
                concurrency,
                compute,
            )
        return self._then(MapRows(fn, args, kwargs), _task_concurrency(fn, compute, concurrency))

    @ray_compatible(also=RAY_REMOTE_OPTIONS)
    def map_batches(
        self,
        fn: UserDefinedFunction[DataBatch, DataBatch],
        *,
        batch_size: int | Literal["auto", "default"] | None = None,
        compute: ComputeStrategy | str | None = None,
        batch_format: str | None = "default",
        zero_copy_batch: bool = False,
        fn_args: Iterable[Any] | None = None,
        fn_kwargs: dict[str, Any] | None = None,
        fn_constructor_args: Iterable[Any] | None = None,
        fn_constructor_kwargs: dict[str, Any] | None = None,
        concurrency: int | tuple[int, int] | None = None,
        num_cpus: float | None = None,
        num_gpus: float | None = None,
        **ray_remote_args: Any,
    ) -> Dataset:
        """Apply ``fn(batch) -> batch`` to batches (dict of numpy arrays by default).

        ``batch_size`` as in Ray 2.60: None (the default, also ``"default"``) hands each whole
        block; an int re-cuts the input into batches of that many rows; ``"auto"`` picks the rows
        per batch so a batch holds about 16 MiB (from the first block's bytes per row).

        ``fn`` may be a function (runs on task workers) or a callable class (constructed once per
        worker of a pool of ``concurrency`` workers, or ``compute=ActorPoolStrategy(size=n)``):
        the model is loaded once per worker, batches of ``batch_size`` rows go to whichever worker
        is free, and the output keeps the input's order. ``concurrency=(min, max)`` starts ``min``
        workers and adds more while batches wait, up to ``max``. Per worker: ``num_gpus`` gives it
        its own GPU (``CUDA_VISIBLE_DEVICES``; fractions share one), ``num_cpus`` its torch thread
        count (default: cores // workers, so workers never oversubscribe the CPU);
        ``max_task_retries=N`` re-runs a batch on a new worker if its worker dies. Wrap inference
        in ``torch.inference_mode()``.

        Example:
            >>> ds = ember.data.range(4).map_batches(lambda b: {"x": b["id"] * 10}, batch_size=2)
            >>> ds.take_all()
            [{'x': 0}, {'x': 10}, {'x': 20}, {'x': 30}]
        """
        # Ray 2.60: the default (None, or "default") hands whole blocks; "auto" sizes batches to ~16 MiB.
        size = arguments.batch_size(
            "Dataset.map_batches", None if batch_size == "default" else batch_size, auto=True
        )
        # None: Ray's "the block as it is", an Arrow table for ember's blocks (as grouped.map_groups)
        batch_format = (
            "numpy" if batch_format == "default" else "pyarrow" if batch_format is None else batch_format
        )
        batch_converter(batch_format)  # validates the name now, not inside a worker
        args, kwargs = _udf_args(
            "Dataset.map_batches", fn, fn_args, fn_kwargs, fn_constructor_args, fn_constructor_kwargs
        )
        if isinstance(fn, type):
            return self._actors(
                fn,
                "map_batches",
                (batch_format, args, kwargs, zero_copy_batch),
                size,
                fn_constructor_args,
                fn_constructor_kwargs,
                concurrency,
                compute,
                num_cpus=num_cpus,
                num_gpus=num_gpus,
                ray_remote_args=ray_remote_args,
            )
        if num_gpus:
            raise ConfigError(
                "num_gpus applies to a callable class (one model per worker); pass a class to map_batches"
            )
        step = MapBatches(fn, size, batch_format, args, kwargs, zero_copy_batch)
        step.max_task_retries = _task_retries(ray_remote_args)
        return self._then(step, _task_concurrency(fn, compute, concurrency))

    def _actors(
        self,
        cls: type,
        kind: str,
        call: tuple[Any, ...],
        batch_size: int | Literal["auto"] | None,
        ctor_args: Iterable[Any] | None,
        ctor_kwargs: dict[str, Any] | None,
        concurrency: Any,
        compute: Any,
        num_cpus: float | None = None,
        num_gpus: float | None = None,
        ray_remote_args: dict[str, Any] | None = None,
    ) -> Dataset:
        if isinstance(compute, TaskPoolStrategy) or isinstance(compute, str) and compute == "tasks":
            raise ConfigError(
                f"compute={compute!r}: {cls.__name__} is a callable class, which runs on an actor "
                "pool; pass compute=ActorPoolStrategy(size=n) or leave compute unset"
            )
        if isinstance(compute, ActorPoolStrategy):
            size: Any = compute.size
        elif concurrency is not None:
            size = concurrency
        else:
            size = DataContext.get_current().workers()
        if isinstance(size, (tuple, list)):
            size = (int(size[0]), int(size[1]))
        retries = _task_retries(ray_remote_args)
        args, kwargs = arguments.call_args(f"Dataset.{kind}", ctor_args, ctor_kwargs, "fn_constructor")
        udf = ClassUDF(cls, args, kwargs, kind, call)
        node = ActorMap(
            self._node,
            udf,
            size,
            batch_size,
            num_gpus=float(num_gpus or 0),
            num_cpus=num_cpus,
            max_task_retries=retries,
        )
        return self._child(node)

    @ray_compatible
    def flat_map(
        self,
        fn: UserDefinedFunction[dict[str, Any], list[dict[str, Any]] | dict[str, Any]],
        *,
        fn_args: Iterable[Any] | None = None,
        fn_kwargs: dict[str, Any] | None = None,
        fn_constructor_args: Iterable[Any] | None = None,
        fn_constructor_kwargs: dict[str, Any] | None = None,
        concurrency: int | tuple[int, int] | None = None,
        compute: ComputeStrategy | str | None = None,
        **_: Any,
    ) -> Dataset:
        """Apply ``fn(row) -> list of rows`` and flatten. A callable class runs on a pool of
        workers that construct it once each (``concurrency`` workers), as in ``map_batches``.

        Example:
            >>> ember.data.range(2).flat_map(lambda r: [r, r]).count()
            4
        """
        args, kwargs = _udf_args(
            "Dataset.flat_map", fn, fn_args, fn_kwargs, fn_constructor_args, fn_constructor_kwargs
        )
        if isinstance(fn, type):
            return self._actors(
                fn,
                "flat_map",
                (args, kwargs),
                None,
                fn_constructor_args,
                fn_constructor_kwargs,
                concurrency,
                compute,
            )
        return self._then(FlatMap(fn, args, kwargs), _task_concurrency(fn, compute, concurrency))

    @ray_compatible
    def filter(
        self,
        fn: UserDefinedFunction[dict[str, Any], bool] | None = None,
        expr: str | Expr | pc.Expression | None = None,
        *,
        fn_args: Iterable[Any] | None = None,
        fn_kwargs: dict[str, Any] | None = None,
        fn_constructor_args: Iterable[Any] | None = None,
        fn_constructor_kwargs: dict[str, Any] | None = None,
        concurrency: int | tuple[int, int] | None = None,
        compute: ComputeStrategy | str | None = None,
        **_: Any,
    ) -> Dataset:
        """Keep the rows for which ``fn(row)`` is true, or, with ``expr=``, for which the expression
        is true (``ember.data.expressions.col("x") > 1``, or a ``pyarrow.compute`` expression),
        evaluated by Arrow without Python per row. A callable class runs on a worker pool.

        Example:
            >>> ember.data.range(5).filter(lambda r: r["id"] > 2).take_all()
            [{'id': 3}, {'id': 4}]
            >>> import pyarrow.compute as pc
            >>> ember.data.range(5).filter(expr=pc.field("id") < 2).take_all()
            [{'id': 0}, {'id': 1}]
        """
        if (fn is None) == (expr is None):
            raise ConfigError(
                "filter needs exactly one of fn= (a function of a row) or expr= (an expression)"
            )
        if expr is not None:
            from ember.data.expressions import filter_transform

            return self._then(filter_transform(expr) or ExprFilter(_to_arrow_expression(expr)))
        assert fn is not None  # exactly one of fn= and expr= (checked above)
        args, kwargs = _udf_args(
            "Dataset.filter", fn, fn_args, fn_kwargs, fn_constructor_args, fn_constructor_kwargs
        )
        if isinstance(fn, type):
            return self._actors(
                fn,
                "filter",
                (args, kwargs),
                None,
                fn_constructor_args,
                fn_constructor_kwargs,
                concurrency,
                compute,
            )
        return self._then(Filter(fn, args, kwargs), _task_concurrency(fn, compute, concurrency))

    @ray_compatible
    def add_column(
        self,
        col: str,
        fn: Callable[[DataBatch], DataBatchColumn],
        *,
        batch_format: str = "pandas",
        **_: Any,
    ) -> Dataset:
        """Add (or replace) column ``col`` computed by ``fn(batch)`` (a pandas DataFrame by default).

        Example:
            >>> ember.data.range(2).add_column("double", lambda df: df["id"] * 2).take_all()
            [{'id': 0, 'double': 0}, {'id': 1, 'double': 2}]
        """
        if not isinstance(col, str):
            raise ConfigError(f"Dataset.add_column(col={col!r}); the new column's name must be a string")
        if not callable(fn):
            raise ConfigError(
                f"Dataset.add_column(fn={fn!r}); pass a function of a batch that returns the column"
            )
        return self._then(AddColumn(col, fn, batch_format))

    @ray_compatible
    def drop_columns(self, cols: list[str], **_: Any) -> Dataset:
        """Drop the named columns.

        Example:
            >>> ember.data.from_items([{"a": 1, "b": 2}]).drop_columns(["b"]).take_all()
            [{'a': 1}]
        """
        return self._then(DropColumns(arguments.column_names("Dataset.drop_columns", cols)))

    @ray_compatible
    def select_columns(self, cols: list[str] | str, **_: Any) -> Dataset:
        """Keep only the named columns, in that order.

        Example:
            >>> ember.data.from_items([{"a": 1, "b": 2}]).select_columns(["b"]).take_all()
            [{'b': 2}]
        """
        cols = arguments.column_names("Dataset.select_columns", cols)
        if len(set(cols)) < len(cols):  # Ray refuses them too (ValueError); Arrow's own error was a KeyError
            raise DataValueError(f"select_columns: duplicate column names in {cols}; name each column once")
        return self._then(SelectColumns(cols))

    @ray_compatible
    def rename_columns(self, names: dict[str, str] | list[str], **_: Any) -> Dataset:
        """Rename columns with an {old: new} mapping, or a list of new names (one per column, in order).

        Example:
            >>> ember.data.from_items([{"a": 1}]).rename_columns({"a": "b"}).take_all()
            [{'b': 1}]
            >>> ember.data.from_items([{"a": 1, "b": 2}]).rename_columns(["x", "y"]).take_all()
            [{'x': 1, 'y': 2}]
        """
        if isinstance(names, (list, tuple)):
            from ember.data.rename import RenameAll

            return self._then(
                RenameAll(arguments.column_names("Dataset.rename_columns", names, "names", False))
            )
        if not isinstance(names, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in names.items()
        ):
            raise ConfigError(
                f"Dataset.rename_columns(names={names!r}); pass a dict {{old name: new name}} of strings, "
                "or a list of new names, one per column"
            )
        return self._then(RenameColumns(names))

    @ray_compatible
    def with_columns(
        self,
        exprs: Mapping[str, Expr] | UnnestExpr | None = None,
        *more_exprs: Mapping[str, Expr] | UnnestExpr,
        compute: ComputeStrategy | str | None = None,
        **_: Any,
    ) -> Dataset:
        """Add (or replace) several columns, each computed by an expression of ``ember.data.expressions``
        over the columns as they were before this step (one projection, as Ray's); new columns follow
        the mapping's order. Further mappings may follow as positional arguments.

        Example:
            >>> from ember.data.expressions import col
            >>> ember.data.range(2).with_columns({"id": col("id") * 2, "before": col("id")}).take_all()
            [{'id': 0, 'before': 0}, {'id': 2, 'before': 1}]
        """
        from ember.data.with_columns import WithColumns, merged_exprs

        merged = merged_exprs("Dataset.with_columns", (exprs, *more_exprs))
        return self._then(WithColumns(merged)) if merged else self

    def limit(self, limit: int) -> Dataset:
        """The first ``limit`` rows; upstream work stops once they are produced.

        Example:
            >>> ember.data.range(1000).limit(2).take_all()
            [{'id': 0}, {'id': 1}]
        """
        return self._child(Limit(self._node, arguments.count("Dataset.limit", limit, "limit")))

    def union(self, *others: Dataset) -> Dataset:
        """This dataset's rows followed by each of ``others``'.

        Example:
            >>> ember.data.range(1).union(ember.data.range(2)).take_all()
            [{'id': 0}, {'id': 0}, {'id': 1}]
        """
        return self._combined(Union([self._node] + [o._node for o in others]))

    def mix(
        self,
        *other: Dataset,
        weights: list[float] | None = None,
        stopping_condition: MixStoppingCondition = MixStoppingCondition.STOP_ON_LONGEST_DROP,
    ) -> Dataset:
        """This dataset's and ``other``'s blocks interleaved to the target row ratios ``weights``
        (this one's first; None: equal; normalized), as Ray's ``mix``: each output block is one input
        block, taken from the input furthest behind its share of the rows so far (``ember/data/mix.py``).
        ``stopping_condition``: ``MixStoppingCondition.STOP_ON_LONGEST_DROP`` (default: exhausted inputs
        drop out) or ``STOP_ON_SHORTEST`` (the mix ends with the first exhausted input). No randomness:
        the same inputs give the same stream, so iterators over a mix resume exactly.

        Example:
            >>> a = ember.data.from_items([{"x": i} for i in (1, 2, 3, 4)]).repartition(2)
            >>> b = ember.data.from_items([{"x": i} for i in (5, 6, 7, 8)]).repartition(2)
            >>> [batch["x"].tolist() for batch in a.mix(b, weights=[0.5, 0.5]).iter_batches(batch_size=4)]
            [[1, 2, 5, 6], [3, 4, 7, 8]]
        """
        for o in other:
            if not isinstance(o, Dataset):
                raise ConfigError(f"Dataset.mix({o!r}); pass ember.data Datasets (weights= is a keyword)")
        return self._combined(mix_node([self._node] + [o._node for o in other], weights, stopping_condition))

    def random_sample(self, fraction: float, *, seed: int | RandomSeedConfig | None = None) -> Dataset:
        """Keep each row with probability ``fraction`` (about ``fraction * count()`` rows, order kept).

        With ``seed`` the sample is the same on every run and any number of workers (the generator is
        keyed by the seed and each block's contents, where Ray keys it by task index); without one
        each run differs. ``seed`` may be a ``RandomSeedConfig`` with ``reseed_after_execution=False``
        (what an integer seed means in Ray too); a reseeding one is refused (``ember/data/random_config.py``).

        Example:
            >>> ds = ember.data.range(1000)
            >>> ds.random_sample(0.1, seed=42).take_all() == ds.random_sample(0.1, seed=42).take_all()
            True
            >>> ds.random_sample(0.0).count(), ds.random_sample(1.0).count()
            (0, 1000)
        """
        from ember.data.sample import RandomSample

        if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 <= fraction <= 1:
            raise ConfigError(f"random_sample(fraction={fraction!r}); the fraction must be between 0 and 1")
        seed = fixed_seed("Dataset.random_sample", seed)
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise ConfigError(f"random_sample(seed={seed!r}); pass a non-negative integer seed or None")
        return self._then(RandomSample(float(fraction), seed))

    @ray_compatible
    def random_shuffle(
        self, *, seed: int | RandomSeedConfig | None = None, num_blocks: int | None = None, **_: Any
    ) -> Dataset:
        """Shuffle all rows. An integer seed gives one order, the same in every epoch (as Ray's
        does); ``RandomSeedConfig(seed)`` (which reseeds after each execution) an order drawn from
        (seed, epoch): reproducible, new each epoch.

        Runs in memory while the data fits ``DataContext.memory_budget_bytes`` and out of core
        past it (bucket files in a scratch folder, then each bucket shuffled); the order is the
        same either way. Without a seed, every execution draws a new order, as Ray's does (each
        ``take_all``, each new ``iter_batches``, each epoch), and a batch iterable keeps its draw in
        its state so it resumes exactly (``ember/data/execution_seed.py``). Ray's execution index
        is ember's epoch (``ember/data/random_config.py``).

        Example:
            >>> sorted(r["id"] for r in ember.data.range(5).random_shuffle(seed=1).take_all())
            [0, 1, 2, 3, 4]
        """
        seed, reseed = order_seed("Dataset.random_shuffle", seed)
        node: Node = plan.RandomShuffle(
            self._node, secrets.randbits(63) if seed is None else seed, reseed, drawn=seed is None
        )
        if num_blocks is not None:
            node = plan.Repartition(
                node, arguments.count("Dataset.random_shuffle", num_blocks, "num_blocks") or 1
            )
        return self._child(node)

    def randomize_block_order(self, *, seed: int | RandomSeedConfig | None = None) -> Dataset:
        """Shuffle the order of blocks (cheap; rows inside a block keep their order). Seeds as for
        ``random_shuffle``: an integer gives one order for every epoch, ``RandomSeedConfig(seed)`` an
        order from (seed, epoch), and no seed a new order on every execution.

        Example:
            >>> ds = ember.data.range(4, override_num_blocks=4).randomize_block_order(seed=0)
            >>> [r["id"] for r in ds.take_all()] == [r["id"] for r in ds.take_all()]
            True
        """
        seed, reseed = order_seed("Dataset.randomize_block_order", seed)
        return self._child(
            plan.RandomizeBlockOrder(
                self._node, secrets.randbits(63) if seed is None else seed, reseed, drawn=seed is None
            )
        )

    @ray_compatible
    def repartition(
        self,
        num_blocks: int | None = None,
        target_num_rows_per_block: int | None = None,
        *,
        strict: bool = False,
        shuffle: bool = False,
        keys: list[str] | None = None,
        sort: bool = False,
        **_: Any,
    ) -> Dataset:
        """Re-cut the data into blocks, in one of Ray's three modes:

        - ``num_blocks``: exactly that many blocks of (nearly) equal size, in order; ``shuffle=True``
          shuffles the rows first (from (seed, epoch), like ``random_shuffle``).
        - ``num_blocks`` and ``keys``: hash partitioning, exactly ``num_blocks`` blocks (some may be
          empty); rows with equal keys share a block, in input order (sorted by the keys with
          ``sort=True``). Which block a key lands in is ember's hash, not Ray's.
        - ``target_num_rows_per_block``: streamed, blocks of exactly that many rows but the last
          (what Ray's ``strict=True`` guarantees; its best-effort ``strict=False`` allows it too).

        Options Ray would ignore in a mode (it warns) are refused here.

        Example:
            >>> ember.data.range(10).repartition(3).materialize().num_blocks()
            3
            >>> cut = ember.data.range(10).repartition(target_num_rows_per_block=4)
            >>> [b.num_rows for b in cut.iter_internal_blocks()]
            [4, 4, 2]
            >>> ds = ember.data.from_items([{"k": i % 2} for i in range(6)]).repartition(2, keys=["k"])
            >>> sorted(sorted(set(b.column("k").to_pylist())) for b in ds.iter_internal_blocks())
            [[0], [1]]
        """
        where = "Dataset.repartition"
        if (num_blocks is None) == (target_num_rows_per_block is None):
            raise ConfigError(f"{where}: set exactly one of num_blocks and target_num_rows_per_block")
        if target_num_rows_per_block is not None:
            for name, value in (("shuffle", shuffle), ("keys", keys), ("sort", sort)):
                if value:
                    raise ConfigError(
                        f"{where}({name}={value!r}) does nothing with target_num_rows_per_block (Ray "
                        f"ignores it); drop {name}= or use num_blocks"
                    )
            rows = arguments.count(where, target_num_rows_per_block, "target_num_rows_per_block")
            if not rows:
                raise ConfigError(
                    f"{where}(target_num_rows_per_block={target_num_rows_per_block!r}); use a positive "
                    "integer"
                )
            return self._child(plan.StreamingRepartition(self._node, rows))
        if strict:
            raise ConfigError(
                f"{where}(strict=True) applies only with target_num_rows_per_block (Ray ignores it "
                "with num_blocks); drop strict= or use target_num_rows_per_block"
            )
        if not isinstance(num_blocks, int) or isinstance(num_blocks, bool) or num_blocks < 1:
            raise ConfigError(f"{where}(num_blocks={num_blocks!r}); use a positive integer")
        if keys is not None:
            if shuffle:
                raise ConfigError(
                    f"{where}: keys= hash-partitions the rows and shuffle= would be ignored (as Ray "
                    "does); pass one of them"
                )
            return self._child(
                plan.HashRepartition(self._node, num_blocks, tuple(_keys(where, keys)), bool(sort))
            )
        if sort:
            raise ConfigError(
                f"{where}(sort=True) sorts the blocks of a keyed repartition; pass keys= too, or "
                "use Dataset.sort"
            )
        return self._child(
            plan.Repartition(self._node, num_blocks, bool(shuffle), secrets.randbits(63), drawn=bool(shuffle))
        )

    def sort(
        self,
        key: str | list[str],
        descending: bool | list[bool] = False,
        boundaries: list[int | float] | None = None,
    ) -> Dataset:
        """Sort all rows by ``key`` (stable; nulls last), out of core past the memory budget.
        ``boundaries`` (ascending numbers, Ray's) cut the output into one block per range of the
        first key they make (below the first, between each pair, from the last on; empty ranges give
        empty blocks), in sort order.

        Example:
            >>> ember.data.from_items([{"a": 2}, {"a": 1}]).sort("a").take_all()
            [{'a': 1}, {'a': 2}]
            >>> ordered = ember.data.range(10).sort("id", boundaries=[3, 7])
            >>> [b.num_rows for b in ordered.iter_internal_blocks()]
            [3, 4, 3]
        """
        keys = _keys("Dataset.sort", key)
        orders = list(descending) if isinstance(descending, (list, tuple)) else [bool(descending)] * len(keys)
        if len(orders) != len(keys):
            raise ConfigError(
                f"Dataset.sort: {len(keys)} keys but {len(orders)} descending flags; pass one per key"
            )
        edges = _boundaries(boundaries)
        return self._child(plan.Sort(self._node, tuple(keys), tuple(bool(d) for d in orders), edges))

    # ------------------------------------------------------------------ grouping and aggregation

    def groupby(self, key: str | list[str] | None, num_partitions: int | None = None) -> GroupedData:
        """Group rows by ``key`` (a column or a list of columns) for aggregations or ``map_groups``.

        Example:
            >>> ds = ember.data.from_items([{"k": i % 2, "v": i} for i in range(6)])
            >>> ds.groupby("k").sum("v").take_all()
            [{'k': 0, 'sum(v)': 6}, {'k': 1, 'sum(v)': 9}]
        """
        from ember.data.grouped import GroupedData

        keys = () if key is None else tuple(_keys("Dataset.groupby", key))
        return GroupedData(
            self._node, keys, self._child, self.columns
        )  # results keep name and context, as Ray's

    def aggregate(self, *aggs_: aggs.AggregateFn) -> Any:
        """Run aggregations (``ember.data.aggregate``) over the whole dataset, block by block
        (constant memory): a dict {aggregation name: value}.

        Example:
            >>> from ember.data.aggregate import Count, Max
            >>> ember.data.range(10).aggregate(Count(), Max("id"))
            {'count()': 10, 'max(id)': 9}
        """
        checked = aggs.check_aggs(aggs_, "Dataset.aggregate")
        rows = self._child(plan.Aggregate(self._node, (), checked)).take_all()
        return rows[0] if rows else None

    def _column_aggregate(
        self, kind: Callable[..., aggs.AggregateFn], on: str | list[str] | None, **options: Any
    ) -> Any:
        columns = [on] if isinstance(on, str) else list(on) if on is not None else self.columns() or []
        if on is None and not columns:  # no schema (no blocks at all) or no columns: Ray's answer is None
            return None
        result = self.aggregate(*(kind(c, **options) for c in columns))
        # one aggregation gives its value, whether `on` named one column, a list of one or every column of a
        # one-column dataset (Ray's Dataset._aggregate_result); more give the dict
        if result is not None and len(result) == 1:
            return next(iter(result.values()))
        return result

    def sum(self, on: str | list[str] | None = None, ignore_nulls: bool = True) -> Any:
        """Sum of a column: its value, or a dict {"sum(c)": ...} for several (``on`` a list, or None: every
        column); None when empty.

        Example:
            >>> ember.data.range(5).sum("id")
            10
        """
        return self._column_aggregate(aggs.Sum, on, ignore_nulls=ignore_nulls)

    def min(self, on: str | list[str] | None = None, ignore_nulls: bool = True) -> Any:
        """Smallest value of a column (a dict for a list of columns).

        Example:
            >>> ember.data.range(5).min("id")
            0
        """
        return self._column_aggregate(aggs.Min, on, ignore_nulls=ignore_nulls)

    def max(self, on: str | list[str] | None = None, ignore_nulls: bool = True) -> Any:
        """Largest value of a column (a dict for a list of columns).

        Example:
            >>> ember.data.range(5).max("id")
            4
        """
        return self._column_aggregate(aggs.Max, on, ignore_nulls=ignore_nulls)

    def mean(self, on: str | list[str] | None = None, ignore_nulls: bool = True) -> Any:
        """Mean of a column (a dict for a list of columns).

        Example:
            >>> ember.data.range(5).mean("id")
            2.0
        """
        return self._column_aggregate(aggs.Mean, on, ignore_nulls=ignore_nulls)

    def std(self, on: str | list[str] | None = None, ddof: int = 1, ignore_nulls: bool = True) -> Any:
        """Standard deviation of a column (``ddof=1``: the sample std; a dict for a list of columns).

        Example:
            >>> round(ember.data.range(5).std("id"), 4)
            1.5811
        """
        return self._column_aggregate(aggs.Std, on, ddof=ddof, ignore_nulls=ignore_nulls)

    def unique(self, column: str, ignore_nulls: bool = False) -> list[Any]:
        """The distinct values of ``column``.

        Example:
            >>> sorted(ember.data.from_items([{"a": 1}, {"a": 2}, {"a": 1}]).unique("a"))
            [1, 2]
        """
        result = self.aggregate(aggs.Unique(column, ignore_nulls=ignore_nulls))
        values: list[Any] = result[f"unique({column})"]
        return values

    def summary(
        self, columns: list[str] | None = None, override_dtype_agg_mapping: Any = None
    ) -> DatasetSummary:
        """Statistics of each column (or of ``columns``), chosen by its type as in Ray 2.60: a
        ``DatasetSummary`` (``to_pandas()``, ``get_column_stats(column)``, ``dataset_schema``,
        ``columns``); see ``ember.data.summary`` for the statistics. Ray's
        ``override_dtype_agg_mapping`` (keyed by Ray's DataType) is refused: pass
        ``ember.data.aggregate`` aggregations to ``aggregate()`` instead.

        Example:
            >>> summary = ember.data.from_items([{"x": 1}, {"x": 3}, {"x": None}]).summary()
            >>> stats = summary.get_column_stats("x")
            >>> {s: v for s, v in zip(stats["statistic"], stats["value"]) if s in ("count", "mean",
            ...     "missing_pct")}
            {'count': 3.0, 'mean': 2.0, 'missing_pct': 33.33333333333333}
        """
        from ember.data.summary import summarize

        if override_dtype_agg_mapping is not None:
            raise ConfigError(
                "Dataset.summary(override_dtype_agg_mapping=...) is keyed by Ray's DataType, which "
                "ember has not; run your aggregations with ds.aggregate(...) instead"
            )
        return summarize(self, columns)

    # ------------------------------------------------------------------ combining datasets

    def join(
        self,
        ds: Dataset,
        join_type: str,
        num_partitions: int,
        on: tuple[str, ...] | list[str] = ("id",),
        right_on: tuple[str, ...] | list[str] | None = None,
        left_suffix: str | None = None,
        right_suffix: str | None = None,
        **_: Any,
    ) -> Dataset:
        """Join with ``ds`` on key columns: ``join_type`` "inner", "left_outer", "right_outer" or
        "full_outer"; ``right_on`` names the right side's keys when they differ. Out of core past
        the memory budget (both sides range-partitioned into ``num_partitions`` or more buckets).

        Example:
            >>> left = ember.data.from_items([{"id": 1, "a": "x"}, {"id": 2, "a": "y"}])
            >>> right = ember.data.from_items([{"id": 2, "b": True}])
            >>> left.join(right, "inner", num_partitions=1).take_all()
            [{'id': 2, 'a': 'y', 'b': True}]
        """
        from ember.data.execute.combine import JOIN_TYPES

        if join_type not in JOIN_TYPES:
            raise ConfigError(f"Dataset.join(join_type={join_type!r}); use one of {sorted(JOIN_TYPES)}")
        if not isinstance(ds, Dataset):
            raise ConfigError(f"Dataset.join({type(ds).__name__}); pass an ember.data Dataset")
        if not isinstance(num_partitions, int) or num_partitions < 1:
            raise ConfigError(f"Dataset.join(num_partitions={num_partitions!r}); use a positive integer")
        left_keys = tuple(_keys("Dataset.join", list(on) if not isinstance(on, str) else on))
        right_keys = tuple(_keys("Dataset.join", right_on)) if right_on is not None else left_keys
        if len(left_keys) != len(right_keys):
            raise ConfigError(f"Dataset.join: on={left_keys} and right_on={right_keys} differ in length")
        return self._child(
            plan.Join(
                self._node,
                ds._node,
                join_type,
                left_keys,
                right_keys,
                left_suffix,
                right_suffix,
                num_partitions,
            )
        )

    def zip(self, *other: Dataset) -> Dataset:
        """Row i of this dataset beside row i of each of ``other`` (equal row counts required);
        a duplicate column name from the j-th other dataset becomes ``name_j``.

        Example:
            >>> ember.data.range(2).zip(ember.data.from_items([{"b": 5}, {"b": 6}])).take_all()
            [{'id': 0, 'b': 5}, {'id': 1, 'b': 6}]
        """
        if not other:
            raise ConfigError("Dataset.zip() needs at least one other dataset")
        counts = [plan.known_rows(d._node) for d in (self, *other)]
        if None not in counts and len(set(counts)) > 1:
            raise DataValueError(f"zip: the datasets have {counts} rows; zip datasets with equal row counts")
        return self._child(plan.Zip([self._node] + [d._node for d in other]))  # Ray's zip shares the context

    # ------------------------------------------------------------------ splitting

    def streaming_split(
        self, n: int, *, equal: bool = False, locality_hints: list[Any] | None = None
    ) -> list[DataIterator]:
        """``n`` DataIterators for ``n`` consumers (e.g. DDP ranks); ``equal=True`` gives each the same
        number of rows (dropping the remainder), ``equal=False`` keeps every row.

        Each iterator reads a contiguous, ordered range of the rows and runs on its own (no shared
        execution, so no barrier between consumers); when row counts are known from metadata, it reads
        only its own fragments. ``locality_hints`` (node ids, one per iterator) only steer where Ray
        moves data: ember checks their number and otherwise has nothing to place.

        Example:
            >>> a, b = ember.data.range(5).streaming_split(2, equal=True)
            >>> [len(batch["id"]) for batch in a.iter_batches()], [r["id"] for r in b.iter_rows()]
            ([2], [2, 3])
        """
        if locality_hints is not None and len(locality_hints) != n:
            raise ConfigError(
                f"streaming_split(n={n}, locality_hints=...): give one node id per iterator "
                f"({len(locality_hints)} given)"
            )
        return [DataIterator(shard) for shard in self._streaming_shards(n, equal=equal)]

    def _streaming_shards(self, n: int, *, equal: bool = False) -> list[Dataset]:
        """The Datasets behind ``streaming_split(n)``'s iterators."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ConfigError(f"streaming_split(n={n!r}); use an integer n >= 1")
        return [self._child(Shard(self._node, i, n, equal)) for i in range(n)]

    def shard_for_rank(
        self, world_size: int, rank: int, *, same_on_every_rank: Callable[[Any], Any] | None = None
    ) -> Dataset:
        """Rank ``rank``'s equal shard of ``world_size`` (``streaming_split(world_size, equal=True)[rank]``
        as a Dataset): the seam ``ember.runtime.sharding`` uses to give each DDP/FSDP rank its part.
        ``same_on_every_rank`` is part of the seam's signature (a Dataset draws no seed here).

        Example:
            >>> [r["id"] for r in ember.data.range(5).shard_for_rank(2, 1).take_all()]
            [2, 3]
        """
        return self._streaming_shards(world_size, equal=True)[rank]

    def iterator(self) -> DataIterator:
        """A DataIterator over this dataset (what ``streaming_split(1)`` gives, without the split).

        Example:
            >>> [b["id"].tolist() for b in ember.data.range(3).iterator().iter_batches(batch_size=2)]
            [[0, 1], [2]]
        """
        return DataIterator(self)

    def split(
        self, n: int, *, equal: bool = False, locality_hints: list[Any] | None = None
    ) -> list[MaterializedDataset]:
        """Materialize and cut into ``n`` datasets of contiguous rows.

        Example:
            >>> [d.count() for d in ember.data.range(5).split(2)]
            [2, 3]
        """
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n <= 0:
            raise ConfigError(f"Dataset.split({n!r}); the number of splits must be a positive integer")
        table = concat_blocks(self.materialize()._blocks)
        ranges = [shard_range(table.num_rows, i, n, equal) for i in range(n)]
        return [MaterializedDataset([table.slice(s, c)], context=self._context.copy()) for s, c in ranges]

    def split_at_indices(self, indices: list[int]) -> list[MaterializedDataset]:
        """Materialize and cut at the given row indices.

        Example:
            >>> [d.count() for d in ember.data.range(5).split_at_indices([1, 3])]
            [1, 2, 2]
        """
        indices = list(indices)
        if len(indices) < 1:
            raise ConfigError("Dataset.split_at_indices([]); pass at least one index")
        if any(not isinstance(i, (int, np.integer)) or isinstance(i, bool) for i in indices):
            raise ConfigError(f"Dataset.split_at_indices({indices}); the indices must be integers")
        if sorted(indices) != indices:
            raise ConfigError(f"Dataset.split_at_indices({indices}); the indices must be sorted")
        if indices[0] < 0:
            raise ConfigError(f"Dataset.split_at_indices({indices}); the indices must be >= 0")
        table = concat_blocks(self.materialize()._blocks)
        edges = [0] + [min(int(i), table.num_rows) for i in indices] + [table.num_rows]
        return [
            MaterializedDataset([table.slice(a, b - a)], context=self._context.copy())
            for a, b in zip(edges[:-1], edges[1:], strict=False)
        ]

    def split_proportionately(self, proportions: list[float]) -> list[MaterializedDataset]:
        """Materialize and cut into ``len(proportions) + 1`` datasets: the first ones hold those
        fractions of the rows (each at least one row), the last the rest (as Ray's).

        Example:
            >>> [d.count() for d in ember.data.range(10).split_proportionately([0.2, 0.5])]
            [2, 5, 3]
        """
        proportions = list(proportions)
        if len(proportions) < 1:
            raise ConfigError("Dataset.split_proportionately([]); pass at least one proportion")
        if any(p <= 0 for p in proportions):
            raise ConfigError(f"Dataset.split_proportionately({proportions}); each proportion must be > 0")
        if sum(proportions) >= 1:
            raise ConfigError(
                f"Dataset.split_proportionately({proportions}); the proportions must sum to less than 1"
            )
        ds = self.materialize()
        total = ds.count()
        indices = [int(total * p) for p in np.cumsum(proportions)]
        subtract = 0  # pull earlier cuts back so that every split holds at least one row
        for i in range(len(indices) - 2, -1, -1):
            indices[i] -= subtract
            if indices[i] == indices[i + 1]:
                subtract += 1
                indices[i] -= 1
        if any(i <= 0 for i in indices):
            raise DataValueError(
                f"split_proportionately({proportions}): {total} rows cannot give every split a row; "
                "use fewer or larger proportions"
            )
        return ds.split_at_indices(indices)

    @ray_compatible
    def train_test_split(
        self,
        test_size: float | int,
        *,
        shuffle: bool = False,
        seed: int | None = None,
        stratify: str | None = None,
        **_: Any,
    ) -> tuple[MaterializedDataset, MaterializedDataset]:
        """Split into (train, test); ``test_size`` is a fraction in (0, 1) or a row count in (0, rows).

        ``shuffle=True`` shuffles all rows first (with ``seed``). ``stratify="label"`` keeps each
        class's proportion in both sides, as Ray's: rows come grouped by class (ascending), and in a
        class of ``n`` rows its last ``int(n * test_size)`` go to test. It cannot be combined with shuffle.

        Example:
            >>> train, test = ember.data.range(10).train_test_split(0.2)
            >>> train.count(), test.count()
            (8, 2)
            >>> ds = ember.data.from_items([{"y": i % 2} for i in range(8)])
            >>> [r["y"] for r in ds.train_test_split(0.5, stratify="y")[1].take_all()]
            [0, 0, 1, 1]
        """
        if isinstance(test_size, bool) or not isinstance(test_size, (int, float)):
            raise ConfigError(f"train_test_split(test_size={test_size!r}); use a fraction or a row count")
        if shuffle and stratify is not None:
            raise ConfigError(
                "train_test_split: shuffle=True and stratify= cannot be combined (a stratified "
                "split keeps the class proportions, not a shuffled order); drop one"
            )
        if isinstance(test_size, float) and not 0 < test_size < 1:
            raise ConfigError(f"test_size={test_size}; use a fraction in (0, 1) or a row count")
        ds = self.random_shuffle(seed=seed) if shuffle else self
        if isinstance(test_size, int) or stratify is not None:
            ds = ds.materialize()  # the row count and the split read it once
        total = ds.count()
        if isinstance(test_size, int) and not 0 < test_size < total:
            raise ConfigError(
                f"train_test_split(test_size={test_size}); a row count must be between 0 and the "
                f"dataset's {total} rows"
            )
        if stratify is not None:
            from ember.data.train_test import stratified_split

            fraction = test_size / total if isinstance(test_size, int) else test_size
            assert isinstance(ds, MaterializedDataset)  # materialized above for a stratified split
            train, test = stratified_split(concat_blocks(ds._blocks), stratify, fraction)
            return (
                MaterializedDataset([train], context=self._context.copy()),
                MaterializedDataset([test], context=self._context.copy()),
            )
        split_index = int(total * (1 - test_size)) if isinstance(test_size, float) else total - test_size
        train, test = ds.split_at_indices([split_index])
        return train, test

    @ray_compatible
    def streaming_train_test_split(
        self,
        test_size: float,
        *,
        split_type: str = "random",
        hash_column: str | None = None,
        seed: int | None = None,
        **_: Any,
    ) -> tuple[Dataset, Dataset]:
        """Split into lazy (train, test) datasets as rows stream, without materializing: each row goes
        to test with probability ``test_size``. ``split_type="hash"`` decides by a hash of
        ``hash_column``'s value (Ray's blake2b rule: the same rows as Ray, and a key always lands on the
        same side); ``"random"`` by a draw keyed by ``seed`` and the block's rows (without a seed one is
        drawn now, so train and test still agree). The two are disjoint and hold every row between them.

        Example:
            >>> train, test = ember.data.range(8).streaming_train_test_split(0.25, split_type="hash",
            ...                                                               hash_column="id")
            >>> [r["id"] for r in test.take_all()], train.count() + test.count()
            ([1, 7], 8)
        """
        from ember.data.train_test import TrainTestSide, check_streaming_split

        check_streaming_split(test_size, split_type, hash_column, seed)
        if split_type == "random":
            seed = arguments.seed("Dataset.streaming_train_test_split", seed)
            seed = secrets.randbits(63) if seed is None else seed
        sides = (TrainTestSide(side, test_size, split_type, hash_column, seed) for side in (True, False))
        train, test = (self._then(side) for side in sides)
        return train, test

    # ------------------------------------------------------------------ execution

    def _stream(self, epoch: int = 0, plan_seed: int | None = None) -> BlockStream:
        """The blocks of one epoch; seedless shuffles draw from ``plan_seed``, or from this run's own
        seed when None (a new order on every run, as Ray's)."""
        if plan_seed is None:
            plan_seed = self._next_execution_seed()
        executor = Executor(epoch, self._context.resolved())
        self._last_stats = executor.stats
        return executor.stream(with_execution_seed(self._node, plan_seed))

    def _next_execution_seed(self) -> int | None:
        """The seed of this Dataset's next run (None: its plan has no seedless shuffle)."""
        count = getattr(self, "_executions", 0)
        self._executions = count + 1
        return execution_seed(self._node, count)

    def _why_not_replayable(self) -> str | None:
        """Why a mid-epoch resume cannot replay this plan's epoch exactly (None: it can). Resuming replays
        the epoch's stream and skips what was delivered, so the stream must be the same every time."""
        if self._context.resolved().execution == "ray" and contains(self._node, MapGroups):
            return (
                "map_groups on Ray hands each group's rows over in the order Ray's shuffle delivers them, "
                "so a replayed epoch differs"
            )
        return None

    def iter_internal_blocks(self, epoch: int = 0) -> Iterator[Block]:
        """The Arrow blocks of one epoch, in order (for integrations that want Arrow directly).

        Example:
            >>> [b.num_rows for b in ember.data.range(3).iter_internal_blocks()]
            [3]
        """
        return self._stream(epoch)

    def iter_rows(self) -> Iterator[dict[str, Any]]:
        """Rows as dicts.

        Example:
            >>> list(ember.data.range(2).iter_rows())
            [{'id': 0}, {'id': 1}]
        """
        blocks = self._stream()
        try:
            for block in blocks:
                yield from block_to_rows(block)
        finally:
            blocks.close()

    @ray_compatible
    def iter_batches(
        self,
        *,
        prefetch_batches: int = 1,
        batch_size: int | None = 256,
        batch_format: str | None = "default",
        drop_last: bool = False,
        local_shuffle_buffer_size: int | None = None,
        local_shuffle_seed: int | None = None,
        **_: Any,
    ) -> BatchIterable[DataBatch]:
        """Batches (dict of numpy arrays by default); a re-iterable with ``state_dict()``.

        Example:
            >>> [b["id"].tolist() for b in ember.data.range(5).iter_batches(batch_size=2)]
            [[0, 1], [2, 3], [4]]
        """
        fmt = "numpy" if batch_format == "default" else batch_format
        return self._batch_iterable(
            "Dataset.iter_batches",
            batch_converter(fmt),
            batch_size,
            drop_last,
            local_shuffle_buffer_size,
            local_shuffle_seed,
            prefetch_batches,
        )

    @overload
    def iter_torch_batches(
        self,
        *,
        prefetch_batches: int = ...,
        batch_size: int | None = ...,
        dtypes: torch.dtype | dict[str, torch.dtype] | None = ...,
        device: TorchDeviceType | Literal["auto"] | None = ...,
        collate_fn: None = ...,
        drop_last: bool = ...,
        local_shuffle_buffer_size: int | None = ...,
        local_shuffle_seed: int | None = ...,
        pin_memory: bool = ...,
        **_: Any,
    ) -> BatchIterable[dict[str, torch.Tensor]]: ...
    @overload
    def iter_torch_batches(
        self,
        *,
        prefetch_batches: int = ...,
        batch_size: int | None = ...,
        dtypes: torch.dtype | dict[str, torch.dtype] | None = ...,
        device: TorchDeviceType | Literal["auto"] | None = ...,
        collate_fn: Callable[[dict[str, np.ndarray]], CollatedData],
        drop_last: bool = ...,
        local_shuffle_buffer_size: int | None = ...,
        local_shuffle_seed: int | None = ...,
        pin_memory: bool = ...,
        **_: Any,
    ) -> BatchIterable[CollatedData]: ...
    @ray_compatible
    def iter_torch_batches(
        self,
        *,
        prefetch_batches: int = 1,
        batch_size: int | None = 256,
        dtypes: torch.dtype | dict[str, torch.dtype] | None = None,
        device: TorchDeviceType | Literal["auto"] | None = "auto",
        collate_fn: Callable[[dict[str, np.ndarray]], Any] | None = None,
        drop_last: bool = False,
        local_shuffle_buffer_size: int | None = None,
        local_shuffle_seed: int | None = None,
        pin_memory: bool = False,
        **_: Any,
    ) -> BatchIterable[Any]:
        """Batches as dicts of torch tensors; a re-iterable with ``state_dict()`` for exact resume.

        ``dtypes``: one torch dtype or {column: dtype} (a key naming no column is an error).
        ``device``: "auto" (the worker's device inside an ember.train loop, else CPU, as Ray's),
        None (CPU) or a device. ``collate_fn`` gets the batch type its class asks for
        (``ember.data.collate_fn``; a plain function: a numpy dict); its output is moved to ``device``
        only when it is a tensor batch. ``pin_memory=True`` builds the tensors in
        page-locked host memory (faster, asynchronous copies to the GPU); without CUDA it warns
        once and does not pin, as DataLoader does.

        Example:
            >>> batch = next(iter(ember.data.range(4).iter_torch_batches(batch_size=4)))
            >>> batch["id"]
            tensor([0, 1, 2, 3])
        """
        convert = torch_converter(dtypes, device, collate_fn, pin_memory)
        return self._batch_iterable(
            "Dataset.iter_torch_batches",
            convert,
            batch_size,
            drop_last,
            local_shuffle_buffer_size,
            local_shuffle_seed,
            prefetch_batches,
        )

    def _batch_iterable(
        self,
        where: str,
        convert: Callable[[Block], Any],
        batch_size: Any,
        drop_last: bool,
        buffer: Any,
        seed: Any,
        prefetch: Any,
    ) -> BatchIterable[Any]:
        batch_size = arguments.batch_size(where, batch_size)
        seed = arguments.seed(where, seed, "local_shuffle_seed")
        if buffer is not None:
            buffer = arguments.count(where, buffer, "local_shuffle_buffer_size")
        prefetch = arguments.count(where, prefetch, "prefetch_batches")
        return BatchIterable(
            self._stream,
            batch_size=batch_size,
            convert=convert,
            drop_last=drop_last,
            local_shuffle_buffer_size=buffer,
            local_shuffle_seed=seed,
            prefetch_batches=prefetch,
            num_rows=self._known_count(),
            dataset=_BatchSource(self),
            plan_seed=self._next_execution_seed(),
        )

    @ray_compatible
    def to_torch(
        self,
        *,
        label_column: str | None = None,
        feature_columns: list[str] | None = None,
        batch_size: int = 1,
        prefetch_batches: int = 1,
        drop_last: bool = False,
        local_shuffle_buffer_size: int | None = None,
        local_shuffle_seed: int | None = None,
        **_: Any,
    ) -> torch.utils.data.IterableDataset[Any]:
        """A ``torch.utils.data.IterableDataset`` of (features, label) batches, or dict batches
        when no ``label_column`` is given. It forwards ``state_dict``/``load_state_dict``.

        Example:
            >>> ds = ember.data.from_items([{"x": 1.0, "y": 0}, {"x": 2.0, "y": 1}])
            >>> features, label = next(iter(ds.to_torch(label_column="y", batch_size=2)))
            >>> features.shape, label.tolist()
            (torch.Size([2, 1]), [0, 1])
        """
        from ember.data.torch_dataset import TorchIterableDataset

        batches = self.iter_torch_batches(
            batch_size=batch_size,
            prefetch_batches=prefetch_batches,
            drop_last=drop_last,
            device=None,
            local_shuffle_buffer_size=local_shuffle_buffer_size,
            local_shuffle_seed=local_shuffle_seed,
        )
        return TorchIterableDataset(batches, label_column, feature_columns)

    def take(self, limit: int = 20) -> list[dict[str, Any]]:
        """The first ``limit`` rows.

        Example:
            >>> ember.data.range(10).take(2)
            [{'id': 0}, {'id': 1}]
        """
        return list(self.limit(limit).iter_rows())

    def take_all(self, limit: int | None = None) -> list[dict[str, Any]]:
        """All rows (raises if there are more than ``limit``).

        Example:
            >>> len(ember.data.range(3).take_all())
            3
        """
        rows = list(self.limit(limit + 1).iter_rows() if limit is not None else self.iter_rows())
        if limit is not None and len(rows) > limit:
            raise DataValueError(
                f"the dataset has more than limit={limit} rows; raise the limit or use take()"
            )
        return rows

    def take_batch(self, batch_size: int = 20, *, batch_format: str | None = "default") -> DataBatch:
        """The first ``batch_size`` rows as one batch.

        Example:
            >>> ember.data.range(5).take_batch(3)["id"]
            array([0, 1, 2])
        """
        # None: the block as it is (an Arrow table), as in Ray; an unknown name is refused before anything
        # runs
        convert = batch_converter("pyarrow" if batch_format is None else batch_format)
        blocks = list(self.limit(batch_size)._stream())
        if not sum(block.num_rows for block in blocks):
            raise DataValueError(
                "take_batch: the dataset is empty (as Ray's, a ValueError); check count() first"
            )
        return convert(concat_blocks(blocks))

    def show(self, limit: int = 20) -> None:
        """Print the first ``limit`` rows, one per line.

        Example:
            >>> ember.data.range(2).show()
            {'id': 0}
            {'id': 1}
        """
        for row in self.take(limit):
            print(row)

    def count(self) -> int:
        """Number of rows; from metadata when the plan allows, else by running it.

        Example:
            >>> ember.data.range(7).filter(lambda r: r["id"] < 3).count()
            3
        """
        known = self._known_count()
        if known is not None:
            return known
        return sum(block.num_rows for block in self._stream())

    def _known_count(self) -> int | None:
        return plan.known_rows(self._node)

    def schema(self, fetch_if_missing: bool = True) -> Schema | None:
        """Column names and types. Known without running the plan for a bare read with metadata
        (parquet, in-memory data, a materialized dataset) and through operators that keep the
        columns (filter, limit, sort, shuffles, repartition, splits, union), or once fetched;
        otherwise ``fetch_if_missing=True`` runs the plan until its first block and
        ``fetch_if_missing=False`` returns None (Ray's meaning).

        Example:
            >>> print(ember.data.from_items([{"a": 1.5}]).schema())
            Column  Type
            ------  ----
            a       double
            >>> ember.data.range(3).map(lambda r: r).schema(fetch_if_missing=False) is None
            True
        """
        known = self._schema_cache or _known_schema(self._node)
        if known is not None or not fetch_if_missing:
            return Schema(known) if known is not None else None
        last = None
        blocks = self._stream()
        try:
            for block in blocks:
                last = block
                if block.num_rows:
                    break
        finally:
            blocks.close()
        if last is not None:
            self._schema_cache = last.schema
        return Schema(last.schema) if last is not None else None

    def columns(self, fetch_if_missing: bool = True) -> list[str] | None:
        """Column names; None where ``schema()`` is None, as in Ray (``fetch_if_missing=False`` and the
        schema is not known yet, or a dataset with no blocks, such as ``range(0)``).

        Example:
            >>> ember.data.range(1).columns()
            ['id']
            >>> ember.data.range(1).map(lambda r: r).columns(fetch_if_missing=False) is None
            True
            >>> ember.data.range(0).columns() is None
            True
        """
        schema = self.schema(fetch_if_missing=fetch_if_missing)
        return None if schema is None else schema.names

    def materialize(self) -> MaterializedDataset:
        """Run the plan once and keep the blocks in memory.

        Example:
            >>> ember.data.range(3).map(lambda r: r).materialize().count()
            3
        """
        materialized = MaterializedDataset(list(self._stream()), context=self._context)
        materialized._name = self._name  # Ray's materialized dataset keeps the name
        return materialized

    def to_pandas(self, limit: int | None = None) -> pandas.DataFrame:
        """All rows as one pandas DataFrame; with ``limit``, a dataset of more rows is refused (as Ray's,
        a ValueError), not cut.

        Example:
            >>> ember.data.range(2).to_pandas()["id"].tolist()
            [0, 1]
            >>> ember.data.range(5).to_pandas(limit=2)
            Traceback (most recent call last):
            ...
            ember.data.ray_errors.DataValueError: the dataset has more than limit=2 rows; raise the limit or
            use limit(n).to_pandas()
        """
        ds = self.limit(limit + 1) if limit is not None else self
        table = concat_blocks(list(ds._stream()))
        if limit is not None and table.num_rows > limit:
            raise DataValueError(
                f"the dataset has more than limit={limit} rows; raise the limit or use limit(n).to_pandas()"
            )
        return block_to_batch(table, "pandas")

    def to_arrow(self) -> pa.Table:
        """All rows as one pyarrow Table.

        Example:
            >>> ember.data.range(2).to_arrow().num_rows
            2
        """
        return concat_blocks(list(self._stream()))

    def to_ray(self) -> ray.data.Dataset:
        """This dataset as a lazy ``ray.data.Dataset`` (reads and maps become Ray tasks, callable
        classes Ray actor pools, shuffles, sorts and groupbys Ray's own; see
        ``ember/data/execute/ray_backend/translate.py``); Ray is started (or joined, via
        ``RAY_ADDRESS``) if needed.

        Example:
            >>> ray_ds = ember.data.range(4).map_batches(lambda b: b).to_ray()  # doctest: +SKIP
            >>> ray_ds.count()                                                  # doctest: +SKIP
            4
        """
        from ember.data.execute.ray_backend import to_ray_dataset

        return to_ray_dataset(self._node)

    def input_files(self) -> list[str]:
        """The files this dataset reads (every read in its plan), without duplicates.

        Example:
            >>> import tempfile
            >>> folder = tempfile.mkdtemp()
            >>> _ = ember.data.range(3).write_parquet(folder)
            >>> [f.rsplit("/", 1)[1] for f in ember.data.read_parquet(folder).input_files()]
            ['part-00000.parquet']
        """
        return plan.input_files(self._node)

    def fragments(self) -> list[ReadTask]:
        """The read tasks of a bare read, one per fragment (a file, a row group, a slice of memory),
        each with ``read()``, ``description`` and ``num_rows``: for tools that process fragment by
        fragment (resumable batch inference). Raises for a dataset with operators after the read.

        Example:
            >>> [t.num_rows for t in ember.data.range(10, override_num_blocks=2).fragments()]
            [5, 5]
        """
        tasks = plan.read_fragments(self._node)
        if tasks is None:
            raise ConfigError(
                f"fragments() lists the fragments of a bare read, not of {describe(self._node)}; "
                "call it on the dataset read_* returned"
            )
        return tasks

    def stats(self) -> str:
        """What the last execution of this Dataset did, operator by operator: rows, blocks, bytes,
        wall and CPU time, peak memory, bytes spilled to disk.

        Example:
            >>> ds = ember.data.range(3); _ = ds.take_all()
            >>> "Range" in ds.stats()
            True
        """
        named = f"Dataset {self._name}\n" if self._name else ""
        return f"{named}Plan: {describe(self._node)}\n{self._last_stats or '(not executed yet)'}"

    # ------------------------------------------------------------------ writing

    def write_parquet(
        self,
        path: str,
        *,
        filesystem: Any = None,
        mode: sinks.SaveMode | str = "append",
        partition_cols: list[str] | None = None,
        min_rows_per_file: int | None = None,
        max_rows_per_file: int | None = None,
        num_rows_per_file: int | None = None,
        min_bytes_per_file: int | None = None,
        filename_provider: FilenameProvider | None = None,
        arrow_open_stream_args: dict[str, Any] | None = None,
        arrow_parquet_args_fn: Callable[[], dict[str, Any]] | None = None,
        **options: Any,
    ) -> list[str]:
        """Write one parquet file per block into folder ``path``; tensor columns round-trip.

        ``mode`` (Ray's ``SaveMode``): ``"append"`` (default) adds files beside what is there,
        ``"overwrite"`` replaces what ember wrote there before, ``"ignore"`` writes nothing when
        the folder exists, ``"error"`` refuses it. The write is committed by the folder's manifest
        (``_ember_write.json``), written last: readers never see part of a write.
        ``min_rows_per_file`` (``num_rows_per_file``, Ray's older name) / ``max_rows_per_file`` set the
        rows per file, ``min_bytes_per_file`` combines whole blocks until their in-memory size reaches
        it (Ray's rule); ``partition_cols`` writes ``col=value/`` folders that `read_parquet` reads back
        as columns. ``filename_provider`` (Ray's ``FilenameProvider``) names the files,
        ``arrow_open_stream_args`` sets their ``compression`` (every writer takes both). ``options``
        go to ``pyarrow.parquet.write_table``, updated with ``arrow_parquet_args_fn()`` (called per
        file, as in Ray: for arguments that do not pickle). With ``execution="ray"`` each file is
        written by a Ray task, not on the driver.

        Example:
            >>> import tempfile
            >>> files = ember.data.range(3).write_parquet(tempfile.mkdtemp())
            >>> [f.rsplit("/", 1)[1] for f in files]
            ['part-00000.parquet']
            >>> len(ember.data.range(10).write_parquet(tempfile.mkdtemp(), min_rows_per_file=4))
            3
        """
        writer = sinks.parquet_writer(arrow_parquet_args_fn, **options)
        layout = sinks.file_layout(
            "Dataset.write_parquet", min_rows_per_file, max_rows_per_file, num_rows_per_file
        )
        return sinks.write_blocks(
            self._write_input(),
            path,
            "parquet",
            writer,
            mode,
            "Dataset.write_parquet",
            partition_cols=partition_cols,
            **layout,
            min_bytes_per_file=min_bytes_per_file,
            filesystem=filesystem,
            filename_provider=filename_provider,
            arrow_open_stream_args=arrow_open_stream_args,
        )

    def write_orc(
        self,
        path: str,
        *,
        filesystem: Any = None,
        mode: sinks.SaveMode | str = "append",
        arrow_orc_args_fn: Callable[[], dict[str, Any]] | None = None,
        min_rows_per_file: int | None = None,
        filename_provider: FilenameProvider | None = None,
        arrow_open_stream_args: dict[str, Any] | None = None,
        **arrow_orc_args: Any,
    ) -> list[str]:
        """Write one ORC file per block into folder ``path`` (``mode`` and rows per file as in
        `write_parquet`); ``arrow_orc_args`` (and ``arrow_orc_args_fn()``, which wins) go to
        ``pyarrow.orc.write_table``, e.g. ``compression="zstd"``. Tensor columns are refused.

        Example:
            >>> import tempfile
            >>> out = tempfile.mkdtemp()
            >>> [f.rsplit("/", 1)[1] for f in ember.data.range(3).write_orc(out, compression="zstd")]
            ['part-00000.orc']
            >>> ember.data.read_orc(out).count()
            3
        """
        writer = sinks.orc_writer(arrow_orc_args_fn, **arrow_orc_args)
        layout = sinks.file_layout("Dataset.write_orc", min_rows_per_file)
        return sinks.write_blocks(
            self._write_input(),
            path,
            "orc",
            writer,
            mode,
            "Dataset.write_orc",
            **layout,
            filesystem=filesystem,
            filename_provider=filename_provider,
            arrow_open_stream_args=arrow_open_stream_args,
        )

    def write_csv(
        self,
        path: str,
        *,
        filesystem: Any = None,
        mode: sinks.SaveMode | str = "append",
        min_rows_per_file: int | None = None,
        num_rows_per_file: int | None = None,
        filename_provider: FilenameProvider | None = None,
        arrow_open_stream_args: dict[str, Any] | None = None,
        arrow_csv_args_fn: Callable[[], dict[str, Any]] | None = None,
        **options: Any,
    ) -> list[str]:
        """Write one CSV file per block into folder ``path`` (``mode`` and rows per file as in
        `write_parquet`);
        ``options`` go to ``pyarrow.csv.write_csv``, updated with ``arrow_csv_args_fn()`` (Ray's rule).

        Example:
            >>> import tempfile
            >>> len(ember.data.range(3).write_csv(tempfile.mkdtemp()))
            1
        """
        writer = sinks.csv_writer(arrow_csv_args_fn, **options)
        layout = sinks.file_layout("Dataset.write_csv", min_rows_per_file, None, num_rows_per_file)
        return sinks.write_blocks(
            self._write_input(),
            path,
            "csv",
            writer,
            mode,
            "Dataset.write_csv",
            **layout,
            filesystem=filesystem,
            filename_provider=filename_provider,
            arrow_open_stream_args=arrow_open_stream_args,
        )

    def write_json(
        self,
        path: str,
        *,
        filesystem: Any = None,
        mode: sinks.SaveMode | str = "append",
        min_rows_per_file: int | None = None,
        num_rows_per_file: int | None = None,
        filename_provider: FilenameProvider | None = None,
        arrow_open_stream_args: dict[str, Any] | None = None,
        pandas_json_args_fn: Callable[[], dict[str, Any]] | None = None,
        **pandas_json_args: Any,
    ) -> list[str]:
        """Write one JSON-lines file per block into folder ``path`` (``mode`` and rows per file as in
        `write_parquet`).
        ``pandas_json_args`` (updated with ``pandas_json_args_fn()``) make each block go through
        ``DataFrame.to_json(orient="records", lines=True, **args)``, as Ray writes it.

        Example:
            >>> import tempfile
            >>> len(ember.data.range(3).write_json(tempfile.mkdtemp()))
            1
        """
        layout = sinks.file_layout("Dataset.write_json", min_rows_per_file, None, num_rows_per_file)
        writer = sinks.json_writer(pandas_json_args_fn, **pandas_json_args)
        return sinks.write_blocks(
            self._write_input(),
            path,
            "json",
            writer,
            mode,
            "Dataset.write_json",
            **layout,
            filesystem=filesystem,
            filename_provider=filename_provider,
            arrow_open_stream_args=arrow_open_stream_args,
        )

    @ray_compatible
    def write_numpy(
        self,
        path: str,
        *,
        column: str,
        filesystem: Any = None,
        mode: sinks.SaveMode | str = "append",
        min_rows_per_file: int | None = None,
        num_rows_per_file: int | None = None,
        filename_provider: FilenameProvider | None = None,
        arrow_open_stream_args: dict[str, Any] | None = None,
        **_: Any,
    ) -> list[str]:
        """Write column ``column`` as one .npy file per block into folder ``path`` (``mode`` and rows per
        file as in `write_parquet`).

        Example:
            >>> import tempfile
            >>> len(ember.data.range_tensor(3, shape=(2,)).write_numpy(tempfile.mkdtemp(), column="data"))
            1
        """
        writer = sinks.numpy_writer(column)
        layout = sinks.file_layout("Dataset.write_numpy", min_rows_per_file, None, num_rows_per_file)
        return sinks.write_blocks(
            self._write_input(),
            path,
            "npy",
            writer,
            mode,
            "Dataset.write_numpy",
            **layout,
            filesystem=filesystem,
            filename_provider=filename_provider,
            arrow_open_stream_args=arrow_open_stream_args,
        )

    @ray_compatible
    def write_datasink(self, datasink: Any, **_: Any) -> None:
        """Write through a user's sink (Ray's ``Datasink`` API; a ``ray.data.Datasink`` works unchanged):
        ``on_write_start``, ``write(blocks, ctx)`` per write task (in Ray tasks with ``execution="ray"``),
        then ``on_write_complete`` or ``on_write_failed``; see `ember.data.datasink`.

        Example:
            >>> class Total(ember.data.Datasink):
            ...     def write(self, blocks, ctx):
            ...         return sum(int(b["id"].to_numpy().sum()) for b in blocks)
            ...     def on_write_complete(self, write_result):
            ...         self.total = sum(write_result.write_returns)
            >>> sink = Total()
            >>> ember.data.range(5).write_datasink(sink)
            >>> sink.total
            10
        """
        from ember.data.datasink import write_datasink

        write_datasink(self._write_input(), datasink)

    def _write_input(self) -> WriteInput:
        """What a write reads: the plan (written by Ray tasks with execution="ray") and the local stream."""
        return WriteInput(self._node, self._stream)

    # ------------------------------------------------------------------ misc

    def __repr__(self) -> str:
        return f"Dataset({describe(self._node)})"

    # --- columns, schema and writers ---

    @ray_compatible
    def with_column(self, column_name: str, expr: Expr, **_: Any) -> Dataset:
        """Add (or replace) column ``column_name`` computed by an expression of ``ember.data.expressions``.

        Runs pyarrow compute kernels on whole blocks (no Python per row).

        Example:
            >>> from ember.data.expressions import col, lit
            >>> ember.data.range(3).with_column("y", col("id") * 10 + lit(1)).take_all()
            [{'id': 0, 'y': 1}, {'id': 1, 'y': 11}, {'id': 2, 'y': 21}]
        """
        from ember.data.expressions import WithColumn, require_expr

        return self._then(WithColumn(column_name, require_expr(expr, "Dataset.with_column")))

    def size_bytes(self) -> int:
        """In-memory size of the data in bytes (Arrow buffers; runs the plan).

        Example:
            >>> ember.data.range(100).size_bytes()   # 100 int64 values
            800
        """
        from ember.data.block import block_nbytes

        return sum(block_nbytes(block) for block in self._stream())

    @ray_compatible
    def write_images(
        self,
        path: str,
        column: str,
        file_format: str = "png",
        *,
        filesystem: Any = None,
        mode: sinks.SaveMode | str = "append",
        filename_provider: FilenameProvider | None = None,
        arrow_open_stream_args: dict[str, Any] | None = None,
        **_: Any,
    ) -> list[str]:
        """Write column ``column`` (HWC or HW uint8 arrays) as one image file per row into folder ``path``
        (``mode`` and the manifest as in `write_parquet`).

        Example:
            >>> import tempfile, numpy as np
            >>> out = tempfile.mkdtemp()
            >>> _ = ember.data.from_items([{"image": np.zeros((4, 4, 3), np.uint8)}] * 2).write_images(out,
            ...     "image")
            >>> ember.data.read_images(out).count()
            2
        """
        writer = sinks.image_writer(column, file_format)
        return sinks.write_blocks(
            self._write_input(),
            path,
            file_format.lower(),
            writer,
            mode,
            "Dataset.write_images",
            min_rows_per_file=1,
            filesystem=filesystem,
            filename_provider=filename_provider,
            arrow_open_stream_args=arrow_open_stream_args,
            row_files=True,
        )

    @ray_compatible
    def write_webdataset(
        self,
        path: str,
        *,
        filesystem: Any = None,
        encoder: Any = True,
        mode: sinks.SaveMode | str = "append",
        min_rows_per_file: int | None = None,
        num_rows_per_file: int | None = None,
        filename_provider: FilenameProvider | None = None,
        arrow_open_stream_args: dict[str, Any] | None = None,
        **_: Any,
    ) -> list[str]:
        """Write WebDataset tar shards into folder ``path``: each row becomes members
        ``<__key__>.<column>`` encoded by the column's suffix (``jpg``/``png`` arrays, ``json``, ``npy``,
        ``txt``, ``cls``; bytes as they are). ``encoder=False`` expects bytes; a function encodes a row.

        Example:
            >>> import tempfile
            >>> out = tempfile.mkdtemp()
            >>> _ = ember.data.from_items([{"__key__": "a", "txt": "hi", "cls": 2}]).write_webdataset(out)
            >>> row = ember.data.read_webdataset(out).take(1)[0]
            >>> row["__key__"], row["txt"], row["cls"]
            ('a', 'hi', 2)
        """
        from ember.data.read.webdataset import webdataset_writer

        layout = sinks.file_layout("Dataset.write_webdataset", min_rows_per_file, None, num_rows_per_file)
        return sinks.write_blocks(
            self._write_input(),
            path,
            "tar",
            webdataset_writer(encoder),
            mode,
            "Dataset.write_webdataset",
            **layout,
            filesystem=filesystem,
            filename_provider=filename_provider,
            arrow_open_stream_args=arrow_open_stream_args,
        )

    @ray_compatible
    def write_tfrecords(
        self,
        path: str,
        *,
        filesystem: Any = None,
        mode: sinks.SaveMode | str = "append",
        min_rows_per_file: int | None = None,
        num_rows_per_file: int | None = None,
        filename_provider: FilenameProvider | None = None,
        arrow_open_stream_args: dict[str, Any] | None = None,
        **_: Any,
    ) -> list[str]:
        """Write rows as ``tf.train.Example`` records into TFRecord files in folder ``path`` (no TensorFlow
        needed): ints as int64, floats as float32, str/bytes as bytes, lists as repeated values.

        Example:
            >>> import tempfile
            >>> out = tempfile.mkdtemp()
            >>> len(ember.data.range(3).write_tfrecords(out))
            1
        """
        from ember.data.read.tfrecords import encode_example, frame_record

        def write(block: Any, f: Any) -> None:
            from ember.data.block import block_to_rows

            for row in block_to_rows(block):
                f.write(frame_record(encode_example(row)))

        layout = sinks.file_layout("Dataset.write_tfrecords", min_rows_per_file, None, num_rows_per_file)
        return sinks.write_blocks(
            self._write_input(),
            path,
            "tfrecords",
            write,
            mode,
            "Dataset.write_tfrecords",
            **layout,
            filesystem=filesystem,
            filename_provider=filename_provider,
            arrow_open_stream_args=arrow_open_stream_args,
        )

    @ray_compatible
    def write_sql(self, sql: str, connection_factory: Callable[[], Any], **_: Any) -> None:
        """Insert every row with ``cursor.executemany(sql, rows)`` through a DB-API 2 connection from
        ``connection_factory()``. Unlike Ray (a commit per block), the whole write is ONE transaction:
        on any error nothing is inserted.

        Example:
            >>> import sqlite3, tempfile
            >>> db = tempfile.mkdtemp() + "/a.db"
            >>> with sqlite3.connect(db) as c:
            ...     _ = c.execute("CREATE TABLE t (id INTEGER)")
            >>> ember.data.range(3).write_sql("INSERT INTO t VALUES (?)", lambda: sqlite3.connect(db))
            >>> sqlite3.connect(db).execute("SELECT COUNT(*) FROM t").fetchone()
            (3,)
        """
        if not callable(connection_factory) or hasattr(
            connection_factory, "cursor"
        ):  # a connection, not a factory
            raise DataError(
                "write_sql: connection_factory must be a function that returns a new DB-API connection, "
                "e.g. lambda: sqlite3.connect(path)"
            )
        sinks.sql_write(self._stream(), sql, connection_factory)


class MaterializedDataset(Dataset):
    """A Dataset whose blocks are already in memory.

    Example:
        >>> ember.data.range(3).materialize().num_blocks()
        1
    """

    def __init__(self, blocks: list[Block], *, context: DatasetScopedContext | None = None) -> None:
        self._blocks = [b for b in blocks if b.num_rows] or blocks[:1]
        super().__init__(
            Read(
                Source(
                    "Materialized",
                    lambda: memory.block_tasks(self._blocks, "materialized"),
                    schema=lambda: self._blocks[0].schema if self._blocks else None,
                )
            ),
            context=context,
        )

    def num_blocks(self) -> int:
        """How many blocks it holds.

        Example:
            >>> ember.data.range(3).materialize().num_blocks()
            1
        """
        return len(self._blocks)


class _BatchSource:
    """A Dataset as its batches see it (iterate.py's ``BatchSource``): its plan, its epochs' blocks, the
    same dataset over another plan, and whether an epoch replays exactly."""

    def __init__(self, dataset: Dataset) -> None:
        self.dataset = dataset

    @property
    def node(self) -> Node:
        return self.dataset._node

    def stream(self, epoch: int = 0, plan_seed: int | None = None) -> Iterator[Block]:
        return self.dataset._stream(epoch, plan_seed)

    def over(self, node: Node) -> _BatchSource:
        return _BatchSource(self.dataset._child(node))

    def why_not_replayable(self) -> str | None:
        return self.dataset._why_not_replayable()


def _udf_args(
    where: str, fn: Any, args: Any, kwargs: Any, ctor_args: Any, ctor_kwargs: Any
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """``fn_args`` / ``fn_kwargs`` checked at the call (None, Ray's default, is none); constructor
    arguments refused for a plain function, which has no constructor to take them."""
    call = arguments.call_args(where, args, kwargs)
    ctor = arguments.call_args(where, ctor_args, ctor_kwargs, "fn_constructor")
    if not isinstance(fn, type) and (ctor[0] or ctor[1]):
        raise ConfigError(
            f"{where}: fn_constructor_args/fn_constructor_kwargs only apply to a callable class; "
            "pass fn_args/fn_kwargs for a function"
        )
    return call


def _plan_tree(node: Node, depth: int = 0) -> list[str]:
    """``Type[name]`` of ``node``, then its inputs' lines under it (Ray's ``+-`` layout)."""
    here = f"{type(node).__name__}[{node.name}]"
    lines = [here if depth == 0 else "   " * (depth - 1) + "+- " + here]
    for child in node.children():
        lines += _plan_tree(child, depth + 1)
    return lines


def _task_retries(ray_remote_args: dict[str, Any] | None) -> int:
    retries = int((ray_remote_args or {}).get("max_task_retries", 0) or 0)
    return 3 if retries < 0 else retries  # Ray's -1 means "forever"; a batch that kills its worker would loop


def _keys(where: str, key: Any) -> list[str]:
    """A column name or a non-empty list of them."""
    keys = [key] if isinstance(key, str) else list(key) if isinstance(key, (list, tuple)) else None
    if not keys or not all(isinstance(k, str) for k in keys):
        raise ConfigError(f"{where}({key!r}); pass a column name or a list of column names")
    return keys


def _to_arrow_expression(expr: Any) -> Any:
    """An ``ember.data.expressions`` Expr (``to_pyarrow()``) or a ``pyarrow.compute.Expression``."""
    import pyarrow.compute as pc

    if isinstance(expr, str):  # Ray's (deprecated) string expressions: "id <= 4 and name in ['a']"
        from ember.data.expressions.parse import parse_expression

        expr = parse_expression(expr)
    if hasattr(expr, "to_pyarrow"):
        expr = expr.to_pyarrow()
    if not isinstance(expr, pc.Expression):
        raise ConfigError(
            f"filter(expr={expr!r}); pass an ember.data.expressions expression or a "
            "pyarrow.compute.Expression"
        )
    return expr


#: Operators whose output has their (first) input's columns and types.
_SAME_COLUMNS = (
    plan.Limit,
    plan.Sort,
    plan.RandomShuffle,
    plan.RandomizeBlockOrder,
    plan.Repartition,
    plan.StreamingRepartition,
    plan.HashRepartition,
    plan.Shard,
    plan.RowRanges,
    plan.Union,
    plan.Filter,
)


def _known_schema(node: Node) -> pa.Schema | None:
    """The schema from metadata alone (a read that knows it, through column-keeping operators), else None."""
    while isinstance(node, _SAME_COLUMNS):
        node = node.children()[0]
    if isinstance(node, Read) and node.source.schema is not None:
        return node.source.schema()
    return None


def _boundaries(boundaries: Any) -> tuple[float, ...]:
    """Ray's ``sort(boundaries=)``: ascending ints or floats (Ray refuses other types)."""
    if boundaries is None:
        return ()
    values = list(boundaries) if isinstance(boundaries, (list, tuple)) else None
    if values is None or any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in values):
        raise ConfigError(
            f"Dataset.sort(boundaries={boundaries!r}): the type of items in boundaries must be int or float"
        )
    if any(b < a for a, b in zip(values, values[1:], strict=False)):
        raise ConfigError(f"Dataset.sort(boundaries={boundaries!r}); list them in ascending order")
    return tuple(values)
