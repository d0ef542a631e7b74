"""Several iterables read as one, as Lightning's ``CombinedLoader`` (its "multiple dataloaders" page).

A collection of loaders (a dict, a list, a tuple, nested) is flattened into its leaves; each step draws from
them according to ``mode`` and hands back the batches in the collection's shape:

* ``max_size_cycle``: until the longest is done, starting the others again when they run out (fit's default);
* ``min_size``: until the shortest is done;
* ``max_size``: until the longest is done, ``None`` for those already done;
* ``sequential``: each loader completely, one after the other (validate/test/predict's default).

Iterating yields ``(batch, batch_idx, dataloader_idx)``, as Lightning's does. It lives in the runtime layer so
that both the Trainer and ``ember.utilities`` (the user-facing path) can use it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

MODES = ("min_size", "max_size_cycle", "max_size", "sequential")


def _is_leaf(value: Any) -> bool:
    """Lightning's leaf rule: anything but a dict/list/tuple, and a container holding only numbers or
    strings."""
    if isinstance(value, Mapping):
        children: Iterable[Any] = value.values()
    elif isinstance(value, (list, tuple)):
        children = value
    else:
        return True
    return all(isinstance(child, (int, float, str)) for child in children)


def flatten(tree: Any) -> tuple[list[Any], Any]:
    """The leaves of a nested dict/list/tuple, in order, and the shape to rebuild it with (`unflatten`).

    Example:
        >>> leaves, shape = flatten({"a": [1, 2], "b": ("x", [3])})
        >>> leaves
        [[1, 2], 'x', [3]]
        >>> unflatten(["A", "B", "C"], shape)
        {'a': 'A', 'b': ('B', 'C')}
    """
    if _is_leaf(tree):
        return [tree], None
    keys = list(tree) if isinstance(tree, Mapping) else None
    leaves: list[Any] = []
    shapes = []
    for child in tree.values() if keys is not None else tree:
        child_leaves, child_shape = flatten(child)
        shapes.append((len(child_leaves), child_shape))
        leaves += child_leaves
    return leaves, (type(tree), keys, shapes)


def unflatten(leaves: list[Any], shape: Any) -> Any:
    """`leaves` put back in the shape `flatten` returned."""
    if shape is None:
        return leaves[0]
    kind, keys, shapes = shape
    children, start = [], 0
    for count, child_shape in shapes:
        children.append(unflatten(leaves[start : start + count], child_shape))
        start += count
    if keys is not None:
        return kind(zip(keys, children, strict=True))
    if hasattr(kind, "_fields"):  # a namedtuple
        return kind(*children)
    return kind(children)


def _length(iterable: Any) -> float:
    try:
        return float(len(iterable))
    except (TypeError, NotImplementedError):
        return math.inf


class CombinedLoader(Iterable):
    """Combines iterables (a dict, list or tuple of them, nested) under a sampling ``mode``: ``min_size``
    (default), ``max_size_cycle``, ``max_size`` or ``sequential``; iterating gives ``(batch, batch_idx,
    dataloader_idx)`` with ``batch`` in the collection's shape (one loader's batch in ``sequential``).

    Example:
        >>> from torch.utils.data import DataLoader
        >>> loaders = {"a": DataLoader(range(6), batch_size=4), "b": DataLoader(range(15), batch_size=5)}
        >>> combined = CombinedLoader(loaders, "max_size_cycle")
        >>> len(combined)
        3
        >>> for batch, batch_idx, dataloader_idx in combined:
        ...     print(batch["a"].tolist(), batch["b"].tolist(), batch_idx, dataloader_idx)
        [0, 1, 2, 3] [0, 1, 2, 3, 4] 0 0
        [4, 5] [5, 6, 7, 8, 9] 1 0
        [0, 1, 2, 3] [10, 11, 12, 13, 14] 2 0
        >>> [(b.tolist(), i, d) for b, i, d in CombinedLoader(loaders, "sequential")][1:3]
        [([4, 5], 1, 0), ([0, 1, 2, 3, 4], 0, 1)]
    """

    def __init__(self, iterables: Any, mode: str = "min_size") -> None:
        if mode not in MODES:
            raise ValueError(f"Unsupported mode {mode!r}, please select one of: {list(MODES)}.")
        self._iterables = iterables
        self._flattened, self._shape = flatten(iterables)
        self._mode = mode
        self._limits: list[int | float] | None = None
        self._iterator: Iterator[tuple[Any, int, int]] | None = None

    @property
    def iterables(self) -> Any:
        """The collection of iterables as given (with the Trainer's per-rank loaders once a run set them
        up)."""
        return self._iterables

    @property
    def mode(self) -> str:
        """How the iterables are combined."""
        return self._mode

    @property
    def flattened(self) -> list[Any]:
        """The iterables as a flat list (the collection's leaves, in order)."""
        return self._flattened

    @flattened.setter
    def flattened(self, flattened: list[Any]) -> None:
        if len(flattened) != len(self._flattened):
            raise ValueError(
                f"Mismatch in flattened length ({len(flattened)}) and existing length "
                f"({len(self._flattened)})"
            )
        self._iterables = unflatten(list(flattened), self._shape)
        self._flattened = list(flattened)

    @property
    def sampler(self) -> Any:
        """Each iterable's ``sampler`` (None where it has none), in the collection's shape."""
        return unflatten([getattr(x, "sampler", None) for x in self._flattened], self._shape)

    @property
    def batch_sampler(self) -> Any:
        """Each iterable's ``batch_sampler`` (None where it has none), in the collection's shape."""
        return unflatten([getattr(x, "batch_sampler", None) for x in self._flattened], self._shape)

    @property
    def limits(self) -> list[int | float] | None:
        """At most this many batches from each iterable (one number applies to all); None: no limit."""
        return self._limits

    @limits.setter
    def limits(self, limits: int | float | list[int | float] | None) -> None:
        if isinstance(limits, (int, float)):
            limits = [limits] * len(self._flattened)
        elif isinstance(limits, list) and len(limits) != len(self._flattened):
            raise ValueError(
                f"Mismatch in number of limits ({len(limits)}) and number of iterables "
                f"({len(self._flattened)})"
            )
        self._limits = limits

    def _limited_lengths(self) -> list[float]:
        lengths = [_length(x) for x in self._flattened]
        return (
            lengths
            if self._limits is None
            else [min(n, limit) for n, limit in zip(lengths, self._limits, strict=True)]
        )

    def __len__(self) -> int:
        """The number of batches an iteration gives (TypeError when it is unknown: a loader without
        length)."""
        if self._mode == "min_size":
            lengths = [_length(x) for x in self._flattened] + list(self._limits or [])
            total = min(lengths) if lengths else 0
        else:
            lengths = self._limited_lengths()
            total = (sum if self._mode == "sequential" else max)(lengths) if lengths else 0
        if not math.isfinite(total):
            raise TypeError("a CombinedLoader over an iterable without length has no length")
        return int(total)

    def __iter__(self) -> CombinedLoader:
        self._iterator = getattr(self, f"_{self._mode}")()
        return self

    def __next__(self) -> tuple[Any, int, int]:
        if self._iterator is None:
            iter(self)
        return next(self._iterator)  # type: ignore[arg-type]

    def reset(self) -> None:
        """Forget the current iteration (the next one starts from the beginning)."""
        self._iterator = None

    # ---- the modes: generators of (batch, batch_idx, dataloader_idx) ---------------------------------------
    def _max_size_cycle(self) -> Iterator[tuple[Any, int, int]]:
        iterators = [iter(x) for x in self._flattened]
        consumed = [False] * len(iterators)
        for batch_idx in _count():
            out = []
            for i, iterator in enumerate(iterators):
                try:
                    out.append(next(iterator))
                except StopIteration:
                    consumed[i] = True
                    if all(consumed):
                        return
                    iterators[i] = iter(self._flattened[i])  # start the shorter one again
                    out.append(next(iterators[i]))
            yield unflatten(out, self._shape), batch_idx, 0

    def _min_size(self) -> Iterator[tuple[Any, int, int]]:
        iterators = [iter(x) for x in self._flattened]
        for batch_idx in _count():
            try:
                out = [next(iterator) for iterator in iterators]
            except StopIteration:
                return
            yield unflatten(out, self._shape), batch_idx, 0

    def _max_size(self) -> Iterator[tuple[Any, int, int]]:
        iterators = [iter(x) for x in self._flattened]
        done = object()
        for batch_idx in _count():
            out = [next(iterator, done) for iterator in iterators]
            if all(value is done for value in out):
                return
            yield unflatten([None if value is done else value for value in out], self._shape), batch_idx, 0

    def _sequential(self) -> Iterator[tuple[Any, int, int]]:
        limits = self._limits or [math.inf] * len(self._flattened)
        for dataloader_idx, (iterable, limit) in enumerate(zip(self._flattened, limits, strict=True)):
            if limit <= 0:
                continue
            for batch_idx, batch in enumerate(iterable):  # one loader at a time (one set of workers)
                yield batch, batch_idx, dataloader_idx
                if batch_idx + 1 >= limit:
                    break


def _count() -> Iterator[int]:
    batch_idx = 0
    while True:
        yield batch_idx
        batch_idx += 1
