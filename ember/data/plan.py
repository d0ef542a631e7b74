"""The logical plan: a small tree of nodes a Dataset holds. Building it does no work.

Per-block transforms (``OneToOne``) directly above a ``Read`` fuse into that read's tasks: one task
reads one fragment and runs every transform on it, in one process, with no block copies between
steps. Nodes that need all their input (``AllToAll``) or a stateful pool (``ActorMap``) end a fused
chain; transforms after them fuse into the next stage.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ember.data.read.task import Source
from ember.data.transforms import Transform


class Node:
    """A logical operator."""

    name = "Node"

    def children(self) -> list[Node]:
        return []


@dataclass(eq=False)
class Read(Node):
    source: Source

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.source.name


@dataclass(eq=False)
class OneToOne(Node):
    input: Node
    transform: Transform
    #: Worker processes to use for this step (None: all cores).
    concurrency: int | None = None

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.transform.name

    def children(self) -> list[Node]:
        return [self.input]


@dataclass(eq=False)
class ActorMap(Node):
    """A callable-class UDF: each pool worker constructs the class once and reuses it."""

    input: Node
    #: Runs inside each worker: constructs the class and wraps it in a Transform.
    make_transform: Callable[[], Transform]
    size: int | tuple[int, int]
    #: Input is re-cut into batches of this many rows before it is sent to a worker.
    batch_size: int | None
    class_name: str = "?"
    #: GPUs per worker (fractions share a device); CPUs per worker (sets its torch threads).
    num_gpus: float = 0
    num_cpus: float | None = None
    #: Times a batch is re-sent to a new worker after its worker died.
    max_task_retries: int = 0
    #: For the Ray backend: the class and its arguments (Ray constructs it in its actors).
    udf: tuple | None = None
    name = "MapBatches(actors)"

    def children(self) -> list[Node]:
        return [self.input]


@dataclass(eq=False)
class Limit(Node):
    input: Node
    n: int
    name = "Limit"

    def children(self) -> list[Node]:
        return [self.input]


@dataclass(eq=False)
class AllToAll(Node):
    """Needs every input block before producing output: shuffle, sort, repartition."""

    input: Node
    label: str
    #: (blocks, epoch) -> blocks; the epoch lets seeded shuffles differ across epochs.
    fn: Callable[[list[pa.Table], int], list[pa.Table]]
    preserves_rows: bool = True

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.label

    def children(self) -> list[Node]:
        return [self.input]


@dataclass(eq=False)
class Union(Node):
    inputs: list[Node]
    name = "Union"

    def children(self) -> list[Node]:
        return list(self.inputs)


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


def plan_arguments(node: Any) -> str:
    return type(node).__name__
