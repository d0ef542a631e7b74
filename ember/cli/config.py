"""Config files in, config files out: the translation between what users write and what the parser reads.

In (`prepare_config`), one mapping per `--config` file, in LightningCLI's layout:
- ember's earlier layout still reads: `seed:` is `seed_everything:`;
- `class_path: path/to/file.py:Class` (relative to the config file) is loaded under a private
  module name so the parser can import it; naming a file imports it, as naming a module does;
- `lightning.*` / `pytorch_lightning.*` class paths are refused with the ember class to write;
- a Lightning Trainer option ember lacks is dropped at Lightning's (inert) default and refused
  otherwise; `null` for an option whose default is not `null` means that default (Lightning's sense).
Out (`printable`): class paths of files loaded that way are written back as `/abs/file.py:Class`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ember.class_path import USER_MODULE_PREFIX
from ember.cli.trainer_options import LIGHTNING_ONLY_TRAINER_OPTIONS, TrainerOption
from ember.errors import ConfigError

#: The sections whose values may be class_path + init_args (where a class path can appear).
CLASS_SECTIONS = ("model", "data", "optimizer", "lr_scheduler")
#: Lightning's packages: their class paths are answered with the ember class to write instead.
_LIGHTNING_PACKAGES = ("lightning.pytorch.", "pytorch_lightning.", "lightning.")


def load_config_file(path: str | os.PathLike[str], options: Sequence[TrainerOption]) -> dict[str, Any]:
    """One `--config` file as the mapping the parser reads (see the module docstring)."""
    from ember.config_file import read_yaml

    file = Path(path)
    config = read_yaml(file)
    if config is None:
        return {}
    if not isinstance(config, dict):
        raise ConfigError(
            f"{file} must hold a mapping (seed_everything, trainer, model, data, ...), "
            f"not a {type(config).__name__}"
        )
    return prepare_config(config, str(file.resolve().parent), options, str(file))


def prepare_config(
    config: dict[str, Any], base_dir: str, options: Sequence[TrainerOption], where: str
) -> dict[str, Any]:
    config = dict(config)
    if "seed" in config:  # ember's earlier layout
        if "seed_everything" in config:
            raise ConfigError(f"{where} sets both seed and seed_everything; keep seed_everything")
        config["seed_everything"] = config.pop("seed")
    for key in CLASS_SECTIONS:
        if key in config:
            config[key] = _resolve_class_paths(config[key], base_dir, key)
    trainer = config.get("trainer")
    if isinstance(trainer, dict):
        config["trainer"] = _prepare_trainer(trainer, base_dir, options, where)
    return config


def _prepare_trainer(
    trainer: dict[str, Any], base_dir: str, options: Sequence[TrainerOption], where: str
) -> dict[str, Any]:
    defaults = {o.name: o.default for o in options}
    out = {}
    for key, value in trainer.items():
        if key in LIGHTNING_ONLY_TRAINER_OPTIONS and key not in defaults:
            inert = LIGHTNING_ONLY_TRAINER_OPTIONS[key]
            if value != inert:
                raise ConfigError(lightning_only_message(key, value))
            continue
        if value is None and key in defaults and defaults[key] is not None:
            continue  # Lightning writes null for "the default"
        out[key] = (
            _resolve_class_paths(value, base_dir, f"trainer.{key}")
            if key in ("callbacks", "logger")
            else value
        )
    return out


def lightning_only_message(key: str, value: Any) -> str:
    inert = LIGHTNING_ONLY_TRAINER_OPTIONS[key]
    return (
        f"trainer.{key}={value!r}: ember's Trainer has no {key} (a Lightning option); remove it or set it "
        f"to {inert!r}"
    )


def _resolve_class_paths(value: Any, base_dir: str, where: str) -> Any:
    if isinstance(value, list):
        return [_resolve_class_paths(v, base_dir, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, str) and where in CLASS_SECTIONS:
        return resolve_class_path(value, base_dir, where)
    if isinstance(value, dict) and isinstance(value.get("class_path"), str):
        return {**value, "class_path": resolve_class_path(value["class_path"], base_dir, where)}
    return value


def resolve_class_path(spec: str, base_dir: str | None, where: str) -> str:
    """A class path the parser can import: `file.py:Class` loaded (privately), Lightning's names refused."""
    for lightning in _LIGHTNING_PACKAGES:
        if spec.startswith(lightning):
            name = spec.rsplit(".", 1)[-1]
            section = spec[len(lightning) :].split(".")[0]
            suggestion = (
                f"ember.{section}.{name}" if section in ("callbacks", "loggers") else "an ember class"
            )
            raise ConfigError(
                f"{where}: {spec} is Lightning's class; write {suggestion} (ember does not import Lightning)"
            )
    module_part, sep, name = spec.partition(":")
    if not (sep and module_part.endswith(".py")):
        return spec
    from ember.class_path import import_class

    cls = import_class(spec, base_dir, where, base=_expected_base(where))
    return f"{cls.__module__}.{cls.__qualname__}"


def _expected_base(where: str) -> type | tuple[type, ...] | None:
    """What a class named at `where` must be, checked before the parser (or anyone) calls it."""
    section = where.split("[")[0]
    if section == "model":
        from ember.module import Module

        return Module
    if section == "data":
        from ember.datamodule import DataModule

        return DataModule
    if section == "trainer.callbacks":
        from ember.callbacks import Callback

        return Callback
    if section == "trainer.logger":
        from ember.loggers import Logger

        return Logger
    return None


def printable(value: Any) -> Any:
    """`value` (a config as plain data) with privately loaded
    file classes written back as `/abs/file.py:Class`."""
    if isinstance(value, dict):
        return {k: printable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [printable(v) for v in value]
    if isinstance(value, str) and value.startswith(USER_MODULE_PREFIX):
        module_name, _, name = value.partition(".")
        module = sys.modules.get(module_name)
        if module is not None and getattr(module, "__file__", None):
            return f"{module.__file__}:{name}"
    return value
