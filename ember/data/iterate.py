"""Batch iteration with an exact, checkpointable position.

``iter_batches`` / ``iter_torch_batches`` return a ``BatchIterable``: re-iterable (each ``iter()``
is one epoch) and stateful. Its ``state_dict()`` holds the epoch and the number of batches already
*delivered* to the consumer (prefetched ones do not count). The whole batch stream of an epoch is a
pure function of (plan, epoch, seeds), so resuming replays the epoch's stream and skips the
delivered batches: the consumer then sees exactly the batches, in exactly the order, that an
uninterrupted run would have, local shuffle included. Skipped batches are never converted.
"""

from __future__ import annotations

import itertools
import math
import queue
import secrets
import threading
from collections.abc import Callable, Generator, Iterable, Iterator
from functools import partial
from typing import Any, Generic, Protocol, TypeVar, cast

import numpy as np

from ember.data import reshard
from ember.data.block import (
    Block,
    block_to_batch,
    block_to_numpy,
    column_to_numpy,
    concat_blocks,
    slices_convert_alike,
    split_block,
    to_arrow_column,
)
from ember.data.block_streams import slice_rows
from ember.data.plan import Node, RowRanges, Shard, known_rows
from ember.data.ray_errors import DataRuntimeError, DataTypeError
from ember.data.transforms import batch_runs, rebatch
from ember.errors import CheckpointError, ConfigError

STATE_VERSION = 1


def epoch_rng(seed: int, epoch: int) -> np.random.Generator:
    """Every random choice of an epoch comes from (seed, epoch): reproducible, different per epoch."""
    return np.random.default_rng([int(seed) % 2**63, int(epoch)])


class BatchSource(Protocol):
    """What a BatchIterable needs of the Dataset its batches come from, to shard it, resume it or deal
    the rest of an epoch to other ranks. The face gives it (``dataset.py``'s ``_BatchSource``), so this
    layer never reaches into a Dataset's private fields.
    """

    @property
    def node(self) -> Node:
        """The dataset's logical plan."""
        ...

    def stream(self, epoch: int = 0, plan_seed: int | None = None) -> Iterator[Block]:
        """The blocks of one epoch (seedless shuffles draw from ``plan_seed``)."""
        ...

    def over(self, node: Node) -> BatchSource:
        """The same dataset (name, context) over ``node``, an operator on top of its plan."""
        ...

    def why_not_replayable(self) -> str | None:
        """Why a mid-epoch resume cannot replay the epoch exactly (None: it can)."""
        ...


class StreamMaker(Protocol):
    """Makes the blocks of one epoch: ``Dataset._stream`` or ``BatchSource.stream``."""

    def __call__(self, epoch: int = 0, plan_seed: int | None = None) -> Iterator[Block]: ...


#: What a BatchIterable's batches are (``iter_batches``: Ray's ``DataBatch``; ``iter_torch_batches``: dicts
#: of tensors, or what its collate_fn returns).
BatchT = TypeVar("BatchT")


