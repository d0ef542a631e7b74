"""Resolve a class named in a config or on the command line, as LightningCLI's `class_path` does.

`pkg.module:Class`, `pkg.module.Class`, or `path/to/file.py:Class` (a relative path is looked up
beside the config file first). A file is loaded once per resolved path under a private module name
(`USER_MODULE_PREFIX`...).

Importing a module runs its top-level code, which is what naming a class asks for; *calling* the
class is another matter. `import_class(..., base=ember.Module)` checks the class against what the
caller expects before anyone calls it, so `class_path: subprocess.Popen` is refused, never run.

This module is ember's only door to dynamic imports (a test reading the source keeps it so). A class
named by a *file ember reads* -- a checkpoint's `hyper_parameters` (`_class_path`, `class_path`,
`_instantiator`, nested too), a run folder's records -- is never imported on the file's word:
`recorded_class` finds it among the modules already imported (by the user's code, or by the class the
user named on the command line), and imports only on an explicit opt-in (`trust=True`, or the
environment variable `EMBER_TRUST_CLASS_PATHS=1`).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import pickle
import runpy
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from ember.errors import ConfigError

#: Set to 1 to let ember import the classes that files it reads name (checkpoints' hyper_parameters).
TRUST_ENV = "EMBER_TRUST_CLASS_PATHS"

#: The keys under which a saved hyperparameter dict names a class or a function to import.
RECORDED_KEYS = ("class_path", "_class_path", "_instantiator")

#: Module names under which `path/to/file.py:Class` files
#: are loaded (what a checkpoint of such a class records).
USER_MODULE_PREFIX = "_ember_user_"


def import_class(
    spec: str,
    base_dir: str | os.PathLike[str] | None = None,
    what: str = "class_path",
    base: type | tuple[type, ...] | None = None,
) -> type:
    """The class `spec` names; a one-line ConfigError (prefixed with `what`) says what is wrong.

    With `base`, a class that is not a subclass of it is refused here, before it is ever called.

    Example:
        >>> import_class("collections.OrderedDict", base=dict).__name__
        'OrderedDict'
        >>> import_class("subprocess.Popen", what="model", base=dict)  # doctest: +NORMALIZE_WHITESPACE
        Traceback (most recent call last):
        ...
        ember.errors.ConfigError: model 'subprocess.Popen' is subprocess.Popen, not a dict; point it at a dict
        subclass
    """
    module_part, _, name = spec.partition(":") if ":" in spec else spec.rpartition(".")
    if not module_part or not name:
        raise ConfigError(f"{what} {spec!r}: write it as path/to/file.py:Class or package.module.Class")
    module = _load_file(spec, module_part, base_dir, what) if module_part.endswith(".py") else None
    if module is None:
        try:
            module = importlib.import_module(module_part)
        except ImportError as e:
            raise ConfigError(f"{what} {spec!r}: cannot import {module_part} ({e})") from None
    cls = getattr(module, name, None)
    if not isinstance(cls, type):
        raise ConfigError(f"{what} {spec!r}: {module_part} has no class {name!r}")
    if base is not None and not issubclass(cls, base):
        expected = " or ".join(_base_name(b) for b in (base if isinstance(base, tuple) else (base,)))
        article = "an" if expected[0].lower() in "aeiou" else "a"
        raise ConfigError(
            f"{what} {spec!r} is {cls.__module__}.{cls.__qualname__}, not {article} {expected}; "
            f"point it at {article} {expected} subclass"
        )
    return cls


def _base_name(base: type) -> str:
    """The shortest public name of `base`: ember.Module, ember.loggers.Logger (the names users write)."""
    if base.__module__ == "builtins":
        return base.__qualname__
    parts = base.__module__.split(".")
    for end in range(1, len(parts) + 1):
        module = sys.modules.get(".".join(parts[:end]))
        if module is not None and getattr(module, base.__name__, None) is base:
            return f"{'.'.join(parts[:end])}.{base.__qualname__}"
    return f"{base.__module__}.{base.__qualname__}"


def _load_file(
    spec: str, module_part: str, base_dir: str | os.PathLike[str] | None, what: str
) -> types.ModuleType:
    file = Path(module_part)
    if not file.is_absolute() and base_dir is not None and (Path(base_dir) / file).exists():
        file = Path(base_dir) / file
    if not file.is_file():
        raise ConfigError(f"{what} {spec!r}: file {file} does not exist")
    file = file.resolve()
    module_name = f"{USER_MODULE_PREFIX}{file.stem}_{abs(hash(str(file))) % 10**8}"
    if module_name not in sys.modules:
        loader_spec = importlib.util.spec_from_file_location(module_name, file)
        assert loader_spec is not None and loader_spec.loader is not None
        module = importlib.util.module_from_spec(loader_spec)
        sys.modules[module_name] = module
        sys.path.insert(0, str(file.parent))  # so the file's own sibling imports work
        loader_spec.loader.exec_module(module)
    return sys.modules[module_name]


def import_ember_module(name: str) -> types.ModuleType:
    """ember's own module `name` (the package's lazy loader:
    names from its fixed tables, never from a file)."""
    if name != "ember" and not name.startswith("ember."):
        raise ValueError(f"import_ember_module: {name!r} is not one of ember's modules")
    return importlib.import_module(name)


def preload_modules(names: list[str]) -> None:
    """Import modules a zygote's workers will need (`ember.processes.zygote`): names from ember's own code
    (TorchTrainer's worker list, ember.data), never from a file."""
    for name in names:
        importlib.import_module(name)


def run_worker_module(name: str) -> None:
    """Run, as `__main__`, the module a zygote's worker was started for (`python -m NAME` in a fork): a
    name ember's launcher gave, as a fresh interpreter's command line would."""
    runpy.run_module(name, run_name="__main__", alter_sys=True)


def run_user_script(path: str) -> None:
    """Run, as `__main__`, the script the user named on
    their own command line (`python -m ember script.py`)."""
    runpy.run_path(path, run_name="__main__")


def run_user_module(name: str) -> None:
    """Run, as `__main__`, the module the user named on their
    own command line (`python -m ember -m pkg.mod`)."""
    runpy.run_module(name, run_name="__main__", alter_sys=True)


def pack_job(job: Any) -> bytes:
    """A job for a worker process ember starts itself: the driver's `sys.path` (plain pickle, read first, so
    that the worker finds every module the job refers to), then the job with cloudpickle, as Ray sends its
    tasks (a function of an importable module by reference, one defined in `__main__` by value)."""
    import cloudpickle  # an ember dependency; needed only here

    body: bytes = cloudpickle.dumps(job)
    return pickle.dumps(list(sys.path)) + body


def unpack_job(source: IO[bytes]) -> Any:
    """In the worker: the job `pack_job` packed. Unpickling imports the modules the job names, so `source`
    is only ever a pipe or a private (0700) file that ember's own driver wrote, never a file a user handed
    ember."""
    sys.path[:0] = [p for p in pickle.load(source) if p not in sys.path]
    return pickle.load(source)


def trusted(trust: bool = False) -> bool:
    """Did the user opt in to importing what files name (`trust=True` or EMBER_TRUST_CLASS_PATHS=1)?"""
    return trust or os.environ.get(TRUST_ENV, "").strip().lower() in ("1", "true", "yes")


def imported_class(spec: str) -> type | None:
    """The class `spec` (`pkg.module.Class` or `pkg.module:Class`) names if its module is already
    imported, else None: looking it up runs no code.

    Example:
        >>> imported_class("collections.OrderedDict").__name__
        'OrderedDict'
        >>> imported_class("surely_not_imported_module.Thing") is None
        True
    """
    module_part, _, name = spec.partition(":") if ":" in spec else spec.rpartition(".")
    module = sys.modules.get(module_part) if module_part and name else None
    value = module
    for part in name.split(".") if module is not None else ():
        value = getattr(value, part, None)
    return value if isinstance(value, type) else None


def recorded_class(
    spec: str,
    source: str,
    what: str = "class",
    base: type | tuple[type, ...] | None = None,
    trust: bool = False,
) -> type:
    """The class a file ember read names (`source` says which file and where): found among the modules
    already imported, imported only when the user trusts what files name; else a one-line ConfigError."""
    if not isinstance(spec, str):
        raise ConfigError(f"{source} names the {what} {spec!r}, which is not a class path")
    cls = imported_class(spec)
    if cls is None:
        if not trusted(trust):
            raise ConfigError(
                f"{source} names the {what} {spec[:200]!r}, which is not imported; ember does not import a "
                f"class on a file's word (it would run that module's code): name the class yourself (--model "
                f"{spec[:200]}, or import it in your script), or set {TRUST_ENV}=1 to trust the file"
            )
        cls = import_class(spec, None, what, base)
    if base is not None and not issubclass(cls, base):
        expected = " or ".join(_base_name(b) for b in (base if isinstance(base, tuple) else (base,)))
        raise ConfigError(f"{source} names the {what} {spec!r}, which is not a {expected}")
    return cls


def check_recorded(value: Any, source: str, trust: bool = False) -> None:
    """Every class path nested in `value` (a dict read from a file) is already imported, or trusted.

    Run before handing such a dict to anything that imports what it names (jsonargparse does).
    """
    if isinstance(value, dict):
        for key, item in value.items():
            if key in RECORDED_KEYS and isinstance(item, str):
                if imported_class(item) is None and _imported_callable(item) is None:
                    recorded_class(item, source, "class", trust=trust)
            else:
                check_recorded(item, source, trust)
    elif isinstance(value, (list, tuple)):
        for item in value:
            check_recorded(item, source, trust)


def _imported_callable(spec: str) -> Callable[..., Any] | None:
    """A function (an `_instantiator`) named by `spec` in an already imported module, else None."""
    module_part, _, name = spec.rpartition(".")
    module = sys.modules.get(module_part)
    value = getattr(module, name, None) if module is not None else None
    return value if callable(value) else None


class no_new_imports:
    """While a dict read from a file is parsed (jsonargparse imports the class paths and callables it
    names), refuse to import any package not imported already: the file cannot pull in a module from
    the working folder (nor a standard module with effects on import). Submodules of packages already
    imported stay reachable (installed code, whose import is what parsing their names needs); with trust
    (`EMBER_TRUST_CLASS_PATHS=1`) nothing is blocked. `refused` lists what was asked for.

    Example:
        >>> with no_new_imports("x.ckpt") as guard:
        ...     try:
        ...         import surely_not_a_module_here  # noqa: F401
        ...     except ImportError:
        ...         pass
        >>> guard.refused
        ['surely_not_a_module_here']
    """

    def __init__(self, source: str, trust: bool = False) -> None:
        self.source, self.active = source, not trusted(trust)
        self.refused: list[str] = []

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        top = name.partition(".")[0]
        if self.active and top not in sys.modules:  # the standard library too: `antigravity` opens a browser
            self.refused.append(name)
            raise ImportError(
                f"{name}: {self.source} may not import it (set {TRUST_ENV}=1 to trust the file)"
            )
        return None  # not ours to load: the next finder looks

    def __enter__(self) -> no_new_imports:
        sys.meta_path.insert(0, self)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.meta_path.remove(self)

    def check(self) -> None:
        """A one-line ConfigError if the file asked for a module (call after the parse, whatever it said)."""
        if self.refused:
            raise ConfigError(
                f"{self.source} names {self.refused[0]!r}, which is not imported; ember does not import a "
                "module on a file's word (it would run its code): import or name it yourself, or set "
                f"{TRUST_ENV}=1 to trust the file"
            )
