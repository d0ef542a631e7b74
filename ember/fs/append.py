"""Appending to a file ember keeps adding to (metrics.csv, result.json): never through a planted link.

Append-only logs cannot be written by rename, so `atomic_write` does not fit them; instead the file
is opened with ``O_NOFOLLOW``, so a symlink planted at its name makes the open fail (one line naming
the file) rather than redirect ember's writes into whatever the link points at.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import IO, Any

from ember.errors import UnsafePathError


def open_for_append(path: str | os.PathLike[str], newline: str | None = None) -> IO[Any]:
    """Open a text file for appending, creating it if needed, refusing to follow a symlink at its name.

    Example:
        >>> import tempfile, pathlib
        >>> log = pathlib.Path(tempfile.mkdtemp()) / "metrics.csv"
        >>> with open_for_append(log) as f:
        ...     _ = f.write("step,loss\\n")
        >>> log.read_text()
        'step,loss\\n'
    """
    path = Path(os.fspath(path))
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise UnsafePathError(
                f"{path} is a symbolic link; ember appends only to files it created itself. Remove the link "
                "or choose another folder"
            ) from None
        raise
    return os.fdopen(fd, "a", newline=newline)
