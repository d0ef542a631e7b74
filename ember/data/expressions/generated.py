"""Expressions that make new values rather than compute them from columns: ``random``,
``uuid``, ``monotonically_increasing_id`` (Ray Data 2.60).

Ray keys these on the index of the task that runs them. Ember's expressions run fused inside
tasks that do not know their index (as ``Dataset.random_sample`` explains), so:

- ``random(seed=s, reseed_after_execution=False)``: each block's generator is keyed by ``(s, a
  digest of the block's rows)``: the same data and seed give the same values on every execution,
  however many workers run it (Ray: the same, keyed by task). ``random()`` without a seed differs on
  every execution, as in Ray. ``random(seed=s)`` with Ray's default ``reseed_after_execution=True``
  needs the execution's index, which these tasks do not have: it is refused at construction.
- ``monotonically_increasing_id()``: as in Ray, the task id in the upper 31 bits and the row's number
  within the task in the lower 33 bits; the task id is drawn at random below 2³⁰ per task (Ray
  numbers its tasks, also below 2³⁰, so ids stay positive), so ids are increasing within a task and
  unique across tasks unless two of its ``n`` tasks draw the same id (probability about n²/2³¹).

Example:
    >>> import ember.data
    >>> from ember.data.expressions import col
    >>> ds = ember.data.range(4).with_column("r", random(seed=7, reseed_after_execution=False))
    >>> ds.take_all() == ds.take_all()
    True
"""

from __future__ import annotations

from typing import Any

from ember.data.block import Block
from ember.data.expressions.core import Evaluation, Expr
from ember.errors import ConfigError


class RandomExpr(Expr):
    """Uniform floats in [0, 1), one per row (Ray's ``RandomExpr``); built by ``random()``.

    Example:
        >>> RandomExpr(seed=3, reseed_after_execution=False)
        RANDOM(seed=3, reseed_after_execution=False)
    """

    _pyarrow_convertible = False
    _idempotent = False

    def __init__(self, seed: int | None = None, reseed_after_execution: bool = True) -> None:
        if seed is not None and reseed_after_execution:
            raise ConfigError(
                f"random(seed={seed}, reseed_after_execution=True) needs the execution's index, which "
                "ember's fused tasks do not know; pass reseed_after_execution=False (the same values "
                "on every execution) or no seed (new values every execution)"
            )
        self.seed, self.reseed_after_execution = seed, reseed_after_execution

    def _evaluate(self, table: Block, ctx: Evaluation) -> Any:
        import numpy as np
        import pyarrow as pa

        from ember.data.sample import block_digest

        key = None if self.seed is None else [int(self.seed) % 2**63, block_digest(table)]
        return pa.array(np.random.default_rng(key).random(table.num_rows), pa.float64())

    def __repr__(self) -> str:
        if self.seed is None:
            return "RANDOM()"
        return f"RANDOM(seed={self.seed}, reseed_after_execution={self.reseed_after_execution})"


class UUIDExpr(Expr):
    """A random (version 4) UUID string per row (Ray's ``UUIDExpr``); built by ``uuid()``.

    Example:
        >>> UUIDExpr()
        UUID()
    """

    _pyarrow_convertible = False
    _idempotent = False

    def _evaluate(self, table: Block, ctx: Evaluation) -> Any:
        import uuid as uuid_module

        import pyarrow as pa

        return pa.array([str(uuid_module.uuid4()) for _ in range(table.num_rows)], pa.string())

    def __repr__(self) -> str:
        return "UUID()"


class MonotonicallyIncreasingIdExpr(Expr):
    """Unique int64 ids, increasing within a task (Ray's ``MonotonicallyIncreasingIdExpr``); built
    by ``monotonically_increasing_id()`` (see the module text for how the task part is chosen).

    Example:
        >>> MonotonicallyIncreasingIdExpr()
        MONOTONICALLY_INCREASING_ID()
    """

    _pyarrow_convertible = False
    _idempotent = False

    def _evaluate(self, table: Block, ctx: Evaluation) -> Any:
        import numpy as np
        import pyarrow as pa

        rows = np.arange(ctx.rows_before, ctx.rows_before + table.num_rows, dtype=np.int64)
        return pa.array((np.int64(ctx.task_id) << np.int64(33)) | rows, pa.int64())

    def __repr__(self) -> str:
        return "MONOTONICALLY_INCREASING_ID()"


def random(*, seed: int | None = None, reseed_after_execution: bool = True) -> RandomExpr:
    """A uniform random float in [0, 1) per row (Ray's ``ray.data.expressions.random``; the seeding
    rules are in the module text).

    Example:
        >>> import ember.data
        >>> values = ember.data.range(5).with_column("r", random()).to_pandas()["r"]
        >>> bool(((values >= 0) & (values < 1)).all())
        True
    """
    return RandomExpr(seed=seed, reseed_after_execution=reseed_after_execution)


def uuid() -> UUIDExpr:
    """A random UUID4 string per row (Ray's ``ray.data.expressions.uuid``).

    Example:
        >>> import ember.data
        >>> ids = [r["u"] for r in ember.data.range(3).with_column("u", uuid()).take_all()]
        >>> len(set(ids)), len(ids[0])
        (3, 36)
    """
    return UUIDExpr()


def monotonically_increasing_id() -> MonotonicallyIncreasingIdExpr:
    """A unique int64 id per row, increasing within each task (Ray's
    ``ray.data.expressions.monotonically_increasing_id``).

    Example:
        >>> import ember.data
        >>> rows = ember.data.range(4).with_column("uid", monotonically_increasing_id()).take_all()
        >>> ids = [r["uid"] for r in rows]
        >>> ids == sorted(ids), [i & (2**33 - 1) for i in ids]
        (True, [0, 1, 2, 3])
    """
    return MonotonicallyIncreasingIdExpr()
