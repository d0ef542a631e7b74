"""``Dataset.random_sample``: keep each row with probability ``fraction``, order unchanged.

Ray seeds each task's generator with ``(seed, task index)``. Ember's transforms run fused inside
read tasks that do not know their index (and the Ray backend reschedules them), so with a seed the
generator is keyed by ``(seed, a digest of the block's contents)`` instead: the same dataset and
seed give the same sample however many workers run it. Without a seed every run differs, as in Ray.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import numpy as np
import pyarrow as pa

from ember.data.block import Block
from ember.data.transforms import Transform


def block_digest(block: Block) -> int:
    """A stable 64-bit fingerprint of the block's rows (IPC bytes cover only the rows it holds)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, block.schema) as writer:
        writer.write_table(block)
    return int.from_bytes(hashlib.blake2b(sink.getvalue(), digest_size=8).digest(), "little")


class RandomSample(Transform):
    """Keep each row independently with probability ``fraction``."""

    name = "RandomSample"
    runs_user_code = False

    def __init__(self, fraction: float, seed: int | None) -> None:
        self.fraction, self.seed = fraction, seed

    def apply(self, blocks: Iterator[Block]) -> Iterator[Block]:
        for block in blocks:
            key = None if self.seed is None else [self.seed, block_digest(block)]
            keep = np.random.default_rng(key).random(block.num_rows) < self.fraction
            yield block.filter(pa.array(keep))
