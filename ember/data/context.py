"""DataContext: process-wide execution settings, named after Ray Data's."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from typing import ClassVar


@dataclass
class DataContext:
    """Execution settings shared by every Dataset in this process.

    Example:
        >>> import ember.data
        >>> ctx = ember.data.DataContext.get_current()
        >>> ctx.max_inflight_bytes = 256 * 1024**2   # stream with at most ~256 MiB in flight
    """

    #: Upper bound on the bytes of task outputs produced but not yet consumed. The executor stops
    #: submitting tasks while it is over the bound, so a dataset larger than memory streams.
    max_inflight_bytes: int = 512 * 1024**2
    #: Rows per block for in-memory sources (range, from_items, from_numpy, ...).
    target_rows_per_block: int = 4096
    #: Worker processes for Python UDFs (None: all cores).
    num_workers: int | None = None
    #: "auto" runs plans with Python UDFs in worker processes and cheap plans in-process;
    #: "inline" runs everything in-process (debugging); "processes" always uses workers;
    #: "ray" runs plans as Ray Data operations on the Ray cluster (``ember.data.execute.ray_backend``).
    execution: str = field(default_factory=lambda: os.environ.get("EMBER_DATA_EXECUTION", "auto"))
    #: torch intra-op threads per worker (None: cores // workers, so workers do not oversubscribe).
    worker_torch_threads: int | None = None
    #: Deliver blocks in a deterministic order (needed for exact resume).
    preserve_order: bool = True
    #: Seconds a closing pool waits for a worker before killing it.
    worker_shutdown_timeout_s: float = 2.0
    #: Bytes the all-to-all operators (random_shuffle, sort, groupby, repartition, join) may hold
    #: in memory; past it they spill to ``scratch_dir``. Default: a quarter of the machine's RAM.
    memory_budget_bytes: int = field(default_factory=lambda: _physical_memory() // 4)
    #: Folder for spill files (a private subfolder per run, removed at the end; None: the system
    #: temporary folder). Leftovers of a killed run are removed when the next run starts spilling.
    scratch_dir: str | None = None
    #: Print one line per operator as it finishes (rows, blocks, time, peak memory).
    verbose_progress: bool = False
    _extra: dict = field(default_factory=dict, repr=False)

    _current: ClassVar[DataContext | None] = None

    @classmethod
    def get_current(cls) -> DataContext:
        """The process-wide context (created on first use).

        Example:
            >>> ember.data.DataContext.get_current().execution
            'auto'
        """
        if cls._current is None:
            cls._current = DataContext()
        return cls._current

    def scratch_root(self) -> str:
        """Where spill folders go.

        Example:
            >>> import os
            >>> os.path.isdir(ember.data.DataContext.get_current().scratch_root())
            True
        """
        return self.scratch_dir or tempfile.gettempdir()

    def workers(self) -> int:
        """Number of worker processes to use for Python UDFs."""
        return max(1, self.num_workers or os.cpu_count() or 1)


def _physical_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not POSIX: assume a small machine
        return 8 * 1024**3
