"""Spilling to a private scratch folder: what lets the all-to-all operators outgrow memory.

A run that spills gets its own folder ``<scratch root>/ember-spill.<pid>.<random>`` (created
exclusively by `tempfile.mkdtemp`, mode 0700). It is removed when the operator finishes, fails or is
abandoned (the generator's ``finally``), and, after a SIGKILL, by the next run that spills: only
folders matching ember's name whose owner process is gone are removed, so two runs sharing a root
never break each other and nothing ember did not write is touched.

Files are Arrow IPC streams (no pickling: reading one back runs no code). ``Buckets`` partitions a
stream of blocks by a per-row bucket id into one file per bucket; ``Run`` is one sequential file.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa

from ember.data.block import block_nbytes
from ember.errors import DataError
from ember.fs.atomic import process_alive
from ember.fs.changes import make_temporary_folder, remove_file, remove_temporary_folder

_FOLDER = re.compile(r"^ember-spill\.(\d+)\.[A-Za-z0-9_]+$")


def _reason(error: OSError) -> str:
    """The system's words for an OSError (pyarrow's carry a long 'Detail: ...' tail)."""
    if error.errno:
        return os.strerror(error.errno)
    return (error.strerror or str(error)).split(". Detail")[0]


def remove_stale_scratch(root: str | os.PathLike[str]) -> list[Path]:
    """Remove spill folders of runs that are no longer alive; returns what was removed.

    Example:
        >>> import tempfile
        >>> remove_stale_scratch(tempfile.mkdtemp())
        []
    """
    removed: list[Path] = []
    try:
        entries = list(Path(root).iterdir())
    except OSError:
        return removed
    for entry in entries:
        match = _FOLDER.match(entry.name)
        if match is None or entry.is_symlink() or not entry.is_dir() or process_alive(int(match.group(1))):
            continue
        try:
            if entry.stat().st_uid != os.getuid():
                continue
        except OSError:
            continue
        remove_temporary_folder(entry)
        removed.append(entry)
    return removed


class Scratch:
    """One operator's spill folder; ``close()`` removes it (idempotent)."""

    def __init__(self, root: str) -> None:
        remove_stale_scratch(root)
        try:
            self.path = make_temporary_folder(f"ember-spill.{os.getpid()}.", dir=root)
        except OSError as e:
            raise DataError(
                f"cannot make a spill folder in {root} ({_reason(e)}); set "
                "DataContext.scratch_dir to a writable folder with room, or raise memory_budget_bytes"
            ) from None
        self._files = 0
        #: Bytes written to disk so far (for stats).
        self.spilled_bytes = 0

    def new_file(self, label: str) -> Path:
        self._files += 1
        return self.path / f"{label}-{self._files:06d}.arrow"

    def close(self) -> None:
        remove_temporary_folder(self.path)


class Run:
    """A sequential spill file: blocks written in order, read back in order."""

    def __init__(self, scratch: Scratch, label: str) -> None:
        self.scratch, self.path = scratch, scratch.new_file(label)
        self._sink: pa.OSFile | None = None
        self._writer: pa.ipc.RecordBatchFileWriter | None = None
        #: Record batches per written block, so block i can be read back alone.
        self.block_batches: list[int] = []
        self.rows = 0
        self.nbytes = 0
        self.schema: pa.Schema | None = None

    def write(self, block: pa.Table) -> None:
        try:
            self._write(block)
        except OSError as e:  # a full disk, a file-size limit, a scratch folder made read-only
            raise self._failed(e) from None

    def _failed(self, error: OSError) -> DataError:
        """One line naming the file; the spill folder is removed now (a full disk gets its space back)."""
        with contextlib.suppress(OSError):
            if self._sink is not None:
                self._sink.close()
        self._writer = self._sink = None
        self.scratch.close()
        return DataError(
            f"spilling to {self.path} failed ({_reason(error)}); ember removed its spill folder "
            f"{self.scratch.path}. Free space there, set DataContext.scratch_dir to a folder with room, "
            "or raise memory_budget_bytes"
        )

    def _write(self, block: pa.Table) -> None:
        if block.num_rows == 0:
            return
        if self._writer is None:
            self.schema = block.schema
            self._sink = pa.OSFile(str(self.path), "wb")
            self._writer = pa.ipc.new_file(self._sink, block.schema)
        elif not block.schema.equals(self.schema):
            block = block.cast(self.schema)
        batches = block.to_batches()
        for batch in batches:
            self._writer.write_batch(batch)
        self.block_batches.append(len(batches))
        self.rows += block.num_rows
        size = block_nbytes(block)
        self.nbytes += size
        self.scratch.spilled_bytes += size

    def finish(self) -> None:
        if self._writer is not None:
            assert self._sink is not None  # opened with the writer
            try:
                self._writer.close()
                self._sink.close()
            except OSError as e:  # the last bytes did not fit
                raise self._failed(e) from None
            self._writer = None

    def blocks(self) -> Iterator[pa.Table]:
        """The blocks written, in order (one at a time in memory)."""
        self.finish()
        if not self.path.exists():
            return
        with pa.OSFile(str(self.path), "rb") as source:
            reader = pa.ipc.open_file(source)
            first = 0
            for count in self.block_batches:
                yield pa.Table.from_batches([reader.get_batch(first + i) for i in range(count)], self.schema)
                first += count

    def block(self, index: int) -> pa.Table:
        """Block ``index`` as written."""
        self.finish()
        first = sum(self.block_batches[:index])
        with pa.OSFile(str(self.path), "rb") as source:
            reader = pa.ipc.open_file(source)
            return pa.Table.from_batches(
                [reader.get_batch(first + i) for i in range(self.block_batches[index])], self.schema
            )

    def read_all(self) -> pa.Table | None:
        self.finish()
        if not self.path.exists():
            return None
        with pa.OSFile(str(self.path), "rb") as source:
            return pa.ipc.open_file(source).read_all()

    def remove(self) -> None:
        self.finish()
        remove_file(self.path)


class Buckets:
    """``n`` spill files; ``add(block, ids)`` appends each row to the file of its bucket id."""

    def __init__(self, scratch: Scratch, n: int, label: str) -> None:
        self.runs = [Run(scratch, f"{label}-b{i:05d}") for i in range(n)]

    def add(self, block: pa.Table, ids: np.ndarray) -> None:
        order = np.argsort(
            ids, kind="stable"
        )  # rows of one bucket become one contiguous slice, in input order
        ordered = block.take(pa.array(order))
        counts = np.bincount(ids, minlength=len(self.runs))
        start = 0
        for bucket, count in enumerate(counts):
            if count:
                self.runs[bucket].write(ordered.slice(start, int(count)))
            start += int(count)

    def finish(self) -> None:
        for run in self.runs:
            run.finish()
