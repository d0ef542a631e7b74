"""ember's import layers, checked on the real imports of every file under ember/.

THE RULES (DESIGN.md, "Imports point down"; read them here first):

1. Every part of ember sits on one layer; a file may import only from its OWN part or from a LOWER layer:

       8  ember/cli.py, ember/__init__.py, ember/__main__.py   the faces
       7  ember/train, ember/inference, ember/tuner            the functional TorchTrainer; batch inference;
                                                               Tuner
          ember/fabric                                         lightning.fabric's paths
       6  ember/trainer, ember/utilities, ember/demos          the Trainer and its loops; Lightning's helpers,
                                                               demos
          ember/core, strategies, accelerators, plugins        re-exports at Lightning's paths
       5  ember/module.py, ember/datamodule.py, ember/callbacks, ember/loggers
       4  ember/checkpoint.py, ember/lightning_checkpoint.py   what a checkpoint file is (ember's,
                                                               Lightning's)
       3  ember/runtime, ember/data, ember/datasets,           the parts that stand alone
          ember/config_file.py,                                (config helpers of the CLI and inference,
          ember/hyperparameters.py, ember/profilers            hparams of Module/DataModule, profilers)
          ember/runner                                         the zero-change runner (imports ember's modules
                                                               by name)
       2  ember/processes                                      worker processes forked from a zygote (for
                                                               ember.data's pools and TorchTrainer's workers)
       1  ember/fs, ember/paths, ember/deadlines,              the gates: files, Lightning's paths'
                                                               placeholders,
          ember/class_path.py                                  outside calls' deadlines, dynamic imports
       0  ember/errors.py, ember/version.py                    shared by all

   A "part" is a package (ember/runtime/...) or a top-level file (ember/module.py). Two different
   parts on the same layer do not import each other (runtime does not import data: it duck-types
   what it needs, or the caller passes a callable down).
2. Nothing inside ember imports the package face `ember` itself (`import ember`, `from ember import
   __version__`): the face imports everything, so that is always an upward import.
3. Function-local imports count: an `import` inside a function is still a dependency (it only runs
   later). Only imports under `if TYPE_CHECKING:` are exempt (they never run).
4. No circles: neither between parts nor between the files of one package (a file-level import graph
   with no cycle), so every file can be read, and imported, after the files it uses.

How imports are read: every file is parsed with `ast` (no ember code runs). `from a.b import c`
counts as an import of the file `a/b/c.py` when that file exists, else of `a/b` (its `__init__.py`);
the parent packages an import passes through are not counted (their `__init__` is only a face).

`KNOWN_PENDING` lists violations allowed while a change in flight removes them; it is empty and only
shrinks. Anything new fails.

ember.data has layers of its own (DESIGN decision 17; `DATA_LAYERS` below, pictured in
docs/data_layers.md): each file of ember.data imports only from its own layer or a lower one, no file
imports another's `_private` name, no circle runs through its parts (top-level files and packages), and
nothing outside ember.data imports its submodules (only the face, `ember.data`). `python
tests/test_layers.py` prints ember.data's figures (files, import levels, upward imports, private names
crossing, outside imports of submodules, parts in an import circle).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "ember"

#: Layer of each part (package or top-level file of ember), lowest first. See rule 1 above.
LAYERS: dict[str, int] = {
    "errors": 0,
    "version": 0,
    "fs": 1,
    "paths": 1,
    "deadlines": 1,
    "class_path": 1,
    "processes": 2,
    "runner": 3,
    "runtime": 3,
    "data": 3,
    "datasets": 3,
    "config_file": 3,
    "hyperparameters": 3,
    "profilers": 3,
    "checkpoint": 4,
    "lightning_checkpoint": 4,
    "batch_transfer": 4,
    "module": 5,
    "datamodule": 5,
    "callbacks": 5,
    "loggers": 5,
    "trainer": 6,
    "utilities": 6,
    "demos": 6,
    "core": 6,
    "strategies": 6,
    "accelerators": 6,
    "plugins": 6,
    "train": 7,
    "inference": 7,
    "tuner": 7,
    "fabric": 7,
    "cli": 8,
    "__init__": 8,
    "__main__": 8,
}

#: (importing file, imported module) pairs allowed while another change removes them (none today; only
#: shrinks).
KNOWN_PENDING: set[tuple[str, str]] = set()


# ---- reading imports ------------------------------------------------------------------------------
def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_nodes(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement, at any depth (functions, classes, try blocks), except under TYPE_CHECKING."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)  # the `else:` of `if TYPE_CHECKING:` does run
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def _is_module(name: str) -> bool:
    where = ROOT.joinpath(*name.split("."))
    return where.with_suffix(".py").is_file() or (where / "__init__.py").is_file()


def _resolve(name: str) -> str:
    """The longest prefix of a dotted name that is an ember module (an attribute import names its module)."""
    parts = name.split(".")
    while len(parts) > 1 and not _is_module(".".join(parts)):
        parts.pop()
    return ".".join(parts)


def ember_imports(path: Path) -> set[str]:
    """The ember modules `path` imports (rule 3: function-local ones included, TYPE_CHECKING ones not)."""
    return imports_in(path.read_text(), _module_name(path), is_package=path.name == "__init__.py")


def imports_in(source: str, me: str, is_package: bool = False) -> set[str]:
    """The ember modules that the source of module `me` imports."""
    tree = ast.parse(source)
    package = me if is_package else me.rpartition(".")[0]
    found: set[str] = set()
    for node in _import_nodes(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            base = node.module or ""
            if node.level:  # relative: from . import x / from ..a import b
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            names = [f"{base}.{alias.name}" for alias in node.names]
            if base == "ember" and not node.level:
                names = [
                    f"ember.{alias.name}" if _is_module(f"ember.{alias.name}") else "ember"
                    for alias in node.names
                ]
        for name in names:
            if name == "ember" or name.startswith("ember."):
                found.add(_resolve(name))
    found.discard(me)
    return found


def _part(module: str) -> str:
    """`ember.runtime.launch` -> "runtime"; `ember.module` -> "module"; `ember` -> "__init__"."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _files() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


