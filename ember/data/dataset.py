"""Dataset: the public, lazy API. Every method returns a new Dataset or consumes one.

A Dataset holds a logical plan (``ember.data.plan``); building one reads nothing. Consuming it
(iterating, ``take``, ``count``, writing) runs the plan on the local streaming executor.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from ember.data import arguments
from ember.data import write as sinks
from ember.data.block import Block, block_to_batch, block_to_rows, concat_blocks, split_block, to_arrow_column
from ember.data.context import DataContext
from ember.data.execute.executor import ExecutionStats, Executor, shard_range
from ember.data.iterate import BatchIterable, batch_converter, epoch_rng, torch_converter
from ember.data.plan import (
    ActorMap,
    AllToAll,
    Limit,
    Node,
    OneToOne,
    Read,
    Shard,
    Union,
    describe,
    fused_chain,
)
from ember.data.ray_args import RAY_REMOTE_OPTIONS, ray_compatible
from ember.data.read import memory
from ember.data.read.task import Source
from ember.data.schema import Schema
from ember.data.transforms import (
    AddColumn,
    DropColumns,
    Filter,
    FlatMap,
    MapBatches,
    MapRows,
    RenameColumns,
    SelectColumns,
    Transform,
)
from ember.errors import ConfigError, DataError


class ActorPoolStrategy:
    """Run a callable-class UDF on a pool of long-lived workers (Ray's name).

    Example:
        >>> import ember.data
        >>> ember.data.ActorPoolStrategy(size=2).size
        (2, 2)
    """

    def __init__(self, size: int | None = None, *, min_size: int | None = None, max_size: int | None = None) -> None:
        low = size or min_size or 1
        high = size or max_size or DataContext.get_current().workers()
        self.size = (low, max(low, high))


class Dataset:
    """A lazy, streaming dataset of Arrow blocks.

    Example:
        >>> import ember.data
        >>> ds = ember.data.range(6).map(lambda row: {"id": row["id"], "sq": row["id"] ** 2})
        >>> ds.filter(lambda row: row["id"] % 2 == 0).take_all()
        [{'id': 0, 'sq': 0}, {'id': 2, 'sq': 4}, {'id': 4, 'sq': 16}]
    """

    def __init__(self, node: Node) -> None:
        self._node = node
        self._last_stats: ExecutionStats | None = None

    # ------------------------------------------------------------------ transforms

    def _then(self, transform: Transform, concurrency: Any = None) -> Dataset:
        return Dataset(OneToOne(self._node, transform, concurrency if isinstance(concurrency, int) else None))

    @ray_compatible
    def map(self, fn: Callable, *, fn_args: tuple = (), fn_kwargs: dict | None = None,
            fn_constructor_args: tuple = (), fn_constructor_kwargs: dict | None = None,
            concurrency: int | tuple[int, int] | None = None, compute: Any = None, **_: Any) -> Dataset:
        """Apply ``fn(row) -> row`` to every row (rows are dicts).

        Example:
            >>> ember.data.range(2).map(lambda r: {"x": r["id"] + 1}).take_all()
            [{'x': 1}, {'x': 2}]
        """
        if isinstance(fn, type):
            return self._actors(fn, lambda f: MapRows(f, fn_args, fn_kwargs), None, fn_constructor_args,
                                fn_constructor_kwargs, concurrency, compute)
        return self._then(MapRows(fn, fn_args, fn_kwargs), concurrency)

    @ray_compatible(also=RAY_REMOTE_OPTIONS)
    def map_batches(self, fn: Callable, *, batch_size: int | None | str = "default", compute: Any = None,
                    batch_format: str = "default", zero_copy_batch: bool = False, fn_args: tuple | None = None,
                    fn_kwargs: dict | None = None, fn_constructor_args: tuple | None = None,
                    fn_constructor_kwargs: dict | None = None, concurrency: int | tuple[int, int] | None = None,
                    num_cpus: float | None = None, num_gpus: float | None = None,
                    **ray_remote_args: Any) -> Dataset:
        """Apply ``fn(batch) -> batch`` to batches (dict of numpy arrays by default).

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
        size = arguments.batch_size("Dataset.map_batches", batch_size, default=1024)
        batch_format = "numpy" if batch_format == "default" else batch_format
        batch_converter(batch_format)  # validates the name now, not inside a worker
        args, kwargs = tuple(fn_args or ()), dict(fn_kwargs or {})
        if isinstance(fn, type):
            return self._actors(fn, lambda f: MapBatches(f, None, batch_format, args, kwargs, zero_copy_batch), size,
                                fn_constructor_args, fn_constructor_kwargs, concurrency, compute,
                                num_cpus=num_cpus, num_gpus=num_gpus, ray_remote_args=ray_remote_args,
                                call=(batch_format, args, kwargs, zero_copy_batch))
        if num_gpus:
            raise ConfigError("num_gpus applies to a callable class (one model per worker); pass a class to map_batches")
        if fn_constructor_args or fn_constructor_kwargs:
            raise ConfigError("fn_constructor_args only apply to a callable class; pass fn_args for a function")
        step = MapBatches(fn, size, batch_format, args, kwargs, zero_copy_batch)
        step.max_task_retries = _task_retries(ray_remote_args)
        return self._then(step, concurrency)

    def _actors(self, cls: type, wrap: Callable[[Any], Transform], batch_size: int | None,
                ctor_args: tuple | None, ctor_kwargs: dict | None, concurrency: Any, compute: Any,
                num_cpus: float | None = None, num_gpus: float | None = None,
                ray_remote_args: dict | None = None, call: tuple | None = None) -> Dataset:
        if isinstance(compute, ActorPoolStrategy):
            size: Any = compute.size
        elif concurrency is not None:
            size = concurrency
        else:
            size = DataContext.get_current().workers()
        if isinstance(size, (tuple, list)):
            size = (int(size[0]), int(size[1]))
        retries = _task_retries(ray_remote_args)
        args, kwargs = tuple(ctor_args or ()), dict(ctor_kwargs or {})
        node = ActorMap(self._node, lambda: wrap(cls(*args, **kwargs)), size, batch_size, cls.__name__,
                        num_gpus=float(num_gpus or 0), num_cpus=num_cpus, max_task_retries=retries,
                        udf=(cls, args, kwargs, call))
        return Dataset(node)

    @ray_compatible
    def flat_map(self, fn: Callable, *, fn_args: tuple = (), fn_kwargs: dict | None = None, **_: Any) -> Dataset:
        """Apply ``fn(row) -> list of rows`` and flatten.

        Example:
            >>> ember.data.range(2).flat_map(lambda r: [r, r]).count()
            4
        """
        return self._then(FlatMap(fn, fn_args, fn_kwargs))

    @ray_compatible
    def filter(self, fn: Callable, *, fn_args: tuple = (), fn_kwargs: dict | None = None, **_: Any) -> Dataset:
        """Keep the rows for which ``fn(row)`` is true.

        Example:
            >>> ember.data.range(5).filter(lambda r: r["id"] > 2).take_all()
            [{'id': 3}, {'id': 4}]
        """
        return self._then(Filter(fn, fn_args, fn_kwargs))

    @ray_compatible
    def add_column(self, col: str, fn: Callable, *, batch_format: str = "pandas", **_: Any) -> Dataset:
        """Add (or replace) column ``col`` computed by ``fn(batch)`` (a pandas DataFrame by default).

        Example:
            >>> ember.data.range(2).add_column("double", lambda df: df["id"] * 2).take_all()
            [{'id': 0, 'double': 0}, {'id': 1, 'double': 2}]
        """
        return self._then(AddColumn(col, fn, batch_format))

    @ray_compatible
    def drop_columns(self, cols: list[str], **_: Any) -> Dataset:
        """Drop the named columns.

        Example:
            >>> ember.data.from_items([{"a": 1, "b": 2}]).drop_columns(["b"]).take_all()
            [{'a': 1}]
        """
        return self._then(DropColumns(cols))

    @ray_compatible
    def select_columns(self, cols: list[str] | str, **_: Any) -> Dataset:
        """Keep only the named columns, in that order.

        Example:
            >>> ember.data.from_items([{"a": 1, "b": 2}]).select_columns(["b"]).take_all()
            [{'b': 2}]
        """
        return self._then(SelectColumns([cols] if isinstance(cols, str) else cols))

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

            return self._then(RenameAll(list(names)))
        return self._then(RenameColumns(names))

    def limit(self, limit: int) -> Dataset:
        """The first ``limit`` rows; upstream work stops once they are produced.

        Example:
            >>> ember.data.range(1000).limit(2).take_all()
            [{'id': 0}, {'id': 1}]
        """
        return Dataset(Limit(self._node, arguments.count("Dataset.limit", limit, "limit")))

    def union(self, *others: Dataset) -> Dataset:
        """This dataset's rows followed by each of ``others``'.

        Example:
            >>> ember.data.range(1).union(ember.data.range(2)).take_all()
            [{'id': 0}, {'id': 0}, {'id': 1}]
        """
        return Dataset(Union([self._node] + [o._node for o in others]))

    @ray_compatible
    def random_shuffle(self, *, seed: int | None = None, **_: Any) -> Dataset:
        """Shuffle all rows. The order comes from (seed, epoch): reproducible, new each epoch.

        Needs the whole dataset in memory (like Ray's, minus the spilling). Without a seed, one is
        drawn now, so this Dataset object still gives each epoch its own order.

        Example:
            >>> sorted(r["id"] for r in ember.data.range(5).random_shuffle(seed=1).take_all())
            [0, 1, 2, 3, 4]
        """
        seed = arguments.seed("Dataset.random_shuffle", seed)
        seed = secrets.randbits(63) if seed is None else seed

        def shuffle(blocks: list[Block], epoch: int) -> list[Block]:
            table = concat_blocks(blocks)
            if table.num_rows == 0:
                return []
            table = table.take(to_arrow_column(epoch_rng(seed, epoch).permutation(table.num_rows)))
            return split_block(table, max(1, -(-table.num_rows // max(1, len(blocks)))))

        return Dataset(AllToAll(self._node, "RandomShuffle", shuffle))

    def randomize_block_order(self, *, seed: int | None = None) -> Dataset:
        """Shuffle the order of blocks (cheap; rows inside a block keep their order).

        Example:
            >>> ember.data.range(4, override_num_blocks=4).randomize_block_order(seed=0).count()
            4
        """
        seed = arguments.seed("Dataset.randomize_block_order", seed)
        seed = secrets.randbits(63) if seed is None else seed

        def reorder(blocks: list[Block], epoch: int) -> list[Block]:
            return [blocks[i] for i in epoch_rng(seed, epoch).permutation(len(blocks))]

        return Dataset(AllToAll(self._node, "RandomizeBlockOrder", reorder))

    @ray_compatible
    def repartition(self, num_blocks: int, *, shuffle: bool = False, **_: Any) -> Dataset:
        """Re-cut the data into ``num_blocks`` blocks of (nearly) equal size.

        Example:
            >>> ember.data.range(10).repartition(3).materialize().num_blocks()
            3
        """
        def cut(blocks: list[Block], epoch: int) -> list[Block]:
            table = concat_blocks(blocks)
            edges = np.linspace(0, table.num_rows, num_blocks + 1).astype(int)
            return [table.slice(a, b - a) for a, b in zip(edges[:-1], edges[1:], strict=False)]

        return Dataset(AllToAll(self._node, "Repartition", cut))

    def sort(self, key: str | list[str], descending: bool | list[bool] = False) -> Dataset:
        """Sort all rows by ``key`` (stable).

        Example:
            >>> ember.data.from_items([{"a": 2}, {"a": 1}]).sort("a").take_all()
            [{'a': 1}, {'a': 2}]
        """
        keys = [key] if isinstance(key, str) else list(key)
        orders = descending if isinstance(descending, list) else [descending] * len(keys)

        def order(blocks: list[Block], epoch: int) -> list[Block]:
            table = concat_blocks(blocks)
            for k in keys:
                if table.num_rows and k not in table.column_names:
                    raise DataError(f"sort: no column {k!r}; the dataset has columns {table.column_names}")
            sort_keys = [(k, "descending" if d else "ascending") for k, d in zip(keys, orders, strict=False)]
            return [table.sort_by(sort_keys)] if table.num_rows else []

        return Dataset(AllToAll(self._node, "Sort", order))

    # ------------------------------------------------------------------ splitting

    def streaming_split(self, n: int, *, equal: bool = False, locality_hints: Any = None) -> list[Dataset]:
        """``n`` shards for ``n`` consumers (e.g. DDP ranks); ``equal=True`` gives equal row counts.

        Each shard is a contiguous, ordered range of the rows and executes on its own; when row
        counts are known from metadata, a shard reads only its own fragments.

        Example:
            >>> a, b = ember.data.range(5).streaming_split(2, equal=True)
            >>> a.count(), b.count()
            (2, 2)
        """
        if n < 1:
            raise ConfigError(f"streaming_split(n={n}); use n >= 1")
        return [Dataset(Shard(self._node, i, n, equal)) for i in range(n)]

    def split(self, n: int, *, equal: bool = False, locality_hints: Any = None) -> list[MaterializedDataset]:
        """Materialize and cut into ``n`` datasets of contiguous rows.

        Example:
            >>> [d.count() for d in ember.data.range(5).split(2)]
            [2, 3]
        """
        table = concat_blocks(self.materialize()._blocks)
        ranges = [shard_range(table.num_rows, i, n, equal) for i in range(n)]
        return [MaterializedDataset([table.slice(s, c)]) for s, c in ranges]

    def split_at_indices(self, indices: list[int]) -> list[MaterializedDataset]:
        """Materialize and cut at the given row indices.

        Example:
            >>> [d.count() for d in ember.data.range(5).split_at_indices([1, 3])]
            [1, 2, 2]
        """
        table = concat_blocks(self.materialize()._blocks)
        edges = [0] + [min(max(0, int(i)), table.num_rows) for i in indices] + [table.num_rows]
        if edges != sorted(edges):
            raise ConfigError(f"split_at_indices needs sorted indices, got {indices}")
        return [MaterializedDataset([table.slice(a, b - a)]) for a, b in zip(edges[:-1], edges[1:], strict=False)]

    @ray_compatible
    def train_test_split(self, test_size: float | int, *, shuffle: bool = False, seed: int | None = None,
                         **_: Any) -> tuple[MaterializedDataset, MaterializedDataset]:
        """Split into (train, test); ``test_size`` is a fraction or a row count.

        Example:
            >>> train, test = ember.data.range(10).train_test_split(0.2)
            >>> train.count(), test.count()
            (8, 2)
        """
        ds = self.random_shuffle(seed=seed) if shuffle else self
        total = ds.count()
        if isinstance(test_size, float):
            if not 0 < test_size < 1:
                raise ConfigError(f"test_size={test_size}; use a fraction in (0, 1) or a row count")
            split_index = int(total * (1 - test_size))
        else:
            split_index = total - int(test_size)
        train, test = ds.split_at_indices([split_index])
        return train, test

    # ------------------------------------------------------------------ execution

    def _stream(self, epoch: int = 0) -> Iterator[Block]:
        executor = Executor(epoch)
        self._last_stats = executor.stats
        return executor.stream(self._node)

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
    def iter_batches(self, *, prefetch_batches: int = 1, batch_size: int | None = 256,
                     batch_format: str = "default", drop_last: bool = False,
                     local_shuffle_buffer_size: int | None = None, local_shuffle_seed: int | None = None,
                     **_: Any) -> BatchIterable:
        """Batches (dict of numpy arrays by default); a re-iterable with ``state_dict()``.

        Example:
            >>> [b["id"].tolist() for b in ember.data.range(5).iter_batches(batch_size=2)]
            [[0, 1], [2, 3], [4]]
        """
        fmt = "numpy" if batch_format == "default" else batch_format
        return self._batch_iterable("Dataset.iter_batches", batch_converter(fmt), batch_size, drop_last,
                                    local_shuffle_buffer_size, local_shuffle_seed, prefetch_batches)

    @ray_compatible
    def iter_torch_batches(self, *, prefetch_batches: int = 1, batch_size: int | None = 256,
                           dtypes: Any = None, device: Any = "auto", collate_fn: Callable | None = None,
                           drop_last: bool = False, local_shuffle_buffer_size: int | None = None,
                           local_shuffle_seed: int | None = None, pin_memory: bool = False,
                           **_: Any) -> BatchIterable:
        """Batches as dicts of torch tensors; a re-iterable with ``state_dict()`` for exact resume.

        ``dtypes``: one torch dtype or {column: dtype} (a key naming no column is an error).
        ``device``: "auto" (this rank's GPU if any, else CPU), None (CPU) or a device.
        ``collate_fn`` gets the numpy batch instead. ``pin_memory=True`` builds the tensors in
        page-locked host memory (faster, asynchronous copies to the GPU); without CUDA it warns
        once and does not pin, as DataLoader does.

        Example:
            >>> batch = next(iter(ember.data.range(4).iter_torch_batches(batch_size=4)))
            >>> batch["id"]
            tensor([0, 1, 2, 3])
        """
        convert = torch_converter(dtypes, device, collate_fn, pin_memory)
        return self._batch_iterable("Dataset.iter_torch_batches", convert, batch_size, drop_last,
                                    local_shuffle_buffer_size, local_shuffle_seed, prefetch_batches)

    def _batch_iterable(self, where: str, convert: Callable, batch_size: Any, drop_last: bool,
                        buffer: Any, seed: Any, prefetch: Any) -> BatchIterable:
        batch_size = arguments.batch_size(where, batch_size)
        seed = arguments.seed(where, seed, "local_shuffle_seed")
        if buffer is not None:
            buffer = arguments.count(where, buffer, "local_shuffle_buffer_size")
        prefetch = arguments.count(where, prefetch, "prefetch_batches")
        return BatchIterable(
            self._stream, batch_size=batch_size, convert=convert, drop_last=drop_last,
            local_shuffle_buffer_size=buffer, local_shuffle_seed=seed, prefetch_batches=prefetch,
            num_rows=self._known_count(),
        )

    @ray_compatible
    def to_torch(self, *, label_column: str | None = None, feature_columns: list[str] | None = None,
                 batch_size: int = 1, prefetch_batches: int = 1, drop_last: bool = False,
                 local_shuffle_buffer_size: int | None = None, local_shuffle_seed: int | None = None,
                 **_: Any) -> Any:
        """A ``torch.utils.data.IterableDataset`` of (features, label) batches, or dict batches
        when no ``label_column`` is given. It forwards ``state_dict``/``load_state_dict``.

        Example:
            >>> ds = ember.data.from_items([{"x": 1.0, "y": 0}, {"x": 2.0, "y": 1}])
            >>> features, label = next(iter(ds.to_torch(label_column="y", batch_size=2)))
            >>> features.shape, label.tolist()
            (torch.Size([2, 1]), [0, 1])
        """
        from ember.data.torch_dataset import TorchIterableDataset

        batches = self.iter_torch_batches(batch_size=batch_size, prefetch_batches=prefetch_batches,
                                          drop_last=drop_last, device=None,
                                          local_shuffle_buffer_size=local_shuffle_buffer_size,
                                          local_shuffle_seed=local_shuffle_seed)
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
            raise DataError(f"the dataset has more than limit={limit} rows; raise the limit or use take()")
        return rows

    def take_batch(self, batch_size: int = 20, *, batch_format: str = "default") -> Any:
        """The first ``batch_size`` rows as one batch.

        Example:
            >>> ember.data.range(5).take_batch(3)["id"]
            array([0, 1, 2])
        """
        fmt = "numpy" if batch_format == "default" else batch_format
        return block_to_batch(concat_blocks(list(self.limit(batch_size)._stream())), fmt)

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
        return _known_rows(self._node)

    def schema(self) -> Schema | None:
        """Column names and types (runs the plan until the first block; a bare read_parquet
        answers from the files' metadata).

        Example:
            >>> print(ember.data.from_items([{"a": 1.5}]).schema())
            Column  Type
            ------  ----
            a       double
        """
        if isinstance(self._node, Read) and self._node.source.schema is not None:
            return Schema(self._node.source.schema())
        last = None
        blocks = self._stream()
        try:
            for block in blocks:
                last = block
                if block.num_rows:
                    break
        finally:
            blocks.close()
        return Schema(last.schema) if last is not None else None

    def columns(self) -> list[str]:
        """Column names.

        Example:
            >>> ember.data.range(1).columns()
            ['id']
        """
        schema = self.schema()
        return schema.names if schema else []

    def materialize(self) -> MaterializedDataset:
        """Run the plan once and keep the blocks in memory.

        Example:
            >>> ember.data.range(3).map(lambda r: r).materialize().count()
            3
        """
        return MaterializedDataset(list(self._stream()))

    def to_pandas(self, limit: int | None = None) -> Any:
        """All rows as one pandas DataFrame.

        Example:
            >>> ember.data.range(2).to_pandas()["id"].tolist()
            [0, 1]
        """
        ds = self.limit(limit) if limit is not None else self
        return block_to_batch(concat_blocks(list(ds._stream())), "pandas")

    def to_arrow(self) -> pa.Table:
        """All rows as one pyarrow Table.

        Example:
            >>> ember.data.range(2).to_arrow().num_rows
            2
        """
        return concat_blocks(list(self._stream()))

    def to_ray(self) -> Any:
        """This dataset as a lazy ``ray.data.Dataset`` (reads and maps become Ray tasks, callable
        classes Ray actor pools); Ray is started (or joined, via ``RAY_ADDRESS``) if needed.

        Example:
            >>> ray_ds = ember.data.range(4).map_batches(lambda b: b).to_ray()  # doctest: +SKIP
            >>> ray_ds.count()                                                  # doctest: +SKIP
            4
        """
        from ember.data.execute.ray_backend import to_ray_dataset

        return to_ray_dataset(self._node)

    def stats(self) -> str:
        """What the last execution of this Dataset did, stage by stage.

        Example:
            >>> ds = ember.data.range(3); _ = ds.take_all()
            >>> "Range" in ds.stats()
            True
        """
        return f"Plan: {describe(self._node)}\n{self._last_stats or '(not executed yet)'}"

    # ------------------------------------------------------------------ writing

    def write_parquet(self, path: str, *, filesystem: Any = None, mode: Any = "append",
                      partition_cols: list[str] | None = None,
                      min_rows_per_file: int | None = None, max_rows_per_file: int | None = None,
                      num_rows_per_file: int | None = None, **options: Any) -> list[str]:
        """Write one parquet file per block into folder ``path``; tensor columns round-trip.

        ``mode`` (Ray's ``SaveMode``): ``"append"`` (default) adds files beside what is there,
        ``"overwrite"`` replaces what ember wrote there before, ``"ignore"`` writes nothing when
        the folder exists, ``"error"`` refuses it. The write is committed by the folder's manifest
        (``_ember_write.json``), written last: readers never see part of a write.
        ``min_rows_per_file`` (``num_rows_per_file``, Ray's older name) / ``max_rows_per_file`` set the
        rows per file; ``partition_cols`` writes ``col=value/`` folders that `read_parquet` reads back
        as columns.

        Example:
            >>> import tempfile
            >>> files = ember.data.range(3).write_parquet(tempfile.mkdtemp())
            >>> [f.rsplit("/", 1)[1] for f in files]
            ['part-00000.parquet']
            >>> len(ember.data.range(10).write_parquet(tempfile.mkdtemp(), min_rows_per_file=4))
            3
        """
        writer = sinks.parquet_writer(**options)
        layout = sinks.file_layout("Dataset.write_parquet", min_rows_per_file, max_rows_per_file, num_rows_per_file)
        return sinks.write_blocks(self._stream(), path, "parquet", writer, mode, "Dataset.write_parquet",
                                  partition_cols=partition_cols, **layout, filesystem=filesystem)

    def write_csv(self, path: str, *, filesystem: Any = None, mode: Any = "append",
                  min_rows_per_file: int | None = None,
                  num_rows_per_file: int | None = None, **options: Any) -> list[str]:
        """Write one CSV file per block into folder ``path`` (``mode`` and rows per file as in `write_parquet`).

        Example:
            >>> import tempfile
            >>> len(ember.data.range(3).write_csv(tempfile.mkdtemp()))
            1
        """
        writer = sinks.csv_writer(**options)
        layout = sinks.file_layout("Dataset.write_csv", min_rows_per_file, None, num_rows_per_file)
        return sinks.write_blocks(self._stream(), path, "csv", writer, mode, "Dataset.write_csv", **layout,
                                  filesystem=filesystem)

    @ray_compatible
    def write_json(self, path: str, *, filesystem: Any = None, mode: Any = "append",
                   min_rows_per_file: int | None = None,
                   num_rows_per_file: int | None = None, **_: Any) -> list[str]:
        """Write one JSON-lines file per block into folder ``path`` (``mode`` and rows per file as in `write_parquet`).

        Example:
            >>> import tempfile
            >>> len(ember.data.range(3).write_json(tempfile.mkdtemp()))
            1
        """
        layout = sinks.file_layout("Dataset.write_json", min_rows_per_file, None, num_rows_per_file)
        return sinks.write_blocks(self._stream(), path, "json", sinks.json_writer(), mode, "Dataset.write_json",
                                  **layout, filesystem=filesystem)

    @ray_compatible
    def write_numpy(self, path: str, *, column: str, filesystem: Any = None, mode: Any = "append",
                    min_rows_per_file: int | None = None,
                    num_rows_per_file: int | None = None, **_: Any) -> list[str]:
        """Write column ``column`` as one .npy file per block into folder ``path`` (``mode`` and rows per
        file as in `write_parquet`).

        Example:
            >>> import tempfile
            >>> len(ember.data.range_tensor(3, shape=(2,)).write_numpy(tempfile.mkdtemp(), column="data"))
            1
        """
        writer = sinks.numpy_writer(column)
        layout = sinks.file_layout("Dataset.write_numpy", min_rows_per_file, None, num_rows_per_file)
        return sinks.write_blocks(self._stream(), path, "npy", writer, mode, "Dataset.write_numpy", **layout,
                                  filesystem=filesystem)

    # ------------------------------------------------------------------ misc

    def __repr__(self) -> str:
        return f"Dataset({describe(self._node)})"

    # --- columns, schema and writers ---

    @ray_compatible
    def with_column(self, column_name: str, expr: Any, **_: Any) -> Dataset:
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
    def write_images(self, path: str, column: str, file_format: str = "png", *, filesystem: Any = None,
                     mode: Any = "append",
                     **_: Any) -> list[str]:
        """Write column ``column`` (HWC or HW uint8 arrays) as one image file per row into folder ``path``
        (``mode`` and the manifest as in `write_parquet`).

        Example:
            >>> import tempfile, numpy as np
            >>> out = tempfile.mkdtemp()
            >>> _ = ember.data.from_items([{"image": np.zeros((4, 4, 3), np.uint8)}] * 2).write_images(out, "image")
            >>> ember.data.read_images(out).count()
            2
        """
        writer = sinks.image_writer(column, file_format)
        return sinks.write_blocks(self._stream(), path, file_format.lower(), writer, mode, "Dataset.write_images",
                                  min_rows_per_file=1, filesystem=filesystem)

    @ray_compatible
    def write_webdataset(self, path: str, *, filesystem: Any = None, encoder: Any = True, mode: Any = "append",
                         min_rows_per_file: int | None = None, num_rows_per_file: int | None = None,
                         **_: Any) -> list[str]:
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
        return sinks.write_blocks(self._stream(), path, "tar", webdataset_writer(encoder), mode,
                                  "Dataset.write_webdataset", **layout, filesystem=filesystem)

    @ray_compatible
    def write_tfrecords(self, path: str, *, filesystem: Any = None, mode: Any = "append",
                        min_rows_per_file: int | None = None,
                        num_rows_per_file: int | None = None, **_: Any) -> list[str]:
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
        return sinks.write_blocks(self._stream(), path, "tfrecords", write, mode, "Dataset.write_tfrecords", **layout,
                                  filesystem=filesystem)

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
        if not callable(connection_factory) or hasattr(connection_factory, "cursor"):  # a connection, not a factory
            raise DataError("write_sql: connection_factory must be a function that returns a new DB-API connection, "
                            "e.g. lambda: sqlite3.connect(path)")
        sinks.sql_write(self._stream(), sql, connection_factory)

class MaterializedDataset(Dataset):
    """A Dataset whose blocks are already in memory.

    Example:
        >>> ember.data.range(3).materialize().num_blocks()
        1
    """

    def __init__(self, blocks: list[Block]) -> None:
        self._blocks = [b for b in blocks if b.num_rows] or blocks[:1]
        super().__init__(Read(Source("Materialized", lambda: memory.block_tasks(self._blocks, "materialized"))))

    def num_blocks(self) -> int:
        """How many blocks it holds.

        Example:
            >>> ember.data.range(3).materialize().num_blocks()
            1
        """
        return len(self._blocks)


def _task_retries(ray_remote_args: dict | None) -> int:
    retries = int((ray_remote_args or {}).get("max_task_retries", 0) or 0)
    return 3 if retries < 0 else retries  # Ray's -1 means "forever"; a batch that kills its worker would loop


def _known_rows(node: Node) -> int | None:
    """Row count from metadata alone, or None when only running the plan can tell."""
    steps, base = fused_chain(node)
    if not all(s.transform.preserves_rows for s in steps):
        return None
    if isinstance(base, Read):
        counts = [t.num_rows for t in base.source.tasks()]
        return None if any(c is None for c in counts) else sum(counts)
    if isinstance(base, AllToAll) and base.preserves_rows:
        return _known_rows(base.input)
    if isinstance(base, Limit):
        inner = _known_rows(base.input)
        return None if inner is None else min(inner, base.n)
    if isinstance(base, Union):
        counts = [_known_rows(child) for child in base.inputs]
        return None if any(c is None for c in counts) else sum(counts)
    if isinstance(base, Shard):
        inner = _known_rows(base.input)
        return None if inner is None else shard_range(inner, base.index, base.n, base.equal)[1]
    return None
