"""Seedless random operators draw anew on every execution, as Ray's do, and still resume exactly.

``random_shuffle()``, ``randomize_block_order()`` (no seed) and ``repartition(shuffle=True)`` build
plan nodes marked ``drawn``, and a file reader's ``shuffle="files"`` (or ``FileShuffleConfig()``
without a seed) a source with a drawn file order: the seed there is only a placeholder. Each execution
replaces
those seeds with ones derived from an *execution seed* (``with_execution_seed``):

- the execution seed is derived from the plan's placeholders and how many times that Dataset
  object (or DataIterator) ran before (``execution_seed``): each one-shot call (``take_all``,
  ``materialize``, ``iter_rows``, a write) and each new batch iterable gets a new order, as in Ray;
- a batch iterable (``iter_batches`` / ``iter_torch_batches``) keeps its execution seed for all its
  epochs and draws from (seed, epoch), so a re-iterated one gives a new order per epoch too; the
  seed is in its ``state_dict()`` (``plan_seed``), so a resumed iterable replays its epoch bitwise;
- copies of one dataset pickled to several ranks hold the same placeholders and count the same
  calls, so their shards (``streaming_split``, ``get_dataset_shard``) partition one order; the
  Trainer also hands every rank rank 0's seed (``ember/runtime/sharding.py``).

Operators given an integer seed are untouched: their order comes from (seed, epoch) as before.

Example:
    >>> import ember.data
    >>> ds = ember.data.range(50).random_shuffle()
    >>> ds.take_all() != ds.take_all()  # a new order per execution
    True
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import numpy as np

from ember.data.plan import Node, Read


def drawn_nodes(root: Node) -> list[Node]:
    """The plan's seedless random operators (and reads with a drawn file order), in a fixed (pre-order)
    traversal order."""
    found, stack = [], [root]
    while stack:
        node = stack.pop()
        if getattr(node, "drawn", False) or _drawn_read(node):
            found.append(node)
        stack.extend(reversed(node.children()))
    return found


def _drawn_read(node: Node) -> bool:
    return isinstance(node, Read) and node.source.reseeded is not None


def _placeholder(node: Node) -> int:
    # Node declares neither: a drawn Read has .source, a seedless operator (RandomShuffle, ...) .seed
    seed = node.source.drawn_seed if _drawn_read(node) else node.seed  # type: ignore[attr-defined]
    return int(seed) % 2**63


def placeholder_seed(root: Node) -> int | None:
    """One number from the placeholders drawn when the plan was built (None: nothing seedless).
    Copies of a dataset pickled to other processes hold the same placeholders, hence the same number."""
    seeds = [_placeholder(node) for node in drawn_nodes(root)]
    return _mix(*seeds) if seeds else None


def execution_seed(root: Node, count: int) -> int | None:
    """The execution seed of the ``count``-th execution (or batch iterable) of a Dataset / DataIterator
    (None: the plan has no seedless operator)."""
    base = placeholder_seed(root)
    return None if base is None else _mix(base, count)


def with_execution_seed(root: Node, execution_seed: int | None) -> Node:
    """The plan with each seedless operator's seed derived from ``execution_seed`` and its place in the
    traversal; the plan itself when there is nothing to replace."""
    if execution_seed is None:
        return root
    seeds = {id(node): _mix(int(execution_seed), index) for index, node in enumerate(drawn_nodes(root))}
    return _replaced(root, seeds) if seeds else root


def _replaced(node: Node, seeds: dict[int, int]) -> Node:
    """A shallow copy of ``node`` (and of the nodes above a replaced one) with the new seeds; nodes with
    nothing replaced below them are shared, never copied."""
    changes: dict[str, Any] = {}
    fields: tuple[dataclasses.Field[Any], ...] = (
        dataclasses.fields(node) if dataclasses.is_dataclass(node) else ()
    )
    for field in fields:
        value = getattr(node, field.name)
        if isinstance(value, Node):
            new = _replaced(value, seeds)
            if new is not value:
                changes[field.name] = new
        elif isinstance(value, list) and value and all(isinstance(v, Node) for v in value):
            new_list = [_replaced(v, seeds) for v in value]
            if any(a is not b for a, b in zip(new_list, value, strict=True)):
                changes[field.name] = new_list
    if id(node) in seeds and _drawn_read(node):
        # Node declares no .source: _drawn_read found a Read whose source has reseeded()
        changes["source"] = node.source.reseeded(seeds[id(node)])  # type: ignore[attr-defined]
    elif id(node) in seeds:
        changes["seed"] = seeds[id(node)]
    if not changes:
        return node
    clone = copy.copy(node)  # no __init__ again: the node's other state is kept as it is
    for name, value in changes.items():
        object.__setattr__(clone, name, value)
    return clone


def _mix(*parts: int) -> int:
    return int(np.random.default_rng([int(p) % 2**63 for p in parts]).integers(0, 2**63))
