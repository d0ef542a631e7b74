"""The Trainer's structure, read from the real source with `ast` (no ember code runs for the readers).

What it holds to (DESIGN decisions 9 and 17; issue 28's "Must show"):

1. `ember/trainer/trainer.py` stays at most 450 lines: Lightning's read-only attributes live in
   `properties.py`, every step of a run in its own file (build, data_fetch, loops, resume, participants).
2. `Run` has at most 25 fields, and each part of it has one writer: `run.data` (RunData) is written only
   by data_fetch.py, `run.loop` (LoopState) only by loops.py, the run's late fields (hooks, the model on
   its device, the optimizers) only by build.py.
3. No `from <another ember module> import _private` anywhere in ember: a name another module needs is
   public in the module that owns it.
4. The Trainer reaches into a Module only through its attach point: `Module.attach(trainer)` returns the
   `RunLink` the Trainer lends through; nothing outside module.py assigns a Module's private attribute.
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from ember.trainer.run import LoopState, Run, RunData

ROOT = Path(__file__).resolve().parents[1]
EMBER = ROOT / "ember"
TRAINER = EMBER / "trainer"

MAX_TRAINER_LINES = 450
MAX_RUN_FIELDS = 25


def _files() -> list[Path]:
    return sorted(p for p in EMBER.rglob("*.py") if "__pycache__" not in p.parts)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _tree(path: Path) -> ast.AST:
    return ast.parse(path.read_text(), str(path))


# ---- 1 and 2: sizes --------------------------------------------------------------------------------
def test_trainer_py_stays_short():
    lines = len((TRAINER / "trainer.py").read_text().splitlines())
    assert lines <= MAX_TRAINER_LINES, (
        f"ember/trainer/trainer.py has {lines} lines (at most {MAX_TRAINER_LINES}): move a step of the run "
        "to its own file (build.py, data_fetch.py, loops.py, resume.py) or an attribute to properties.py"
    )


def test_run_has_few_fields_grouped_in_parts():
    names = [f.name for f in dataclasses.fields(Run)]
    assert len(names) <= MAX_RUN_FIELDS, f"Run has {len(names)} fields (at most {MAX_RUN_FIELDS}): {names}"
    assert {"data", "loop"} <= set(names)


# ---- 2: one writer per part ------------------------------------------------------------------------
def _targets(node: ast.AST) -> Iterator[ast.expr]:
    """Every expression assigned to by `node` (tuple targets unpacked, `x[k] = ...` as `x`)."""
    if isinstance(node, ast.Assign):
        pending = list(node.targets)
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        pending = [node.target]
    else:
        return
    while pending:
        target = pending.pop()
        if isinstance(target, (ast.Tuple, ast.List)):
            pending.extend(target.elts)
        elif isinstance(target, (ast.Subscript, ast.Starred)):
            pending.append(target.value)
        else:
            yield target


def writes(source: str, path: str = "<source>") -> Iterator[tuple[str, int]]:
    """`(the assigned expression, its line)` for every assignment to an attribute in `source`."""
    for node in ast.walk(ast.parse(source, path)):
        for target in _targets(node):
            if isinstance(target, ast.Attribute):
                yield ast.unparse(target), node.lineno


def _run_part_writes() -> dict[str, list[str]]:
    """For each writer rule, the `file:line: target` writes that break it."""
    data_fields = {f.name for f in dataclasses.fields(RunData)}
    loop_fields = {f.name for f in dataclasses.fields(LoopState)}
    late_fields = {"hooks", "wrapped", "batches", "optimizers", "schedulers", "optimization"}
    rules = {  # part -> (the one file that may write it, does a written expression belong to the part)
        "run.data": ("data_fetch.py", lambda parts: parts[-2:-1] == ["data"] and parts[-1] in data_fields),
        "run.loop": ("loops.py", lambda parts: parts[-2:-1] == ["loop"] and parts[-1] in loop_fields),
        "run (late fields)": ("build.py", lambda parts: parts[:-1] == ["run"] and parts[-1] in late_fields),
    }
    broken: dict[str, list[str]] = {part: [] for part in rules}
    for path in _files():
        for target, line in writes(path.read_text(), str(path)):
            parts = target.split(".")
            if not any("run" in p for p in parts[:-1]):
                continue
            for part, (writer, belongs) in rules.items():
                if belongs(parts) and path != TRAINER / writer:
                    broken[part].append(f"{path.relative_to(ROOT)}:{line}: {target}")
    return broken


@pytest.mark.parametrize("part", ["run.data", "run.loop", "run (late fields)"])
def test_each_part_of_the_run_has_one_writer(part):
    broken = _run_part_writes()[part]
    assert broken == [], f"{part} is written outside its one writer:\n" + "\n".join(broken)


def test_the_writer_check_sees_a_write():
    source = "def f(run):\n    run.data.train_data, run.loop.fitting = None, True\n    run.hooks = 1\n"
    assert sorted(t for t, _ in writes(source)) == ["run.data.train_data", "run.hooks", "run.loop.fitting"]


# ---- 3: no private names imported across modules -----------------------------------------------------
def private_imports(source: str, me: str, is_package: bool = False) -> list[str]:
    """`module._name` for every private name that module `me` imports from another ember module."""
    package = me if is_package else me.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ImportFrom):
            continue
        base = node.module or ""
        if node.level:  # relative: from . import x / from ..a import b
            anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
            base = ".".join([*anchor, base] if base else anchor)
        if base != "ember" and not base.startswith("ember."):
            continue
        for alias in node.names:
            if alias.name.startswith("_") and not alias.name.startswith("__") and base != me:
                found.append(f"{base}.{alias.name}")
    return found


def _parts() -> list[str]:
    return sorted({_module_name(p).split(".")[1] if "." in _module_name(p) else "__init__" for p in _files()})


@pytest.mark.parametrize("part", _parts())
def test_no_private_name_is_imported_from_another_ember_module(part):
    offending = []
    for path in _files():
        name = _module_name(path)
        if (name.split(".")[1] if "." in name else "__init__") != part:
            continue
        for imported in private_imports(path.read_text(), name, is_package=path.name == "__init__.py"):
            offending.append(f"{path.relative_to(ROOT)} imports {imported}")
    assert offending == [], "make these names public in the module that owns them:\n" + "\n".join(offending)


def test_the_import_check_sees_private_names():
    source = (
        "from ember.trainer.metrics import to_float, _hidden\n"
        "from . import _sibling\n"
        "from ember.runtime.seed import seed_everything\n"
        "from os import _exit\n"
    )
    assert private_imports(source, "ember.trainer.reporting") == [
        "ember.trainer.metrics._hidden",
        "ember.trainer._sibling",
    ]


# ---- 4: the Module's attach point --------------------------------------------------------------------
def module_private_attributes() -> set[str]:
    """The private attributes a Module sets on itself (`self._x = ...` in ember/module.py)."""
    names = set()
    for target, _ in writes((EMBER / "module.py").read_text()):
        owner, _, attr = target.rpartition(".")
        if owner == "self" and attr.startswith("_") and not attr.startswith("__"):
            names.add(attr)
    return names


def test_the_modules_private_attributes_are_found():
    assert "_link" in module_private_attributes()


def test_nothing_outside_module_py_writes_a_modules_private_attributes():
    private = module_private_attributes()
    offending = []
    for path in _files():
        if path == EMBER / "module.py":
            continue
        for target, line in writes(path.read_text(), str(path)):
            owner, _, attr = target.rpartition(".")
            if attr in private and owner != "self":
                offending.append(f"{path.relative_to(ROOT)}:{line}: {target}")
    assert offending == [], "write through Module.attach(...)'s RunLink instead:\n" + "\n".join(offending)


def test_the_trainer_attaches_a_module_only_through_attach():
    """The Trainer's files never set `module.trainer` (Lightning's public setter): they call `attach`."""
    setters, attaches = [], 0
    for path in [*sorted(TRAINER.glob("*.py")), *sorted((EMBER / "runtime").rglob("*.py"))]:
        source = path.read_text()
        for target, line in writes(source, str(path)):
            owner, _, attr = target.rpartition(".")
            if attr == "trainer" and owner != "self" and "datamodule" not in owner:
                setters.append(f"{path.relative_to(ROOT)}:{line}: {target}")
        attaches += sum(
            isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "attach"
            for node in ast.walk(ast.parse(source))
        )
    assert setters == [], "attach the module with module.attach(trainer):\n" + "\n".join(setters)
    assert attaches >= 1
