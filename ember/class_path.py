"""Resolve a class named in a config or on the command line, as LightningCLI's `class_path` does.

`pkg.module:Class`, `pkg.module.Class`, or `path/to/file.py:Class` (a relative path is looked up
beside the config file first). A file is loaded once per resolved path under a private module name
(`USER_MODULE_PREFIX`...).

Importing a module runs its top-level code, which is what naming a class asks for; *calling* the
class is another matter. `import_class(..., base=ember.Module)` checks the class against what the
caller expects before anyone calls it, so `class_path: subprocess.Popen` is refused, never run.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path

from ember.errors import ConfigError

#: Module names under which `path/to/file.py:Class` files are loaded (what a checkpoint of such a class records).
USER_MODULE_PREFIX = "_ember_user_"


def import_class(spec: str, base_dir: str | os.PathLike[str] | None = None, what: str = "class_path",
                 base: type | tuple[type, ...] | None = None) -> type:
    """The class `spec` names; a one-line ConfigError (prefixed with `what`) says what is wrong.

    With `base`, a class that is not a subclass of it is refused here, before it is ever called.

    Example:
        >>> import_class("collections.OrderedDict", base=dict).__name__
        'OrderedDict'
        >>> import_class("subprocess.Popen", what="model", base=dict)
        Traceback (most recent call last):
        ...
        ember.errors.ConfigError: model 'subprocess.Popen' is subprocess.Popen, not a dict; point it at a dict subclass
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
        raise ConfigError(f"{what} {spec!r} is {cls.__module__}.{cls.__qualname__}, not {article} {expected}; "
                          f"point it at {article} {expected} subclass")
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


def _load_file(spec: str, module_part: str, base_dir: str | os.PathLike[str] | None, what: str):
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
