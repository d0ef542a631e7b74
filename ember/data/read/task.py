"""A ReadTask reads one fragment (a file, a row group, a slice of memory) into blocks."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pyarrow as pa


@dataclass
class ReadTask:
    """One unit of reading: ``read()`` yields the blocks of one fragment."""

    read: Callable[[], Iterator[pa.Table]]
    #: What it reads, for error messages ("file a.parquet row group 3").
    description: str
    #: Rows it will produce, when known without reading (parquet metadata, in-memory data).
    num_rows: int | None = None
    #: True when decoding is CPU heavy (images): worth running in worker processes.
    cpu_heavy: bool = False
    #: The files it reads, when a custom Datasource's metadata names them (``Dataset.input_files``).
    paths: list[str] | None = None


@dataclass
class Source:
    """A named producer of ReadTasks; ``make_tasks`` runs at execution time (listing, metadata)."""

    name: str
    make_tasks: Callable[[], list[ReadTask]]
    #: The schema of what it reads, from metadata alone (None: only reading tells).
    schema: Callable[[], pa.Schema] | None = None
    #: The tasks of one epoch, when their order changes per epoch (a reader's ``shuffle=``); else None.
    epoch_tasks: Callable[[int], list[ReadTask]] | None = None
    #: Data already in memory, one block per task (Ray's from_items/from_pandas/... give a
    #: MaterializedDataset, whose ``num_blocks()`` answers before anything runs).
    in_memory: bool = False
    #: A file order drawn when the read was built (``shuffle="files"``, ``FileShuffleConfig(seed=None)``):
    #: that seed, and the same source with another seed; each execution draws anew (``execution_seed.py``).
    drawn_seed: int | None = None
    reseeded: Callable[[int], Source] | None = field(default=None, repr=False)
    _tasks: list[ReadTask] | None = field(default=None, repr=False)
    _epoch: tuple[int, list[ReadTask]] | None = field(default=None, repr=False)

    def tasks(self, epoch: int = 0) -> list[ReadTask]:
        """The read tasks of epoch ``epoch`` (listed once, then cached: they are a pure function of
        the inputs and the epoch). Row counts and files do not depend on the epoch, only the order."""
        if self.epoch_tasks is not None and epoch != 0:
            if self._epoch is None or self._epoch[0] != epoch:
                self._epoch = (epoch, self.epoch_tasks(epoch))
            return self._epoch[1]
        if self._tasks is None:
            self._tasks = self.make_tasks()
        return self._tasks
