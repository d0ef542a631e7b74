"""The file readers' ``shuffle`` argument (Ray's): ``None``, ``"files"`` or ``FileShuffleConfig(seed=...)``.

As in Ray, the files' order is shuffled before they are cut into read tasks, with
``np.random.default_rng(seed).shuffle`` where the seed is ``seed`` (``reseed_after_execution=False``)
or ``hash((seed, execution index)) % 2**32`` (the default): the same files in Ray's order. ember's
execution index is the epoch (``iter_internal_blocks(epoch)``, each pass of an iterator), so an
epoch's order is reproducible, which resuming needs; one-shot calls (``take_all``, ``materialize``)
run epoch 0. ``"files"`` and ``seed=None`` draw a placeholder seed when the dataset is built, which
each execution replaces (``ember/data/execution_seed.py``): a new order per run, as Ray draws one per
run, and an iterator keeps its draw in its state so it resumes exactly.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

import numpy as np

from ember.errors import ConfigError


@dataclass
class FileShuffleConfig:
    """How a file reader shuffles its files (Ray's class): ``seed`` (None: drawn anew) and whether
    each epoch reshuffles (``reseed_after_execution``, the default) or repeats one order.

    Example:
        >>> import ember.data, tempfile
        >>> folder = tempfile.mkdtemp()
        >>> for i in range(4):
        ...     _ = open(f"{folder}/{i}.csv", "w").write(f"f\\n{i}\\n")
        >>> config = ember.data.FileShuffleConfig(seed=7, reseed_after_execution=False)
        >>> [r["f"] for r in ember.data.read_csv(folder, shuffle=config).take_all()]
        [0, 2, 1, 3]
    """

    seed: int | None = None
    reseed_after_execution: bool = True

    def __post_init__(self) -> None:
        if self.seed is not None and (isinstance(self.seed, bool) or not isinstance(self.seed, int)):
            raise ConfigError(f"FileShuffleConfig(seed={self.seed!r}): seed must be an integer or None.")

    def get_seed(self, execution_idx: int = 0) -> int | None:
        """The seed of one execution (epoch), as Ray computes it.

        Example:
            >>> FileShuffleConfig(seed=3, reseed_after_execution=False).get_seed(5)
            3
        """
        if self.seed is None:
            return None
        if self.reseed_after_execution:
            return hash((self.seed, execution_idx)) % (2**32)  # hash of a tuple of ints: stable across runs
        return self.seed


def resolve_shuffle(shuffle: Any, where: str) -> FileShuffleConfig | None:
    """``shuffle`` as a config with a fixed seed (None: no shuffle); Ray's invalid values refused.

    Example:
        >>> resolve_shuffle(None, "read_csv") is None, resolve_shuffle("files",
        ...     "read_csv").reseed_after_execution
        (True, True)
    """
    if shuffle is None:
        return None
    if isinstance(shuffle, str) and shuffle == "files":
        return _drawn()
    seed, reseed = getattr(shuffle, "seed", None), getattr(shuffle, "reseed_after_execution", None)
    if (
        not isinstance(shuffle, FileShuffleConfig) and type(shuffle).__name__ != "FileShuffleConfig"
    ):  # Ray's own
        raise ConfigError(
            f"{where}: invalid value for 'shuffle': {shuffle!r}. Valid values are None, 'files', "
            "`FileShuffleConfig`."
        )
    if seed is None:
        return _drawn()  # Ray draws a new order every run
    return FileShuffleConfig(seed=seed, reseed_after_execution=bool(reseed))


def _drawn() -> FileShuffleConfig:
    """A config whose seed is a placeholder: each execution replaces it (``ember/data/execution_seed.py``)."""
    config = FileShuffleConfig(seed=secrets.randbits(31))
    config._drawn = True  # type: ignore[attr-defined]  # a mark, not a dataclass field
    return config


def is_drawn(config: FileShuffleConfig | None) -> bool:
    """Was the config's seed drawn by ember (no seed given), rather than the user's?"""
    return bool(getattr(config, "_drawn", False))


def shuffled_files(files: list[str], config: FileShuffleConfig, epoch: int) -> list[str]:
    """``files`` in the order of epoch ``epoch`` (Ray's: the same generator, the same shuffle).

    Example:
        >>> shuffled_files(["a", "b", "c"], FileShuffleConfig(seed=3, reseed_after_execution=False), 0)
        ['c', 'b', 'a']
    """
    order = list(files)
    np.random.default_rng(config.get_seed(epoch)).shuffle(order)
    return order
