"""A resumable parquet sink: one output file per input fragment, and a manifest.

A long job (batch inference over many files) is killed halfway. Run again, it must skip what is
finished, compute nothing twice and leave no duplicate or half-written file. So:

- Output of input fragment ``i`` (a file, or a parquet row group) goes to ``part-<i>.parquet``,
  written under a temporary name, fsynced, then renamed into place: a file under its final name is
  always complete, and a fragment is only ever written to one name, so rows cannot be duplicated.
- ``_manifest.json`` (also replaced atomically) records the inputs and the job (what produced the
  outputs: checkpoint, options), each finished fragment with its row count, and ``complete``.
- On start, temporary files of a killed run are deleted; a complete ``part-*`` file missing from
  the manifest (killed between the rename and the manifest update) is adopted, not recomputed; a
  manifest written for other inputs or another job is refused with an error naming the difference.

The sink only needs pyarrow: any ember.data pipeline can use it, the ``ember predict`` job does.

Example:
    >>> import tempfile, pyarrow as pa
    >>> out = tempfile.mkdtemp()
    >>> writer = ResumableParquetWriter(out, inputs=["a.parquet", "b.parquet"], job={"model": "v1"})
    >>> writer.todo()
    [0, 1]
    >>> writer.write(0, pa.table({"y": [1, 2]}))
    >>> ResumableParquetWriter(out, inputs=["a.parquet", "b.parquet"], job={"model": "v1"}).todo()
    [1]
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa

from ember.errors import DataError

MANIFEST = "_manifest.json"
_PART = re.compile(r"^part-(\d{5,})\.parquet$")
_TEMPORARY = re.compile(r"^\.(part-\d+\.parquet|_manifest\.json)\.tmp-\d+$")


def part_name(index: int) -> str:
    return f"part-{index:05d}.parquet"


class ResumableParquetWriter:
    """Per-fragment parquet outputs in folder ``path``, resumable after a kill."""

    def __init__(self, path: str | os.PathLike[str], inputs: list[str], job: dict[str, Any] | None = None,
                 overwrite: bool = False) -> None:
        self.path = Path(path).expanduser()
        self.inputs, self.job = list(inputs), dict(job or {})
        self.path.mkdir(parents=True, exist_ok=True)
        self.fragments: dict[int, dict[str, Any]] = {}
        self.adopted: list[int] = []
        self._clean_temporaries()
        manifest = self.path / MANIFEST
        if overwrite:
            self._remove_outputs()
        elif manifest.exists():
            self._resume(manifest)
        elif any(_PART.match(p.name) for p in self.path.iterdir()):
            raise DataError(
                f"{self.path} holds part-*.parquet files but no {MANIFEST}; they were not written by a resumable "
                "job. Use an empty output folder, or pass overwrite=True (--overwrite) to replace them"
            )
        self._adopt_orphans()
        self._save(complete=False)

    # ------------------------------------------------------------------ state

    def todo(self) -> list[int]:
        """Indices of the input fragments that still need computing, in order."""
        return [i for i in range(len(self.inputs)) if i not in self.fragments]

    @property
    def rows_written(self) -> int:
        return sum(f["rows"] for f in self.fragments.values())

    def files(self) -> list[Path]:
        """The output files, in input order."""
        return [self.path / f["file"] for _, f in sorted(self.fragments.items()) if f["file"]]

    # ------------------------------------------------------------------ writing

    def write(self, index: int, table: pa.Table | None) -> None:
        """Write fragment ``index``'s output (None or 0 rows: recorded as done, no file)."""
        if not 0 <= index < len(self.inputs):
            raise DataError(f"fragment {index} is outside the {len(self.inputs)} inputs of this job")
        if index in self.fragments:
            raise DataError(f"fragment {index} ({self.inputs[index]}) was already written; it would duplicate rows")
        rows = table.num_rows if table is not None else 0
        name = part_name(index) if rows else None
        if rows:
            import pyarrow.parquet as pq

            final = self.path / name
            temporary = self.path / f".{name}.tmp-{os.getpid()}"
            try:
                with open(temporary, "wb") as f:
                    pq.write_table(table, f)
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(temporary, final)
            finally:
                temporary.unlink(missing_ok=True)
        self.fragments[index] = {"file": name, "rows": rows}
        self._save(complete=False)

    def finish(self) -> None:
        """Mark the job complete (every fragment written)."""
        missing = self.todo()
        if missing:
            raise DataError(f"{len(missing)} fragments are not written yet (first: {self.inputs[missing[0]]})")
        self._save(complete=True)

    # ------------------------------------------------------------------ internals

    def _resume(self, manifest: Path) -> None:
        try:
            saved = json.loads(manifest.read_text())
        except (OSError, ValueError) as e:
            raise DataError(f"{manifest} is unreadable ({e}); pass overwrite=True (--overwrite) to start over") from None
        if saved.get("inputs") != self.inputs:
            raise DataError(
                f"{self.path} holds results for other inputs ({len(saved.get('inputs', []))} fragments, "
                f"first {(saved.get('inputs') or ['?'])[0]!r}); use a new output folder or pass overwrite=True "
                "(--overwrite)"
            )
        if saved.get("job") != json.loads(json.dumps(self.job)):
            differ = sorted(k for k in set(saved.get("job", {})) | set(self.job)
                            if saved.get("job", {}).get(k) != json.loads(json.dumps(self.job)).get(k))
            raise DataError(
                f"{self.path} holds results of a different job ({', '.join(differ)} changed); resuming would mix "
                "their outputs. Use a new output folder or pass overwrite=True (--overwrite)"
            )
        for key, entry in saved.get("fragments", {}).items():
            if entry["file"] is None or (self.path / entry["file"]).exists():
                self.fragments[int(key)] = entry

    def _adopt_orphans(self) -> None:
        """Complete files renamed into place just before a kill, before the manifest recorded them."""
        import pyarrow.parquet as pq

        for file in sorted(self.path.iterdir()):
            match = _PART.match(file.name)
            if not match or int(match.group(1)) in self.fragments or int(match.group(1)) >= len(self.inputs):
                continue
            try:
                rows = pq.ParquetFile(file).metadata.num_rows
            except Exception:  # not complete after all (another tool wrote it): recompute it
                file.unlink()
                continue
            self.fragments[int(match.group(1))] = {"file": file.name, "rows": rows}
            self.adopted.append(int(match.group(1)))

    def _clean_temporaries(self) -> None:
        for file in self.path.iterdir():
            if _TEMPORARY.match(file.name):
                file.unlink(missing_ok=True)

    def _remove_outputs(self) -> None:
        for file in self.path.iterdir():
            if _PART.match(file.name) or file.name == MANIFEST:
                file.unlink()

    def _save(self, complete: bool) -> None:
        state = {
            "version": 1,
            "complete": complete,
            "inputs": self.inputs,
            "job": self.job,
            "rows": self.rows_written,
            "fragments": {str(k): v for k, v in sorted(self.fragments.items())},
        }
        final = self.path / MANIFEST
        temporary = self.path / f".{MANIFEST}.tmp-{os.getpid()}"
        with open(temporary, "w") as f:
            json.dump(state, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, final)
        if sys.platform != "win32":
            fd = os.open(self.path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
