"""A resumable parquet sink: one output file per input fragment, and a manifest.

A long job (batch inference over many files) is killed halfway. Run again, it must skip what is
finished, compute nothing twice, leave no duplicate or half-written file, never mix results of
changed inputs with old ones, and never touch a file it did not write. So:

- Output of input fragment ``i`` (a file, or a parquet row group) goes to ``part-<i>.parquet``,
  written with `ember.fs.atomic_write` (an exclusive, unpredictable temporary name, fsync, rename):
  a file under its final name is always complete, and a fragment is only ever written to one name,
  so rows cannot be duplicated. Each part carries the run's random token in its parquet metadata.
- ``_manifest.json`` (also replaced atomically) records the inputs and the job (what produced the
  outputs: checkpoint, options), the token, each finished fragment with its row count, and
  ``complete``. With ``input_files`` (path, size, mtime of every input file), that list is kept in
  ``_inputs.json`` and its digest in the manifest: a resume after an input changed is refused.
- The folder holds only ember's files: the manifest, ``_inputs.json``, parts the manifest lists or
  that carry the token, and temporaries. Anything else there is refused in one line, with or
  without ``overwrite``; ``overwrite`` removes only ember's files.
- On start, temporary files of a killed run are deleted; a complete ``part-*`` file with this run's
  token missing from the manifest (killed between the rename and the manifest update) is adopted,
  not recomputed; a manifest written for other inputs or another job is refused with an error
  naming the difference.

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

import contextlib
import hashlib
import json
import os
import re
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa

from ember.errors import DataError
from ember.fs import make_folders
from ember.fs.atomic import atomic_write, remove_stale_temporaries
from ember.fs.changes import remove_file
from ember.fs.storage import RemotePath, readable, storage_path

MANIFEST = "_manifest.json"
INPUT_FILES = "_inputs.json"
#: Parquet metadata key holding the token of the run that wrote a part (proof that ember wrote it).
TOKEN_KEY = b"ember.resumable.token"
_PART = re.compile(r"^part-(\d{5,})\.parquet$")
_LEGACY_TEMPORARY = re.compile(
    r"^\.(part-\d+\.parquet|_manifest\.json)\.tmp-\d+$"
)  # names ember used before atomic_write


def part_name(index: int) -> str:
    return f"part-{index:05d}.parquet"


def file_fingerprint(paths: list[Path]) -> list[dict[str, Any]]:
    """Path, size and modification time of each file: what a resume checks has not changed.

    Example:
        >>> import tempfile, pathlib
        >>> f = pathlib.Path(tempfile.mkdtemp()) / "x.parquet"; _ = f.write_bytes(b"1234")
        >>> file_fingerprint([f])[0]["bytes"]
        4
    """
    out = []
    for path in sorted(paths):
        stat = path.stat()
        out.append({"path": str(path), "bytes": stat.st_size, "mtime_ns": stat.st_mtime_ns})
    return out


class ResumableParquetWriter:
    """Per-fragment parquet outputs in folder ``path``, resumable after a kill."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        inputs: list[str],
        job: dict[str, Any] | None = None,
        overwrite: bool = False,
        input_files: list[dict[str, Any]] | None = None,
    ) -> None:
        self.path = storage_path(path).expanduser()  # a local Path, or a RemotePath (s3://, ...)
        self.inputs, self.job = list(inputs), dict(job or {})
        self.input_files = input_files
        if self.path.exists() and not self.path.is_dir():
            raise DataError(
                f"output {self.path} is a file; pass a folder (new or empty) for the part-*.parquet files"
            )
        self.fragments: dict[int, dict[str, Any]] = {}
        self.adopted: list[int] = []
        self.token = uuid.uuid4().hex
        with _writing_into(self.path):
            self._open(overwrite)

    def _open(self, overwrite: bool) -> None:
        make_folders(self.path)
        self._clean_temporaries()
        saved = self._read_manifest(overwrite)
        owned = self._refuse_foreign_files(saved)
        if overwrite:
            for file in owned:
                remove_file(file)
        elif saved is not None:
            self._resume(saved)
        self._adopt_orphans()
        self._save(complete=False)  # first: a folder never holds an _inputs.json without a manifest
        if self.input_files is not None:
            with atomic_write(self.path / INPUT_FILES, "w") as f:
                json.dump(self.input_files, f, indent=0)

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
            raise DataError(
                f"fragment {index} ({self.inputs[index]}) was already written; it would duplicate rows"
            )
        rows = table.num_rows if table is not None else 0
        name = part_name(index) if rows else None
        if table is not None and name is not None:  # name: only with rows
            import pyarrow.parquet as pq

            metadata = {**(table.schema.metadata or {}), TOKEN_KEY: self.token.encode()}
            with _writing_into(self.path), atomic_write(self.path / name) as f:
                pq.write_table(table.replace_schema_metadata(metadata), f)
        self.fragments[index] = {"file": name, "rows": rows}
        with _writing_into(self.path):
            self._save(complete=False)

    def finish(self) -> None:
        """Mark the job complete (every fragment written)."""
        missing = self.todo()
        if missing:
            raise DataError(
                f"{len(missing)} fragments are not written yet (first: {self.inputs[missing[0]]})"
            )
        with _writing_into(self.path):
            self._save(complete=True)

    # ------------------------------------------------------------------ internals

    def _read_manifest(self, overwrite: bool) -> dict[str, Any] | None:
        manifest = self.path / MANIFEST
        if not manifest.exists():
            return None
        try:
            saved = json.loads(manifest.read_text())
            if not isinstance(saved, dict) or not isinstance(saved.get("fragments", {}), dict):
                raise ValueError("not an ember manifest")
        except (OSError, ValueError) as e:
            # Without a readable manifest nothing here can be shown to be ember's: never delete it.
            raise DataError(
                f"{manifest} is unreadable ({e}); ember cannot tell which files it wrote, so it touches "
                "none: use a new output folder"
            ) from None
        return saved

    def _refuse_foreign_files(self, saved: dict[str, Any] | None) -> list[Path | RemotePath]:
        """ember's own files in the folder; refuses (one line) when anything else is there."""
        listed = {entry.get("file") for entry in (saved or {}).get("fragments", {}).values()}
        tokens = {t for t in ((saved or {}).get("token"), self.token) if t}
        owned: list[Path | RemotePath] = []
        foreign: list[Path | RemotePath] = []
        entries: list[Path | RemotePath] = sorted(self.path.iterdir())
        for entry in entries:
            name = entry.name
            ours = (
                name in (MANIFEST, INPUT_FILES)
                and saved is not None
                or name in listed
                or _PART.match(name)
                and _token_of(entry) in tokens
            )
            (owned if ours and entry.is_file() and not entry.is_symlink() else foreign).append(entry)
        if foreign:
            first = foreign[0].name
            more = f" and {len(foreign) - 1} more" if len(foreign) > 1 else ""
            raise DataError(
                f"output folder {self.path} holds files ember did not write ({first!r}{more}); ember only "
                "writes into a new or empty folder or one holding its own earlier outputs, and never "
                "deletes anything else: pick another --output folder"
            )
        return owned

    def _resume(self, saved: dict[str, Any]) -> None:
        if "input_files_sha256" not in saved and self.input_files is not None:
            raise DataError(
                f"{self.path} was started by an older ember that did not record its input files, so a "
                "resume cannot tell whether they changed; pass overwrite=True (--overwrite) to start over"
            )
        self._check_input_files(saved.get("input_files_sha256"))
        if saved.get("inputs") != self.inputs:
            raise DataError(
                f"{self.path} holds results for other inputs ({len(saved.get('inputs', []))} fragments, "
                f"first {(saved.get('inputs') or ['?'])[0]!r}); use a new output folder or pass "
                "overwrite=True (--overwrite)"
            )
        job = json.loads(json.dumps(self.job))
        if saved.get("job") != job:
            differ = sorted(
                k for k in set(saved.get("job", {})) | set(job) if saved.get("job", {}).get(k) != job.get(k)
            )
            raise DataError(
                f"{self.path} holds results of a different job ({', '.join(differ)} changed); resuming would "
                "mix their outputs. Use a new output folder or pass overwrite=True (--overwrite)"
            )
        self.token = saved.get("token") or self.token
        for key, entry in saved.get("fragments", {}).items():
            if entry["file"] is None or (self.path / entry["file"]).exists():
                self.fragments[int(key)] = entry

    def _check_input_files(self, saved_digest: str | None) -> None:
        if saved_digest == _digest(self.input_files):
            return
        before: list[dict[str, Any]] = []
        with contextlib.suppress(OSError, ValueError):  # only to name the file in the message
            before = json.loads((self.path / INPUT_FILES).read_text())
        now = {f["path"]: f for f in self.input_files or []}
        then = {f["path"]: f for f in before}
        changed = sorted(p for p in set(now) | set(then) if now.get(p) != then.get(p))
        what = f" ({changed[0]} {_how_changed(then.get(changed[0]), now.get(changed[0]))})" if changed else ""
        raise DataError(
            f"the input files changed since {self.path} was started{what}; resuming would mix results of old "
            "and new inputs. Pass overwrite=True (--overwrite) to start over, or use a new output folder"
        )

    def _adopt_orphans(self) -> None:
        """Complete files renamed into place just before a kill, before the manifest recorded them."""
        files: list[Path | RemotePath] = sorted(self.path.iterdir())
        for file in files:
            match = _PART.match(file.name)
            if not match or int(match.group(1)) in self.fragments or int(match.group(1)) >= len(self.inputs):
                continue
            if _token_of(file) != self.token:
                continue  # another run's leftovers were removed (overwrite) or refused above
            import pyarrow.parquet as pq

            self.fragments[int(match.group(1))] = {
                "file": file.name,
                "rows": pq.ParquetFile(readable(file)).metadata.num_rows,
            }
            self.adopted.append(int(match.group(1)))

    def _clean_temporaries(self) -> None:
        remove_stale_temporaries(self.path)
        for file in self.path.iterdir():
            if _LEGACY_TEMPORARY.match(file.name) and file.is_file() and not file.is_symlink():
                remove_file(file)

    def _save(self, complete: bool) -> None:
        state = {
            "version": 2,
            "complete": complete,
            "token": self.token,
            "inputs": self.inputs,
            "input_files_sha256": _digest(self.input_files),
            "job": self.job,
            "rows": self.rows_written,
            "fragments": {str(k): v for k, v in sorted(self.fragments.items())},
        }
        with atomic_write(self.path / MANIFEST, "w") as f:
            json.dump(state, f, indent=1)


