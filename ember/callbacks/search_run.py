"""A search run: a second Trainer, with the user's device and numerics, that trains the same module
for a few steps and leaves it as it was.

Lightning runs its finders inside the user's Trainer (saving a checkpoint, swapping loops' settings,
restoring them after). ember runs them in a Trainer of their own, built with the same type,
accelerator, precision, accumulation and clipping, no logger, no checkpoints, no progress bar: the
user's Trainer is not touched, and the module's weights and buffers are put back bitwise after.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

from ember.errors import ConfigError, EmberError


def refuse_distributed(trainer: Any, what: str) -> None:
    if trainer.world_size > 1 or trainer.num_devices > 1:
        raise ConfigError(f"{what} runs on one device in ember; run Tuner(Trainer(devices=1)) first, then the "
                          "distributed fit with the value it found")


def search_trainer(trainer: Any, root: str, **options: Any) -> Any:
    """A Trainer like `trainer` for a search: the same device, numerics and epoch limit (Lightning's
    searches run in the user's fit loop, which stops at its max_epochs too), nothing written."""
    options.setdefault("limit_train_batches", trainer.limit_train_batches)
    return type(trainer)(
        max_epochs=trainer.max_epochs,
        accelerator=trainer.device_type, devices=1, precision=trainer.precision, deterministic=trainer.deterministic,
        accumulate_grad_batches=trainer.accumulate_grad_batches, gradient_clip_val=trainer.gradient_clip_val,
        gradient_clip_algorithm=trainer.gradient_clip_algorithm, default_root_dir=root, logger=False,
        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False, num_sanity_val_steps=0,
        **options,
    )


@contextmanager
def module_kept(module: Any) -> Iterator[str]:
    """Yield a scratch folder; afterwards the module's weights, buffers, mode and trainer are as before."""
    saved = {name: tensor.detach().clone() for name, tensor in module.state_dict().items()}
    training, attached = module.training, attached_trainer(module)
    try:
        with tempfile.TemporaryDirectory(prefix="ember-tuner-") as root:
            yield root
    finally:
        with torch.no_grad():
            module.load_state_dict(saved)
        module.train(training)
        module.trainer = attached


def attached_trainer(module: Any) -> Any:
    try:
        return module.trainer
    except EmberError:
        return None
