"""The logical plan: a tree of named, typed operators a Dataset holds. Building it does no work.

Every operator is a dataclass of plain data (the user's function where there is one, never a
closure of ours), so an executor can reason about it: the local executor (``execute/executor.py``)
streams it, spilling the all-to-all operators to disk past the memory budget
(``execute/all_to_all.py``); the Ray backend (``execute/ray_backend/``) translates it.

Per-block operators (``OneToOne``: Map, MapBatches, FlatMap, Filter, Project) directly above a
``Read`` fuse into that read's tasks: one task reads one fragment and runs every step on it, in one
process, with no block copies between steps. Operators that need all their input (``AllToAll``:
RandomShuffle, RandomizeBlockOrder, Sort, Repartition, StreamingRepartition, HashRepartition,
Aggregate, MapGroups), several inputs
(Union, Zip, Join) or a pool of stateful workers (``ActorMap``) end a fused chain.

Example:
    >>> import ember.data
    >>> describe(ember.data.range(4).map(lambda r: r).sort("id")._node)
    'Range -> Map -> Sort'
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ember.data.read.task import ReadTask, Source
from ember.data.transforms import Transform


class Node:
    """A logical operator."""

    # Read-only to the type checker: a class attribute of most operators, a property of some.
    if TYPE_CHECKING:

        @property
        def name(self) -> str: ...
        @property
        def preserves_rows(self) -> bool: ...
        @property
        def sums_input_rows(self) -> bool: ...

    else:
        name = "Node"
        #: True when the output has as many rows as the (first) input: lets count() answer from metadata.
        preserves_rows = False
        #: True when the output has every row of every input (a Mix that drops nothing): count() sums them.
        sums_input_rows = False

    def children(self) -> list[Node]:
        return []


@dataclass(eq=False)
class Read(Node):
    """Reads the fragments (files, row groups, slices of memory) of a ``Source``."""

    source: Source

    @property
    def name(self) -> str:
        return self.source.name


# ---------------------------------------------------------------------------- per-block operators


@dataclass(eq=False)
class OneToOne(Node):
    """A per-block step (a ``Transform``) that fuses with its neighbours into one task per block."""

    input: Node
    transform: Transform
    #: Worker processes to use for this step (None: all cores).
    concurrency: int | None = None

    @property
    def name(self) -> str:
        return self.transform.name

    @property
    def preserves_rows(self) -> bool:
        return self.transform.preserves_rows

    def children(self) -> list[Node]:
        return [self.input]


class Map(OneToOne):
    """``map(fn)``: one row in, one row out."""


class MapBatches(OneToOne):
    """``map_batches(fn)`` with a function: one batch in, one (or, from a generator, several) out."""


class FlatMap(OneToOne):
    """``flat_map(fn)``: one row in, a list of rows out."""


class Filter(OneToOne):
    """``filter(fn)`` or ``filter(expr=...)``: keeps the rows for which it is true."""


class Project(OneToOne):
    """Column edits: select, drop, rename, add_column, with_column."""


_ONE_TO_ONE = {"Map": Map, "MapBatches": MapBatches, "FlatMap": FlatMap, "Filter": Filter}


def one_to_one(input: Node, transform: Transform, concurrency: int | None = None) -> OneToOne:
    """The typed per-block operator for ``transform`` (a column edit is a ``Project``)."""
    kind = _ONE_TO_ONE.get(transform.name, Project)
    return kind(input, transform, concurrency)


@dataclass(eq=False)
class ClassUDF:
    """A callable class and how to call it: built once per pool worker (the model loads once)."""

    cls: type
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    #: Which per-row/per-batch step wraps the instance: "map", "map_batches", "flat_map", "filter".
    kind: str = "map_batches"
    #: map_batches: (batch_format, fn_args, fn_kwargs, zero_copy_batch); else (fn_args, fn_kwargs).
    call: tuple = ()

    def build(self) -> Transform:
        """Construct the class (in the worker) and wrap the instance in its Transform."""
        from ember.data import transforms

        instance = self.cls(*self.args, **self.kwargs)
        if self.kind == "map_batches":
            batch_format, fn_args, fn_kwargs, zero_copy = self.call
            return transforms.MapBatches(instance, None, batch_format, fn_args, fn_kwargs, zero_copy)
        step = {"map": transforms.MapRows, "flat_map": transforms.FlatMap, "filter": transforms.Filter}[
            self.kind
        ]
        return step(instance, *self.call)


@dataclass(eq=False)
class ActorMap(Node):
    """A callable-class UDF: each pool worker constructs the class once and reuses it."""

    input: Node
    udf: ClassUDF
    size: int | tuple[int, int]
    #: Input is re-cut into batches of this many rows before it is sent to a worker.
    batch_size: int | Literal["auto"] | None
    #: GPUs per worker (fractions share a device); CPUs per worker (sets its torch threads).
    num_gpus: float = 0
    num_cpus: float | None = None
    #: Times a batch is re-sent to a new worker after its worker died.
    max_task_retries: int = 0

    @property
    def class_name(self) -> str:
        return self.udf.cls.__name__

    @property
    def name(self) -> str:
        return {"map_batches": "MapBatches", "map": "Map", "flat_map": "FlatMap", "filter": "Filter"}[
            self.udf.kind
        ] + f"({self.class_name})"

    @property
    def preserves_rows(self) -> bool:
        return self.udf.kind == "map"

    def children(self) -> list[Node]:
        return [self.input]


# ---------------------------------------------------------------------------- slicing and combining


@dataclass(eq=False)
class Limit(Node):
    """The first ``n`` rows; upstream stops once they are produced."""

    input: Node
    n: int
    name = "Limit"

    def children(self) -> list[Node]:
        return [self.input]


@dataclass(eq=False)
class Shard(Node):
    """Rows [index * per, (index + 1) * per) of the input: one of ``n`` contiguous, ordered shards."""

    input: Node
    index: int
    n: int
    equal: bool
    name = "StreamingSplit"

    def children(self) -> list[Node]:
        return [self.input]


@dataclass(eq=False)
class RowRanges(Node):
    """The input's rows in the given ``(start, count)`` ranges, one range after another.

    What a rank trains of an epoch resumed on another number of ranks (``ember/data/reshard.py``):
    the rows the old ranks had not reached, dealt anew. Ascending ranges are read in one pass.
    """

    input: Node
    ranges: tuple[tuple[int, int], ...]
    name = "RowRanges"

    def children(self) -> list[Node]:
        return [self.input]


@dataclass(eq=False)
class Union(Node):
    """The inputs' rows one after another (same columns required)."""

    inputs: list[Node]
    name = "Union"

    def children(self) -> list[Node]:
        return list(self.inputs)