class BatchIterable(Generic[BatchT]):
    """Batches of a Dataset, one epoch per ``iter()``, with ``state_dict()``/``load_state_dict()``.

    Example:
        >>> import ember.data
        >>> batches = ember.data.range(10).iter_batches(batch_size=4)
        >>> [len(b["id"]) for b in batches]
        [4, 4, 2]
        >>> it = iter(batches); _ = next(it); batches.state_dict()
        {'version': 1, 'epoch': 1, 'batches': 1, 'shuffle_seed': None}
    """

    #: Set on the batches ``rest_of_epoch`` returns: the rows of the epoch they cover, for a checkpoint.
    layout: dict[str, Any]

    def __init__(
        self,
        make_stream: StreamMaker,
        *,
        batch_size: int | None,
        convert: Callable[[Block], BatchT],
        drop_last: bool = False,
        local_shuffle_buffer_size: int | None = None,
        local_shuffle_seed: int | None = None,
        prefetch_batches: int = 1,
        num_rows: int | None = None,
        dataset: BatchSource | None = None,
        split: tuple[int, int] | None = None,
        plan_seed: int | None = None,
    ) -> None:
        if batch_size is not None and batch_size < 1:
            raise ConfigError(f"batch_size={batch_size}; use a positive integer or None for whole blocks")
        if local_shuffle_buffer_size is not None and batch_size is None:
            raise ConfigError("local_shuffle_buffer_size needs a batch_size; pass batch_size=<int>")
        self._make_stream, self._convert = make_stream, convert
        self.batch_size, self.drop_last, self.prefetch_batches = batch_size, drop_last, prefetch_batches
        self.local_shuffle_buffer_size = local_shuffle_buffer_size
        # Without a seed, pick one now and keep it in the state, so a resume is still exact.
        self._shuffle_seed = None
        if local_shuffle_buffer_size is not None:  # Ray shuffles for any non-None size, 0 included
            self._shuffle_seed = (
                secrets.randbits(63) if local_shuffle_seed is None else int(local_shuffle_seed)
            )
        #: what the plan's seedless shuffles draw from (with the epoch); None: it has none (execution_seed.py)
        self._plan_seed = plan_seed
        self._num_rows = num_rows
        #: the (unsplit) dataset the batches come from (its BatchSource), and (world size, rank) when they
        #: are one rank's shard
        self._dataset, self._split = dataset, split
        self._epoch = 0  # epoch of the current (or next) iteration
        self._delivered = 0  # batches handed to the consumer in that epoch
        self._finished = False  # the epoch ran to its end
        self._started = False
        self._resume = False  # load_state_dict/set_epoch chose where the next iter() starts

    # ------------------------------------------------------------------ iteration

    def __iter__(self) -> Iterator[BatchT]:
        if not self._resume and self._started:
            self._epoch += 1
            self._delivered = 0
        self._resume, self._started, self._finished = False, True, False
        return self._epoch_batches(self._epoch, self._delivered)

    def _epoch_batches(self, epoch: int, skip: int) -> Iterator[BatchT]:
        produced = self._produce(epoch, skip)
        try:
            for batch in produced:
                self._delivered += 1  # counted before the consumer gets it: resume starts after it
                yield batch
            self._finished = True
        finally:
            close = getattr(produced, "close", None)
            if close is not None:
                close()

    def _produce(self, epoch: int, skip: int) -> Iterator[BatchT]:
        """The epoch's converted batches after the first ``skip``, prefetched when asked; ``close()``
        releases the block stream. Nothing runs before the first batch is asked for."""
        if skip and self._dataset is not None:
            self._refuse_unreplayable_resume(self._dataset, epoch, skip)
        convert_run = getattr(self._convert, "batches", None)
        if self.batch_size and convert_run is not None:
            groups = self._run_groups(epoch, skip, self.batch_size, convert_run)
            if self.prefetch_batches and self.prefetch_batches > 0:
                groups = prefetch(groups, self.prefetch_batches)
            # chain hands the batches of each group out with no Python call per batch; from_iterable
            # builds the class it is called on (typeshed says chain)
            return cast(_ClosingChain, _ClosingChain.from_iterable(groups)).closing(groups)
        produced = self._converted(epoch, skip)
        if self.prefetch_batches and self.prefetch_batches > 0:
            produced = prefetch(produced, self.prefetch_batches)
        return produced

    def _refuse_unreplayable_resume(self, dataset: BatchSource, epoch: int, skip: int) -> None:
        why = dataset.why_not_replayable()
        if why is not None:
            raise CheckpointError(
                f"cannot resume epoch {epoch} after batch {skip}: {why}; resume from a state "
                "saved at an epoch's end, or run the plan locally (execution='auto')"
            )

    def _run_groups(
        self, epoch: int, skip: int, batch_size: int, convert_run: Callable[[Block, int], Any]
    ) -> Generator[Any, None, None]:
        """Groups of converted batches: all of a run's, converted at once (a list), or one batch a group
        where a run converts batch by batch (``_one_by_one``): an error then comes after the batches before
        it."""
        for run in self._runs(epoch, skip, batch_size):
            if self.drop_last and run.num_rows < batch_size:  # only the last run is short
                return
            batches = convert_run(run, batch_size)
            if isinstance(batches, list):
                yield batches
            else:
                for batch in batches:
                    yield (batch,)

    def _runs(self, epoch: int, skip: int, batch_size: int) -> Iterator[Block]:
        """The epoch's batches after the first ``skip``, in runs (``transforms.batch_runs``); skipped
        batches are never converted."""
        blocks = self._blocks(epoch)
        if self.local_shuffle_buffer_size is not None:
            runs = shuffled_runs(blocks, batch_size, self.local_shuffle_buffer_size, self._shuffle_rng(epoch))
            return _skip_batches(runs, skip, batch_size) if skip else runs
        if skip:
            blocks = slice_rows(blocks, skip * batch_size, 2**62)
        return batch_runs(blocks, batch_size, span_blocks=getattr(self._convert, "spans_blocks", False))

    def _shuffle_rng(self, epoch: int) -> np.random.Generator:
        assert self._shuffle_seed is not None  # __init__ draws one whenever there is a local shuffle buffer
        return epoch_rng(self._shuffle_seed, epoch)

    def _blocks(self, epoch: int) -> Iterator[Block]:
        """The epoch's blocks; a plan with seedless shuffles gets this iterable's seed."""
        if self._plan_seed is None:
            return self._make_stream(epoch)
        return self._make_stream(epoch, self._plan_seed)

    def _converted(self, epoch: int, skip: int) -> Iterator[BatchT]:
        blocks = self._blocks(epoch)
        if self.local_shuffle_buffer_size is not None:
            assert self.batch_size is not None  # __init__ refuses a local shuffle buffer without a batch size
            batches = shuffled_batches(
                blocks, self.batch_size, self.local_shuffle_buffer_size, self._shuffle_rng(epoch)
            )
            batches = _skip(batches, skip)
        else:
            if skip and self.batch_size:
                blocks = slice_rows(blocks, skip * self.batch_size, 2**62)
            batches = rebatch(blocks, self.batch_size)
            if skip and not self.batch_size:
                batches = _skip(batches, skip)
        for batch in batches:
            if self.drop_last and self.batch_size and batch.num_rows < self.batch_size:
                return
            yield self._convert(batch)

    # ------------------------------------------------------------------ state

    def state_dict(self) -> dict[str, Any]:
        """Where the next ``iter()`` resumes: plain Python values, safe to put in a checkpoint.

        Example:
            >>> it = ember.data.range(8).iter_batches(batch_size=2)
            >>> batches = iter(it); _ = next(batches); _ = next(batches)
            >>> state = it.state_dict()
            >>> again = ember.data.range(8).iter_batches(batch_size=2)
            >>> again.load_state_dict(state)
            >>> [b["id"].tolist() for b in again]
            [[4, 5], [6, 7]]
        """
        if self._finished:
            epoch, batches = self._epoch + 1, 0
        elif self._started:
            epoch, batches = self._epoch, self._delivered
        else:
            epoch, batches = self._epoch, self._delivered if self._resume else 0
        state = {
            "version": STATE_VERSION,
            "epoch": epoch,
            "batches": batches,
            "shuffle_seed": self._shuffle_seed,
        }
        if self._plan_seed is not None:  # only plans with a seedless shuffle have one
            state["plan_seed"] = self._plan_seed
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Make the next ``iter()`` resume epoch ``state["epoch"]`` after ``state["batches"]`` batches."""
        if not isinstance(state, dict) or "epoch" not in state or "batches" not in state:
            raise ConfigError(f"not a data iterator state: {state!r}; pass what state_dict() returned")
        self._epoch, self._delivered = int(state["epoch"]), int(state["batches"])
        if state.get("shuffle_seed") is not None:
            self._shuffle_seed = int(state["shuffle_seed"])
        if state.get("plan_seed") is not None and self._plan_seed is not None:
            self._plan_seed = int(state["plan_seed"])
        self._resume, self._finished = True, False

    def set_epoch(self, epoch: int) -> None:
        """Make the next ``iter()`` cover epoch ``epoch`` (like DistributedSampler.set_epoch).

        A position restored by ``load_state_dict`` for that same epoch is kept, so a Trainer may
        call ``set_epoch`` at every epoch start, resumed or not.

        Example:
            >>> it = ember.data.range(4).random_shuffle(seed=0).iter_batches(batch_size=4)
            >>> it.set_epoch(3)
            >>> it.state_dict()["epoch"]
            3
        """
        if self._resume and self._epoch == int(epoch):
            return
        self._epoch, self._delivered, self._resume, self._finished = int(epoch), 0, True, False

    @property
    def epoch(self) -> int:
        """The epoch the current (or next) ``iter()`` covers."""
        return self._epoch

    # ------------------------------------------------------------------ ranks

    def for_rank(
        self, world_size: int, rank: int, *, shuffle_seed: int | None = None, plan_seed: int | None = None
    ) -> BatchIterable[BatchT]:
        """The same batches over rank's equal shard of the dataset (``streaming_split(world_size,
        equal=True)[rank]``): what a Trainer hands each of its ranks. ``shuffle_seed`` replaces the local
        shuffle seed (a Trainer gives every rank rank 0's, so a resumed rank shuffles as it started);
        ``plan_seed`` the seed of the plan's seedless shuffles (rank 0's too: the shards then partition
        one order).

        Example:
            >>> batches = ember.data.range(10).iter_batches(batch_size=2)
            >>> [b["id"].tolist() for b in batches.for_rank(2, 1)]
            [[5, 6], [7, 8], [9]]
        """
        if self._dataset is None:
            raise ConfigError(
                "these batches do not come from an ember.data Dataset; shard the dataset itself"
            )
        shard = self._dataset.over(Shard(self._dataset.node, rank, world_size, True))  # its name and context
        seed = self._shuffle_seed if shuffle_seed is None else shuffle_seed
        batches = self._over(shard, split=(world_size, rank), drop_last=self.drop_last, shuffle_seed=seed)
        if plan_seed is not None and batches._plan_seed is not None:
            batches._plan_seed = int(plan_seed)
        return batches

    def shard_for_rank(
        self, world_size: int, rank: int, *, same_on_every_rank: Callable[[Any], Any] | None = None
    ) -> BatchIterable[BatchT] | None:
        """The seam ``ember.runtime.sharding`` uses: these batches over rank ``rank``'s equal shard
        (``for_rank``), with the local shuffle seed, then the plan seed, passed through
        ``same_on_every_rank`` (a Trainer gives every rank rank 0's, so a resumed rank shuffles as it
        started). None when the batches do not come from an ember.data Dataset (nothing to shard).

        Example:
            >>> batches = ember.data.range(10).iter_batches(batch_size=2)
            >>> [b["id"].tolist() for b in batches.shard_for_rank(2, 1)]
            [[5, 6], [7, 8], [9]]
            >>> shuffled = ember.data.range(10).iter_batches(batch_size=2, local_shuffle_buffer_size=4)
            >>> shuffled.shard_for_rank(2, 0, same_on_every_rank=lambda seed: 7).state_dict()["shuffle_seed"]
            7
        """
        if self._dataset is None:
            return None
        agree = same_on_every_rank or (lambda seed: seed)
        shuffle_seed = agree(self._shuffle_seed)
        return self.for_rank(world_size, rank, shuffle_seed=shuffle_seed, plan_seed=agree(self._plan_seed))

    def epoch_layout(self, world_size: int) -> dict[str, Any] | None:
        """What a checkpoint needs to deal the rest of this epoch to another number of ranks
        (``ember/data/reshard.py``), or None when it cannot be re-split exactly.

        Example:
            >>> ember.data.range(10).iter_batches(batch_size=4).epoch_layout(1)
            {'kind': 'ember.data', 'world_size': 1, 'rows': 10, 'batch_size': 4, 'drop_last': False, 'epoch':
            0}
        """
        if self._dataset is None or self.local_shuffle_buffer_size is not None or self.batch_size is None:
            return None
        if (self._split[0] if self._split else 1) != world_size:
            return None
        rows = known_rows(self._dataset.node)
        if rows is None:
            return None
        return {
            "kind": "ember.data",
            "world_size": world_size,
            "rows": rows,
            "batch_size": self.batch_size,
            "drop_last": self.drop_last,
            "epoch": self._epoch,
        }

    def rest_of_epoch(
        self, layout: dict[str, Any], batches_done: int, world_size: int, rank: int
    ) -> BatchIterable[BatchT]:
        """Rank's share of the rows of ``layout``'s epoch that its ranks had not trained after
        ``batches_done`` batches each, for a resume on ``world_size`` ranks. Its ``layout`` attribute
        describes that rest, so a checkpoint written while it is trained resumes again, on any world size.

        Example:
            >>> batches = ember.data.range(10).iter_batches(batch_size=2)
            >>> layout = batches.for_rank(2, 0).epoch_layout(2)  # 2 ranks, each 1 batch done: 6 rows left
            >>> [[b["id"].tolist() for b in batches.rest_of_epoch(layout, 1, 3, rank)] for rank in range(3)]
            [[[2, 3]], [[4, 7]], [[8, 9]]]
        """
        dataset = self._dataset
        rows = None if dataset is None else known_rows(dataset.node)
        shuffled = self.local_shuffle_buffer_size is not None
        if dataset is None or rows is None or shuffled or self.batch_size is None:  # (no dataset: no rows)
            raise CheckpointError(
                "these batches cannot be re-split over another number of ranks (a local shuffle "
                "buffer, no batch size, or an unknown row count); resume with "
                f"{layout.get('world_size')} processes, or from an epoch-end checkpoint"
            )
        if rows != layout["rows"] or self.batch_size != layout["batch_size"]:
            raise CheckpointError(
                f"the checkpoint's epoch had {layout['rows']} rows in batches of {layout['batch_size']} "
                f"and this run has {rows} in batches of {self.batch_size}; resume with the same data"
            )
        rest = reshard.remaining_ranges(layout, batches_done)
        mine = reshard.piece(rest, rank, world_size)
        source = dataset.over(RowRanges(dataset.node, tuple(mine)))
        batches = self._over(source, split=None, drop_last=False, shuffle_seed=None)
        batches._dataset = None  # a rest is trained once, never split again (its layout says what is left)
        batches.set_epoch(layout["epoch"])
        batches.layout = {
            "kind": "ember.data",
            "world_size": world_size,
            "rows": rows,
            "batch_size": self.batch_size,
            "drop_last": False,
            "epoch": layout["epoch"],
            "ranges": rest,
        }
        return batches

    def _over(
        self, source: BatchSource, *, split: tuple[int, int] | None, drop_last: bool, shuffle_seed: int | None
    ) -> BatchIterable[BatchT]:
        """These batches' settings over another dataset (a shard, or the rows left of an epoch)."""
        return BatchIterable(
            source.stream,
            batch_size=self.batch_size,
            convert=self._convert,
            drop_last=drop_last,
            local_shuffle_buffer_size=self.local_shuffle_buffer_size,
            local_shuffle_seed=shuffle_seed,
            prefetch_batches=self.prefetch_batches,
            num_rows=known_rows(source.node),
            dataset=self._dataset,
            split=split,
            plan_seed=self._plan_seed,
        )

    def __len__(self) -> int:
        """Batches per epoch, when the row count is known without executing; else TypeError."""
        if self._num_rows is None or self.batch_size is None:
            raise TypeError("this dataset's length is unknown until it runs (it filters or reads text/CSV)")
        rounding = math.floor if self.drop_last else math.ceil
        return int(rounding(self._num_rows / self.batch_size))


