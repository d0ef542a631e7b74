"""Train/test splits of Ray Data 2.60: ``train_test_split(stratify=)`` and ``streaming_train_test_split``.

Stratified (Ray's ``_stratified_train_test_split``): rows grouped by the ``stratify`` column, groups in
ascending key order; in each group of ``n`` rows the last ``int(n * test_size)`` go to test, the rest
(first) to train, so every class keeps its proportion.

Streaming: each row goes to one side as it streams, by a per-row draw that the train and the test
dataset make identically (so the two are disjoint and together hold every row):

- ``"hash"``: train when ``blake2b(str(key), 8 bytes) < (1 - test_size) * 2**64``, Ray's exact rule, so
  the split equals Ray's row for row;
- ``"random"``: train when a uniform draw is below ``1 - test_size``. Ray seeds each task's generator
  with (task index, seed); ember keys it by (seed, a digest of the block's rows), as ``random_sample``
  does, and without a seed draws one when the split is made, so both sides still agree.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ember.data.block import Block
from ember.data.sample import block_digest
from ember.data.transforms import Transform
from ember.errors import ConfigError

SPLIT_TYPES = ("random", "hash")


def stratified_split(table: pa.Table, column: str, test_size: float) -> tuple[pa.Table, pa.Table]:
    """(train, test) of ``table``, each class of ``column`` split ``1 - test_size`` / ``test_size``.

    Example:
        >>> table = pa.table({"y": [1, 0, 1, 0, 1, 0, 0, 0]})
        >>> train, test = stratified_split(table, "y", 0.25)
        >>> train["y"].to_pylist(), test["y"].to_pylist()
        ([0, 0, 0, 0, 1, 1, 1], [0])
    """
    if column not in table.column_names:
        raise ConfigError(
            f"train_test_split(stratify={column!r}): no such column; the columns are {table.column_names}"
        )
    order = pc.sort_indices(table, sort_keys=[(column, "ascending")]).to_numpy()  # stable: input order kept
    keys = table[column].take(pa.array(order)).to_numpy(zero_copy_only=False)
    starts = [0] + [i for i in range(1, len(keys)) if keys[i] != keys[i - 1]] + [len(keys)]
    train, test = [], []
    for start, end in zip(starts[:-1], starts[1:], strict=False):
        in_test = int((end - start) * test_size)
        train.append(order[start : end - in_test])
        test.append(order[end - in_test : end])
    take = lambda parts: table.take(pa.array(np.concatenate(parts) if parts else [], pa.int64()))  # noqa: E731
    return take(train), take(test)


def check_streaming_split(test_size: Any, split_type: str, hash_column: str | None, seed: int | None) -> None:
    """Ray's argument rules for ``streaming_train_test_split``, as one-line ConfigErrors."""
    where = "streaming_train_test_split"
    if isinstance(test_size, bool) or not isinstance(test_size, (int, float)) or not 0 < test_size < 1:
        raise ConfigError(f"{where}(test_size={test_size!r}); test_size must be between 0 and 1")
    if split_type not in SPLIT_TYPES:
        raise ConfigError(f"{where}(split_type={split_type!r}); use 'random' or 'hash'")
    if split_type == "hash" and seed is not None:
        raise ConfigError(f"{where}: seed is not supported for a hash split (the hash decides); drop seed=")
    if split_type == "random" and hash_column is not None:
        raise ConfigError(
            f"{where}: hash_column is only for split_type='hash'; drop it or pass split_type='hash'"
        )
    if split_type == "hash" and hash_column is None:
        raise ConfigError(
            f"{where}(split_type='hash') needs hash_column=<the column whose value decides the side>"
        )


class TrainTestSide(Transform):
    """Keeps the rows of one side (train or test) of a streaming train/test split."""

    name = "TrainTestSplit"
    runs_user_code = False

    def __init__(
        self, train: bool, test_size: float, split_type: str, hash_column: str | None, seed: int | None
    ) -> None:
        self.train, self.test_size, self.split_type = train, float(test_size), split_type
        self.hash_column, self.seed = hash_column, seed

    def apply(self, blocks: Iterator[Block]) -> Iterator[Block]:
        for block in blocks:
            in_train = self._in_train(block)
            yield block.filter(pa.array(in_train if self.train else ~in_train))

    def _in_train(self, block: Block) -> np.ndarray:
        if self.split_type == "random":
            assert (
                self.seed is not None
            )  # a random split always has one (streaming_train_test_split draws it)
            return (
                np.random.default_rng([self.seed, block_digest(block)]).random(block.num_rows)
                < 1 - self.test_size
            )
        if self.hash_column not in block.column_names:
            raise ConfigError(
                f"streaming_train_test_split(hash_column={self.hash_column!r}): no such column; "
                f"the columns are {block.column_names}"
            )
        bound = (1 - self.test_size) * (1 << 64)
        keys = block[self.hash_column].to_numpy()  # str() of these values is what Ray hashes
        return np.array([_hash64(key) < bound for key in keys], dtype=bool)


def _hash64(key: Any) -> int:
    return int.from_bytes(hashlib.blake2b(str(key).encode(), digest_size=8).digest(), "big")
