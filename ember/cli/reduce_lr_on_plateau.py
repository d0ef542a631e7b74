"""`ember.cli.ReduceLROnPlateau`: torch's ReduceLROnPlateau that names the metric it watches (Lightning's).

    --lr_scheduler ReduceLROnPlateau --lr_scheduler.monitor val_loss

A scheduler built from the command line has nowhere else to say which logged metric drives it, so
this one takes `monitor` first, as `lightning.pytorch.cli.ReduceLROnPlateau` does. (This module imports
torch; ember.cli imports it only when a command-line parser is built.)
"""

from __future__ import annotations

import torch


class ReduceLROnPlateau(torch.optim.lr_scheduler.ReduceLROnPlateau):
    """torch's ReduceLROnPlateau with the monitored metric's name as its second argument.

    Example:
        >>> import torch
        >>> from ember.cli import ReduceLROnPlateau
        >>> optimizer = torch.optim.SGD(torch.nn.Linear(1, 1).parameters(), lr=0.1)
        >>> ReduceLROnPlateau(optimizer, monitor="val_loss", patience=2).monitor
        'val_loss'
    """

    def __init__(
        self,
        optimizer: torch.optim.Optimizer,
        monitor: str,
        mode: str = "min",
        factor: float = 0.1,
        patience: int = 10,
        threshold: float = 1e-4,
        threshold_mode: str = "rel",
        cooldown: int = 0,
        min_lr: float | list[float] = 0.0,
        eps: float = 1e-8,
    ) -> None:
        # torch's arguments spelt out (not *args): the parser reads them from this signature
        super().__init__(
            optimizer,
            mode=mode,  # type: ignore[arg-type]  # a str for the CLI's parser; torch checks the value
            factor=factor,
            patience=patience,
            threshold=threshold,
            threshold_mode=threshold_mode,  # type: ignore[arg-type]  # as `mode`
            cooldown=cooldown,
            min_lr=min_lr,
            eps=eps,
        )
        self.monitor = monitor


ReduceLROnPlateau.__module__ = "ember.cli"  # its class path in configs: ember.cli.ReduceLROnPlateau
