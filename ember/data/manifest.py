"""The write manifest: which files in a folder each ``write_*`` call committed, and whether one is unfinished.

A writer records its write as *pending* in ``_ember_write.json`` before it creates any data file, and
as *committed* (with its file names) after the last one: the manifest is written last, so a folder
whose manifest has a pending write holds a write that did not finish (killed, or still running).
Readers refuse such a folder in one line instead of returning part of the rows, and skip the files
an ``overwrite`` replaced (listed as *superseded* until they are deleted). Every manifest update is
one `ember.fs.atomic_write`.

The manifest's name starts with ``_``, so readers of the folder never read it as data.

Example:
    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> manifest = Manifest.load(None, folder)
    >>> manifest.begin("w1", first=0, extension="parquet")
    >>> manifest.pending() is not None
    True
    >>> manifest.commit("w1", ["part-00000.parquet"], rows=5)
    >>> Manifest.load(None, folder).committed_files()
    ['part-00000.parquet']
"""

from __future__ import annotations

import json
import os
import re
import socket
from dataclasses import dataclass, field
from typing import Any

from ember.errors import DataError
from ember.fs import atomic_write

NAME = "_ember_write.json"
FORMAT = "ember.data.write"
_PART = re.compile(r"^part-(\d+)\.(.+)$")


def part_index(name: str) -> int | None:
    """The number in ``part-00012.parquet`` (None for other names)."""
    match = _PART.match(name)
    return int(match.group(1)) if match else None


@dataclass
class Manifest:
    """The writes ember made into one folder (local path, or a path on a pyarrow filesystem)."""

    filesystem: Any
    folder: str
    writes: list[dict[str, Any]] = field(default_factory=list)
    #: Files an overwrite replaced, not yet deleted: readers skip them.
    superseded: list[str] = field(default_factory=list)

    @classmethod
    def load(cls, filesystem: Any, folder: str) -> Manifest:
        """The folder's manifest; an empty one when ember never wrote there."""
        text = _read_text(filesystem, f"{folder}/{NAME}")
        if text is None:
            return cls(filesystem, folder)
        try:
            data = json.loads(text)
            if data.get("format") != FORMAT:
                raise ValueError("not an ember write manifest")
            return cls(filesystem, folder, list(data["writes"]), list(data.get("superseded", [])))
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise DataError(
                f"{folder}/{NAME} is not a readable ember write manifest ({e}); "
                "delete it if the folder's files are complete"
            ) from None

    def pending(self) -> dict[str, Any] | None:
        """The write that began but did not commit, if any."""
        return next((w for w in self.writes if w.get("state") == "pending"), None)

    def committed_files(self) -> list[str]:
        return [name for w in self.writes if w.get("state") == "committed" for name in w["files"]]

    def own_files(self, names: list[str]) -> list[str]:
        """Which of ``names`` ember wrote here: committed, superseded, or made by the pending write."""
        own = set(self.committed_files()) | set(self.superseded)
        pending = self.pending()
        if pending is not None:
            suffix = f".{pending['extension']}"
            own |= {n for n in names if n.endswith(suffix) and _at_least(part_index(n), pending["first"])}
        return [n for n in names if n in own]

    def begin(self, write_id: str, first: int, extension: str) -> None:
        """Record a write as pending: from now until `commit`, readers refuse the folder."""
        self.writes.append(
            {
                "id": write_id,
                "state": "pending",
                "first": first,
                "extension": extension,
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "files": [],
            }
        )
        self._save()

    def commit(self, write_id: str, files: list[str], rows: int, replaced: list[str] | None = None) -> None:
        """Mark the write committed. An overwrite passes ``replaced`` (the old files, present ones): every
        earlier write is forgotten and those files become superseded, in this one manifest update."""
        this = next(w for w in self.writes if w["id"] == write_id)
        this.update(state="committed", files=list(files), rows=rows)
        if replaced is not None:
            self.writes = [this]
            self.superseded = sorted(set(self.superseded) | set(replaced))
        self._save()

    def killed_write(self) -> dict[str, Any] | None:
        """The pending write, if its writer was killed: a process of this machine that no longer runs
        (a pending write of another machine, or of a live process, is never taken for dead)."""
        from ember.fs.atomic import process_alive

        pending = self.pending()
        if pending is None or pending.get("host", socket.gethostname()) != socket.gethostname():
            return None
        pid = pending.get("pid")
        return pending if isinstance(pid, int) and not process_alive(pid) else None

    def uncommitted_files(self, names: list[str]) -> list[str]:
        """Which of ``names`` only the pending write made (never a committed or superseded file)."""
        kept = set(self.committed_files()) | set(self.superseded)
        return [n for n in self.own_files(names) if n not in kept]

    def abandon(self, write_id: str) -> None:
        """Forget a pending write whose files were removed (it failed with an error)."""
        self.writes = [w for w in self.writes if w["id"] != write_id]
        self._save()

    def forget_superseded(self, removed: list[str]) -> None:
        if removed:
            self.superseded = [n for n in self.superseded if n not in set(removed)]
            self._save()

    def _save(self) -> None:
        data = {"format": FORMAT, "version": 1, "writes": self.writes, "superseded": self.superseded}
        with atomic_write(f"{self.folder}/{NAME}", "w", filesystem=self.filesystem) as f:
            f.write(json.dumps(data, indent=1) + "\n")


def check_readable(filesystem: Any, folder: str, source: str) -> set[str]:
    """Refuse a folder whose last write did not finish; the names readers must skip (superseded files)."""
    manifest = Manifest.load(filesystem, folder)
    pending = manifest.pending()
    if pending is not None:
        raise DataError(
            f"{source}: the last write into {folder} did not finish (it was killed, or process "
            f"{pending['pid']} is still writing), so the folder holds part of its rows; write it again with "
            "mode='overwrite'"
        )
    missing = [name for name in manifest.committed_files() if not _exists(filesystem, f"{folder}/{name}")]
    if missing:
        raise DataError(
            f"{source}: {folder}/{missing[0]} is missing{_and_more(len(missing) - 1)}, but {NAME} lists it "
            "as part of a write, so reading would give part of its rows; restore it, or write the data "
            "again with mode='overwrite'"
        )
    return set(manifest.superseded)


def _and_more(more: int) -> str:
    return f" (and {more} more)" if more > 0 else ""


def _exists(filesystem: Any, path: str) -> bool:
    if filesystem is None:
        return os.path.lexists(path)
    import pyarrow.fs as pafs

    return filesystem.get_file_info(path).type != pafs.FileType.NotFound


def _at_least(index: int | None, first: int) -> bool:
    return index is not None and index >= first


def _read_text(filesystem: Any, path: str) -> str | None:
    try:
        if filesystem is None:
            with open(path, encoding="utf-8") as f:
                return f.read()
        with filesystem.open_input_stream(path) as f:
            return f.read().decode("utf-8")
    except FileNotFoundError:
        return None
    except OSError as e:
        text = str(e).lower()
        if filesystem is not None and ("not found" in text or "does not exist" in text):
            return None
        raise DataError(f"cannot read {path} ({e}); check its permissions") from None