@dataclass(eq=False)
class Zip(Node):
    """Row i of every input side by side (equal row counts required)."""

    inputs: list[Node]
    name = "Zip"
    preserves_rows = True

    def children(self) -> list[Node]:
        return list(self.inputs)


@dataclass(eq=False)
class Join(Node):
    """A relational join on key columns (hash/range partitioned to disk past the memory budget)."""

    left: Node
    right: Node
    join_type: str
    on: tuple[str, ...]
    right_on: tuple[str, ...]
    left_suffix: str | None = None
    right_suffix: str | None = None
    num_partitions: int | None = None
    name = "Join"

    def children(self) -> list[Node]:
        return [self.left, self.right]


# ---------------------------------------------------------------------------- all-to-all operators


@dataclass(eq=False)
class AllToAll(Node):
    """Needs every input row before producing output (runs out of core past the memory budget)."""

    input: Node

    @property
    def name(self) -> str:
        return type(self).__name__

    def children(self) -> list[Node]:
        return [self.input]


@dataclass(eq=False)
class RandomShuffle(AllToAll):
    """All rows in an order drawn from (seed, epoch), or with ``reseed=False`` from the seed alone (the
    same order every epoch: an integer seed, as in Ray)."""

    seed: int = 0
    reseed: bool = True
    #: no seed was given: ``seed`` is a placeholder, replaced on each execution (``execution_seed.py``)
    drawn: bool = False
    preserves_rows = True


@dataclass(eq=False)
class RandomizeBlockOrder(AllToAll):
    """The input blocks in an order drawn from (seed, epoch), or from the seed alone with ``reseed=False``;
    rows inside a block keep their order."""

    seed: int = 0
    reseed: bool = True
    #: no seed was given: ``seed`` is a placeholder, replaced on each execution (``execution_seed.py``)
    drawn: bool = False
    preserves_rows = True


@dataclass(eq=False)
class Sort(AllToAll):
    """All rows ordered by ``keys`` (stable), each key ascending or descending; with ``boundaries``
    (ascending values of the first key), one output block per range they make, empty ones included."""

    keys: tuple[str, ...] = ()
    descending: tuple[bool, ...] = ()
    boundaries: tuple[float, ...] = ()
    preserves_rows = True


@dataclass(eq=False)
class Repartition(AllToAll):
    """The rows re-cut into ``n`` blocks of nearly equal size (shuffled first with ``shuffle``)."""

    n: int = 1
    shuffle: bool = False
    seed: int = 0
    #: ``seed`` is a placeholder, replaced on each execution (``execution_seed.py``)
    drawn: bool = False
    preserves_rows = True


@dataclass(eq=False)
class StreamingRepartition(AllToAll):
    """The rows, in order, re-cut into blocks of exactly ``target_num_rows_per_block`` rows (the last
    one shorter); streams: holds at most one output block."""

    target_num_rows_per_block: int = 1
    preserves_rows = True


