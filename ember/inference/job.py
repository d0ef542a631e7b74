"""The ``ember predict`` job: dataset in, resumable per-fragment parquet out, with progress.

    read (parquet or images, via ember.data; one fragment = one file or row group)
      -> tag each row with its fragment (and its global row number when there is no id/path)
      -> map_batches(CheckpointPredictor, concurrency=workers)     (local pool, or Ray Data actors)
      -> ordered stream of outputs, cut back into fragments
      -> ResumableParquetWriter: part-<fragment>.parquet + _manifest.json, each written atomically

Fragments already in the manifest are never read again, so a re-run after a kill computes only
what is missing. The output keeps the input's order.
"""

from __future__ import annotations

import itertools
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import pyarrow as pa

from ember.errors import ConfigError, DataError
from ember.fs import RemotePath, storage_path

FRAGMENT = "__fragment"


@dataclass
class PredictSummary:
    output: str
    rows: int  # rows written by this run
    total_rows: int  # rows in the output folder
    fragments: int  # fragments computed by this run
    skipped: int  # fragments found finished from an earlier run
    seconds: float
    files: list[str] = field(default_factory=list)

    def line(self) -> str:
        rate = self.rows / self.seconds if self.seconds else 0.0
        skipped = f"; {self.skipped} already done, skipped" if self.skipped else ""
        return (
            f"wrote {self.rows:,} rows from {self.fragments} fragments in {self.seconds:.1f}s "
            f"({rate:,.0f} rows/s){skipped}; {self.total_rows:,} "
            f"rows in {len(self.files)} files under {self.output}"
        )


def open_dataset(path: str) -> Any:
    """A parquet file or folder of parquet files, else a folder of images (with their paths)."""
    import ember.data

    target = storage_path(path).expanduser()
    if not target.exists():
        raise DataError(
            f"--data {path} does not exist; pass a parquet file, a folder of parquet files or of images"
        )
    if target.is_file() and target.suffix == ".parquet" or target.is_dir() and any(target.rglob("*.parquet")):
        return ember.data.read_parquet(str(target))
    return ember.data.read_images(str(target), include_paths=True)


