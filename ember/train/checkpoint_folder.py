"""Checkpoint: a directory of files a training loop reported (Ray Train's Checkpoint)."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ember.errors import ConfigError
from ember.fs import copy_tree, make_temporary_folder
from ember.fs.atomic import atomic_write

#: The file in a checkpoint folder that holds its metadata (Ray Train's name: the same folder reads alike).
METADATA_FILE = ".metadata.json"


class Checkpoint:
    """A directory on local disk. Build one from a folder you wrote, read it back as a folder.

    Example:
        >>> import tempfile, pathlib
        >>> folder = tempfile.mkdtemp(); _ = (pathlib.Path(folder) / "model.pt").write_text("w")
        >>> ckpt = Checkpoint.from_directory(folder)
        >>> with ckpt.as_directory() as d:
        ...     sorted(os.listdir(d))
        ['model.pt']
    """

    def __init__(self, path: str | os.PathLike[str], filesystem: Any = None) -> None:
        if filesystem is not None and getattr(filesystem, "type_name", None) != "local":
            raise ConfigError(
                f"Checkpoint(filesystem=<{type(filesystem).__name__}>): ember's Checkpoint is a local "
                "folder; copy it to local disk (pyarrow.fs.copy_files) and pass that folder"
            )
        self.path = str(path)

    @property
    def filesystem(self) -> Any:
        """The pyarrow filesystem of `path`: the local one (as Ray's `from_directory` gives)."""
        import pyarrow.fs

        return pyarrow.fs.LocalFileSystem()

    def get_metadata(self) -> dict[str, Any]:
        """The metadata stored with the checkpoint (`.metadata.json` in its folder, as Ray's); {} if none.

        Example:
            >>> folder = tempfile.mkdtemp(); ckpt = Checkpoint.from_directory(folder)
            >>> ckpt.set_metadata({"epoch": 1}); ckpt.update_metadata({"loss": 0.5}); ckpt.get_metadata()
            {'epoch': 1, 'loss': 0.5}
        """
        path = Path(self.path, METADATA_FILE)
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}

    def set_metadata(self, metadata: dict[str, Any]) -> None:
        """Store `metadata` (JSON) with the checkpoint, replacing what was there."""
        text = json.dumps(metadata)  # a value JSON cannot hold fails here, before anything is written
        with atomic_write(Path(self.path, METADATA_FILE), "w", encoding="utf-8") as sink:
            sink.write(text)

    def update_metadata(self, metadata: dict[str, Any]) -> None:
        """Merge `metadata` into the stored metadata."""
        self.set_metadata({**self.get_metadata(), **metadata})

    @classmethod
    def from_directory(cls, path: str | os.PathLike[str]) -> Checkpoint:
        return cls(path)

    def to_directory(self, path: str | os.PathLike[str] | None = None) -> str:
        """Copy the files to `path` (a new temporary folder by default) and return it."""
        target = Path(path) if path is not None else make_temporary_folder("ckpt-")
        copy_tree(self.path, target)
        return str(target)

    @contextlib.contextmanager
    def as_directory(self) -> Iterator[str]:
        """The folder itself (local storage: no copy)."""
        yield self.path

    def __repr__(self) -> str:
        return f"Checkpoint(filesystem=local, path={self.path})"  # Ray's form

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Checkpoint) and os.path.realpath(other.path) == os.path.realpath(self.path)

    def __hash__(self) -> int:
        return hash(os.path.realpath(self.path))
