"""The Trainer's options as command-line arguments (`--trainer.max_epochs`), and Lightning's extra ones.

Two sources, one list: with the Trainer imported (any run), `inspect.signature` and the real type
hints; for `ember fit --help` alone, the same names, defaults and annotations are read from
ember/trainer/trainer.py's source with `ast`, so help prints without importing torch (seconds).
Class-typed annotations (Callback, Logger) become `Any` there: help shows them, nothing parses them.
"""

from __future__ import annotations

import ast
import inspect
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Options of Lightning 2.6's Trainer that ember's lacks, with the value that leaves them inert (Lightning's
#: default). `LightningCLI --print_config` writes every one; at that value it changes nothing, so a printed
#: config runs; any other value is refused by name (ember cannot honour it).
LIGHTNING_ONLY_TRAINER_OPTIONS: dict[str, Any] = {}


@dataclass(frozen=True)
class TrainerOption:
    name: str
    annotation: Any
    default: Any


def trainer_options(trainer_class: type | None = None) -> list[TrainerOption]:
    """The keyword arguments of `trainer_class` (default ember.Trainer, read without importing it)."""
    if trainer_class is None:
        return _options_from_source()
    options: list[TrainerOption] = []
    # a subclass's **kwargs reach its parent's options (jsonargparse's reading)
    for cls in trainer_class.__mro__:
        init = vars(cls).get("__init__")  # the class's own, as cls.__init__ would give it
        if init is None:
            continue
        hints = typing.get_type_hints(init)
        parameters = inspect.signature(init).parameters
        known = {o.name for o in options}
        options += [
            TrainerOption(name, hints.get(name, Any), p.default)
            for name, p in parameters.items()
            if name != "self" and name not in known and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
        ]
        if not any(p.kind is p.VAR_KEYWORD for p in parameters.values()):
            break
    return options


def _options_from_source() -> list[TrainerOption]:
    source = Path(__file__).parents[1] / "trainer" / "trainer.py"
    tree = ast.parse(source.read_text(encoding="utf-8"))
    init = next(
        node
        for cls in tree.body
        if isinstance(cls, ast.ClassDef) and cls.name == "Trainer"
        for node in cls.body
        if isinstance(node, ast.FunctionDef) and node.name == "__init__"
    )
    args = init.args
    return [
        TrainerOption(arg.arg, _annotation(arg.annotation), _literal(default))
        for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True)
    ]


class _AnyForUnknownNames(dict):
    """Names of the Trainer module's own classes (Callback, Logger, ...) read as Any."""

    def __missing__(self, key: str) -> Any:
        return Any


def _annotation(node: ast.expr | None) -> Any:
    if node is None:
        return Any
    import datetime
    import os

    names = _AnyForUnknownNames(
        int=int,
        float=float,
        str=str,
        bool=bool,
        list=list,
        dict=dict,
        tuple=tuple,
        None_=None,
        datetime=datetime,
        os=os,
        Any=Any,
        Iterable=typing.Iterable,
        Sequence=typing.Sequence,
    )
    try:
        return eval(compile(ast.Expression(node), "<annotation>", "eval"), {"__builtins__": {}}, names)
    except Exception:  # an annotation this reader does not know: help shows no type for it
        return Any


def _literal(node: ast.expr | None) -> Any:
    try:
        return ast.literal_eval(node) if node is not None else None
    except ValueError:
        return None