def predict_to_parquet(
    data: str,
    output: str,
    ckpt: str,
    *,
    model: str | None = None,
    config: str | None = None,
    batch_size: int = 256,
    workers: int | None = None,
    threads: int | None = None,
    num_gpus: float | None = None,
    input_column: str = "auto",
    keep: list[str] | None = None,
    scale: float | None = None,
    normalize: tuple[float, float] | None = None,
    shape: tuple[int, ...] | None = None,
    overwrite: bool = False,
    max_task_retries: int = 0,
    ray_address: str | None = None,
    progress: bool | TextIO = True,
    trust_checkpoint_class: bool = False,
) -> PredictSummary:
    """Run a checkpoint's Module over ``data`` and write parquet outputs into folder ``output``.

    The Module class is ``model`` (``file.py:Class`` or ``package.module.Class``) or the training
    ``config``'s ``model.class_path``; the class path recorded in the checkpoint is imported only
    with ``trust_checkpoint_class=True``. ``output`` holds only ember's files: resuming checks that
    the job and the input files (paths, sizes, mtimes) are unchanged; ``overwrite`` starts over,
    removing only files ember wrote there.

    Example:
        >>> summary = predict_to_parquet("test.parquet", "predictions/", "last.ckpt",   # doctest: +SKIP
        ...                              model="model.py:ClassicNet", workers=2)
    """
    from ember.checkpoint import load_checkpoint
    from ember.data import ResumableParquetWriter, file_fingerprint
    from ember.inference.predictor import CheckpointPredictor, check_inputs, resolve_module_class

    _check_options(batch_size, workers, threads, num_gpus, max_task_retries)
    _check_folders(data, output)
    start = time.perf_counter()
    load_checkpoint(ckpt)  # a missing, truncated or unsafe file fails here, once, not in every worker
    spec = resolve_module_class(ckpt, model, config, trust_checkpoint_class)
    dataset = open_dataset(data)
    tasks = dataset.fragments()
    if not tasks:
        raise DataError(f"--data {data} holds no rows")
    first = _first_rows(dataset)
    columns = list(first)
    keep_columns = [c for c in (keep if keep is not None else ("id", "path")) if c in columns]
    if keep is not None and len(keep_columns) < len(keep):
        missing = sorted(set(keep) - set(columns))
        raise ConfigError(f"--keep {','.join(missing)}: no such column; the data has columns {columns}")
    add_row = not keep_columns and all(t.num_rows is not None for t in tasks)
    if add_row:
        keep_columns = ["row"]
    if first:
        check_inputs(first, input_column, tuple(keep_columns), shape)
    stat = storage_path(ckpt).stat()
    job = {
        "checkpoint": str(storage_path(ckpt).resolve()),
        "checkpoint_bytes": stat.st_size,
        "checkpoint_mtime_ns": stat.st_mtime_ns,
        "model": spec,
        "input_column": input_column,
        "keep": keep_columns,
        "scale": scale,
        "normalize": list(normalize) if normalize else None,
        "shape": list(shape) if shape else None,
    }
    writer = ResumableParquetWriter(
        output,
        [t.description for t in tasks],
        job,
        overwrite=overwrite,
        # file_fingerprint reads a RemotePath as it reads a Path (stat, str); its hint says Path only
        input_files=file_fingerprint(_input_files(data)),  # type: ignore[arg-type]
    )
    todo = writer.todo()
    skipped = len(tasks) - len(todo)
    total = sum(tasks[i].num_rows or 0 for i in todo) if all(t.num_rows is not None for t in tasks) else None
    meter = Progress(total, progress)
    rows_before = writer.rows_written
    if todo:
        offsets = [0, *itertools.accumulate(t.num_rows or 0 for t in tasks)]
        tagged = _tagged_dataset(tasks, todo, offsets, add_row)
        gpus = _default_gpus() if num_gpus is None else num_gpus
        pool = workers or (max(1, int(_gpu_count() / gpus)) if gpus else os.cpu_count() or 1)
        predictions = tagged.map_batches(
            CheckpointPredictor,
            batch_size=batch_size,
            concurrency=pool,
            num_gpus=gpus or None,
            num_cpus=threads,
            max_task_retries=max_task_retries,
            fn_constructor_kwargs={
                "ckpt_path": str(storage_path(ckpt).resolve()),
                "model": spec,
                "input_column": input_column,
                "keep": (*keep_columns, FRAGMENT),
                "scale": scale,
                "normalize": normalize,
                "shape": shape,
            },
        )
        with _execution(ray_address):
            for index, table in _by_fragment(predictions.iter_internal_blocks(), todo, meter):
                writer.write(index, table)
    writer.finish()
    meter.close()
    return PredictSummary(
        output=str(writer.path),
        rows=writer.rows_written - rows_before,
        total_rows=writer.rows_written,
        fragments=len(todo),
        skipped=skipped,
        seconds=time.perf_counter() - start,
        files=[str(f) for f in writer.files()],
    )


def _check_options(
    batch_size: int, workers: int | None, threads: int | None, num_gpus: float | None, retries: int
) -> None:
    """Numbers that cannot work are refused by name (0 workers used to mean 'the default', silently)."""
    if batch_size < 1:
        raise ConfigError(f"--batch-size {batch_size}; use a positive number of rows")
    if workers is not None and workers < 1:
        raise ConfigError(
            f"--workers {workers}: use at least 1 worker process (leave it out for one per core or GPU)"
        )
    if threads is not None and threads < 1:
        raise ConfigError(
            f"--threads {threads}: use at least 1 torch thread per worker (leave it out for the default)"
        )
    if num_gpus is not None and not num_gpus >= 0:
        raise ConfigError(
            f"--num-gpus {num_gpus}: use 0 (CPU) or a positive number of GPUs per worker, e.g. 1 or 0.5"
        )
    if retries < 0:
        raise ConfigError(f"--retries {retries}: use 0 or a positive number of retries")


def _check_folders(data: str, output: str) -> None:
    """The output folder must be a folder, and must not be (or be inside) the input folder."""
    out, source = storage_path(output).expanduser().resolve(), storage_path(data).expanduser().resolve()
    if out.exists() and not out.is_dir():
        raise ConfigError(
            f"--output {output} is a file; pass a folder (new or empty) for the part-*.parquet files"
        )
    if source.is_dir() and (out == source or source in out.parents):
        raise ConfigError(
            f"--output {output} is inside --data {data}: the outputs would mix with the inputs; "
            "pick an output folder outside the data folder"
        )


def _input_files(data: str) -> list[Path | RemotePath]:
    """Every file the job may read: their paths, sizes and mtimes guard a resume against changed inputs."""
    target = storage_path(data).expanduser().resolve()
    if target.is_file():
        return [target]
    return [p for p in target.rglob("*") if p.is_file()]


def _first_rows(dataset: Any) -> dict[str, np.ndarray]:
    """The first row of the data as a numpy batch (its columns and shapes), or {} when it is empty."""
    from ember.data import block_to_numpy

    tasks = dataset.fragments()
    first = next(iter(tasks[0].read()), None)
    return block_to_numpy(first.slice(0, 1)) if first is not None else {}


