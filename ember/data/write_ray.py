"""Writes on Ray: every job (an output file, a Datasink ``write`` call) runs in a Ray task beside its blocks.

The driver runs the plan as Ray Data and streams only *references* to its output blocks with their
row counts and sizes (``iter_internal_ref_bundles``, in order: ``preserve_order``). From those it
plans the files (`ember.data.write_layout`, the same rule as a local write, so the same files with
the same rows and names), and submits each job as a Ray task whose arguments are the job and the
blocks it needs: Ray resolves them where the task runs. Tasks are placed as Ray Data places its own
write tasks (``DataContext.scheduling_strategy``, SPREAD by default; near the blocks when they are
larger than ``large_args_threshold``). A task returns only its small result (row count, a Datasink's
return value) and the id of its node.

At most ``2 x cluster CPUs`` jobs are in flight (the blocks they hold stay bounded). Results come
back in submission order. When the caller stops early (an error), the jobs in flight are waited for, up
to ``_SETTLE_S`` seconds, so nothing writes after the caller cleaned up; if some do not settle in time,
`JobsStillRunning` says so and the caller leaves its write marked pending. They are not cancelled: Ray
reports a cancelled task done while its worker may still be running it (a cancel interrupts the task when
it reaches Python again), so a cancelled job could still create its file after the caller took the
write's files back. In flight are at most ``2 x cluster CPUs`` jobs of one file each.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Generator, Iterator
from typing import Any

from ember.errors import DataError

_SETTLE_S = 60.0


class JobsStillRunning(DataError):
    """Write tasks that were cancelled did not finish in time: their files may still appear."""


def run_on_ray(
    node: Any,
    layout: dict[str, Any],
    make_job: Callable,
    on_first: Callable[[Any], None] | None,
    driver_node_only: bool,
) -> Generator[tuple[Any, Any], None, None]:
    """``(result, node id)`` of each job, in order (see the module's text)."""
    from ember.data.execute.ray_backend import to_ray_dataset
    from ember.data.execute.ray_backend.resources import cpu_shares
    from ember.data.execute.ray_backend.session import connected_ray
    from ember.data.write_layout import index_pieces, plan_files

    ray = connected_ray()
    options: dict[str, Any] = {"num_cpus": cpu_shares(ray, node)[0], "max_retries": 3}
    if driver_node_only:  # a Datasink that cannot write from other nodes (Ray's supports_distributed_writes)
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(
            ray.get_runtime_context().get_node_id(), soft=False
        )
    task = _job_task.remote_function()
    limit = max(2, 2 * int(ray.cluster_resources().get("CPU", 1)))
    from ember.data.execute.ray_backend.watchdog import alive_nodes

    alive = alive_nodes(ray)
    schemas: list[Any] = []
    sizes: dict[int, int] = {}
    in_flight: collections.deque = collections.deque()
    try:
        for index, pieces in enumerate(
            plan_files(_items(ray, to_ray_dataset(node), schemas, sizes), **layout)
        ):
            if index == 0 and on_first is not None:
                on_first(schemas[0] if schemas else None)
            blocks, indexed = index_pieces(pieces)
            placed = (
                task.options(**options)
                if driver_node_only
                else task.options(
                    **options, scheduling_strategy=_placement(ray, sum(sizes.get(id(b), 0) for b in blocks))
                )
            )
            in_flight.append(placed.remote(make_job(index, indexed), *blocks))
            while len(in_flight) >= limit:
                yield _result(ray, in_flight.popleft(), alive)
        while in_flight:
            yield _result(ray, in_flight.popleft(), alive)
    finally:
        _settle(ray, list(in_flight))


def _placement(ray: Any, size: int) -> Any:
    """Ray Data's rule for its own write tasks: its ``scheduling_strategy`` (SPREAD: writes spread over the
    nodes), or for arguments over ``large_args_threshold`` ``scheduling_strategy_large_args`` (DEFAULT:
    Ray places the task near its blocks, so big blocks are not moved)."""
    context = ray.data.DataContext.get_current()
    if size > context.large_args_threshold:
        return context.scheduling_strategy_large_args
    return context.scheduling_strategy


def _items(
    ray: Any, dataset: Any, schemas: list[Any], sizes: dict[int, int]
) -> Iterator[tuple[Any, int, int, int]]:
    """``(block ref, start, rows, bytes)`` of the dataset's output, in order; the first schema into
    ``schemas``,
    each block's size into ``sizes`` (by the ref's id)."""
    from ember.data.execute.ray_backend.watchdog import watched

    for bundle in watched(_bundles(dataset), ray):
        if not schemas and bundle.schema is not None and bundle.num_rows():
            schemas.append(_arrow_schema(bundle.schema))
        for entry, part in zip(bundle.blocks, bundle.slices, strict=True):
            rows = entry.metadata.num_rows
            if rows is None:
                rows = ray.get(_count_rows.remote(entry.ref))
            start, count = (0, rows) if part is None else (part.start_offset, part.num_rows)
            size = entry.metadata.size_bytes or 0
            sizes[id(entry.ref)] = size
            yield entry.ref, start, count, size * count // rows if rows else 0


def _bundles(dataset: Any) -> Iterator[Any]:
    """Ray's ref bundles, started lazily: on the watchdog's thread, so that starting (which runs shuffles)
    is watched for a lost node too."""
    yield from dataset.iter_internal_ref_bundles()


def _result(ray: Any, ref: Any, alive: dict[str, str]) -> Any:
    """A write task's result; Ray's error after a lost node becomes one DataError naming it
    (``watchdog.py``)."""
    from ember.data.execute.ray_backend.watchdog import after_node_loss

    try:
        return ray.get(ref)
    except Exception as error:
        named = after_node_loss(error, alive, ray)
        if named is None:
            raise
        raise named from error


def _arrow_schema(schema: Any) -> Any:
    import pyarrow as pa

    return schema if isinstance(schema, pa.Schema) else getattr(schema, "base_schema", schema)


def _count_rows_fn(block: Any) -> int:
    return len(block) if not hasattr(block, "num_rows") else block.num_rows


class _Remote:
    """``ray.remote(fn)`` made on first use (Ray is imported only when a write runs on it)."""

    def __init__(self, fn: Callable) -> None:
        self.fn, self.remote_fn = fn, None

    def remote_function(self) -> Any:
        """The one ``ray.remote`` of ``fn`` (made once: Ray exports a function to the cluster each time
        it is wrapped anew, and every worker then fetches it again before its first call)."""
        import ray

        if self.remote_fn is None:
            self.remote_fn = ray.remote(num_cpus=0)(self.fn)
        return self.remote_fn

    def remote(self, *args: Any) -> Any:
        return self.remote_function().remote(*args)


_count_rows = _Remote(_count_rows_fn)


def _run_job(job: Callable[[list[Any]], Any], *blocks: Any) -> tuple[Any, str]:
    """In the Ray task: the job on its blocks (Arrow tables ember trusts, as the stream gives them)."""
    import pyarrow as pa
    import ray

    from ember.data.tensor_types import restore_trust

    tables = [
        restore_trust(b if isinstance(b, pa.Table) else pa.Table.from_pandas(b, preserve_index=False))
        for b in blocks
    ]
    return job(tables), ray.get_runtime_context().get_node_id()


def _settle(ray: Any, refs: list[Any]) -> None:
    """Wait until the jobs still in flight are done, so none writes after this returns."""
    if not refs:
        return
    done, running = ray.wait(refs, num_returns=len(refs), timeout=_SETTLE_S)
    if running:
        raise JobsStillRunning(
            f"{len(running)} Ray write tasks did not end within {_SETTLE_S:.0f} s after the "
            "write failed; the folder stays marked unfinished: write it again with mode='overwrite'"
        )


_job_task = _Remote(_run_job)
