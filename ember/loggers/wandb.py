"""WandbLogger: refused by name. ember has no Weights & Biases integration; this says what to use instead.

Why not (measured 2026-11-23): wandb 0.31 is a 20 MB wheel (56 MB installed) that starts a separate
`wandb-core` service process even offline; Lightning's logger around it is ~700 lines of behaviour
(artifacts, model checkpoints, offline sync) that ember would have to match to accept the name.
"""

from __future__ import annotations

from typing import Any

from ember.errors import ConfigError

REFUSAL = ("WandbLogger is not supported by ember; use MLFlowLogger (a local sqlite file or a tracking server: "
           "pip install 'ember[mlflow]'), TensorBoardLogger or CSVLogger from ember.loggers")


class WandbLogger:
    """Refused: constructing one raises a one-line `ConfigError` naming the loggers ember has.

    Example:
        >>> from ember.loggers import WandbLogger
        >>> WandbLogger(project="mnist", offline=True)
        Traceback (most recent call last):
        ...
        ember.errors.ConfigError: WandbLogger is not supported by ember; use MLFlowLogger ...
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise ConfigError(REFUSAL)