class _ClosingChain(itertools.chain[Any]):
    """``itertools.chain.from_iterable`` (no Python call per item) whose ``close()`` closes its source,
    as closing a generator would: the block stream's files and workers are released at once."""

    def closing(self, source: Generator[Any, None, None]) -> _ClosingChain:
        self._source = source
        return self

    def close(self) -> None:
        self._source.close()


def _skip(batches: Iterator[Block], n: int) -> Iterator[Block]:
    for i, batch in enumerate(batches):
        if i >= n:
            yield batch


def shuffled_batches(
    blocks: Iterator[Block], batch_size: int, buffer_size: int, rng: np.random.Generator
) -> Iterator[Block]:
    """Ray's local shuffle: keep >= ``buffer_size`` rows buffered, emit random batches from them."""
    for run in shuffled_runs(blocks, batch_size, buffer_size, rng):
        yield from split_block(run, batch_size)


def shuffled_runs(
    blocks: Iterator[Block], batch_size: int, buffer_size: int, rng: np.random.Generator
) -> Iterator[Block]:
    """``shuffled_batches``'s batches, a run of whole batches at a time (``transforms.batch_runs``);
    the last, short batch comes alone.

    Example:
        >>> import pyarrow as pa
        >>> runs = shuffled_runs(iter([pa.table({"x": list(range(10))})]), 4, 2, epoch_rng(0, 0))
        >>> [run.num_rows for run in runs]
        [8, 2]
    """
    buffer: Block | None = None
    for block in blocks:
        buffer = block if buffer is None else concat_blocks([buffer, block])
        if buffer.num_rows >= buffer_size + batch_size:
            buffer = buffer.take(to_arrow_column(rng.permutation(buffer.num_rows)))
            ready = (buffer.num_rows - buffer_size) // batch_size * batch_size
            yield from _whole_runs(buffer.slice(0, ready), batch_size)
            buffer = buffer.slice(ready)
    if buffer is not None and buffer.num_rows:
        buffer = buffer.take(to_arrow_column(rng.permutation(buffer.num_rows)))
        whole = buffer.num_rows // batch_size * batch_size
        yield from _whole_runs(buffer.slice(0, whole), batch_size)
        if whole < buffer.num_rows:
            yield buffer.slice(whole)


