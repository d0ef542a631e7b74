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

_BATCH_HOOK = "transform batches in the step methods, or in the DataLoader's collate_fn"
_MANUAL = ("switch to manual optimization (self.automatic_optimization = False, then self.optimizers(), "
           "self.manual_backward(loss), optimizer.step() in training_step)")

MODULE_HOOKS: dict[str, str] = {
    "backward": f"ember calls loss.backward() itself; for a custom backward {_MANUAL}",
    "optimizer_step": f"for custom stepping (warm-up, skipped steps) use an LR scheduler or {_MANUAL}",
    "optimizer_zero_grad": f"ember zeroes gradients itself (set_to_none=True); to change it {_MANUAL}",
    "lr_scheduler_step": f"return a torch scheduler from configure_optimizers, or {_MANUAL}",
    "configure_gradient_clipping": "use Trainer(gradient_clip_val=..., gradient_clip_algorithm=...), or clip in "
                                   "on_before_optimizer_step",
    "configure_model": "build the layers in __init__",
    "configure_sharded_model": "Lightning 2 replaced it by configure_model; build the layers in __init__",
    "transfer_batch_to_device": _BATCH_HOOK,
    "on_before_batch_transfer": _BATCH_HOOK,
    "on_after_batch_transfer": _BATCH_HOOK,
    "on_validation_model_eval": "ember calls module.eval() itself; put extra work in on_validation_start",
    "on_validation_model_train": "ember calls module.train() itself; put extra work in on_validation_end",
    "on_validation_model_zero_grad": "put the work in on_validation_start",
    "on_test_model_eval": "ember calls module.eval() itself; put extra work in on_test_start",
    "on_test_model_train": "ember calls module.train() itself; put extra work in on_test_end",
    "on_predict_model_eval": "ember calls module.eval() itself; put extra work in on_predict_start",
}

DATAMODULE_HOOKS: dict[str, str] = {
    "transfer_batch_to_device": _BATCH_HOOK,
    "on_before_batch_transfer": _BATCH_HOOK,
    "on_after_batch_transfer": _BATCH_HOOK,
    "on_exception": "handle the failure in a callback's on_exception",
}

# Hooks Lightning 2.0 removed: code written for Lightning 1.x still defines them.
REMOVED_HOOKS: dict[str, str] = {
    "on_epoch_start": "use on_train_epoch_start / on_validation_epoch_start (removed in Lightning 2.0)",
    "on_epoch_end": "use on_train_epoch_end / on_validation_epoch_end (removed in Lightning 2.0)",
    "on_batch_start": "use on_train_batch_start (removed in Lightning 2.0)",
    "on_batch_end": "use on_train_batch_end (removed in Lightning 2.0)",
    "training_epoch_end": "use on_train_epoch_end and keep the outputs you need yourself (removed in Lightning 2.0)",
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


def refuse_unsupported_hooks(module: Any, module_base: type, datamodule: Any = None, datamodule_base: type | None = None,
                             callbacks: Iterable[Any] = (), callback_base: type | None = None) -> None:
    """Raise ConfigError naming the first hook ember would not call that ``module``, ``datamodule`` or a
    callback overrides.

    >>> import ember
    >>> class Old(ember.Module):
    ...     def training_epoch_end(self, outputs):
    ...         pass
    >>> refuse_unsupported_hooks(Old(), ember.Module)
    Traceback (most recent call last):
    ...
    ember.errors.ConfigError: Old defines training_epoch_end, which ember does not call; use on_train_epoch_end and keep the outputs you need yourself (removed in Lightning 2.0)
    """
    candidates: list[tuple[Any, type, dict[str, str]]] = [(module, module_base, {**MODULE_HOOKS, **REMOVED_HOOKS})]
    if datamodule is not None and datamodule_base is not None:
        candidates.append((datamodule, datamodule_base, {**DATAMODULE_HOOKS, **REMOVED_HOOKS}))
    if callback_base is not None:
        candidates += [(callback, callback_base, REMOVED_HOOKS) for callback in callbacks]
    for obj, base, refused in candidates:
        for name, instead in refused.items():
            if overridden(obj, name, base):
                raise ConfigError(f"{type(obj).__name__} defines {name}, which ember does not call; {instead}")
