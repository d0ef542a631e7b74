"""Lightning hooks ember does not call — refused, never ignored.

A Module, DataModule or callback that overrides one of these would silently lose the behaviour
it wrote if ember ran anyway, so the run stops before it starts with one line naming the hook and
what to use in ember instead. The list shrinks as ember learns to call them; the hooks Lightning 2
removed stay here with their replacements. ``tests/trainer/test_lightning_hooks.py`` walks every
hook of the installed Lightning and checks each is called or listed here.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ember.errors import ConfigError

MODULE_HOOKS: dict[str, str] = {
    "configure_sharded_model": (
        "Lightning 2 replaced it by configure_model; rename the method to configure_model"
    ),
}

DATAMODULE_HOOKS: dict[str, str] = {}

# Hooks Lightning 2.0 removed: code written for Lightning 1.x still defines them.
REMOVED_HOOKS: dict[str, str] = {
    "on_epoch_start": "use on_train_epoch_start / on_validation_epoch_start (removed in Lightning 2.0)",
    "on_epoch_end": "use on_train_epoch_end / on_validation_epoch_end (removed in Lightning 2.0)",
    "on_batch_start": "use on_train_batch_start (removed in Lightning 2.0)",
    "on_batch_end": "use on_train_batch_end (removed in Lightning 2.0)",
    "training_epoch_end": (
        "use on_train_epoch_end and keep the outputs you need yourself (removed in Lightning 2.0)"
    ),
    "validation_epoch_end": "use on_validation_epoch_end (removed in Lightning 2.0)",
    "test_epoch_end": "use on_test_epoch_end (removed in Lightning 2.0)",
    "training_step_end": "do the work at the end of training_step (removed in Lightning 2.0)",
    "validation_step_end": "do the work at the end of validation_step (removed in Lightning 2.0)",
    "test_step_end": "do the work at the end of test_step (removed in Lightning 2.0)",
    "on_pretrain_routine_start": "use on_fit_start (removed in Lightning 2.0)",
    "on_pretrain_routine_end": "use on_fit_start (removed in Lightning 2.0)",
    "on_init_start": "use __init__ (removed in Lightning 2.0)",
    "on_init_end": "use __init__ (removed in Lightning 2.0)",
    "on_hpc_save": "use on_save_checkpoint (removed in Lightning 2.0)",
    "on_hpc_load": "use on_load_checkpoint (removed in Lightning 2.0)",
}


def overridden(obj: Any, name: str, base: type) -> bool:
    """Whether a class between ``type(obj)`` and ``base`` defines ``name``."""
    for cls in type(obj).__mro__:
        if cls is base or cls is object:
            return False
        if name in cls.__dict__:
            return True
    return False


def refuse_unsupported_hooks(
    module: Any,
    module_base: type,
    datamodule: Any = None,
    datamodule_base: type | None = None,
    callbacks: Iterable[Any] = (),
    callback_base: type | None = None,
) -> None:
    """Raise ConfigError naming the first hook ember would not call that ``module``, ``datamodule`` or a
    callback overrides.

    >>> import ember
    >>> class Old(ember.Module):
    ...     def training_epoch_end(self, outputs):
    ...         pass
    >>> refuse_unsupported_hooks(Old(), ember.Module)  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    ember.errors.ConfigError: Old defines training_epoch_end, which ember does not call; use
    on_train_epoch_end and keep the outputs you need yourself (removed in Lightning 2.0)
    """
    candidates: list[tuple[Any, type, dict[str, str]]] = [
        (module, module_base, {**MODULE_HOOKS, **REMOVED_HOOKS})
    ]
    if datamodule is not None and datamodule_base is not None:
        candidates.append((datamodule, datamodule_base, {**DATAMODULE_HOOKS, **REMOVED_HOOKS}))
    if callback_base is not None:
        candidates += [(callback, callback_base, REMOVED_HOOKS) for callback in callbacks]
    for obj, base, refused in candidates:
        for name, instead in refused.items():
            if overridden(obj, name, base):
                raise ConfigError(
                    f"{type(obj).__name__} defines {name}, which ember does not call; {instead}"
                )
