"""Resolve a class named in a config or on the command line, as LightningCLI's `class_path` does.

`pkg.module:Class`, `pkg.module.Class`, or `path/to/file.py:Class` (a relative path is looked up
beside the config file first). A file is loaded once per resolved path under a private module name.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path

from ember.errors import ConfigError


def import_class(spec: str, base_dir: str | os.PathLike[str] | None = None, what: str = "class_path") -> type:
    """The class `spec` names; a one-line ConfigError (prefixed with `what`) says what is wrong."""
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
    return cls


def _load_file(spec: str, module_part: str, base_dir: str | os.PathLike[str] | None, what: str):
    file = Path(module_part)
    if not file.is_absolute() and base_dir is not None and (Path(base_dir) / file).exists():
        file = Path(base_dir) / file
    if not file.is_file():
        raise ConfigError(f"{what} {spec!r}: file {file} does not exist")
    file = file.resolve()
    module_name = f"_ember_user_{file.stem}_{abs(hash(str(file))) % 10**8}"
    if module_name not in sys.modules:
        loader_spec = importlib.util.spec_from_file_location(module_name, file)
        assert loader_spec is not None and loader_spec.loader is not None
        module = importlib.util.module_from_spec(loader_spec)
        sys.modules[module_name] = module
        sys.path.insert(0, str(file.parent))  # so the file's own sibling imports work
        loader_spec.loader.exec_module(module)
    return sys.modules[module_name]
