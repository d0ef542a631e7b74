"""Reading a YAML config file (the CLI's `--config`, `ember predict`'s model section): one ConfigError
line for every way it can fail, and `yaml.safe_load`, so a config never constructs Python objects.

It sits low (beside class_path.py) so that both faces that read configs, the CLI and
`ember.inference`, use this one copy without ember.inference importing the CLI above it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ember.errors import ConfigError


def read_yaml(path: str | os.PathLike[str], flag: str = "--config") -> Any:
    """A YAML file's contents (safe_load), or one ConfigError saying why it cannot be read.

    Example:
        >>> read_yaml("no/such.yaml")
        Traceback (most recent call last):
        ...
        ember.errors.ConfigError: config file no/such.yaml does not exist; pass --config path/to/config.yaml
    """
    import yaml

    file = Path(path)
    if file.is_dir():
        raise ConfigError(f"config file {file} is a folder; pass {flag} path/to/config.yaml")
    try:
        raw = file.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"config file {file} does not exist; pass {flag} path/to/config.yaml") from None
    except PermissionError:
        raise ConfigError(
            f"cannot read config file {file}: permission denied; check its permissions"
        ) from None
    except OSError as e:
        raise ConfigError(f"cannot read config file {file}: {e.strerror or e}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(
            f"{file} is not a text file (not UTF-8 YAML); pass {flag} the YAML config"
        ) from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{file} is not valid YAML{where}: {getattr(e, 'problem', e)}") from None
