"""``read_datasource``: a user's ``Datasource`` (Ray's plug-in API, ``ember/data/datasource.py``) as a
Dataset."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa

from ember.data.block import batch_to_block
from ember.data.dataset import Dataset
from ember.data.datasource import check_datasource, get_read_tasks, parallelism_for
from ember.data.plan import Read
from ember.data.ray_args import ray_compatible
from ember.data.read.task import ReadTask, Source


@ray_compatible
def read_datasource(
    datasource: Any, *, parallelism: int = -1, override_num_blocks: int | None = None, **_: Any
) -> Dataset:
    """Read a custom ``Datasource`` (``ember.data.Datasource`` subclass, written as for Ray): each of
    its ``ReadTask`` s is one read task, run in order. ``override_num_blocks`` (or the older
    ``parallelism``) is the number of tasks asked of ``get_read_tasks``; by default Ray's rule
    (2 per CPU, fewer for small data). Ray's scheduling options are accepted and change nothing.

    Ray passes other keyword arguments only to the legacy ``create_reader`` API (ignoring them
    otherwise); ember supports only ``get_read_tasks``, so it refuses them by name rather than drop them.

    Example:
        >>> import ember.data, pyarrow as pa
        >>> from ember.data import BlockMetadata, Datasource, ReadTask
        >>> class Letters(Datasource):
        ...     def estimate_inmemory_data_size(self):
        ...         return None
        ...     def get_read_tasks(self, parallelism, per_task_row_limit=None, data_context=None):
        ...         return [ReadTask(lambda c=c: [pa.table({"c": [c]})], BlockMetadata(1, None, None, None))
        ...                 for c in "ab"]
        >>> ember.data.read_datasource(Letters()).take_all()
        [{'c': 'a'}, {'c': 'b'}]
    """
    check_datasource(datasource)
    blocks = parallelism_for(datasource, parallelism, override_num_blocks)
    name = f"Read{datasource.get_name()}"
    return Dataset(Read(Source(name, lambda: _ember_tasks(datasource, blocks, name))))


def _ember_tasks(datasource: Any, parallelism: int, name: str) -> list[ReadTask]:
    tasks = []
    for index, task in enumerate(get_read_tasks(datasource, parallelism)):
        metadata = task.metadata
        files = list(getattr(metadata, "input_files", None) or [])
        tasks.append(
            ReadTask(
                read=_blocks_of(task, name),
                description=f"{name} task {index}",
                num_rows=getattr(metadata, "num_rows", None),
                paths=files or None,
            )
        )
    return tasks


def _blocks_of(task: Any, name: str) -> Callable[[], Iterator[pa.Table]]:
    """The user's task's blocks as Arrow tables (Ray's blocks may also be pandas frames or dicts)."""

    def read() -> Iterator[pa.Table]:
        for block in task():
            yield batch_to_block(block, f"{name}'s read task")

    return read
