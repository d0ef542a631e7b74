"""Where a write's jobs run: on the driver, or (``execution="ray"``) in Ray tasks beside the blocks.

A write is planned on the driver from row counts alone (`ember.data.write_layout`): a job per
output file (or per Datasink ``write`` call), numbered from 0, made by the caller's
``make_job(index, pieces)`` -- which is where a file writer names the file and records it as
assigned before anything runs. `run_jobs` then runs the jobs and yields their results in order:

- locally, one after another on the blocks the local executor streams;
- on Ray, each job in a Ray task that receives its blocks as arguments: the data goes from the
  task that made a block to the task that writes it (on the same node when Ray can), never
  through the driver, which only sees references, row counts and the jobs' small results
  (``write_ray.py``).

Closing the results early (an error, on the driver or in a job) returns only after every job that
was started has finished or been cancelled, so the caller can then remove what they wrote.

Example:
    >>> import ember.data
    >>> source = WriteInput(None, ember.data.range(5).iter_internal_blocks)   # no plan: runs here
    >>> jobs = run_jobs(source, {"max_rows": 2}, lambda k, pieces: lambda blocks: (k, pieces))
    >>> [result for result, _node in jobs]
    [(0, [(0, 0, 2)]), (1, [(0, 2, 2)]), (2, [(0, 4, 1)])]
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from typing import Any

from ember.data.write_layout import index_pieces, plan_files

#: ``make_job(index, pieces) -> job``; ``job(blocks) -> result`` with pieces ``(block index, start, rows)``.
MakeJob = Callable[[int, list[tuple[int, int, int]]], Callable[[list[Any]], Any]]


@dataclass
class WriteInput:
    """What a write reads: the plan (for Ray) and a function streaming its blocks locally."""

    node: Any
    stream: Callable[[], Iterator[Any]]

    def on_ray(self) -> bool:
        from ember.data.context import DataContext

        return self.node is not None and DataContext.get_current().execution == "ray"


def run_jobs(
    source: WriteInput,
    layout: dict[str, Any],
    make_job: MakeJob,
    *,
    on_first: Callable[[Any], None] | None = None,
    driver_node_only: bool = False,
) -> Generator[tuple[Any, Any], None, None]:
    """``(result, node id or None)`` of each job, in order; ``on_first(schema)`` runs before the first job."""
    if source.on_ray():
        from ember.data.write_ray import run_on_ray

        return run_on_ray(source.node, layout, make_job, on_first, driver_node_only)
    return _run_here(source.stream(), layout, make_job, on_first)


def _run_here(
    blocks: Iterator[Any], layout: dict[str, Any], make_job: MakeJob, on_first: Callable[[Any], None] | None
) -> Generator[tuple[Any, Any], None, None]:
    from ember.data.block import block_nbytes

    items = ((block, 0, block.num_rows, block_nbytes(block)) for block in blocks)
    try:
        for index, pieces in enumerate(plan_files(items, **layout)):
            if index == 0 and on_first is not None:
                on_first(pieces[0][0].schema)
            sources, indexed = index_pieces(pieces)
            yield make_job(index, indexed)(sources), None
    finally:
        close = getattr(blocks, "close", None)
        if close is not None:
            close()