def _tagged_dataset(tasks: list[Any], todo: list[int], offsets: list[int], add_row: bool) -> Any:
    """A Dataset reading fragments ``todo``, each row tagged with its fragment index."""
    import ember.data

    def tagged(index: int) -> Any:
        task = tasks[index]

        def read() -> Iterator[pa.Table]:
            row = offsets[index]
            for block in task.read():
                n = block.num_rows
                block = block.append_column(FRAGMENT, pa.array(np.full(n, index, np.int64)))
                if add_row:
                    block = block.append_column("row", pa.array(np.arange(row, row + n, dtype=np.int64)))
                row += n
                yield block

        return replace(task, read=read)  # its description, row count and cpu_heavy kept

    return ember.data.from_fragments([tagged(i) for i in todo], name="ReadFragments")


def _by_fragment(
    blocks: Iterator[pa.Table], todo: list[int], meter: Progress
) -> Iterator[tuple[int, pa.Table | None]]:
    """Cut the ordered output stream back into whole fragments (empty ones included), in order."""
    pending = iter(todo)
    current = next(pending)
    parts: list[pa.Table] = []
    for block in blocks:
        if not block.num_rows:
            continue
        tags = block.column(FRAGMENT).to_numpy()
        meter.update(block.num_rows)
        cuts = np.flatnonzero(np.diff(tags)) + 1
        for start, stop in zip([0, *cuts], [*cuts, len(tags)], strict=True):
            fragment = int(tags[start])
            while fragment != current:  # everything before it is finished
                yield current, _concat(parts)
                parts = []
                following = next(pending, None)
                if following is None:
                    raise DataError(
                        f"output rows of fragment {fragment} arrived out of order; this is a bug in ember"
                    )
                current = following
            parts.append(block.slice(start, stop - start).drop_columns([FRAGMENT]))
    yield current, _concat(parts)
    for rest in pending:
        yield rest, None


def _concat(parts: list[pa.Table]) -> pa.Table | None:
    if not parts:
        return None
    return pa.concat_tables(parts).combine_chunks() if len(parts) > 1 else parts[0]


def _gpu_count() -> int:
    from ember.data import cuda_device_count

    return cuda_device_count()  # never initializes CUDA here: the forked workers need it untouched


def _default_gpus() -> float:
    return 1.0 if _gpu_count() else 0.0


class _execution:
    """Run through Ray Data (joining ``address``) instead of the local pool, for this job only."""

    def __init__(self, address: str | None) -> None:
        self.address = address

    def __enter__(self) -> None:
        from ember.data import DataContext

        self.context = DataContext.get_current()
        self.before = self.context.execution
        if self.address is not None:
            from ember.deadlines import connect_ray

            connect_ray(None if self.address in ("", "local") else self.address, what="ember predict --ray")
            self.context.execution = "ray"

    def __exit__(self, *exc: Any) -> None:
        self.context.execution = self.before


class Progress:
    """rows/s and ETA on stderr: redrawn in place on a terminal, a line every few seconds otherwise."""

    def __init__(self, total: int | None, enabled: bool | TextIO = True) -> None:
        self.total, self.done = total, 0
        self.stream: TextIO | None = (sys.stderr if enabled is True else enabled) or None
        self.start = self.last = time.perf_counter()
        self.tty = bool(self.stream is not None and getattr(self.stream, "isatty", lambda: False)())

    def update(self, rows: int) -> None:
        self.done += rows
        now = time.perf_counter()
        if self.stream is not None and now - self.last >= (0.25 if self.tty else 2.0):
            self.last = now
            self._show(end="\r" if self.tty else "\n")

    def line(self) -> str:
        elapsed = max(time.perf_counter() - self.start, 1e-9)
        rate = self.done / elapsed
        if self.total:
            left = (self.total - self.done) / rate if rate else float("inf")
            eta = time.strftime("%H:%M:%S", time.gmtime(left)) if left != float("inf") else "?"
            return (
                f"predict: {self.done:,}/{self.total:,} rows ({100 * self.done / self.total:.0f}%) | "
                f"{rate:,.0f} rows/s | ETA {eta}"
            )
        return f"predict: {self.done:,} rows | {rate:,.0f} rows/s"

    def _show(self, end: str) -> None:
        assert self.stream is not None
        self.stream.write(self.line() + end)
        self.stream.flush()

    def close(self) -> None:
        if self.stream is not None and self.done:
            self._show(end="\n")
