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
        raise ConfigError(
            f"{what} runs on one device in ember; run Tuner(Trainer(devices=1)) first, then the "
            "distributed fit with the value it found"
        )


def search_trainer(trainer: Any, root: str, **options: Any) -> Any:
    """A Trainer like `trainer` for a search: the same device, numerics and epoch limit (Lightning's
    searches run in the user's fit loop, which stops at its max_epochs too), nothing written."""
    options.setdefault("limit_train_batches", trainer.limit_train_batches)
    return type(trainer)(
        max_epochs=trainer.max_epochs,
        accelerator=trainer.device_type,
        devices=1,
        precision=trainer.precision,
        deterministic=trainer.deterministic,
        accumulate_grad_batches=trainer.accumulate_grad_batches,
        gradient_clip_val=trainer.gradient_clip_val,
        gradient_clip_algorithm=trainer.gradient_clip_algorithm,
        default_root_dir=root,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        **options,
    )


#: The module's run-level hooks, which a search inside a running fit must not call again: Lightning's trials
#: run only its training loop (its setup may build layers the fit's optimizer already holds).
RUN_HOOKS = ("prepare_data", "setup", "configure_model", "on_fit_start", "on_fit_end", "teardown")
#: What a run lends the module through its `run_link` (its optimizers and schedulers for self.optimizers(),
#: manual_backward): a search run lends its own, so the fit's are put back after.
LENT_BY_THE_RUN = ("optimizers", "schedulers", "manual_backward")


@contextmanager
def module_kept(module: Any, in_run: bool = False) -> Iterator[str]:
    """Yield a scratch folder; afterwards the module's weights, buffers, mode, trainer and what its run lent
    it are as before. `in_run`: the search runs inside a fit,
    so the module's run-level hooks are not called again.

    Example:
        >>> layer = torch.nn.Linear(2, 1)
        >>> with module_kept(layer):
        ...     _ = layer.weight.data.fill_(0.0)
        >>> bool(layer.weight.abs().sum() > 0)  # the weights are back
        True
    """
    saved = {name: tensor.detach().clone() for name, tensor in module.state_dict().items()}
    training, attached = module.training, attached_trainer(module)
    link = getattr(module, "run_link", None)  # (a Module; a plain torch module has none)
    lent = {name: getattr(link, name) for name in LENT_BY_THE_RUN} if link is not None else {}
    quieted = [name for name in RUN_HOOKS if in_run and callable(getattr(module, name, None))]
    for name in quieted:
        setattr(module, name, _nothing)  # an instance attribute: shadows the method while the search runs
    try:
        with tempfile.TemporaryDirectory(prefix="ember-tuner-") as root:
            yield root
    finally:
        for name in quieted:
            vars(module).pop(name, None)
        with torch.no_grad():
            module.load_state_dict(saved)
        module.train(training)
        for name, value in lent.items():
            setattr(link, name, value)
        if attached is not None or hasattr(
            type(module), "trainer"
        ):  # (a Module; a plain torch module has none)
            module.trainer = attached


def _nothing(*args: Any, **kwargs: Any) -> None:
    return None


def attached_trainer(module: Any) -> Any:
    try:
        return module.trainer
    except (EmberError, AttributeError):
        return None
