"""Plan node -> ``ray.data`` operation. Every typed operator of ``ember.data.plan`` has a translation:

==========================  =====================================================================
ember operator              on Ray
==========================  =====================================================================
Read (+ fused steps)        one Ray task per ember read task, the fused steps inside it (as locally)
Map/MapBatches/Filter/...   ``map_batches`` running ember's fused steps (one task per block)
ActorMap (callable class)   ``map_batches(..., compute=ActorPoolStrategy)``: each actor builds the class
                            once
Limit, Zip, Mix             Ray's ``limit``, ``zip``, ``mix`` (Mix draws blocks by Ray's block layout:
                            the same rows, in its order)
Union                       one read of every input's fragments, in order (else ``ember_task.py``)
RandomShuffle               ``random_shuffle(seed)``, the seed drawn from (seed, epoch)
RandomizeBlockOrder         ``randomize_block_order(seed)``, the seed drawn from (seed, epoch)
Sort                        ``sort(keys, descending, boundaries)``
Repartition                 ``repartition(n)`` (after ``random_shuffle(seed)`` when shuffle=True)
StreamingRepartition        ``repartition(target_num_rows_per_block=n, strict=True)``
HashRepartition             ``repartition(n, keys=, sort=)``: rows with equal keys share a block, but
                            which block comes from Ray's hash, not ember's
Aggregate with keys         Count/Min/Max only: Ray's ``groupby(keys).aggregate`` into one block, sorted
                            by key (``native_aggregate.py``); else ``groupby(keys).map_groups`` with ember's
                            aggregations (only the keys and the columns they read go through the shuffle),
                            then ``sort(keys)``
Aggregate without keys      ember's aggregation in a Ray task (``ember_task.py``)
MapGroups                   ``groupby(keys).map_groups(fn)``
Join, Shard, RowRanges      ember's join / contiguous shard / row ranges in a Ray task (``ember_task.py``)
==========================  =====================================================================

Reads list the tasks of the epoch (``shuffle="files"`` orders files per epoch, as locally).
Order is preserved (``preserve_order``), as the local executor's is. Blocks stay Arrow tables;
tensor columns keep their Arrow extension types.
"""

from __future__ import annotations

from typing import Any

from ember.data import plan
from ember.data.execute.ray_backend import ember_task, udfs
from ember.data.execute.ray_backend.native_aggregate import SortedLocalRows, ray_aggregations
from ember.data.execute.ray_backend.resources import cpu_shares
from ember.data.execute.ray_backend.session import connected_ray, epoch_seed, ordered_datasets
from ember.data.mix import Mix
from ember.data.transforms import Transform


def translate(node: plan.Node, epoch: int = 0) -> Any:
    """A lazy ``ray.data.Dataset`` computing ``node`` for epoch ``epoch``."""
    ray = connected_ray()
    with ordered_datasets(ray):
        return _Translation(ray, epoch, *cpu_shares(ray, node)).dataset(node)


