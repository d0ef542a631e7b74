"""Confinement: a path built from something ember read stays under its root, and links are never followed.

Names that come from files, keys or settings (a run folder's ``result.json`` records, object-store keys
mirrored to a local folder, checkpoint contents, config values) are joined to their root only through
`confined`: an absolute part, a ``..`` part, a URL-looking part, a NUL byte, or an existing link that
leads out of the root is refused in one line naming the path and the root (`UnsafePathError`).

Example:
    >>> import tempfile
    >>> root = tempfile.mkdtemp()
    >>> confined(root, "checkpoint_000001").name
    'checkpoint_000001'
    >>> confined(root, "../../escape.txt")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ember.errors.UnsafePathError: '../../escape.txt' leaves its root ...
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from ember.errors import UnsafePathError
from ember.fs.url import scheme_of


def confined(root: str | os.PathLike[str], relative: str | os.PathLike[str]) -> Path:
    """`root / relative`, refused unless it names something strictly below `root` (see the module text)."""
    text = os.fspath(relative)
    root = Path(root)
    problem = _lexical_problem(text)
    if problem is None:
        target = root / text
        if not within(root, target):
            problem = "a link in it leads outside the root"
        elif os.path.realpath(target) == os.path.realpath(root):
            problem = "it names the root itself, no file below it"
        else:
            return target
    raise UnsafePathError(
        f"{text!r} leaves its root {str(root)!r} ({problem}); ember only uses names below "
        "the folder it was given, so it was refused"
    )


def _lexical_problem(text: str) -> str | None:
    if not isinstance(text, str) or not text:
        return "it names no file below the root"
    if "\x00" in text:
        return "it holds a NUL byte"
    parts = PurePosixPath(text.replace("\\", "/")).parts
    if text.startswith(("/", "\\")) or (parts and os.path.isabs(text)):
        return "it is absolute"
    if ".." in parts:
        return "it holds a '..' part"
    try:
        if scheme_of(text) is not None:
            return "it is a URL"
    except ValueError:
        return "it looks like a URL"
    if any(part.endswith(":") for part in parts):
        return "a part of it looks like a URL scheme"
    return None


def within(root: str | os.PathLike[str], path: str | os.PathLike[str]) -> bool:
    """Whether `path`, with every existing link resolved, is `root` or below it (also resolved)."""
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


def refuse_link(path: str | os.PathLike[str], what: str = "file") -> None:
    """One line if `path` is a symbolic link: ember writes, reads back and deletes only files it created."""
    if os.path.islink(path):
        raise UnsafePathError(
            f"{os.fspath(path)} is a symbolic link where ember keeps its own {what}; ember "
            "never writes or reads through a link it did not make. Remove the link or choose "
            "another folder"
        )


def refuse_linked_folders(folder: str | os.PathLike[str], root: str | os.PathLike[str] | None = None) -> None:
    """Refuse `folder` if it, or a folder strictly between `root` and it, is a link (a third-party writer
    such as TensorBoard's SummaryWriter then writes where ember checked, not where a planted link points).
    `root` itself (the user's own choice) may be a link."""
    folder = Path(folder)
    chain = [folder]
    if root is not None:
        chain += [parent for parent in folder.parents if Path(root) in parent.parents]
    for entry in chain:
        refuse_link(entry, "folder")
