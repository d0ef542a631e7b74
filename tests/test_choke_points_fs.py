"""The file gate: only `ember/fs/` writes, renames, links or deletes files (DESIGN decision 15).

The test reads ember's source with `ast` and fails on any raw call that changes the filesystem outside
`ember/fs/`: ``open(..., "w"/"a"/"x"/"+")``, ``Path.open`` for writing, ``os.remove`` / ``os.unlink`` /
``Path.unlink``, ``shutil.rmtree`` / ``move`` / ``copy*``, ``os.rename`` / ``os.replace`` /
``Path.rename`` / ``Path.replace``, ``os.symlink`` / ``os.link`` / ``Path.symlink_to`` /
``Path.hardlink_to``, ``Path.write_text`` / ``write_bytes``, ``os.open`` with a write flag,
``os.rmdir`` / ``Path.rmdir`` and ``tempfile.mkdtemp`` (a folder only the fs layer may delete again).
A new feature that needs any of these calls `ember.fs` instead, so the guarantees of `ember.fs`
(confinement, no link followed, deletes only of ember's own records) hold for it without review.
"""

from __future__ import annotations

import ast
from pathlib import Path

import ember

PACKAGE = Path(ember.__file__).parent
GATE = PACKAGE / "fs"

#: Methods/functions that change the filesystem whatever object they are called on (names unique enough
#: that a call is a filesystem call: nothing else in ember defines them).
MUTATING_ATTRIBUTES = {
    "unlink", "rmtree", "rmdir", "removedirs", "symlink", "symlink_to", "hardlink_to", "link",
    "write_text", "write_bytes", "copyfile", "copy2", "copytree", "copyfileobj_to_path", "move", "mkdtemp",
}
#: Names that are mutating only when called on the `os` / `shutil` module (``list.remove`` is not).
MODULE_FUNCTIONS = {("os", "remove"), ("os", "rename"), ("os", "replace"), ("os", "renames"),
                    ("shutil", "copy"), ("os", "truncate")}
#: ``path.rename(...)`` / ``path.replace(...)``: a str's ``replace`` takes two arguments, Path's one.
ONE_ARGUMENT_METHODS = {"rename", "replace"}

#: Where a raw call is unavoidable, with the reason; (file relative to ember/, the call's text).
ALLOWED: dict[tuple[str, str], str] = {}


def _write_mode(node: ast.Call, position: int) -> bool:
    """Whether the call's mode argument (positional `position` or ``mode=``) opens for writing."""
    mode = node.args[position] if len(node.args) > position else None
    for keyword in node.keywords:
        if keyword.arg == "mode":
            mode = keyword.value
    if mode is None:
        return False
    if isinstance(mode, ast.Constant) and isinstance(mode.value, str):
        return any(c in mode.value for c in "wax+")
    return True  # a mode computed at run time: treat as a write (the gate must see it)


def _os_open_writes(node: ast.Call) -> bool:
    flags = ast.unparse(node.args[1]) if len(node.args) > 1 else ""
    return any(flag in flags for flag in ("O_WRONLY", "O_RDWR", "O_CREAT", "O_APPEND", "O_TRUNC"))


def violations(source: str) -> list[tuple[int, str]]:
    """The raw filesystem-changing calls in `source`: (line, the call's text)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        function = node.func
        text = ast.unparse(node)[:100]
        if isinstance(function, ast.Name):
            if function.id == "open" and _write_mode(node, 1):
                found.append((node.lineno, text))
            continue
        if not isinstance(function, ast.Attribute):
            continue
        owner = function.value.id if isinstance(function.value, ast.Name) else None
        name = function.attr
        if name in MUTATING_ATTRIBUTES or (owner, name) in MODULE_FUNCTIONS:
            found.append((node.lineno, text))
        elif name in ONE_ARGUMENT_METHODS and owner != "os" and len(node.args) == 1 and not node.keywords:
            found.append((node.lineno, text))
        elif name == "open" and owner == "os" and _os_open_writes(node):
            found.append((node.lineno, text))
        elif name == "open" and owner not in ("os", "io", "gzip", "bz2", "lzma", "tarfile", "zipfile") \
                and _write_mode(node, 0):
            found.append((node.lineno, text))
    return found


def test_only_ember_fs_changes_files() -> None:
    offenders = []
    for file in sorted(PACKAGE.rglob("*.py")):
        if GATE in file.parents:
            continue
        relative = file.relative_to(PACKAGE).as_posix()
        for line, text in violations(file.read_text()):
            if (relative, text) not in ALLOWED:
                offenders.append(f"ember/{relative}:{line}: {text}")
    assert not offenders, ("raw filesystem writes/deletes outside ember/fs (use ember.fs):\n"
                           + "\n".join(offenders))


def test_the_guard_sees_each_kind_of_call() -> None:
    """A guard that misses a call kind would pass forever: each listed call is caught."""
    caught = [
        'open(p, "w")', 'open(p, "ab")', "open(p, mode)", 'path.open("w")', "os.remove(p)", "os.unlink(p)",
        "p.unlink()", "shutil.rmtree(p)", "os.rename(a, b)", "os.replace(a, b)", "p.rename(q)", "p.replace(q)",
        "os.symlink(a, b)", "os.link(a, b)", 'p.write_text("x")', 'p.write_bytes(b"x")', "shutil.move(a, b)",
        "shutil.copy(a, b)", "shutil.copy2(a, b)", "shutil.copytree(a, b)", "shutil.copyfile(a, b)",
        "os.open(p, os.O_WRONLY | os.O_CREAT)", "p.symlink_to(q)", "os.rmdir(p)", "tempfile.mkdtemp()",
    ]
    for call in caught:
        assert violations(call), call
    for harmless in ['open(p)', 'open(p, "rb")', 'path.open()', '"a-b".replace("-", "_")', "names.remove(x)",
                     'os.open(p, os.O_RDONLY)']:
        assert not violations(harmless), harmless