class _Translation:
    def __init__(self, ray: Any, epoch: int, share: float, actor_share: float) -> None:
        #: CPUs per Ray task, default CPUs per actor (``resources.py``)
        self.ray, self.epoch, self.share, self.actor_share = ray, epoch, share, actor_share

    def dataset(self, node: plan.Node) -> Any:
        steps, base = plan.fused_chain(node)
        transforms = [s.transform for s in steps]
        if isinstance(base, plan.Read):
            return self._read(base, transforms)
        if isinstance(base, plan.ActorMap):
            return self._actors(base, transforms)
        upstream = self._base(base)
        if not transforms:
            return upstream
        return upstream.map_batches(
            udfs.ApplySteps(transforms), batch_size=None, batch_format="pyarrow", num_cpus=self.share
        )

    def _base(self, node: plan.Node) -> Any:
        if isinstance(node, plan.Limit):
            return self.dataset(node.input).limit(node.n)
        if isinstance(node, plan.Union):
            parts = [plan.fused_chain(child) for child in node.inputs]
            reads = [(steps, base) for steps, base in parts if isinstance(base, plan.Read)]
            if len(reads) == len(parts):  # one read of every input's fragments
                return self._read_parts(
                    [(base.source.tasks(self.epoch), [s.transform for s in steps]) for steps, base in reads]
                )
            inputs = [self.dataset(child) for child in node.inputs]
            return ember_task.run_as_task(self.ray, ember_task.UnionOperator(), inputs, self.share)
        if isinstance(node, plan.Zip):
            first, *rest = [self.dataset(child) for child in node.inputs]
            return first.zip(*rest)
        if isinstance(node, Mix):  # Ray's own mix: the same rule over Ray's blocks (so its own block order)
            first, *rest = [self.dataset(child) for child in node.inputs]
            stop = self.ray.data.MixStoppingCondition(node.stopping_condition.value)
            return first.mix(*rest, weights=list(node.weights), stopping_condition=stop)
        if isinstance(node, plan.Join):
            inputs = [self.dataset(node.left), self.dataset(node.right)]
            return ember_task.run_as_task(self.ray, ember_task.JoinOperator(node), inputs, self.share)
        if isinstance(node, plan.Shard):
            operator: ember_task.Operator = ember_task.ShardOperator(node.index, node.n, node.equal)
            return ember_task.run_as_task(self.ray, operator, [self.dataset(node.input)], self.share)
        if isinstance(node, plan.RowRanges):
            operator = ember_task.RowRangesOperator(node.ranges)
            return ember_task.run_as_task(self.ray, operator, [self.dataset(node.input)], self.share)
        if isinstance(node, plan.AllToAll):
            return self._all_to_all(node, self.dataset(node.input))
        raise TypeError(f"unknown plan node {node!r}")

    def _all_to_all(self, node: plan.AllToAll, upstream: Any) -> Any:
        if isinstance(node, plan.RandomShuffle):
            return upstream.random_shuffle(seed=epoch_seed(node.seed, plan.order_epoch(node, self.epoch)))
        if isinstance(node, plan.RandomizeBlockOrder):
            return upstream.randomize_block_order(
                seed=epoch_seed(node.seed, plan.order_epoch(node, self.epoch))
            )
        if isinstance(node, plan.Sort):
            return upstream.sort(
                list(node.keys), descending=list(node.descending), boundaries=list(node.boundaries) or None
            )
        if isinstance(node, plan.Repartition):
            if node.shuffle:
                upstream = upstream.random_shuffle(seed=epoch_seed(node.seed, self.epoch))
            return upstream.repartition(node.n)
        if isinstance(node, plan.StreamingRepartition):
            return upstream.repartition(target_num_rows_per_block=node.target_num_rows_per_block, strict=True)
        if isinstance(node, plan.HashRepartition):
            return upstream.repartition(node.n, keys=list(node.keys), sort=node.sort)
        if isinstance(node, plan.Aggregate):
            if not node.keys:
                return ember_task.run_as_task(
                    self.ray, ember_task.WholeAggregate(node.aggs), [upstream], self.share
                )
            native = ray_aggregations(node.aggs, node.keys)
            if native is not None:
                return self._native_aggregate(node, upstream, native)
            upstream = _columns_aggregated(upstream, node, self.share)
            groups = upstream.groupby(list(node.keys), num_partitions=self._partitions()).map_groups(
                udfs.AggregateGroup(node.keys, node.aggs), batch_format="pyarrow", num_cpus=self.share
            )
            return groups.sort(list(node.keys))  # groups in key order, as the local executor gives them
        if isinstance(node, plan.MapGroups):
            assert (
                node.fn is not None
            )  # GroupedData.map_groups always gives one (None: the dataclass default)
            fn = udfs.MapGroup(node.keys, node.fn, node.batch_format, node.fn_args, node.fn_kwargs)
            grouped = upstream.groupby(
                list(node.keys) if node.keys else None,
                num_partitions=self._partitions() if node.keys else None,
            )
            return grouped.map_groups(fn, batch_format="pyarrow", num_cpus=self.share)
        raise TypeError(f"unknown all-to-all operator {node!r}")

    def _native_aggregate(self, node: plan.Aggregate, upstream: Any, aggs: list[Any]) -> Any:
        """Ray's own grouped aggregation, then the groups in key order with the local executor's
        column types (``native_aggregate.py``). Each block is reduced to one partial row per group
        where it lies (in parallel); one reducer merges the partials into one block, sorted in the
        same task: no second shuffle and no sort stages for what is one row per group."""
        grouped = upstream.groupby(list(node.keys), num_partitions=1).aggregate(*aggs)
        return grouped.map_batches(
            SortedLocalRows(node.keys), batch_size=None, batch_format="pyarrow", num_cpus=self.share
        )

    def _partitions(self) -> int:
        """Shuffle partitions of a groupby: one per cluster CPU (Ray's default of 200 hash partitions
        costs more than the grouping itself on a small cluster)."""
        return max(1, int(self.ray.cluster_resources().get("CPU", 1)))

    def _read(self, read: plan.Read, transforms: list[Transform]) -> Any:
        return self._read_parts([(read.source.tasks(self.epoch), transforms)])

    def _read_parts(self, parts: list[tuple[list[Any], list[Transform]]]) -> Any:
        """One Ray task per read task of every part, in order (a part: a read and its fused steps)."""
        items = [{"part": p, "task": i} for p, (tasks, _) in enumerate(parts) for i in range(len(tasks))]
        indices = self.ray.data.from_items(items, override_num_blocks=max(1, len(items)))
        return indices.map_batches(
            udfs.ReadFragments(parts), batch_size=1, batch_format="pyarrow", num_cpus=self.share
        )

    def _actors(self, node: plan.ActorMap, after: list[Transform]) -> Any:
        from ember.data.context import DataContext

        upstream = self.dataset(node.input)
        size = node.size
        num_cpus = node.num_cpus if node.num_cpus is not None else self.actor_share
        threads = DataContext.get_current().worker_torch_threads or max(1, round(num_cpus))
        options: dict[str, Any] = {"num_cpus": num_cpus}
        if node.num_gpus:
            options["num_gpus"] = node.num_gpus
        if node.max_task_retries:
            options["max_task_retries"] = node.max_task_retries
            options["max_restarts"] = node.max_task_retries
        fixed = isinstance(size, int)
        low, high = (None, None) if isinstance(size, int) else size
        pool = self.ray.data.ActorPoolStrategy(size=size if fixed else None, min_size=low, max_size=high)
        return upstream.map_batches(
            udfs.ClassUDFActor,
            fn_constructor_args=(node.udf.build, after, threads),
            batch_size=node.batch_size,
            batch_format="pyarrow",
            compute=pool,
            **options,
        )


def _columns_aggregated(upstream: Any, node: plan.Aggregate, num_cpus: float) -> Any:
    """``upstream`` cut to the keys and the columns the aggregations read, when each says which (as
    the local executor does): a grouped count then shuffles keys, not whole rows. A missing column is
    left to the aggregation's one-line error."""
    reads = [agg.columns_read() for agg in node.aggs]
    if any(columns is None for columns in reads):
        return upstream
    wanted = list(dict.fromkeys([*node.keys, *(c for columns in reads for c in columns)]))
    return upstream.map_batches(
        udfs.SelectColumns(wanted), batch_size=None, batch_format="pyarrow", num_cpus=num_cpus
    )
