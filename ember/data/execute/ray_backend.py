"""The Ray backend: the same plan, run as Ray Data operations on a Ray cluster.

``DataContext.execution = "ray"`` (or ``EMBER_DATA_EXECUTION=ray``) sends every Dataset of this
process through here; ``to_ray(ds)`` hands back the ``ray.data.Dataset`` for direct use.

The translation, node by node:

- ``Read``: one Ray task per ember read task (file, row group, slice), with the per-block steps
  fused above it running inside that task, exactly as the local executor fuses them.
- ``ActorMap`` (a callable class): ``ray.data.Dataset.map_batches(..., concurrency=size)`` on an
  actor pool. Each actor builds the class once; ``batch_size``, ``num_gpus`` and
  ``max_task_retries`` carry over. Steps after it run in the same actor.
- ``Limit`` and ``Union``: Ray's own ``limit`` and ``union``.

Resources never deadlock: Ray Data gives each actor one CPU by default, so a pool of 2 plus the read
tasks cannot all run on 2 CPUs and the job waits forever. Unless ``num_cpus`` is given, every actor
and read task asks for ``min(1, cluster CPUs / (pool size + 1))``, which always fits; each actor sets
its torch threads to ``max(1, round(num_cpus))``. Order is preserved (``preserve_order``), as the
local executor's is. Blocks stay Arrow tables; tensor columns keep their Arrow extension types.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa

from ember.data.plan import ActorMap, Limit, Node, Read, Union, fused_chain
from ember.data.tensor_types import mark_trust, restore_trust
from ember.data.transforms import Transform, apply_transforms
from ember.errors import ConfigError


def _ray() -> Any:
    try:
        import ray
        import ray.data
    except ImportError:
        raise ConfigError("execution='ray' needs Ray: pip install 'ray[data]'") from None
    if not ray.is_initialized():
        ray.init(address=os.environ.get("RAY_ADDRESS"))
    return ray


def stream(node: Node) -> Iterator[pa.Table]:
    """The blocks ``node`` produces, computed by Ray Data, in order."""
    dataset = to_ray_dataset(node)
    for block in dataset.iter_batches(batch_size=None, batch_format="pyarrow", prefetch_batches=1):
        if block.num_rows:
            yield restore_trust(block)  # pickled columns trusted where ember's code produced them


def to_ray_dataset(node: Node) -> Any:
    """Translate an ember plan into a lazy ``ray.data.Dataset``."""
    ray = _ray()
    ray.data.DataContext.get_current().execution_options.preserve_order = True
    return _translate(node, ray, _cpu_share(ray, _largest_pool(node)))


def _largest_pool(node: Node) -> int:
    own = 0
    if isinstance(node, ActorMap):
        own = node.size if isinstance(node.size, int) else node.size[1]
    return max([own, 0] + [_largest_pool(child) for child in node.children()])


def _translate(node: Node, ray: Any, share: float) -> Any:
    steps, base = fused_chain(node)
    transforms = [s.transform for s in steps]
    if isinstance(base, Read):
        return _read(base, transforms, ray, share)
    if isinstance(base, ActorMap):
        return _actors(base, transforms, ray, share)
    if isinstance(base, Limit):
        upstream = _translate(base.input, ray, share).limit(base.n)
    elif isinstance(base, Union):
        first, *rest = [_translate(child, ray, share) for child in base.inputs]
        upstream = first.union(*rest) if rest else first
    else:
        raise ConfigError(
            f"the Ray backend runs reads, maps, map_batches, limit and union; {base.name} is not one of them. "
            "Run this dataset with DataContext.execution='auto', or call ray.data's own method on to_ray(ds)"
        )
    if not transforms:
        return upstream
    return upstream.map_batches(_Apply(transforms), batch_size=None, batch_format="pyarrow",
                                num_cpus=share)


def _cpu_share(ray: Any, pool_size: int) -> float:
    """CPUs per task or actor so that a pool of ``pool_size`` and one reader always fit."""
    cpus = float(ray.cluster_resources().get("CPU", 1.0))
    return min(1.0, math.floor(cpus / (pool_size + 1) * 100) / 100) or 0.01


class _Apply:
    """A picklable ``table -> tables`` function running ember transforms inside a Ray task."""

    def __init__(self, transforms: list[Transform]) -> None:
        self.transforms = transforms

    def __call__(self, table: pa.Table) -> Iterator[pa.Table]:
        for block in apply_transforms(iter([restore_trust(table)]), self.transforms):
            if block.num_rows:
                yield mark_trust(block)


class _ReadFragments:
    """Reads the ember read tasks whose indices arrive in a batch, then runs the fused steps."""

    def __init__(self, tasks: list[Any], transforms: list[Transform]) -> None:
        self.tasks, self.transforms = tasks, transforms

    def __call__(self, batch: pa.Table) -> Iterator[pa.Table]:
        for index in batch.column("task").to_pylist():
            for block in apply_transforms(self.tasks[index].read(), self.transforms):
                if block.num_rows:
                    yield mark_trust(block)


def _read(read: Read, transforms: list[Transform], ray: Any, share: float) -> Any:
    tasks = read.source.tasks()
    indices = ray.data.from_items([{"task": i} for i in range(len(tasks))], override_num_blocks=max(1, len(tasks)))
    return indices.map_batches(_ReadFragments(tasks, transforms), batch_size=1, batch_format="pyarrow",
                               num_cpus=share)


class RayActor:
    """A Ray actor holding one constructed ember class UDF (the model, loaded once)."""

    def __init__(self, make_transform: Callable[[], Transform], after: list[Transform], threads: int) -> None:
        import torch

        torch.set_num_threads(threads)
        self.step, self.after = make_transform(), after

    def __call__(self, table: pa.Table) -> Iterator[pa.Table]:
        for block in apply_transforms(self.step.apply(iter([restore_trust(table)])), self.after):
            if block.num_rows:
                yield mark_trust(block)


def _actors(node: ActorMap, after: list[Transform], ray: Any, share: float) -> Any:
    upstream = _translate(node.input, ray, share)
    size = node.size
    num_cpus = node.num_cpus if node.num_cpus is not None else share
    from ember.data.context import DataContext

    threads = DataContext.get_current().worker_torch_threads or max(1, round(num_cpus))
    options: dict[str, Any] = {"num_cpus": num_cpus}
    if node.num_gpus:
        options["num_gpus"] = node.num_gpus
    if node.max_task_retries:
        options["max_task_retries"] = node.max_task_retries
        options["max_restarts"] = node.max_task_retries
    return upstream.map_batches(
        RayActor, fn_constructor_args=(node.udf.build, after, threads), batch_size=node.batch_size,
        batch_format="pyarrow", compute=ray.data.ActorPoolStrategy(
            size=size if isinstance(size, int) else None,
            min_size=None if isinstance(size, int) else size[0], max_size=None if isinstance(size, int) else size[1],
        ), **options,
    )
