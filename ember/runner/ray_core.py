"""The ``ray`` that a script sees under ember's runner: Ray core's session calls, ray.data and ray.train.

``ray.init(...)`` (``address="auto"`` included), ``ray.shutdown()``, ``ray.is_initialized()`` and
``ray.cluster_resources()`` do what ember's Ray backend does: with Ray installed they are Ray's own calls,
so the script joins the named cluster (or starts a local Ray, as Ray would) and ember's TorchTrainer and
ember.data then run on it; without Ray the script runs on this machine's processes, and ``ray.init`` says so
once. ``ray.data`` is ember.data and ``ray.train`` is ember.train. Any other name of Ray core
(``ray.remote``, ``ray.get``, ...) raises one line naming the call when it is used.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from ember.runner.hook import ray_module, refuse_call

_local_session = False  # ray.init() was called without Ray installed


def _real_ray() -> Any:
    """The real Ray (this module's `import ray` is ember's own, so the hook lets it through), or None."""
    try:
        import ray
    except ImportError:
        return None
    return ray


def init(address: str | None = None, *args: Any, **kwargs: Any) -> Any:
    """Ray's ``ray.init`` when Ray is installed; otherwise a local run, said once."""
    ray = _real_ray()
    if ray is not None:
        return ray.init(address, *args, **kwargs)
    global _local_session
    if not _local_session:
        asked = f"address={address!r}" if address else ""
        print(
            f"ember: ray.init({asked}): Ray is not installed, so this script's training and data run on this "
            "machine's processes (pip install ray to use a Ray cluster)",
            file=sys.stderr,
        )
    _local_session = True
    return None


def shutdown(*args: Any, **kwargs: Any) -> None:
    """Ray's ``ray.shutdown`` when Ray was started; ends the local session otherwise."""
    global _local_session
    _local_session = False
    ray = sys.modules.get("ray")  # never import Ray just to stop it
    if ray is not None:
        ray.shutdown(*args, **kwargs)


def is_initialized() -> bool:
    """Whether ``init`` ran (Ray's answer when Ray is installed)."""
    ray = sys.modules.get("ray")
    return _local_session or bool(ray is not None and ray.is_initialized())


def cluster_resources() -> dict[str, float]:
    """Ray's ``ray.cluster_resources()``; without Ray, this machine's CPUs, GPUs and memory in Ray's keys."""
    ray = None if _local_session else _real_ray()
    if ray is not None:
        return ray.cluster_resources()
    resources = {"CPU": float(os.cpu_count() or 1), "memory": float(_memory_bytes())}
    gpus = _gpu_count()
    if gpus:
        resources["GPU"] = float(gpus)
    return resources


def _memory_bytes() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


def _gpu_count() -> int:
    torch = sys.modules.get("torch")
    return torch.cuda.device_count() if torch is not None and torch.cuda.is_available() else 0


def __getattr__(name: str) -> Any:
    if name in ("data", "train"):
        return ray_module(f"ray.{name}")
    if name.startswith("_"):
        raise AttributeError(f"module 'ray' (ember's runner) has no attribute {name!r}")

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise refuse_call(f"ray.{name}")

    refused.__name__ = refused.__qualname__ = name
    return refused
