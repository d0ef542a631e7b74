"""ember's paths for the Lightning modules ember has no file for (``ember.loops``,
``ember.plugins.precision.amp``, ``ember.trainer.connectors``, ...): the import works, and each public name is
a placeholder that refuses use.

`import ember` appends a finder to ``sys.meta_path`` (``ember._AbsentPathFinder``: a few lines, importing
nothing until asked) that hands an ``ember.*`` name to ``find_spec`` here. Being last in line, it is asked
only after Python's own finders found no file, so a real ember module is never shadowed; and it answers only
the paths of the generated table (ember.paths.names), so any other missing ``ember.*`` name stays a
ModuleNotFoundError. The runner (ember.runner.hook) serves
Lightning's names for these paths with the same modules.

Example:
    >>> from ember.loops import _FitLoop
    >>> _FitLoop()  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    ember.errors.ConfigError: ember.loops._FitLoop (Lightning's lightning.pytorch.loops._FitLoop) is not in
    ember: use the Module's hooks and callbacks (docs/hooks.md); ember's loops are not replaceable
    >>> import ember.loops
    >>> is_absent_module(ember.loops), "_FitLoop" in ember.loops.__all__, "_FitLoop" in dir(ember.loops)
    (True, True, True)
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import types

from ember.paths import lightning_module_for, lightning_names, refused_names
from ember.paths.alternatives import alternative_for

#: what a served module carries, so the table generator and the tests can tell it from a module with a file.
MARK = "__ember_absent__"
#: a served module's spec origin (its repr shows it in place of a file).
ORIGIN = "served by ember.paths.absent: no ember file"


def find_spec(fullname: str) -> importlib.machinery.ModuleSpec | None:
    """A spec for ``fullname`` when it is ember's path of a Lightning module in the table; else None."""
    if fullname.partition(".")[0] != "ember" or fullname == "ember":
        return None
    theirs = lightning_module_for(fullname)
    if theirs not in _lightning_modules():
        return None
    return importlib.machinery.ModuleSpec(
        fullname, _LOADER, origin=ORIGIN, is_package=_has_submodules(theirs)
    )


def is_absent_module(module: types.ModuleType) -> bool:
    """Whether ``module`` is served here (ember has no file for its path)."""
    return MARK in vars(module)


class AbsentModuleLoader(importlib.abc.Loader):
    """Fills a served module: its docstring, ``__all__``,
    ``__dir__`` and the placeholders' ``__getattr__``."""

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None  # Python's default module, with __spec__, __loader__ (and __path__ for a package) set

    def exec_module(self, module: types.ModuleType) -> None:
        ours = module.__name__
        theirs = lightning_module_for(ours)
        names = lightning_names(theirs)
        module.__doc__ = (
            f"Lightning's {theirs}: ember has no module file here; its names import, and using one "
            f"raises one line naming the alternative ({alternative_for(theirs)})."
        )
        module.__all__ = list(names)  # type: ignore[attr-defined]  # ModuleType does not declare __all__
        setattr(module, MARK, theirs)
        module.__getattr__ = refused_names(ours)  # type: ignore[method-assign]
        module.__dir__ = lambda: sorted({*vars(module), *names})  # type: ignore[method-assign]


_LOADER = AbsentModuleLoader()


def _lightning_modules() -> dict[str, tuple[str, ...]]:
    from ember.paths.names import LIGHTNING_NAMES

    return LIGHTNING_NAMES


def _has_submodules(lightning_module: str) -> bool:
    prefix = lightning_module + "."
    return any(name.startswith(prefix) for name in _lightning_modules())
