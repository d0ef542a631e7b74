"""Activation checkpointing: chosen layers keep no activations for backward and run their forward again
there instead (memory for compute), as Lightning's `FSDPStrategy(activation_checkpointing_policy=...)`.

ember applies torch's composable `checkpoint` to each layer the policy names. It adds hooks to the layer
instead of wrapping it, so parameter names (and so checkpoint keys) do not change, and FSDP2 shards the
layer as before.

Example:
    >>> import torch
    >>> net = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU(), torch.nn.Linear(2, 2))
    >>> apply_activation_checkpointing(net, {torch.nn.Linear})
    2
    >>> [name for name, _ in net.named_parameters()][:1]
    ['0.weight']
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import torch

from ember.errors import ConfigError


def layer_classes(policy: Any) -> tuple[type[torch.nn.Module], ...]:
    """Lightning's set-of-classes form of the policy, checked; its FSDP1 wrap-policy callables are refused."""
    if isinstance(policy, type) and issubclass(policy, torch.nn.Module):
        return (policy,)
    if (
        isinstance(policy, Collection)
        and not isinstance(policy, str)
        and policy
        and all(isinstance(c, type) and issubclass(c, torch.nn.Module) for c in policy)
    ):
        return tuple(policy)
    raise ConfigError(
        f"activation_checkpointing_policy={policy!r}: pass a set of layer classes, e.g. {{Block}} "
        "(ember takes no FSDP1 auto-wrap policy callables; FSDP2 has no wrapping)"
    )


def apply_activation_checkpointing(module: torch.nn.Module, policy: Any) -> int:
    """Checkpoint every submodule of `module` that is an instance of one of the policy's classes; returns how
    many."""
    from torch.distributed._composable import checkpoint

    classes = layer_classes(policy)
    chosen = [sub for sub in module.modules() if sub is not module and isinstance(sub, classes)]
    if not chosen:
        names = ", ".join(c.__name__ for c in classes)
        raise ConfigError(
            f"activation_checkpointing_policy names {names}, but {type(module).__name__} has no such "
            "layer; name the class of the blocks to recompute"
        )
    for sub in chosen:
        checkpoint(sub)
    return len(chosen)
