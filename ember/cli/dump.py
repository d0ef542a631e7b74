"""A parsed config as the YAML users read (`--print_config`) and the run folder keeps (config.yaml)."""

from __future__ import annotations

from typing import Any

from ember.cli.config import printable


def dump_config(parser: Any, config: Any, skip_none: bool = False, skip_default: bool = False) -> str:
    """YAML in LightningCLI's layout; classes loaded from files written back as `/abs/file.py:Class`."""
    import yaml

    data = yaml.safe_load(
        parser.dump(config, skip_default=skip_default, skip_unset=False, skip_validation=True)
    )
    for key in ("config", "__path__", "print_config"):
        data.pop(key, None)
    if skip_none:
        data = _without_nulls(data)
    return yaml.safe_dump(printable(data), sort_keys=False, default_flow_style=False)


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    return value
