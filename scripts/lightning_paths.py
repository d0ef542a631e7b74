"""Generate ember's table of Lightning's module paths from the installed Lightning 2.6.

    python scripts/lightning_paths.py            # rewrite ember/paths/names.py and docs/lightning_paths.md
    python scripts/lightning_paths.py --check    # exit 1 when either differs from what Lightning says now

It walks every public module of the installed ``lightning`` package (``lightning``, ``lightning.pytorch.*``,
``lightning.fabric.*``: no path part starting with ``_``) and lists each module's public names: its
``__all__`` when it has one, else the classes and functions it defines (a package: also those it imports
from Lightning), plus the
few private names Lightning's docs and examples import (``EXTRA_NAMES``). For each name the table gives
ember's answer at the same path (ember.paths: ``lightning.pytorch.X`` is ``ember.X``): a re-export of
ember's object, or a placeholder that refuses use naming the alternative. tests/compat/test_module_paths.py
runs ``--check``'s comparison, so the table cannot fall behind the installed Lightning.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import pkgutil
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NAMES_FILE = ROOT / "ember" / "paths" / "names.py"
TABLE_FILE = ROOT / "docs" / "lightning_paths.md"

#: Private names that Lightning's docs and examples import anyway (not in the modules' __all__).
EXTRA_NAMES = {
    "lightning.pytorch": ("cli_lightning_logo",),
    "lightning.pytorch.utilities.imports": (
        "_TORCHVISION_AVAILABLE",
        "_TORCH_GREATER_EQUAL_2_1",
        "_OMEGACONF_AVAILABLE",
        "_RICH_AVAILABLE",
        "_TORCHMETRICS_GREATER_EQUAL_1_0_0",
    ),
    "lightning.pytorch.utilities.rank_zero": (
        "rank_zero_debug",
        "rank_zero_deprecation",
        "rank_zero_info",
        "rank_zero_only",
        "rank_zero_warn",
    ),
    "lightning.fabric.utilities.rank_zero": (
        "rank_zero_debug",
        "rank_zero_deprecation",
        "rank_zero_info",
        "rank_zero_only",
        "rank_zero_warn",
    ),
    "lightning.fabric.utilities.imports": ("_TORCHVISION_AVAILABLE",),
    "lightning.pytorch.utilities.exceptions": ("MisconfigurationException",),
    # what code that customizes Lightning's loops subclasses (Lightning's loops/__init__.py imports them)
    "lightning.pytorch.loops": (
        "_AutomaticOptimization",
        "_EvaluationLoop",
        "_FitLoop",
        "_Loop",
        "_ManualOptimization",
        "_PredictionLoop",
        "_TrainingEpochLoop",
    ),
}


def public_modules() -> list[str]:
    """Every public module of the installed Lightning, sorted."""
    import lightning

    found = {"lightning"}
    for info in pkgutil.walk_packages(lightning.__path__, "lightning.", onerror=lambda name: None):
        parts = info.name.split(".")
        if parts[1] in ("pytorch", "fabric") and not any(p.startswith("_") for p in parts):
            found.add(info.name)
    return sorted(found)


def _defined_in(value: object, where: str) -> bool:
    """A class or function defined in module ``where`` (or, for ``where`` ending in a dot, under it)."""
    origin = getattr(value, "__module__", None) or ""
    matches = origin.startswith(where) if where.endswith(".") else origin == where
    return (inspect.isclass(value) or inspect.isfunction(value)) and matches


def public_names(module_name: str) -> tuple[str, ...]:
    """The public names of one Lightning module (its __all__, else the classes and functions it defines)."""
    extra = EXTRA_NAMES.get(module_name, ())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            module = importlib.import_module(module_name)
        except Exception:  # an optional dependency is missing (xla, deepspeed): read the source instead
            return tuple(sorted({*_names_from_source(module_name), *extra}))
    declared = getattr(module, "__all__", None)
    if declared is not None:
        names = {str(n) for n in declared}
    else:
        is_package = hasattr(module, "__path__")  # a package's __init__ offers what it imports from Lightning
        names = {
            n
            for n, v in vars(module).items()
            if not n.startswith("_")
            and (_defined_in(v, module_name) or (is_package and _defined_in(v, "lightning.")))
        }
    return tuple(sorted(names | set(extra)))


def _names_from_source(module_name: str) -> set[str]:
    spec = importlib.util.find_spec(module_name)
    tree = ast.parse(Path(spec.origin).read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            return {str(n) for n in ast.literal_eval(node.value)}
    return {
        node.name
        for node in tree.body
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)) and not node.name.startswith("_")
    }


def lightning_table() -> dict[str, tuple[str, ...]]:
    """{Lightning module: its public names} for the installed Lightning."""
    return {name: public_names(name) for name in public_modules()}


def render_names(table: dict[str, tuple[str, ...]]) -> str:
    import lightning

    lines = [
        (
            f'"""Lightning {lightning.__version__}\'s public modules '
            "and names (GENERATED by scripts/lightning_paths.py;"
        ),
        'do not edit: rerun the script). ember.paths reads it to know which names a path must answer."""',
        "",
        "LIGHTNING_NAMES: dict[str, tuple[str, ...]] = {",
    ]
    for module, names in table.items():
        lines.append(f"    {module!r}: (")
        row = "       "
        for name in names:
            if len(row) + len(name) + 4 > 110:
                lines.append(row)
                row = "       "
            row += f" {name!r},"
        if names:
            lines.append(row)
        lines.append("    ),")
    lines.append("}")
    return "\n".join(lines) + "\n"


