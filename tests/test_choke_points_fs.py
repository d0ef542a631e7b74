"""The file gate: only `ember/fs/` writes, renames, links, deletes or makes folders (DESIGN decision 15).

The test reads ember's source with `ast` and fails on any raw call that changes the filesystem outside
`ember/fs/`: ``open(..., "w"/"a"/"x"/"+")``, ``Path.open`` for writing, ``os.remove`` / ``os.unlink`` /
``Path.unlink``, ``shutil.rmtree`` / ``move`` / ``copy*``, ``os.rename`` / ``os.replace`` /
``Path.rename`` / ``Path.replace``, ``os.symlink`` / ``os.link`` / ``Path.symlink_to`` /
``Path.hardlink_to``, ``Path.touch``, ``Path.mkdir`` / ``os.makedirs`` / ``os.mkdir``,
``Path.write_text`` / ``write_bytes``, ``os.open`` with a write flag,
``os.rmdir`` / ``Path.rmdir``, ``tempfile.mkdtemp`` (a folder only the fs layer may delete again),
pyarrow's ``OSFile`` for writing and filesystems' ``delete_file`` / ``delete_dir``, and writers that open
a name themselves (``torch.save`` / ``torch.jit.save`` / ``np.save`` to a name, ``dump_stats``,
``export_chrome_trace``, ``torch.onnx.export``) unless given a ``written_by`` scratch name.
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
    "unlink",
    "rmtree",
    "rmdir",
    "removedirs",
    "symlink",
    "symlink_to",
    "hardlink_to",
    "link",
    "touch",
    "write_text",
    "write_bytes",
    "copyfile",
    "copy2",
    "copytree",
    "move",
    "mkdtemp",
    # folders: ember.fs.make_folders (a file in the way is one error naming it)
    "mkdir",
    "makedirs",
    # third-party writers that take a file name and open it themselves (follow a link planted there)
    "dump_stats",
    "export_chrome_trace",
    # pyarrow filesystems' deletes
    "delete_file",
    "delete_dir",
    "delete_dir_contents",
}
#: ``torch.save`` / ``torch.jit.save`` / ``np.save`` given a name instead of a file ember opened.
#: (the call, the position of its file argument)
NAME_TAKING_SAVES = {
    "torch.save": 1,
    "torch.jit.save": 1,
    "np.save": 0,
    "np.savez": 0,
    "numpy.save": 0,
    "torch.onnx.export": 2,
}
#: Names that are mutating only when called on the `os` / `shutil` module (``list.remove`` is not).
MODULE_FUNCTIONS = {
    ("os", "remove"),
    ("os", "rename"),
    ("os", "replace"),
    ("os", "renames"),
    ("shutil", "copy"),
    ("os", "truncate"),
}
#: ``path.rename(...)`` / ``path.replace(...)``: a str's ``replace`` takes two arguments, Path's one.
ONE_ARGUMENT_METHODS = {"rename", "replace"}

#: Where a raw call is unavoidable, with the reason; (file relative to ember/, the call's text).
ALLOWED: dict[tuple[str, str], str] = {
    (
        "module.py",
        "torch.onnx.export(self, sample if isinstance(sample, tuple) else (sample,), file_path, **kwargs)",
    ): "to_onnx given a file object the caller opened (a str or PathLike goes through written_by)",
    (
        "data/execute/spill.py",
        "pa.OSFile(str(self.path), 'wb')",
    ): (
        "a spill file inside ember's own fresh 0700 spill "
        "folder (make_temporary_folder): nothing can be planted"
    ),
}


def _write_mode(node: ast.Call, position: int, computed_positional: bool = True) -> bool:
    """Whether the call's mode argument (positional `position` or ``mode=``) opens for writing.

    A mode computed at run time counts as a write (the gate must see it), except a computed positional
    argument of a ``.open`` method when `computed_positional` is False (``Image.open(buffer)``)."""
    mode = node.args[position] if len(node.args) > position else None
    keyword_mode = False
    for keyword in node.keywords:
        if keyword.arg == "mode":
            mode, keyword_mode = keyword.value, True
    if mode is None:
        return False
    if isinstance(mode, ast.Constant) and isinstance(mode.value, str):
        return any(c in mode.value for c in "wax+")
    return computed_positional or keyword_mode


def _os_open_writes(node: ast.Call) -> bool:
    flags = ast.unparse(node.args[1]) if len(node.args) > 1 else ""
    return any(flag in flags for flag in ("O_WRONLY", "O_RDWR", "O_CREAT", "O_APPEND", "O_TRUNC"))


def _names_a_file(argument: ast.expr) -> bool:
    """Whether a save's target looks like a file name (a string, a path expression) rather than a file object:
    a plain variable counts as a file object (``with atomic_write(...) as f: torch.save(x, f)``)."""
    return not isinstance(argument, ast.Name) or argument.id.endswith(("path", "name", "file_path"))


def violations(source: str) -> list[tuple[int, str]]:
    """The raw filesystem-changing calls in `source`: (line, the call's text)."""
    tree = ast.parse(source)
    scratch = _scratch_names(tree)
    return [
        (node.lineno, ast.unparse(node)[:100])
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and _changes_files(node, scratch)
    ]


def _scratch_names(tree: ast.AST) -> set[str]:
    """Names bound by ``with written_by(path) as name``: a private file name `ember.fs` moves into place,
    which a writer that only takes a name (``dump_stats``, ``torch.jit.save``) may be given."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.With):
            for item in node.items:
                call = item.context_expr
                if (
                    isinstance(call, ast.Call)
                    and ast.unparse(call.func).endswith("written_by")
                    and isinstance(item.optional_vars, ast.Name)
                ):
                    names.add(item.optional_vars.id)
    return names


def _changes_files(node: ast.Call, scratch: set[str]) -> bool:
    function = node.func
    if isinstance(function, ast.Name):
        return function.id == "open" and _write_mode(node, 1)
    if not isinstance(function, ast.Attribute):
        return False
    if any(isinstance(n, ast.Name) and n.id in scratch for a in node.args for n in ast.walk(a)):
        return False  # writes a written_by scratch name
    owner = function.value.id if isinstance(function.value, ast.Name) else None
    name = function.attr
    position = NAME_TAKING_SAVES.get(ast.unparse(function))
    if position is not None:
        return len(node.args) > position and _names_a_file(node.args[position])
    if name in MUTATING_ATTRIBUTES or (owner, name) in MODULE_FUNCTIONS:
        return True
    if name in ONE_ARGUMENT_METHODS:
        return owner != "os" and len(node.args) == 1 and not node.keywords
    if name == "open" and owner == "os":
        return _os_open_writes(node)
    if name == "OSFile":  # pyarrow's file opened by name
        return _write_mode(node, 1)
    if name == "open" and owner not in ("io", "gzip", "bz2", "lzma", "tarfile", "zipfile"):
        return _write_mode(node, 0, computed_positional=False)
    return False


def test_only_ember_fs_changes_files() -> None:
    offenders = []
    for file in sorted(PACKAGE.rglob("*.py")):
        if GATE in file.parents:
            continue
        relative = file.relative_to(PACKAGE).as_posix()
        for line, text in violations(file.read_text()):
            if (relative, text) not in ALLOWED:
                offenders.append(f"ember/{relative}:{line}: {text}")
    assert not offenders, "raw filesystem writes/deletes outside ember/fs (use ember.fs):\n" + "\n".join(
        offenders
    )


def test_the_guard_sees_each_kind_of_call() -> None:
    """A guard that misses a call kind would pass forever: each listed call is caught."""
    caught = [
        'open(p, "w")',
        'open(p, "ab")',
        "open(p, mode)",
        'path.open("w")',
        "os.remove(p)",
        "os.unlink(p)",
        "p.unlink()",
        "shutil.rmtree(p)",
        "os.rename(a, b)",
        "os.replace(a, b)",
        "p.rename(q)",
        "p.replace(q)",
        "os.symlink(a, b)",
        "os.link(a, b)",
        'p.write_text("x")',
        'p.write_bytes(b"x")',
        "shutil.move(a, b)",
        "shutil.copy(a, b)",
        "shutil.copy2(a, b)",
        "shutil.copytree(a, b)",
        "shutil.copyfile(a, b)",
        "os.open(p, os.O_WRONLY | os.O_CREAT)",
        "p.symlink_to(q)",
        "p.touch()",
        "os.rmdir(p)",
        "tempfile.mkdtemp()",
        "profile.dump_stats(path)",
        "prof.export_chrome_trace(str(path))",
        "torch.jit.save(m, os.fspath(p))",
        "torch.save(state, file_path)",
        'Path(p).open(mode="w")',
        'pa.OSFile(path, "wb")',
        "fs.delete_file(p)",
    ]
    assert not violations("with written_by(path) as scratch:\n    profile.dump_stats(scratch)")
    for call in caught:
        assert violations(call), call
    for harmless in [
        "open(p)",
        'open(p, "rb")',
        "path.open()",
        '"a-b".replace("-", "_")',
        "names.remove(x)",
        "os.open(p, os.O_RDONLY)",
        "Image.open(io.BytesIO(data))",
        "torch.save(state, f)",
    ]:
        assert not violations(harmless), harmless