@dataclass(eq=False)
class HashRepartition(AllToAll):
    """``n`` blocks, block i holding (in input order, or sorted by ``keys`` with ``sort``) the rows
    whose hash of ``keys`` is i modulo n: rows with equal keys share a block."""

    n: int = 1
    keys: tuple[str, ...] = ()
    sort: bool = False
    preserves_rows = True


@dataclass(eq=False)
class Aggregate(AllToAll):
    """One row per group of ``keys`` (one row in all without keys) holding each aggregation."""

    keys: tuple[str, ...] = ()
    aggs: tuple[Any, ...] = ()


@dataclass(eq=False)
class MapGroups(AllToAll):
    """``fn(batch of one group)`` for every group of ``keys``, in key order."""

    keys: tuple[str, ...] = ()
    fn: Callable | None = None
    batch_format: str = "numpy"
    fn_args: tuple = ()
    fn_kwargs: dict = field(default_factory=dict)


# ---------------------------------------------------------------------------- reasoning about plans


def fused_chain(node: Node) -> tuple[list[OneToOne], Node]:
    """The OneToOne steps on top of ``node`` (in execution order) and the node beneath them."""
    steps: list[OneToOne] = []
    while isinstance(node, OneToOne):
        steps.append(node)
        node = node.input
    return steps[::-1], node


def describe(node: Node) -> str:
    """A one-line rendering of the plan, e.g. ``ReadParquet -> Map -> MapBatches``."""
    chain = [node]
    while chain[-1].children():
        chain.append(chain[-1].children()[0])
    return " -> ".join(n.name for n in reversed(chain))


def shard_range(total: int, index: int, n: int, equal: bool) -> tuple[int, int]:
    """(first row, row count) of shard ``index`` of ``n``; equal shards drop the remainder.

    Example:
        >>> shard_range(10, 1, 3, equal=True), shard_range(10, 2, 3, equal=False)
        ((3, 3), (6, 4))
    """
    if equal:
        per = total // n
        return index * per, per
    start, end = index * total // n, (index + 1) * total // n
    return start, end - start


def order_epoch(node: RandomShuffle | RandomizeBlockOrder, epoch: int) -> int:
    """The epoch a shuffle draws its order from: the current one, or 0 for every epoch when the node
    does not reseed (an integer seed: one order throughout, as in Ray)."""
    return epoch if node.reseed else 0


def contains(node: Node, kind: type[Node]) -> bool:
    """Does the plan ending at ``node`` have an operator of type ``kind``?"""
    return isinstance(node, kind) or any(contains(child, kind) for child in node.children())


def known_rows(node: Node) -> int | None:
    """Row count from metadata alone, or None when only running the plan can tell.

    Example:
        >>> import ember.data
        >>> known_rows(ember.data.range(10).sort("id").limit(4)._node)
        4
        >>> known_rows(ember.data.range(3).mix(ember.data.range(5))._node)  # STOP_ON_LONGEST_DROP: all rows
        8
    """
    if isinstance(node, Read):
        return _sum_known([t.num_rows for t in node.source.tasks()])
    if isinstance(node, Limit):
        inner = known_rows(node.input)
        return None if inner is None else min(inner, node.n)
    if isinstance(node, Union):
        return _sum_known([known_rows(child) for child in node.inputs])
    if isinstance(node, Shard):
        inner = known_rows(node.input)
        return None if inner is None else shard_range(inner, node.index, node.n, node.equal)[1]
    if isinstance(node, RowRanges):
        return sum(count for _, count in node.ranges)
    if isinstance(node, Aggregate) and not node.keys:
        return 1
    if node.sums_input_rows:  # every block of every input comes out (a Mix's STOP_ON_LONGEST_DROP)
        return _sum_known([known_rows(child) for child in node.children()])
    if node.preserves_rows:
        return known_rows(node.children()[0])
    return None


def _sum_known(counts: list[int | None]) -> int | None:
    """The sum of ``counts``; None when one is unknown."""
    known = [c for c in counts if c is not None]
    return sum(known) if len(known) == len(counts) else None


def read_fragments(node: Node) -> list[ReadTask] | None:
    """The read tasks (one per fragment) when ``node`` is a bare read, else None."""
    return node.source.tasks() if isinstance(node, Read) else None


def input_files(node: Node) -> list[str]:
    """The files every read in the plan reads, in plan order, without duplicates."""
    files: list[str] = []
    if isinstance(node, Read):
        for task in node.source.tasks():
            files.extend(_task_files(task))
    for child in node.children():
        files.extend(input_files(child))
    return list(dict.fromkeys(files))


_FILE = re.compile(r"^file (.+?)(?: row group \d+)?$")


def _task_files(task: Any) -> list[str]:
    """The files one read task reads: its ``paths`` when it lists them, else from its description."""
    paths = getattr(task, "paths", None)
    if paths is not None:
        return list(paths)
    match = _FILE.match(task.description)
    return [match.group(1)] if match else []