def _whole_runs(rows: Block, batch_size: int) -> Iterator[Block]:
    """``rows`` (whole batches) as runs of at most ``transforms.RUN_ROWS`` rows and ``RUN_BYTES``."""
    yield from batch_runs(iter([rows]), batch_size)


def _skip_batches(runs: Iterator[Block], skip: int, batch_size: int) -> Iterator[Block]:
    """``runs`` without their first ``skip`` batches (never converted)."""
    for run in runs:
        if skip:
            batches = -(-run.num_rows // batch_size)
            if skip >= batches:
                skip -= batches
                continue
            run, skip = run.slice(skip * batch_size), 0
        yield run


def prefetch(items: Iterator[Any], depth: int) -> Generator[Any, None, None]:
    """Produce ``items`` on a background thread, at most ``depth`` ahead of the consumer."""
    slots: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(entry: tuple[str, Any]) -> bool:
        while not stop.is_set():
            try:
                slots.put(entry, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items:
                if not put(("item", item)):
                    break
            else:
                put(("done", None))
        except BaseException as e:  # handed to the consumer, raised there
            put(("error", e))
        finally:
            close = getattr(items, "close", None)
            if close is not None:
                close()

    thread = threading.Thread(target=produce, name="ember-data-prefetch", daemon=True)
    thread.start()
    try:
        while True:
            kind, value = slots.get()
            if kind == "done":
                return
            if kind == "error":
                raise value
            yield value
    finally:
        stop.set()
        thread.join(timeout=30)


# ---------------------------------------------------------------------- conversions


def batch_converter(batch_format: str | None) -> Callable[[Block], Any]:
    """Block -> the batch a consumer sees; ``None`` is Ray's "the blocks' own format", Arrow in ember."""
    if batch_format is None:
        batch_format = "pyarrow"
    if batch_format not in ("numpy", "pandas", "pyarrow", "default"):
        raise ConfigError(f"unknown batch_format {batch_format!r}; use 'numpy', 'pandas', 'pyarrow' or None")
    if batch_format in ("numpy", "default"):
        return NumpyBatches()
    return partial(block_to_batch, batch_format=batch_format)


def _one_by_one(convert: Callable[[Block], Any], run: Block, batch_size: int) -> Iterable[Any] | None:
    """``run``'s batches converted one at a time, as they are taken, when converting the run once
    would not give the same batches (see ``slices_convert_alike``); None when it would. A run of one
    batch: that batch, converted (a list)."""
    if run.num_rows <= batch_size:
        return [convert(run)]
    if not run.num_columns or not slices_convert_alike(run):
        return (convert(piece) for piece in split_block(run, batch_size))
    return None


def _split_columns(columns: dict[str, Any], rows: int, batch_size: int) -> list[dict[str, Any]]:
    """Batches of ``batch_size`` rows whose columns are slices (views) of ``columns``' arrays or tensors:
    slices along the first dimension of a contiguous array are contiguous."""
    starts = range(0, rows, batch_size)
    pieces = [[values[start : start + batch_size] for start in starts] for values in columns.values()]
    return [dict(zip(columns, parts, strict=True)) for parts in zip(*pieces, strict=True)]


class NumpyBatches:
    """Block -> dict of numpy arrays (zero-copy, read-only views of Arrow memory where it can).

    ``batches(run, batch_size)`` converts a run of whole batches once and gives each batch slices of
    those arrays: the same values, dtypes and shapes as converting every batch on its own.

    Example:
        >>> import pyarrow as pa
        >>> [b["x"].tolist() for b in NumpyBatches().batches(pa.table({"x": [1, 2, 3, 4]}), 2)]
        [[1, 2], [3, 4]]
    """

    def __call__(self, block: Block) -> dict[str, np.ndarray]:
        return block_to_numpy(block, lists_as_arrays=True)

    def batches(self, run: Block, batch_size: int) -> Iterable[dict[str, np.ndarray]]:
        """``run``'s batches of ``batch_size`` rows (the last may be short)."""
        one_by_one = _one_by_one(self, run, batch_size)
        if one_by_one is not None:
            return one_by_one
        columns = self(run)
        return _split_columns(columns, run.num_rows, batch_size)


#: The device ``device="auto"`` stands for while a training loop runs (``set_auto_device``); None: the CPU.
_auto_device: Any = None


def set_auto_device(device: Any) -> None:
    """Make ``device="auto"`` mean ``device`` (None: the CPU again). ``ember.train`` sets its worker's
    device for the length of a training loop: Ray's "auto" is the Ray Train worker's device, else the CPU.

    Example:
        >>> import torch
        >>> set_auto_device(torch.device("meta")); resolve_device("auto")
        device(type='meta')
        >>> set_auto_device(None); resolve_device("auto")
        device(type='cpu')
    """
    global _auto_device
    _auto_device = device


def resolve_device(device: Any) -> Any:
    """Ray's ``"auto"``: the worker's device inside an ``ember.train`` training loop, else the CPU.
    None (ember's): leave the tensors where they are made, on the CPU."""
    import torch

    if device is None:
        return None
    if device == "auto":
        return torch.device("cpu") if _auto_device is None else torch.device(_auto_device)
    return torch.device(device)


def torch_converter(
    dtypes: Any, device: Any, collate_fn: Callable[..., Any] | None, pin_memory: bool = False
) -> Callable[[Block], Any]:
    """Block -> dict of tensors (or ``collate_fn``'s output) on ``device``; checks once, then converts.

    A ``collate_fn`` gets the batch type its class asks for (``ember/data/collate_fn.py``); its output
    is pinned and moved only when it is a tensor batch, as in Ray.
    """
    from ember.data import collate_fn as collate

    if collate_fn is not None and dtypes is not None:
        raise ConfigError(
            "iter_torch_batches: collate_fn cannot be used with dtypes; convert the tensors to the "
            "dtypes you want inside collate_fn"
        )
    target = resolve_device(device)
    pin = _should_pin(pin_memory)
    if collate_fn is not None:
        fmt = collate.batch_format_for(collate_fn)
        collate.warn_if_plain_function(collate_fn)
        return partial(_collated, collate_fn=collate_fn, batch_format=fmt, pin=pin, device=target)
    if target is not None and target.type == "cpu":
        target = None  # the tensors are made on the CPU: no per-column .to() call on every batch
    return TorchBatches(dtypes, target, pin)


class TorchBatches:
    """Block -> dict of tensors (``dtypes``, on ``device``, pinned with ``pin``); what
    ``iter_torch_batches`` gives without a ``collate_fn``.

    ``batches(run, batch_size)`` converts a run of whole batches once (one copy out of Arrow's
    read-only memory, one dtype conversion, one pinning) and gives each batch views of those tensors:
    contiguous, disjoint, so no batch overwrites another, and equal to converting every batch on its
    own. A batch that is kept keeps its run's memory alive (``transforms.RUN_ROWS`` rows and
    ``RUN_BYTES`` at most, unless one batch is more).

    Example:
        >>> import pyarrow as pa, torch
        >>> convert = TorchBatches(torch.float32, None, False)
        >>> [b["x"].tolist() for b in convert.batches(pa.table({"x": [1, 2, 3]}), 2)]
        [[1.0, 2.0], [3.0]]
    """

    #: runs may begin with rows of earlier blocks (``batch_runs``): their columns are copied once anyway
    spans_blocks = True

    def __init__(self, dtypes: Any, device: Any, pin: bool) -> None:
        self.dtypes, self.device, self.pin = dtypes, device, pin
        self._checked = not isinstance(dtypes, dict)

    def __call__(self, block: Block) -> dict[str, Any]:
        self._check(block)
        batch = block_to_numpy(block)
        return {
            name: _to_tensor(name, values, self.dtypes, self.device, self.pin)
            for name, values in batch.items()
        }

    def batches(self, run: Block, batch_size: int) -> Iterable[dict[str, Any]]:
        """``run``'s batches of ``batch_size`` rows (the last may be short): a list when converted at
        once (and moved to the device, when there is one), else converted as they are taken."""
        one_by_one = _one_by_one(self, run, batch_size)
        if one_by_one is not None:
            return one_by_one
        self._check(run)
        copy = not self.pin  # pinning copies into page-locked memory itself
        tensors = {
            name: _to_tensor(name, _joined(run.column(i), copy), self.dtypes, None, self.pin, copied=copy)
            for i, name in enumerate(run.column_names)
        }
        batches = _split_columns(tensors, run.num_rows, batch_size)
        if self.device is None:
            return batches
        return [self._moved(batch) for batch in batches]

    def _moved(self, batch: dict[str, Any]) -> dict[str, Any]:
        return {name: tensor.to(self.device, non_blocking=True) for name, tensor in batch.items()}

    def _check(self, block: Block) -> None:
        if not self._checked:  # a dtypes key naming no column would be silently ignored
            _check_dtype_keys(self.dtypes, block.column_names)
            self._checked = True


def _collated(
    block: Block, *, collate_fn: Callable[..., Any], batch_format: str, pin: bool, device: Any
) -> Any:
    from ember.data import collate_fn as collate

    out = collate_fn(block_to_batch(block, batch_format))
    if pin:
        out = collate.pin_tensor_batch(out)
    return collate.move_tensor_batch(out, device)


def _should_pin(pin_memory: bool) -> bool:
    """Pin host buffers only when a CUDA device can use them; else warn once, as DataLoader does."""
    if not pin_memory:
        return False
    import torch

    if torch.cuda.is_available():
        return True
    import warnings

    warnings.warn(
        "iter_torch_batches(pin_memory=True): no CUDA device is available, so batches are not pinned",
        stacklevel=4,
    )
    return False


def _check_dtype_keys(dtypes: dict[str, Any], columns: list[str]) -> None:
    from ember.errors import did_you_mean

    unknown = [k for k in dtypes if k not in columns]
    if unknown and columns:
        hint = did_you_mean(str(unknown[0]), columns, otherwise="remove it")
        raise ConfigError(
            f"iter_torch_batches(dtypes=...): no column {unknown[0]!r} (the batches have columns "
            f"{columns}); {hint}"
        )


def _joined(column: Any, copy: bool = True) -> np.ndarray:
    """A column's values as one numpy array: with ``copy``, a new writable one (one copy, whatever its
    chunks); else a view of Arrow's memory where it is one chunk."""
    chunks = [column_to_numpy(chunk) for chunk in column.chunks]
    if len(chunks) != 1:
        return np.concatenate(chunks)
    return np.array(chunks[0], copy=True) if copy else chunks[0]


def _to_tensor(
    name: str, values: np.ndarray, dtypes: Any, device: Any, pin: bool = False, copied: bool = False
) -> Any:
    import torch

    dtype = dtypes.get(name) if isinstance(dtypes, dict) else dtypes
    stacked = stacked_lists(values)
    if stacked is not None:  # a batch of equal-length lists: one (rows, length) array, as Ray stacks them
        values, copied = stacked, True
    if values.dtype == object or values.dtype.kind in "USM":
        # Ray raises TypeError for strings and RuntimeError for other Python objects (ragged arrays).
        strings = values.dtype.kind in "US" or (len(values) and isinstance(values[0], (str, bytes)))
        raise (DataTypeError if strings else DataRuntimeError)(
            f"column {name!r} ({_describe_values(values)}) cannot become a torch tensor; "
            "drop it (drop_columns), convert it in map_batches, or pass collate_fn"
        )
    if pin:  # one copy, straight into page-locked memory
        tensor = torch.empty(
            values.shape, dtype=torch.from_numpy(np.empty(0, values.dtype)).dtype, pin_memory=True
        )
        tensor.numpy()[...] = values
    elif copied:  # already a copy of its own (``_joined``)
        tensor = torch.from_numpy(values)
    else:
        # Arrow memory is read-only; the copy keeps user in-place ops from corrupting shared blocks.
        tensor = torch.from_numpy(np.array(values, copy=True))
    if dtype is not None:
        tensor = tensor.to(dtype)
        if pin and not tensor.is_pinned():
            tensor = tensor.pin_memory()
    if device is not None:
        tensor = tensor.to(device, non_blocking=True)
    return tensor


def stacked_lists(values: np.ndarray) -> np.ndarray | None:
    """A list column's batch (an object array of lists or 1-D arrays) as one numeric array of shape (rows,
    length),
    when every row has the same length; None otherwise (ragged rows, nested lists, strings: refused, as
    Ray's ``iter_torch_batches`` refuses them).

    Example:
        >>> rows = np.empty(2, dtype=object); rows[0], rows[1] = np.array([1, 2]), np.array([3, 4])
        >>> stacked_lists(rows).tolist()
        [[1, 2], [3, 4]]
    """
    if (
        values.dtype != object
        or not len(values)
        or not all(isinstance(v, (list, np.ndarray)) for v in values)
    ):
        return None
    rows = [np.asarray(v) for v in values]
    if (
        any(row.ndim != 1 or row.dtype.kind not in "biufc" for row in rows)
        or len({len(r) for r in rows}) != 1
    ):
        return None
    return np.stack(rows)


def _describe_values(values: np.ndarray) -> str:
    if values.dtype == object and len(values) and all(isinstance(v, (list, np.ndarray)) for v in values):
        lengths = {len(v) for v in values}
        if len(lengths) > 1:  # Ray stacks a batch of lists only when they are all as long
            return f"lists of different lengths {sorted(lengths)[:2]} in one batch"
    if values.dtype == object and len(values) and isinstance(values[0], np.ndarray):
        return "ndarrays of different shapes"
    if values.dtype == object and len(values):
        return f"Python {type(values[0]).__name__} values"
    return f"dtype {values.dtype}"