@functools.cache  # read once per run: the tests only read it
def _graph() -> dict[str, set[str]]:
    return {_module_name(path): ember_imports(path) for path in _files()}


# ---- the rules -----------------------------------------------------------------------------------
def layer_violations(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    """(importer, imported) pairs breaking rule 1 or 2."""
    bad = set()
    for importer, imported in graph.items():
        here = _part(importer)
        for target in imported:
            there = _part(target)
            if target == "ember" and importer != "ember":
                bad.add((importer, target))  # rule 2: the package face
            elif there != here and LAYERS[there] >= LAYERS[here]:
                bad.add((importer, target))
    return bad


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component of more than one node (Tarjan), each as a path."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def _without_pending(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    return {a: {b for b in targets if (a, b) not in KNOWN_PENDING} for a, targets in graph.items()}


# ---- the tests -----------------------------------------------------------------------------------
def test_every_part_of_ember_has_a_layer():
    parts = {_part(_module_name(path)) for path in _files()}
    assert parts <= set(LAYERS), (
        f"add these parts of ember to LAYERS (and to the rules above): {parts - set(LAYERS)}"
    )


def test_imports_point_down():
    graph = _graph()
    violations = layer_violations(graph) - KNOWN_PENDING
    listed = "\n".join(
        f"  {a} imports {b} (layer {LAYERS[_part(a)]} -> {LAYERS[_part(b)]})" for a, b in sorted(violations)
    )
    assert not violations, (
        f"imports that do not point down (see the rules at the top of this file):\n{listed}"
    )


def test_no_import_circles_between_parts():
    graph = _without_pending(_graph())
    parts: dict[str, set[str]] = {}
    for importer, imported in graph.items():
        parts.setdefault(_part(importer), set()).update(
            _part(t) for t in imported if _part(t) != _part(importer)
        )
    assert cycles(parts) == []


def test_no_import_circles_between_files():
    assert cycles(_without_pending(_graph())) == []


def test_known_pending_entries_are_still_real():
    """A pending entry that no longer happens must go (the set only shrinks)."""
    graph = _graph()
    real = {(a, b) for a, targets in graph.items() for b in targets}
    assert real >= KNOWN_PENDING, f"no longer imported, delete from KNOWN_PENDING_*: {KNOWN_PENDING - real}"


# ---- ember.data's own layers ----------------------------------------------------------------------
DATA = "ember.data"

#: ember.data's layers, lowest first (DESIGN decision 17, docs/data_layers.md). A name is a file or a
#: package of ember/data (the package covers its files); a file may import only from its own layer or a
#: lower one. The face is what users (and ember's other packages) import: `ember.data` and Ray's paths.
DATA_LAYERS: list[tuple[str, tuple[str, ...]]] = [
    (  # blocks: Arrow tables, their types and schemas; the settings and errors every layer shares
        "blocks",
        (
            "ray_errors", "arguments", "ray_args", "ray_context_settings", "system_memory", "context",
            "random_config", "tensor_types", "block_accessor", "block", "block_streams", "schema", "datatype",
        ),
    ),
    (  # functions: what runs on a block (user functions, expressions, aggregations, sampling)
        "functions",
        (
            "transforms", "expressions", "aggregate", "sample", "rename", "with_columns", "train_test",
            "summary",
        ),
    ),
    ("reading", ("read", "manifest")),  # sources: read tasks over files, memory, SQL; the write manifest
    ("plan", ("plan", "execution_seed", "mix")),  # the logical plan: typed operators over read tasks
    ("executing", ("execute",)),  # the local streaming executor, spill, and the Ray backend
    ("iterating", ("iterate", "collate_fn", "reshard", "torch_features", "torch_dataset")),  # batches
    (  # writing: sinks, file layout, jobs on the driver or on Ray, the resumable writer
        "writing",
        (
            "write", "write_layout", "write_job", "write_run", "write_ray", "write_resumable", "datasink",
            "filename_provider",
        ),
    ),  # fmt: skip
    (  # the face: Dataset, the read_*/from_* functions, DataIterator, GroupedData, Ray's Datasource API
        "face",
        ("__init__", "dataset", "grouped", "data_iterator", "datasource", "read_api", "read_datasource",
         "read_huggingface"),
    ),
]  # fmt: skip

#: ember.data's modules other packages may import: the face only.
DATA_FACE = {DATA}


def data_layer(module: str) -> int | None:
    """The layer index of an ember.data module (by its file, else its package), None if unlisted."""
    if module == DATA:
        return data_layer(f"{DATA}.__init__")
    parts = module[len(DATA) + 1 :].split(".")
    for depth in range(len(parts), 0, -1):
        name = ".".join(parts[:depth])
        for index, (_, names) in enumerate(DATA_LAYERS):
            if name in names:
                return index
    return None


def _in_data(module: str) -> bool:
    return module == DATA or module.startswith(DATA + ".")


def data_layer_violations(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    """(importer, imported) pairs inside ember.data where the imported module sits on a higher layer."""
    bad = set()
    for importer, imported in graph.items():
        if not _in_data(importer):
            continue
        for target in imported:
            if _in_data(target) and data_layer(target) > data_layer(importer):
                bad.add((importer, target))
    return bad


def private_imports(source: str, me: str, is_package: bool = False) -> set[tuple[str, str]]:
    """(module, name) for every `from <ember module> import _name` in the source of module `me`."""
    package = me if is_package else me.rpartition(".")[0]
    found = set()
    for node in _import_nodes(ast.parse(source)):
        if not isinstance(node, ast.ImportFrom):
            continue
        base = node.module or ""
        if node.level:
            anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
            base = ".".join([*anchor, base] if base else anchor)
        if base == "ember" or base.startswith("ember."):
            found |= {
                (base, a.name) for a in node.names if a.name.startswith("_") and not a.name.startswith("__")
            }
    return found


def _file_private_imports(path: Path) -> set[tuple[str, str, str]]:
    me = _module_name(path)
    return {(me, m, n) for m, n in private_imports(path.read_text(), me, path.name == "__init__.py")}


def outside_data_imports(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    """(importer, ember.data submodule) for every import of one from outside ember.data."""
    return {
        (importer, target)
        for importer, imported in graph.items()
        if not _in_data(importer)
        for target in imported
        if _in_data(target) and target not in DATA_FACE
    }


def import_levels(graph: dict[str, set[str]]) -> int:
    """How many levels ember.data's file-level import graph has: a file that imports no other file of
    ember.data is on level 1, any other one above the highest file it imports."""
    level: dict[str, int] = {}

    def of(module: str) -> int:
        if module not in level:
            level[module] = 0  # a circle (test_no_import_circles_between_files) would stop here
            level[module] = 1 + max((of(t) for t in graph.get(module, ()) if _in_data(t)), default=0)
        return level[module]

    return max(of(m) for m in graph if _in_data(m))


def data_parts(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """ember.data's graph between its parts: the top-level files and packages of ember/data."""

    def part(module: str) -> str:
        return "__init__" if module == DATA else module[len(DATA) + 1 :].split(".")[0]

    parts: dict[str, set[str]] = {}
    for importer, imported in graph.items():
        if _in_data(importer):
            here = part(importer)
            parts.setdefault(here, set()).update(part(t) for t in imported if _in_data(t) and part(t) != here)
    return parts


def data_figures() -> dict[str, int]:
    """ember.data's structure in numbers (printed by `python tests/test_layers.py`)."""
    files = [p for p in _files() if _in_data(_module_name(p))]
    graph = _graph()
    crossing = {found for p in files for found in _file_private_imports(p)}
    return {
        "files": len(files),
        "import levels": import_levels(graph),
        "upward imports": len(data_layer_violations(graph)),
        "private names crossing": len(crossing),
        "outside imports of submodules": len(outside_data_imports(graph)),
        "parts (top-level files and packages)": len(data_parts(graph)),
        "parts in an import circle": sum(len(c) for c in cycles(data_parts(graph))),
    }


def test_every_module_of_ember_data_has_a_layer():
    unlisted = sorted(m for m in _graph() if _in_data(m) and data_layer(m) is None)
    assert not unlisted, (
        f"add these modules of ember.data to DATA_LAYERS (and docs/data_layers.md): {unlisted}"
    )


def test_ember_data_imports_point_down():
    violations = data_layer_violations(_graph())
    names = [layer for layer, _ in DATA_LAYERS]
    listed = "\n".join(
        f"  {a} ({names[data_layer(a)]}) imports {b} ({names[data_layer(b)]})" for a, b in sorted(violations)
    )
    assert not violations, f"ember.data imports that point up (see DATA_LAYERS):\n{listed}"


def test_no_ember_data_file_imports_a_private_name():
    """A helper used by another file is public in the layer that owns it: no `from x import _name`."""
    found = sorted(
        (me, module, name)
        for path in _files()
        for me, module, name in _file_private_imports(path)
        if _in_data(me) or _in_data(module)
    )
    assert not found, f"private names imported across files (make them public where they live): {found}"


def test_no_import_circles_between_the_parts_of_ember_data():
    """A package of ember.data (read/, execute/, ...) sits on one layer: no circle runs through it."""
    assert cycles(data_parts(_graph())) == []


def test_nothing_outside_ember_data_imports_its_submodules():
    """ember's other packages (inference, runtime, train, ...) use the face `ember.data` only."""
    found = sorted(outside_data_imports(_graph()))
    assert not found, f"import these from ember.data (add them to its face) instead: {found}"


def test_data_layer_rules_catch_an_upward_import_a_private_name_and_a_reach():
    graph = {
        "ember.data.block": {"ember.data.plan"},
        "ember.data.plan": {"ember.data.block", "ember.data.read.task"},
        "ember.inference.job": {"ember.data", "ember.data.dataset"},
    }
    assert data_layer_violations(graph) == {("ember.data.block", "ember.data.plan")}
    assert outside_data_imports(graph) == {("ember.inference.job", "ember.data.dataset")}
    source = "def f():\n    from ember.data.transforms import _call, udf_name\n"
    assert private_imports(source, "ember.data.plan") == {("ember.data.transforms", "_call")}
    assert private_imports("from .block import _x\n", "ember.data.plan") == {("ember.data.block", "_x")}
    assert import_levels(graph) == 3


# ---- the checker itself, on small made-up files ------------------------------------------------------
@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import ember.runtime.devices\n", {"ember.runtime.devices"}),
        ("from ember.runtime import devices\n", {"ember.runtime.devices"}),
        ("from ember.runtime.devices import move_to_device\n", {"ember.runtime.devices"}),
        ("from ember import __version__\n", {"ember"}),
        ("def f():\n    from ember.trainer.trainer import Trainer\n", {"ember.trainer.trainer"}),
        (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ember.trainer import Trainer\n",
            set(),
        ),
        (
            "import typing\nif typing.TYPE_CHECKING:\n    import ember.trainer\nelse:\n    import ember.fs\n",
            {"ember.fs"},
        ),
        ("from . import devices\n", {"ember.runtime.devices"}),
        ("from ..errors import ConfigError\n", {"ember.errors"}),
    ],
)
def test_reader_finds_real_imports(source, expected):
    assert imports_in(source, "ember.runtime.probe") == expected


def test_rules_catch_an_upward_import_and_a_circle():
    graph = {
        "ember.runtime.a": {"ember.trainer.loops"},
        "ember.trainer.loops": {"ember.runtime.a"},
        "ember.data.x": {"ember.runtime.a"},
        "ember.module": {"ember"},
    }
    assert layer_violations(graph) == {
        ("ember.runtime.a", "ember.trainer.loops"),
        ("ember.data.x", "ember.runtime.a"),
        ("ember.module", "ember"),
    }
    assert cycles(graph) == [["ember.runtime.a", "ember.trainer.loops"]]


if __name__ == "__main__":
    for figure, value in data_figures().items():
        print(f"{figure}: {value}")
