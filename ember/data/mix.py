"""``Dataset.mix``: several datasets interleaved block by block to target row ratios (Ray Data 2.60).

Ray's rule, kept exactly: every output block is one whole input block; the next one comes from the
input that has fallen furthest behind its share of the rows output so far (``weight_i * total -
rows_i``, weights normalized), ties going to the larger weight, then to the earlier input. No
randomness is involved, so a mixed stream is a pure function of its inputs' block streams: an
iterator resumed from its ``state_dict()`` replays the epoch and lands on exactly the same batches
(random operators below the mix still draw from their (seed, epoch)).

Stopping (``MixStoppingCondition``): ``STOP_ON_LONGEST_DROP`` (the default of ``Dataset.mix``) drops
an input once it is exhausted and ends with the longest; ``STOP_ON_SHORTEST`` ends as soon as any
input is exhausted. ember looks one block ahead on each input, so "exhausted" is known the moment an
input's last block is output; Ray learns it when the input's upstream reports completion, which can
let a few more blocks of the other inputs through. ember's answer is Ray's when inputs are ready.

Example:
    >>> a = ember.data.from_items([{"x": i} for i in (1, 2, 3, 4)]).repartition(2)
    >>> b = ember.data.from_items([{"x": i} for i in (5, 6, 7, 8)]).repartition(2)
    >>> [r["x"] for r in a.mix(b, weights=[0.5, 0.5]).take_all()]
    [1, 2, 5, 6, 3, 4, 7, 8]
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa

from ember.data.block_streams import schema_difference, schemas_compatible
from ember.data.plan import Node
from ember.data.ray_errors import DataValueError
from ember.errors import DataError


class MixStoppingCondition(enum.Enum):
    """When a mix ends (Ray's ``ray.data.MixStoppingCondition``, same names and values).

    ``STOP_ON_SHORTEST``: when the first input is exhausted; the others are truncated.
    ``STOP_ON_LONGEST_DROP``: when the longest input is exhausted; shorter ones drop out when they run
    out, and the later blocks come from the inputs still going.

    Example:
        >>> a, b = ember.data.range(4, override_num_blocks=2), ember.data.range(2, override_num_blocks=1)
        >>> a.mix(b, stopping_condition=ember.data.MixStoppingCondition.STOP_ON_SHORTEST).count()
        4
        >>> a.mix(b).count()  # STOP_ON_LONGEST_DROP
        6
    """

    STOP_ON_SHORTEST = "stop_on_shortest"
    STOP_ON_LONGEST_DROP = "stop_on_longest_drop"


@dataclass(eq=False)
class Mix(Node):
    """The inputs' blocks interleaved to the target row ratios ``weights`` (normalized, all positive)."""

    inputs: list[Node]
    weights: tuple[float, ...]
    stopping_condition: MixStoppingCondition
    name = "Mix"

    def children(self) -> list[Node]:
        return list(self.inputs)

    @property
    def sums_input_rows(self) -> bool:
        """Every input row comes out when nothing is dropped; STOP_ON_SHORTEST's cut depends on the blocks."""
        return self.stopping_condition is MixStoppingCondition.STOP_ON_LONGEST_DROP


def mix_node(inputs: list[Node], weights: Sequence[float] | None, stopping_condition: object) -> Mix:
    """Check ``Dataset.mix``'s arguments as Ray does (ValueError for the weights) and build the node.

    Example:
        >>> mix_node([ember.data.range(1)._node] * 2, [1, 3], MixStoppingCondition.STOP_ON_SHORTEST).weights
        (0.25, 0.75)
    """
    if weights is None:
        weights = [1.0] * len(inputs)
    weights = list(weights)
    if len(weights) != len(inputs):
        raise DataValueError(
            f"Dataset.mix: {len(inputs)} datasets but {len(weights)} weights; "
            "pass one weight per dataset, this one first"
        )
    if any(isinstance(w, bool) or not isinstance(w, (int, float)) or not w > 0 for w in weights):
        raise DataValueError(f"Dataset.mix(weights={weights}); every weight must be a positive number")
    if not isinstance(stopping_condition, MixStoppingCondition):
        raise DataValueError(
            f"Dataset.mix(stopping_condition={stopping_condition!r}); pass "
            "ember.data.MixStoppingCondition.STOP_ON_SHORTEST or .STOP_ON_LONGEST_DROP"
        )
    total = float(sum(weights))
    return Mix(list(inputs), tuple(w / total for w in weights), stopping_condition)


class _Lookahead:
    """One input's non-empty blocks with the next one already fetched (None once it is exhausted)."""

    def __init__(self, blocks: Iterator[pa.Table]) -> None:
        self._blocks = blocks
        self.next: pa.Table | None = None
        self.advance()

    def advance(self) -> pa.Table | None:
        """Hand out the fetched block and fetch the one after it."""
        current = self.next
        self.next = next((b for b in self._blocks if b.num_rows), None)
        return current

    def close(self) -> None:
        close = getattr(self._blocks, "close", None)
        if close is not None:
            close()


def most_behind(weights: Sequence[float], rows: Sequence[int], live: Sequence[bool]) -> int:
    """The live input furthest behind its share of the rows so far (ties: larger weight, then first).

    Example:
        >>> most_behind([0.5, 0.5], [2, 0], [True, True]), most_behind([0.25, 0.75], [0, 0], [True, True])
        (1, 1)
    """
    total = sum(rows)
    best, best_key = -1, None
    for i, weight in enumerate(weights):
        if not live[i]:
            continue
        key = (weight * total - rows[i], weight)
        if best_key is None or key > best_key:
            best, best_key = i, key
    return best


def mix_streams(node: Mix, streams: list[Iterator[pa.Table]]) -> Iterator[pa.Table]:
    """The blocks of ``streams`` in the order ``node``'s weights and stopping condition give."""
    inputs = [_Lookahead(s) for s in streams]
    rows = [0] * len(inputs)
    shortest = node.stopping_condition is MixStoppingCondition.STOP_ON_SHORTEST
    first: pa.Schema | None = None
    try:
        while True:
            live = [i.next is not None for i in inputs]
            if shortest and not all(live):
                return
            index = most_behind(node.weights, rows, live)
            if index < 0:
                return
            block = inputs[index].advance()
            assert block is not None
            first = _checked_schema(first, block, index)
            rows[index] += block.num_rows
            yield block
    finally:
        for i in inputs:
            i.close()


def _checked_schema(first: pa.Schema | None, block: pa.Table, index: int) -> pa.Schema:
    """The mix's schema; a block whose columns differ is refused (Arrow would null-fill or promote)."""
    if first is None:
        return block.schema
    if not block.schema.equals(first) and not schemas_compatible(first, block.schema):
        raise DataError(
            f"mix: {schema_difference(first, block.schema, index)}; make the datasets' columns agree "
            "(select_columns, rename_columns, a map_batches that casts) before mix"
        )
    return first
