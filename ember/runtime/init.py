"""Creating a model without initialising its weights (`Trainer.init_module(empty_init=True)`).

A large model whose weights come from a checkpoint right after construction wastes its start-up on
random initialisation. Inside `SkipInitialisation()`, every `torch.nn.init` function (which is what
`reset_parameters` of torch's layers calls) returns its tensor untouched, so the parameters hold
whatever memory they were given until the checkpoint is loaded -- the behaviour Lightning documents
for `empty_init=True`.

Example:
    >>> import torch
    >>> with SkipInitialisation():
    ...     layer = torch.nn.Linear(2, 2)          # no kaiming_uniform_ / uniform_ ran
    >>> torch.nn.init.zeros_(torch.ones(1))        # outside, torch.nn.init works as usual
    tensor([0.])
"""

from __future__ import annotations

from typing import Any

from torch.overrides import TorchFunctionMode


class SkipInitialisation(TorchFunctionMode):
    """A torch function mode in which `torch.nn.init.*` calls leave their tensor as it is."""

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        if getattr(func, "__module__", None) == "torch.nn.init":
            return kwargs["tensor"] if "tensor" in kwargs else args[0]
        return func(*args, **kwargs)
