"""The runner's import hook: Lightning's and Ray's module names served from ember's modules, in one process.

Two parts, one per family of names, because the two families differ in one way that matters:

- ``lightning``, ``lightning.pytorch``, ``pytorch_lightning``, ``lightning.fabric``, ``lightning_fabric`` (and
  their submodules): a ``sys.meta_path`` finder, first in line, answers them with ember's module at the same
  path (ember.paths' rule). ember itself never imports Lightning, so nothing in the process needs the real
  one. A Lightning module ember has no file for is answered by the module of placeholders that ember serves at
  its own path (ember.paths.absent: import works, use refuses).
- ``ray`` and ``ray.data`` / ``ray.train`` (and submodules): ember's own Ray backend (TorchTrainer on Ray
  actors, ember.data on Ray Data) needs the REAL Ray in the same process once the script calls
  ``ray.init()``. So these names are answered per importer, by wrapping ``builtins.__import__``: an import
  statement in the user's code (the script, and their own modules: not ember, not Ray, not an installed
  library) gets ember's answer (the ``ray`` face of ember.runner.ray_core, ember.data, ember.train);
  ember's, Ray's and other installed libraries' imports get the real Ray.
  ``sys.modules`` keeps the real modules under their real names.

The real packages are never modified: nothing is written into them, and without ``install()`` nothing changes.
"""

from __future__ import annotations

import builtins
import importlib.abc
import importlib.machinery
import sys
import sysconfig
import types
from typing import Any

from ember.class_path import import_ember_module
from ember.errors import ConfigError
from ember.paths import ember_module_for

_LIGHTNING_TOPS = ("lightning", "pytorch_lightning", "lightning_fabric")
#: importers whose `import ray` means the real Ray (ember's Ray backend, and Ray itself).
_REAL_RAY_IMPORTERS = ("ember", "ray")
_original_import = builtins.__import__
_installed = False


def install() -> None:
    """Install the hook in this process (idempotent)."""
    global _installed
    if _installed:
        return
    sys.meta_path.insert(0, LightningFinder())
    builtins.__import__ = _import
    _installed = True


def is_installed() -> bool:
    return _installed


def ember_target(name: str) -> str:
    """The ember module that answers Lightning's module ``name`` under the runner.

    Example:
        >>> ember_target("lightning"), ember_target("pytorch_lightning")
        ('ember.runner.lightning_top', 'ember')
        >>> ember_target("lightning.pytorch.cli")
        'ember.cli'
    """
    if name == "lightning":
        return "ember.runner.lightning_top"
    return str(ember_module_for(name))


class LightningFinder(importlib.abc.MetaPathFinder):
    """Finds Lightning's module names and loads ember's module in their place."""

    def find_spec(
        self, fullname: str, path: Any = None, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname.partition(".")[0] not in _LIGHTNING_TOPS:
            return None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(ember_target(fullname)), is_package=True)


class _AliasLoader(importlib.abc.Loader):
    """Puts ember's module in sys.modules under Lightning's name (the import system then returns it as is)."""

    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None  # a throwaway module: exec_module replaces it, so ember's module keeps its own __spec__

    def exec_module(self, module: types.ModuleType) -> None:
        sys.modules[module.__name__] = _ember_module(self.target, module.__name__)


def _ember_module(target: str, asked: str) -> types.ModuleType:
    """ember's module ``target``: a module file, or, where ember has none for a Lightning path of the table,
    the module of placeholders that ``import ember``'s finder serves at ember's path (ember.paths.absent)."""
    try:
        return import_ember_module(target)  # an ember module name, fixed by the rule: never user input
    except ModuleNotFoundError as exc:
        if exc.name is None or not target.startswith(exc.name):
            raise  # a dependency of ember's module is missing: that error is the true one
    raise ModuleNotFoundError(
        f"{asked}: Lightning 2.6 has no public module of that name and ember has no "
        f"{target} (docs/lightning_paths.md lists the paths)",
        name=asked,
    )


# ---- ray: answered per importer --------------------------------------------------------------------------


def _import(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
    if level == 0 and (name == "ray" or name.startswith("ray.")) and _user_code(globals):
        module = ray_module(name)
        if not fromlist:
            return ray_module("ray")
        for item in fromlist:
            if item != "*" and not hasattr(module, item):
                ray_module(f"{name}.{item}", missing_ok=True)
        return module
    return _original_import(name, globals, locals, fromlist, level)


def _user_code(importer_globals: Any) -> bool:
    """Whether an import statement is the user's: the script (even one read from an installed wheel), or a
    module of theirs; not ember, not Ray, not an installed library (which expects the real Ray if any)."""
    if not importer_globals:  # no import statement: a call from C or __import__("ray") itself
        return False
    importer = importer_globals.get("__name__") or ""
    if importer in ("__main__", "__mp_main__"):
        return True
    if importer.partition(".")[0] in _REAL_RAY_IMPORTERS:
        return False
    where = importer_globals.get("__file__") or ""
    return not (where and _is_installed_library(where))


def _is_installed_library(path: str) -> bool:
    parts = path.replace("\\", "/").split("/")
    return "site-packages" in parts or "dist-packages" in parts or path.startswith(_STDLIB)


_STDLIB = sysconfig.get_paths()["stdlib"]


#: Ray's packages the runner maps, and the ember package that answers each.
_RAY_PACKAGES = {"ray.data": "ember.data", "ray.train": "ember.train"}


def ray_module(name: str, missing_ok: bool = False) -> Any:
    """ember's answer to the Ray module ``name`` (the ``ray`` face, ember.data..., ember.train...).

    Example:
        >>> ray_module("ray.train.torch").__name__
        'ember.train.torch'
    """
    if name == "ray":
        return import_ember_module("ember.runner.ray_core")
    for theirs, ours in _RAY_PACKAGES.items():
        if name == theirs or name.startswith(theirs + "."):
            target = ours + name[len(theirs) :]
            try:
                return import_ember_module(target)  # an ember module name, derived by the rule above
            except ModuleNotFoundError as exc:
                if exc.name is None or not target.startswith(exc.name):
                    raise  # a dependency of ember's module is missing: that error is the true one
                if missing_ok:
                    return None
                raise ModuleNotFoundError(
                    f"{name}: ember has no {target}; the runner maps ray.data to ember.data "
                    f"and ray.train to ember.train (docs/runner.md)",
                    name=name,
                ) from None
    if missing_ok:
        return None
    raise ModuleNotFoundError(
        f"{name}: ember's runner maps ray.data, ray.train and "
        "ray.init/shutdown/is_initialized/cluster_resources only (docs/runner.md); "
        f"run this script with Ray itself (python script.py) for {name}",
        name=name,
    )


def refuse_call(what: str) -> ConfigError:
    return ConfigError(
        f"{what}: ember's runner maps ray.init, ray.shutdown, ray.is_initialized, ray.cluster_resources, "
        "ray.data and ray.train only (docs/runner.md); run this "
        f"script with Ray itself (python script.py) for {what}"
    )