@contextlib.contextmanager
def _writing_into(folder: Path | Any) -> Any:
    """A read-only folder, a full disk, a file-size limit: one line naming the output folder (the
    temporary file of the write that failed is already gone: `atomic_write` removes it)."""
    try:
        yield
    except OSError as e:
        reason = os.strerror(e.errno) if e.errno else (e.strerror or str(e)).split(". Detail")[0]
        raise DataError(
            f"cannot write into the output folder {folder} ({reason}); free some space, fix the "
            "folder's permissions, or write elsewhere"
        ) from None


def _token_of(file: Path | RemotePath) -> str | None:
    """The run token a part file carries, or None (not ember's, or not a complete parquet file)."""
    import pyarrow.parquet as pq

    if not file.is_file() or file.is_symlink():
        return None
    try:
        metadata = pq.read_schema(readable(file)).metadata or {}
    except Exception:  # not parquet, or truncated: certainly not a part ember finished
        return None
    token = metadata.get(TOKEN_KEY)
    return token.decode() if token else None


def _digest(input_files: list[dict[str, Any]] | None) -> str | None:
    if input_files is None:
        return None
    return hashlib.sha256(json.dumps(input_files, sort_keys=True).encode()).hexdigest()


def _how_changed(then: dict[str, Any] | None, now: dict[str, Any] | None) -> str:
    if then is None:
        return "is new"
    if now is None:
        return "is gone"
    if then["bytes"] != now["bytes"]:
        return f"changed size: {then['bytes']} -> {now['bytes']} bytes"
    return "was modified"
