"""Seeding every random number generator a training run touches, and capturing/restoring them."""

from __future__ import annotations

import logging
import os
import random
import warnings
from typing import Any

import numpy as np
import torch

_SEED_ENV = "EMBER_GLOBAL_SEED"
_MIN_SEED, _MAX_SEED = 0, 2**32 - 1  # numpy's seed range (Lightning checks the same bounds)


def seed_everything(seed: int | None = None, workers: bool = False, verbose: bool = True) -> int:
    """Seed python's `random`, numpy and torch (CPU and every CUDA device), as Lightning's `seed_everything`.

    ``seed=None`` reads ``EMBER_GLOBAL_SEED`` (or Lightning's ``PL_GLOBAL_SEED``), else uses 0 (with a warning
    when ``verbose``). A seed outside numpy's range [0, 2**32 - 1] is a ValueError. ``workers=True`` also
    gives the workers of every DataLoader the Trainer runs distinct, reproducible numpy/python seeds.
    ``verbose`` logs "Seed set to N" (at INFO level, as Lightning).

    Example:
        >>> import ember
        >>> ember.seed_everything(42)
        42
    """
    if seed is None:
        seed = _seed_from_environment(verbose)
    elif not isinstance(seed, int):
        seed = int(seed)
    if not _MIN_SEED <= seed <= _MAX_SEED:
        raise ValueError(f"{seed} is not in bounds, numpy accepts from {_MIN_SEED} to {_MAX_SEED}")
    if verbose:
        logging.getLogger("ember").info(f"Seed set to {seed}")
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device
    os.environ[_SEED_ENV] = str(seed)
    os.environ["EMBER_SEED_WORKERS"] = "1" if workers else "0"
    return seed


def reset_seed() -> None:
    """Seed again with the seed seed_everything last set (quietly), as Lightning's `reset_seed`; nothing when
    none was set. The parallel strategies call it when they join the process group, as Lightning's do, so the
    RNG streams of training (dropout, the DataLoader's base seed) start where Lightning's start."""
    for name in (_SEED_ENV, "PL_GLOBAL_SEED"):
        if os.environ.get(name) is not None:
            workers = os.environ.get("EMBER_SEED_WORKERS", os.environ.get("PL_SEED_WORKERS", "0"))
            seed_everything(int(os.environ[name]), workers=bool(int(workers)), verbose=False)
            return


def _seed_from_environment(verbose: bool) -> int:
    for name in (_SEED_ENV, "PL_GLOBAL_SEED"):
        text = os.environ.get(name)
        if text is not None:
            try:
                return int(text)
            except ValueError:
                raise ValueError(f"Invalid seed specified via {name}: {text!r}") from None
    if verbose:
        warnings.warn("No seed found, seed set to 0", stacklevel=3)
    return 0


def seed_dataloader_worker(worker_id: int) -> None:
    """`worker_init_fn` that gives each DataLoader worker distinct, reproducible numpy/python seeds.

    torch already seeds each worker's torch generator from the loader's base seed; numpy is not,
    so without this every worker would produce the same numpy random numbers.
    """
    base = torch.initial_seed()  # base_seed + worker_id, set by torch in the worker
    random.seed(base)
    np.random.seed(base % 2**32)


def capture_rng_state() -> dict[str, Any]:
    """All RNG states as tensors and plain values, so a checkpoint loads with weights_only=True."""
    version, mt_state, gauss = random.getstate()
    np_state = np.random.get_state(legacy=True)  # the default: the (name, keys, pos, has_gauss, cached) tuple
    assert isinstance(np_state, tuple)  # the legacy form is a tuple (a dict only with legacy=False)
    state: dict[str, Any] = {
        "python": {"version": version, "state": list(mt_state), "gauss": gauss},
        "numpy": {
            "name": np_state[0],
            "keys": torch.from_numpy(np_state[1].astype(np.int64)),
            "pos": int(np_state[2]),
            "has_gauss": int(np_state[3]),
            "cached_gaussian": float(np_state[4]),
        },
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def restore_rng_state(state: dict[str, Any]) -> None:
    py = state["python"]
    random.setstate((py["version"], tuple(py["state"]), py["gauss"]))
    npst = state["numpy"]
    np.random.set_state(
        (
            npst["name"],
            npst["keys"].numpy().astype(np.uint32),
            npst["pos"],
            npst["has_gauss"],
            npst["cached_gaussian"],
        )
    )
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


class preserve_rng_state:  # noqa: N801 - used as a context manager, reads like one
    """Run a block (e.g. the sanity check) without changing the RNG streams training will see."""

    def __enter__(self) -> None:
        self._state = capture_rng_state()

    def __exit__(self, *exc: object) -> None:
        restore_rng_state(self._state)


class Determinism:
    """`Trainer(deterministic=True)` for the length of one run: the global torch flags it sets are put back
    afterwards, so a notebook's later, unrelated work is not slowed or broken by them.

    Example:
        >>> import torch
        >>> before = torch.are_deterministic_algorithms_enabled()
        >>> with Determinism(True):
        ...     torch.are_deterministic_algorithms_enabled()
        True
        >>> torch.are_deterministic_algorithms_enabled() == before
        True
    """

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __enter__(self) -> None:
        if not self.enabled:
            return
        self._saved = (
            torch.are_deterministic_algorithms_enabled(),
            torch.is_deterministic_algorithms_warn_only_enabled(),
            torch.backends.cudnn.benchmark,
            torch.backends.cudnn.deterministic,
            os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
        )
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True)
        torch.backends.cudnn.benchmark = False
        torch.backends.cudnn.deterministic = True

    def __exit__(self, *exc: object) -> None:
        if not self.enabled:
            return
        algorithms, warn_only, benchmark, cudnn_deterministic, cublas = self._saved
        torch.use_deterministic_algorithms(algorithms, warn_only=warn_only)
        torch.backends.cudnn.benchmark = benchmark
        torch.backends.cudnn.deterministic = cudnn_deterministic
        if cublas is None:
            os.environ.pop("CUBLAS_WORKSPACE_CONFIG", None)
        else:
            os.environ["CUBLAS_WORKSPACE_CONFIG"] = cublas
