"""The local streaming executor: turns a plan into a stream of blocks.

Cheap steps (reads, column edits, slices) run in the calling process, one task at a time, which is
the fastest way to feed a training loop. Steps that run user Python code, and CPU-heavy reads
(image decoding), run on a ``WorkerPool`` with all cores; class UDFs run on a pool of long-lived
workers. Memory is bounded: at most a window of task outputs is in flight, sized from
``DataContext.max_inflight_bytes`` and the average task output seen so far.
"""

from __future__ import annotations

import bisect
import itertools
import resource
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pyarrow as pa

from ember.data.block import block_nbytes
from ember.data.block_streams import BlockStream, same_schema_union, select_ranges, slice_rows
from ember.data.context import DataContext
from ember.data.execute import all_to_all, combine
from ember.data.execute.pool import WorkerPool
from ember.data.mix import Mix, mix_streams
from ember.data.plan import (
    ActorMap,
    AllToAll,
    Join,
    Limit,
    Node,
    Read,
    RowRanges,
    Shard,
    Union,
    Zip,
    fused_chain,
    shard_range,
)
from ember.data.read.task import ReadTask
from ember.data.transforms import Transform, apply_transforms, rebatch
from ember.errors import DataError


@dataclass
class StageStats:
    name: str
    tasks: int = 0
    blocks: int = 0
    rows: int = 0
    bytes: int = 0
    seconds: float = 0.0
    #: CPU seconds this process spent producing the stage's blocks (worker processes not included).
    cpu_seconds: float = 0.0
    workers: int = 0
    #: Peak resident memory of this process when the stage finished (bytes).
    peak_rss: int = 0
    #: Bytes an all-to-all operator wrote to its scratch folder.
    spilled_bytes: int = 0

    def line(self) -> str:
        where = f"{self.workers} worker processes" if self.workers else "in-process"
        spilled = f", spilled {self.spilled_bytes / 1e6:.1f} MB" if self.spilled_bytes else ""
        return (
            f"{self.name}: {self.tasks} tasks, {self.blocks} blocks, {self.rows} rows, "
            f"{self.bytes / 1e6:.1f} MB, {self.seconds:.3f}s wall, {self.cpu_seconds:.3f}s CPU, "
            f"peak RSS {self.peak_rss / 1e6:.0f} MB{spilled} ({where})"
        )


@dataclass
class ExecutionStats:
    stages: list[StageStats] = field(default_factory=list)

    def __str__(self) -> str:
        return "\n".join(f"Stage {i} {s.line()}" for i, s in enumerate(self.stages)) or "(not executed yet)"


