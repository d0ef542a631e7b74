"""LambdaCallback: a callback made of functions passed by hook name (Lightning's `LambdaCallback`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember.callbacks.callback import Callback
from ember.errors import ConfigError

#: The hooks a LambdaCallback takes: every hook of Callback (state_dict/load_state_dict are not hooks).
HOOK_NAMES = tuple(name for name in vars(Callback) if name in ("setup", "teardown") or name.startswith("on_"))


class LambdaCallback(Callback):
    """Each keyword names a hook and gives the function to call there, with the hook's arguments.

    Example:
        >>> import torch, ember
        >>> seen = []
        >>> log_epochs = LambdaCallback(
        ...     on_train_epoch_end=lambda trainer, module: seen.append(trainer.current_epoch)
        ... )
        >>> class Tiny(ember.Module):
        ...     def __init__(self):
        ...         super().__init__(); self.layer = torch.nn.Linear(2, 1)
        ...     def training_step(self, batch, batch_idx):
        ...         return self.layer(batch).pow(2).mean()
        ...     def configure_optimizers(self):
        ...         return torch.optim.SGD(self.parameters(), lr=0.1)
        >>> trainer = ember.Trainer(max_epochs=2, callbacks=[log_epochs], logger=False,
        ...                         enable_progress_bar=False, enable_checkpointing=False,
        ...                         enable_model_summary=False)
        >>> trainer.fit(Tiny(), torch.utils.data.DataLoader(torch.randn(4, 2), batch_size=2))
        >>> seen
        [0, 1]
        >>> LambdaCallback(on_epoch_end=print)  # doctest: +NORMALIZE_WHITESPACE
        Traceback (most recent call last):
        ember.errors.ConfigError: LambdaCallback(on_epoch_end=...): no such hook; use on_train_epoch_end,
        on_validation_epoch_end, or another Callback hook
    """

    def __init__(self, **hooks: Callable[..., Any] | None) -> None:
        for name, function in hooks.items():
            if name not in HOOK_NAMES:
                raise ConfigError(
                    f"LambdaCallback({name}=...): no such hook; use on_train_epoch_end, "
                    "on_validation_epoch_end, or another Callback hook"
                )
            if function is not None:  # None: Lightning's default for a hook not given
                setattr(self, name, function)
