"""Lightning's trackers that ember does not provide: importing the name works, building one is refused in one
line that names what ember has instead (never a logger that silently records nothing).

Example:
    >>> from ember.loggers import CometLogger
    >>> CometLogger(project="mnist")
    Traceback (most recent call last):
    ...
    ember.errors.ConfigError: CometLogger (Comet) is not supported by ember; use WandbLogger, MLFlowLogger, ...
"""

from __future__ import annotations

from typing import Any

from ember.errors import ConfigError

ALTERNATIVES = "WandbLogger, MLFlowLogger, TensorBoardLogger or CSVLogger from ember.loggers"


class _Refused:
    service = ""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise ConfigError(f"{type(self).__name__} ({self.service}) is not supported by ember; use {ALTERNATIVES}")


class CometLogger(_Refused):
    """Refused (Comet): see the module's docstring."""

    service = "Comet"


class NeptuneLogger(_Refused):
    """Refused (Neptune): see the module's docstring."""

    service = "Neptune"


class LitLogger(_Refused):
    """Refused (Lightning's cloud experiments platform, litlogger): see the module's docstring."""

    service = "Lightning AI's litlogger"