def ember_answer(lightning_module: str, name: str) -> str:
    """ember's answer to one Lightning name, as a table cell."""
    from ember.paths import ember_module_for, is_placeholder

    where = _ember_module_name(lightning_module)
    module = importlib.import_module(where)  # a module file, or one served by ember.paths.absent
    try:
        value = getattr(module, name)
    except AttributeError:
        return "**missing**"
    if is_placeholder(value):
        alternative = value.__ember_refusal__.split(": use ", 1)[1]
        return "import works; use refused: " + alternative.replace("|", "\\|")  # a | would split the cell
    assert ember_module_for(lightning_module) is not None
    return f"`{where}.{name}`"


def _ember_module_name(lightning_module: str) -> str:
    from ember.paths import ember_module_for

    return "ember" if lightning_module == "lightning" else str(ember_module_for(lightning_module))


def _has_file(ember_module: str) -> bool:
    """Whether ember has a module file at this path (else ember.paths.absent serves it)."""
    from ember.paths.absent import is_absent_module

    return not is_absent_module(importlib.import_module(ember_module))


def render_table(table: dict[str, tuple[str, ...]]) -> str:
    import lightning

    out = [
        "# Lightning's module paths under ember",
        "",
        (
            "GENERATED by `scripts/lightning_paths.py` from the "
            f"installed Lightning {lightning.__version__}; do not edit."
        ),
        (
            "`tests/compat/test_module_paths.py` fails when this "
            "page differs from what the installed Lightning says."
        ),
        "",
        "The rule: `lightning.pytorch.X` (and `pytorch_lightning.X`) is `ember.X`; `lightning.fabric.X` (and",
        (
            "`lightning_fabric.X`) is `ember.fabric.X`; `lightning` "
            "and `lightning.pytorch` are `ember`. Each row is one"
        ),
        (
            "public name of Lightning and ember's answer at the "
            "same path: the ember object it re-exports (ember's one"
        ),
        "implementation, never a copy), or *import works; use refused*: the import works and using the name",
        "(constructing or calling it) raises one `ember.errors.ConfigError` naming what to use instead.",
        "",
        (
            "Every path below imports under ember's name. Where "
            "ember has no module file for a path (marked *no ember"
        ),
        (
            "file* below: Lightning's loops, connectors, precision "
            "plugins, ...), `import ember` has put a finder last"
        ),
        "on `sys.meta_path` (`ember.paths.absent`) that serves the path as a module whose public names",
        (
            "(`__all__`, `dir()`) are these placeholders. Being "
            "last, it never shadows a module ember has; it answers"
        ),
        (
            "only the paths in this table, so any other missing "
            "`ember.*` name is still a `ModuleNotFoundError`; and it"
        ),
        "imports nothing until such a path is asked for. Under the zero-change runner (`python -m ember",
        "script.py`, [runner.md](runner.md)) Lightning's own paths answer with the same modules.",
        "",
    ]
    for module, names in table.items():
        where = _ember_module_name(module)
        no_file = "" if _has_file(where) else " (no ember file: served by `ember.paths.absent`)"
        out += [f"## `{module}` → `{where}`{no_file}", ""]
        if not names:
            out += [f"(no public names) {'module re-exported' if not no_file else 'import works'}", ""]
            continue
        out += ["| name | ember |", "|---|---|"]
        out += [f"| `{name}` | {ember_answer(module, name)} |" for name in names]
        out.append("")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    table = lightning_table()
    names_text = render_names(table)
    if not args.check:
        NAMES_FILE.write_text(names_text)  # the table must exist before ember answers from it
        importlib.invalidate_caches()
    table_text = render_table(table)
    if args.check:
        stale = [
            str(p)
            for p, text in ((NAMES_FILE, names_text), (TABLE_FILE, table_text))
            if not p.exists() or p.read_text() != text
        ]
        if stale:
            print(f"out of date: {', '.join(stale)}; run python scripts/lightning_paths.py", file=sys.stderr)
            return 1
        return 0
    TABLE_FILE.write_text(table_text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