class _Window:
    """How many task outputs may be in flight: bytes budget / average output, within [lo, hi]."""

    def __init__(self, budget: int, lo: int, hi: int) -> None:
        self.budget, self.lo, self.hi = budget, lo, hi
        self.total_bytes, self.outputs = 0, 0

    def record(self, blocks: list[pa.Table]) -> None:
        self.total_bytes += sum(block_nbytes(b) for b in blocks)
        self.outputs += 1

    def __call__(self) -> int:
        if not self.outputs:
            return self.lo
        average = max(1, self.total_bytes // self.outputs)
        return max(self.lo, min(self.hi, self.budget // average))


class Executor:
    """Runs one plan for one epoch; ``stats`` describes what ran."""

    def __init__(self, epoch: int = 0, context: DataContext | None = None) -> None:
        self.epoch = epoch
        self.context = context or DataContext.get_current()
        self.stats = ExecutionStats()

    # ------------------------------------------------------------------ dispatch

    def stream(self, node: Node) -> BlockStream:
        """The blocks ``node`` produces, in order."""
        if self.context.execution == "ray":
            from ember.data.execute import ray_backend

            stage = self._stage("Ray Data")
            return self._measure(stage, ray_backend.stream(node, self.epoch))
        steps, base = fused_chain(node)
        transforms = [s.transform for s in steps]
        concurrency = min([s.concurrency for s in steps if s.concurrency] or [self.context.workers()])
        if isinstance(base, Read):
            return self._run_read(base, transforms, concurrency)
        upstream = self._stream_base(base, transforms)
        if isinstance(base, ActorMap):
            return upstream  # transforms after a class UDF run on its workers
        if transforms:
            return self._run_on_blocks(
                upstream, transforms, concurrency, " -> ".join(t.name for t in transforms)
            )
        return upstream

    def _stream_base(self, base: Node, transforms: list[Transform]) -> BlockStream:
        if isinstance(base, ActorMap):
            return self._run_actors(base, transforms)
        if isinstance(base, Limit):
            return _limit(self.stream(base.input), base.n)
        if isinstance(base, AllToAll):
            return self._run_all_to_all(base)
        if isinstance(base, Join):
            stage = self._stage("Join")
            return self._measure(
                stage,
                combine.join(
                    base, self.stream(base.left), self.stream(base.right), self.context, stage.__dict__
                ),
            )
        if isinstance(base, Zip):
            return self._measure(
                self._stage("Zip"), combine.zip_streams([self.stream(c) for c in base.inputs])
            )
        if isinstance(base, Union):
            return same_schema_union([self.stream(child) for child in base.inputs])
        if isinstance(base, Mix):
            return self._measure(self._stage("Mix"), mix_streams(base, [self.stream(c) for c in base.inputs]))
        if isinstance(base, Shard):
            return self._run_shard(base)
        if isinstance(base, RowRanges):
            return select_ranges(lambda: self.stream(base.input), base.ranges)
        raise TypeError(f"unknown plan node {base!r}")

    # ------------------------------------------------------------------ stages

    def _use_workers(self, runs_user_code: bool, units: int, concurrency: int) -> bool:
        mode = self.context.execution
        if mode == "inline":
            return False
        if mode == "processes":
            return True
        return runs_user_code and concurrency > 1 and units > 1

    def _run_read(self, read: Read, transforms: list[Transform], concurrency: int) -> BlockStream:
        tasks = read.source.tasks(self.epoch)
        user_code = any(t.runs_user_code for t in transforms)
        heavy = user_code or any(t.cpu_heavy for t in tasks)
        name = " -> ".join([read.name] + [t.name for t in transforms])
        if user_code and len(tasks) < concurrency and self._use_workers(True, concurrency, concurrency):
            # Fewer files/row groups than workers (one big file, say): read here, streaming, and send the
            # blocks to the workers, so the user's function still runs on every worker.
            blocks = self._run_read_tasks(tasks, [], read.name, False, concurrency)
            return self._run_on_blocks(blocks, transforms, concurrency, name)
        return self._run_read_tasks(
            tasks, transforms, name, self._use_workers(heavy, len(tasks), concurrency), concurrency
        )

    def _run_read_tasks(
        self, tasks: list[ReadTask], transforms: list[Transform], name: str, parallel: bool, concurrency: int
    ) -> BlockStream:
        stage = self._stage(name)
        stage.tasks = len(tasks)

        def run(index: int) -> list[pa.Table]:
            return list(apply_transforms(tasks[index].read(), transforms))

        if (
            not parallel
        ):  # stream each task's blocks as they are read: the first batch waits for one block only

            def stream(index: int) -> Iterator[pa.Table]:
                return apply_transforms(tasks[index].read(), transforms)

            return self._measure(
                stage, _inline(((i, tasks[i].description) for i in range(len(tasks))), stream)
            )
        payloads = ((i, tasks[i].description) for i in range(len(tasks)))
        return self._measure(
            stage,
            self._pooled(payloads, lambda: run, concurrency, stage, max_task_retries=_retries(transforms)),
        )

    def _run_on_blocks(
        self, upstream: Iterator[pa.Table], transforms: list[Transform], concurrency: int, name: str
    ) -> BlockStream:
        stage = self._stage(name)
        payloads = ((b, f"block {i}") for i, b in enumerate(upstream))

        def run(block: pa.Table) -> list[pa.Table]:
            return list(apply_transforms(iter([block]), transforms))

        if not self._use_workers(any(t.runs_user_code for t in transforms), 2, concurrency):
            return self._measure(stage, _inline(payloads, run))
        return self._measure(
            stage,
            self._pooled(payloads, lambda: run, concurrency, stage, max_task_retries=_retries(transforms)),
        )

    def _run_actors(self, node: ActorMap, after: list[Transform]) -> BlockStream:
        stage = self._stage(f"MapBatches({node.class_name})" + "".join(f" -> {t.name}" for t in after))
        upstream = rebatch(self.stream(node.input), node.batch_size)
        where = _row_sources(node.input)

        def payloads() -> Iterator[tuple[tuple[pa.Table, int], str]]:
            start = 0
            for batch in upstream:
                rows = f"rows {start}-{start + batch.num_rows - 1}"
                yield (
                    (batch, start),
                    f"{rows} of the input to {node.class_name}{where(start, batch.num_rows)}",
                )
                start += batch.num_rows

        def make_handler():
            step = node.udf.build()

            def handle(item: tuple[pa.Table, int]) -> list[pa.Table]:
                block, start = item
                if hasattr(step, "first_row"):
                    step.first_row = start  # the user's error then names the input's row numbers
                return list(apply_transforms(step.apply(iter([block])), after))

            return handle

        if self.context.execution == "inline":
            return self._measure(stage, _inline(payloads(), make_handler()))
        threads = self.context.worker_torch_threads or (
            max(1, round(node.num_cpus)) if node.num_cpus else None
        )
        return self._measure(
            stage,
            self._pooled(
                payloads(),
                make_handler,
                node.size,
                stage,
                f"{node.class_name} worker",
                torch_threads=threads,
                num_gpus=node.num_gpus,
                max_task_retries=node.max_task_retries,
            ),
        )

    def _pooled(
        self,
        payloads,
        make_handler,
        size,
        stage: StageStats,
        name: str = "data worker",
        torch_threads: int | None = None,
        **pool_options,
    ) -> BlockStream:
        hi = size if isinstance(size, int) else size[1]
        window = _Window(
            min(self.context.max_inflight_bytes, self.context.memory_budget_bytes // 4), lo=hi, hi=4 * hi
        )
        pool = WorkerPool(
            make_handler,
            size,
            name=name,
            torch_threads=torch_threads or self.context.worker_torch_threads,
            shutdown_timeout_s=self.context.worker_shutdown_timeout_s,
            ordered=self.context.preserve_order,
            **pool_options,
        )
        stage.workers = pool.size
        try:
            for blocks in pool.imap(payloads, window):
                window.record(blocks)
                stage.workers = max(stage.workers, pool.size)
                yield from blocks
        finally:
            pool.close()

    def _run_all_to_all(self, node: AllToAll) -> BlockStream:
        stage = self._stage(node.name)
        stage.tasks = 1
        return self._measure(
            stage, all_to_all.run(node, self.stream(node.input), self.epoch, self.context, stage.__dict__)
        )

    def _run_shard(self, node: Shard) -> BlockStream:
        steps, base = fused_chain(node.input)
        if isinstance(base, Read) and all(s.transform.preserves_rows for s in steps):
            tasks = base.source.tasks(self.epoch)
            if all(t.num_rows is not None for t in tasks):
                return self._shard_tasks(node, base, [s.transform for s in steps], tasks)
        total = sum(b.num_rows for b in Executor(self.epoch, self.context).stream(node.input))
        start, count = shard_range(total, node.index, node.n, node.equal)
        return slice_rows(self.stream(node.input), start, count)

    def _shard_tasks(
        self, node: Shard, read: Read, transforms: list[Transform], tasks: list[ReadTask]
    ) -> BlockStream:
        """Only the tasks overlapping this shard's rows run: each rank reads its share."""
        total = sum(t.num_rows or 0 for t in tasks)
        start, count = shard_range(total, node.index, node.n, node.equal)
        chosen, offset, skip = [], 0, None
        for task in tasks:
            rows = task.num_rows or 0
            if offset + rows > start and offset < start + count:
                if skip is None:
                    skip = start - offset
                chosen.append(task)
            offset += rows
        heavy = any(t.runs_user_code for t in transforms) or any(t.cpu_heavy for t in chosen)
        parallel = self._use_workers(heavy, len(chosen), self.context.workers())
        name = f"{read.name} (shard {node.index}/{node.n})"
        blocks = self._run_read_tasks(chosen, transforms, name, parallel, self.context.workers())
        return slice_rows(blocks, skip or 0, count)

    # ------------------------------------------------------------------ bookkeeping

    def _stage(self, name: str) -> StageStats:
        stage = StageStats(name)
        self.stats.stages.append(stage)
        return stage

    def _measure(self, stage: StageStats, blocks: Iterator[pa.Table]) -> BlockStream:
        try:
            while True:
                start, cpu = time.perf_counter(), time.process_time()
                try:
                    block = next(blocks)
                except StopIteration:
                    self._finished(stage)
                    return
                finally:
                    stage.seconds += time.perf_counter() - start
                    stage.cpu_seconds += time.process_time() - cpu
                stage.blocks += 1
                stage.rows += block.num_rows
                stage.bytes += block_nbytes(block)
                yield block
        finally:
            close = getattr(blocks, "close", None)
            if close is not None:
                close()

    def _finished(self, stage: StageStats) -> None:
        stage.peak_rss = peak_rss()
        if self.context.verbose_progress:
            print(f"ember.data: {stage.line()}", file=sys.stderr, flush=True)


def peak_rss() -> int:
    """Peak resident memory of this process so far, in bytes (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


__all__ = ["Executor", "ExecutionStats", "StageStats", "shard_range"]


def _row_sources(node: Node) -> Callable[[int, int], str]:
    """``where(start, count)``: " (file a.parquet row group 0)" for input rows, when metadata tells."""
    steps, base = fused_chain(node)
    if not isinstance(base, Read) or not all(s.transform.preserves_rows for s in steps):
        return lambda start, count: ""
    tasks = base.source.tasks()
    if any(t.num_rows is None for t in tasks):
        return lambda start, count: ""
    ends = list(itertools.accumulate(t.num_rows or 0 for t in tasks))

    def where(start: int, count: int) -> str:
        first = bisect.bisect_right(ends, start)
        last = bisect.bisect_right(ends, start + count - 1)
        names = [tasks[i].description for i in range(first, min(last, len(tasks) - 1) + 1)]
        return f" ({', '.join(names[:3])}{', ...' if len(names) > 3 else ''})" if names else ""

    return where


def _retries(transforms: list[Transform]) -> int:
    """``map_batches(fn, max_task_retries=N)`` with a function: a block whose worker died is re-run N
    times."""
    return max([getattr(t, "max_task_retries", 0) for t in transforms] or [0])


def _inline(payloads, run) -> BlockStream:
    for payload, description in payloads:
        try:
            yield from run(payload)
        except DataError as e:
            raise type(e)(f"failed on {description}: {e}") from None


def _limit(blocks: Iterator[pa.Table], n: int) -> BlockStream:
    return slice_rows(blocks, 0, n)
