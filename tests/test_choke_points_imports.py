"""ember.class_path is ember's only door to dynamic imports and code from strings (DESIGN decision 15).

Reads ember's source with `ast` and fails on `importlib.import_module`, `__import__`,
`importlib.util.spec_from_file_location` / `module_from_spec`, `runpy`, `exec` and `eval` anywhere
else, so a new feature cannot open its own door (and then import what a file names).
"""

from __future__ import annotations

import ast
from pathlib import Path

import ember

SOURCE = Path(ember.__file__).parent
DOOR = SOURCE / "class_path.py"

#: Attribute calls that import or run code named by a string.
DOOR_ATTRIBUTES = {
    "import_module",
    "spec_from_file_location",
    "module_from_spec",
    "run_path",
    "run_module",
    "exec_module",
    "load_module",
}
#: Builtins that do.
DOOR_NAMES = {"__import__", "exec", "eval", "compile"}

#: file -> (the call allowed there, why it is safe).
ALLOWED = {
    "cli/trainer_options.py": (
        {"eval", "compile"},
        "evaluates the annotations of ember's own Trainer.__init__ (read from ember's source, "
        "for `--help` without importing torch) with no builtins and a fixed table of names",
    ),
}


def door_calls(file: Path) -> list[tuple[int, str]]:
    """(line, name) of every call in `file` that imports or runs code named by a string."""
    found = []
    for node in ast.walk(ast.parse(file.read_text(), str(file))):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in DOOR_NAMES:
                found.append((node.lineno, func.id))
            elif isinstance(func, ast.Attribute) and (
                func.attr in DOOR_ATTRIBUTES or (func.attr in DOOR_NAMES and _is_builtins(func.value))
            ):
                found.append((node.lineno, func.attr))
        elif (
            isinstance(node, ast.ImportFrom)
            and node.module in ("runpy", "importlib")
            and any(alias.name in DOOR_ATTRIBUTES | {"__import__"} for alias in node.names)
        ):
            found.append((node.lineno, f"from {node.module} import ..."))
    return sorted(found)


def _is_builtins(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id in ("builtins", "__builtins__")


def test_dynamic_imports_go_through_ember_class_path():
    doors = []
    for file in sorted(SOURCE.rglob("*.py")):
        if file == DOOR:
            continue
        allowed = ALLOWED.get(file.relative_to(SOURCE).as_posix(), (set(), ""))[0]
        doors += [
            f"ember/{file.relative_to(SOURCE)}:{line}: {name}"
            for line, name in door_calls(file)
            if name not in allowed
        ]
    assert not doors, "dynamic imports outside ember/class_path.py (route them through it):\n" + "\n".join(
        doors
    )


def test_the_guard_sees_each_kind_of_door(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text(
        "import importlib\nimport importlib.util as u\nimport runpy\n"
        "importlib.import_module('x')\n__import__('x')\nu.spec_from_file_location('x', 'x.py')\n"
        "exec('1')\neval('1')\nrunpy.run_path('x.py')\nfrom importlib import import_module\n"
    )
    assert [name for _, name in door_calls(planted)] == [
        "import_module",
        "__import__",
        "spec_from_file_location",
        "exec",
        "eval",
        "run_path",
        "from importlib import ...",
    ]


def test_the_allowed_list_names_files_that_still_need_it():
    for relative, (names, reason) in ALLOWED.items():
        assert reason and names & {name for _, name in door_calls(SOURCE / relative)}, relative
