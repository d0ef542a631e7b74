"""Checkpoint: a directory of files a training loop reported (Ray Train's Checkpoint)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from ember.fs import copy_tree, make_temporary_folder


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

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = str(path)

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
        return f"Checkpoint(path={self.path!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Checkpoint) and os.path.realpath(other.path) == os.path.realpath(self.path)

    def __hash__(self) -> int:
        return hash(os.path.realpath(self.path))
