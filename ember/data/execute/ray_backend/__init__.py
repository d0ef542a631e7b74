"""The Ray backend: the same plan, run as Ray Data operations on a Ray cluster.

``DataContext.execution = "ray"`` (or ``EMBER_DATA_EXECUTION=ray``) sends every Dataset of this
process through here; ``Dataset.to_ray()`` hands back the ``ray.data.Dataset`` for direct use.
Nothing here imports Ray until a plan is run (``import ember.data`` stays Ray-free).

One concept per file:

- ``session.py``: joining (or starting) Ray; ember's Data settings Ray needs.
- ``resources.py``: CPUs per task/actor so that pools and readers never deadlock.
- ``udfs.py``: the picklable callables Ray runs (ember's reads, fused steps, class UDFs, groups).
- ``translate.py``: plan node -> ``ray.data`` operation, node by node (the table is there).
- ``ember_task.py``: operators Ray has no equal for, run as ember's own code in a Ray task.
- ``watchdog.py``: one clear error instead of a hang when a node is lost and Ray cannot recover.
Writes on Ray (each output file in a Ray task beside its blocks) live in the writing layer above,
``ember/data/write_ray.py``, and use this package's session, resources and watchdog.

Results equal the local executor's for the same data: exactly where order is defined (reads, maps,
sort, zip, limit, union, repartition without shuffle, streaming_split, groupby aggregations, which
come out in key order as locally), as multisets where it is not (random_shuffle, randomize_block_order,
repartition(shuffle=True), join, map_groups). Iterator state and resume replay the epoch's stream
and skip what was delivered, which is exact wherever the Ray stream is a pure function of (plan,
epoch): every operator above except map_groups, whose row order within a group on Ray depends on
the order in which shuffle blocks arrive: a mid-epoch resume of such a plan is refused by the iterator
(`Dataset._why_not_replayable`), which knows the resume point.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ember.data.plan import Node
from ember.data.tensor_types import restore_trust

if TYPE_CHECKING:
    import ray.data


def stream(node: Node, epoch: int = 0) -> Iterator[pa.Table]:
    """The blocks ``node`` produces in epoch ``epoch``, computed by Ray Data, in order; one DataError
    instead of a hang when a node is lost and Ray cannot recover (``watchdog.py``)."""
    from ember.data.execute.ray_backend.session import connected_ray

    ray = connected_ray()  # first: no Ray installed, or a cluster that does not answer, is one line
    from ember.data.execute.ray_backend.watchdog import watched

    dataset = to_ray_dataset(node, epoch)
    blocks = dataset.iter_batches(batch_size=None, batch_format="pyarrow", prefetch_batches=1)
    for block in watched(blocks, ray, lambda: _stop_execution(dataset)):
        if block.num_rows:
            yield restore_trust(block)  # pickled columns trusted where ember's code produced them


def _stop_execution(dataset: Any) -> None:
    """Shut down Ray's streaming executor of ``dataset`` (Ray keeps it on a private attribute; without
    it the abandoned execution would go on until the process exits)."""
    executor = getattr(dataset, "_current_executor", None)
    if executor is not None:
        executor.shutdown(force=True)


def to_ray_dataset(node: Node, epoch: int = 0) -> ray.data.Dataset:
    """Translate an ember plan into a lazy ``ray.data.Dataset`` (see ``translate.py``)."""
    from ember.data.execute.ray_backend.session import connected_ray

    connected_ray()  # before translate imports ray.data
    from ember.data.execute.ray_backend.translate import translate

    return translate(node, epoch)


__all__ = ["stream", "to_ray_dataset"]
