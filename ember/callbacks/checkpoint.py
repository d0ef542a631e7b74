"""Checkpoint: the base class of the callbacks that write checkpoints (Lightning's ``Checkpoint``)."""

from __future__ import annotations

from ember.callbacks.callback import Callback


class Checkpoint(Callback):
    """Base class for checkpointing callbacks; subclass it so the Trainer counts yours as one
    (``trainer.checkpoint_callbacks``), as Lightning's ``Checkpoint`` does.

    Example:
        >>> from ember.callbacks import Checkpoint, ModelCheckpoint, OnExceptionCheckpoint
        >>> isinstance(ModelCheckpoint(), Checkpoint), isinstance(OnExceptionCheckpoint("runs"), Checkpoint)
        (True, True)
    """
