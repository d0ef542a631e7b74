"""Lightning's `lightning.pytorch.utilities` names that LightningModules and callbacks import, so that `from
lightning.pytorch.utilities import grad_norm, rank_zero_only` ports as `from ember.utilities import ...`.

`grad_norm` is what Lightning's docs log in `on_before_optimizer_step` to track gradients; the rank-zero
helpers run or report on global rank 0 only (every process of a DDP run executes the module's code);
`CombinedLoader` reads several loaders as one (also at Lightning's path, `ember.utilities.combined_loader`).
"""

from __future__ import annotations

import enum
import logging
import os
import pickle

# aliased: importing ember.utilities.warnings (Lightning's path) sets `warnings` here
import warnings as _warnings
from collections.abc import Callable
from typing import Any

from ember.hyperparameters import AttributeDict
from ember.loggers.logger import global_rank, rank_zero_only
from ember.runtime.combined_loader import CombinedLoader
from ember.runtime.devices import move_to_device

__all__ = [
    "AttributeDict",
    "CombinedLoader",
    "GradClipAlgorithmType",
    "find_shared_parameters",
    "grad_norm",
    "is_picklable",
    "measure_flops",
    "move_data_to_device",
    "rank_zero_deprecation",
    "rank_zero_info",
    "rank_zero_only",
    "rank_zero_warn",
    "set_shared_parameters",
    "suggested_max_num_workers",
]

_log = logging.getLogger("ember")


def grad_norm(module: Any, norm_type: float | int | str, group_separator: str = "/") -> dict[str, Any]:
    """The p-norm of each parameter's gradient, and of all of them as one vector (``..._norm_total``), keyed
    as Lightning's: ``grad_{p}_norm{group_separator}{parameter name}`` with ``p`` a float (``'inf'`` allowed).
    Parameters without a gradient are left out; no gradient at all gives ``{}``.

    Example:
        >>> import torch
        >>> layer = torch.nn.Linear(2, 1)
        >>> layer(torch.ones(1, 2)).sum().backward()
        >>> {k: round(float(v), 4) for k, v in grad_norm(layer, norm_type=2).items()}
        {'grad_2.0_norm/weight': 1.4142, 'grad_2.0_norm/bias': 1.0, 'grad_2.0_norm_total': 1.7321}
    """
    import torch

    p = float(norm_type)
    if p <= 0:
        raise ValueError(f"grad_norm(norm_type={norm_type!r}): use a positive number or 'inf'")
    norms = {
        f"grad_{p}_norm{group_separator}{name}": param.grad.detach().norm(p)
        for name, param in module.named_parameters()
        if param.grad is not None
    }
    if norms:
        norms[f"grad_{p}_norm_total"] = torch.stack([n.to(torch.float32) for n in norms.values()]).norm(p)
    return norms


def rank_zero_info(message: str, *args: Any, stacklevel: int = 4, **kwargs: Any) -> None:
    """Log ``message`` at INFO level (the ``ember`` logger), on global rank 0 only.

    Example:
        >>> rank_zero_info("starting")
    """
    if global_rank() == 0:  # Lightning's stacklevel counts two frames of its own that ember does not have
        _log.info(message, *args, stacklevel=max(1, stacklevel - 2), **kwargs)


def rank_zero_warn(message: str | Warning, stacklevel: int = 4, **kwargs: Any) -> None:
    """``warnings.warn(message)`` on global rank 0 only (``category=`` as warnings.warn's).

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     rank_zero_warn("check your data")
        >>> str(caught[0].message)
        'check your data'
    """
    if global_rank() == 0:  # Lightning's default (4) names the caller's line: two frames fewer here
        _warnings.warn(message, stacklevel=max(1, stacklevel - 2), **kwargs)


def rank_zero_deprecation(message: str | Warning, stacklevel: int = 5, **kwargs: Any) -> None:
    """``warnings.warn(message, DeprecationWarning)`` on global rank 0 only (``category=`` to choose another).

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     rank_zero_deprecation("old_name is deprecated")
        >>> caught[0].category.__name__
        'DeprecationWarning'
    """
    kwargs.setdefault("category", DeprecationWarning)
    rank_zero_warn(message, stacklevel=stacklevel, **kwargs)


def move_data_to_device(batch: Any, device: Any) -> Any:
    """Every tensor of a nested batch (dicts, lists, tuples, namedtuples, dataclasses) moved to ``device``.

    Example:
        >>> import torch
        >>> move_data_to_device({"x": [torch.ones(1)]}, "cpu")["x"][0].device.type
        'cpu'
    """
    import torch

    return move_to_device(batch, torch.device(device))


def measure_flops(
    model: Any, forward_fn: Callable[[], Any], loss_fn: Callable[[Any], Any] | None = None
) -> int:
    """The FLOPs of ``forward_fn()`` (and, with ``loss_fn``, of the loss and its backward), counted by
    ``torch.utils.flop_counter``; build the model on the meta device to count without computing.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     layer, x = torch.nn.Linear(3, 2, bias=False), torch.randn(4, 3)
        >>> measure_flops(layer, lambda: layer(x))  # 2 * 4 * 3 * 2
        48
    """
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with counter:
        if loss_fn is None:
            forward_fn()
        else:
            loss_fn(forward_fn()).backward()
    return counter.get_total_flops()


def find_shared_parameters(module: Any) -> list[list[str]]:
    """The names of tied parameters: one list per parameter reachable under several names.

    Example:
        >>> import torch
        >>> net = torch.nn.Module()
        >>> net.a, net.b = torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)
        >>> net.b.weight = net.a.weight
        >>> find_shared_parameters(net)
        [['a.weight', 'b.weight']]
    """
    names: dict[Any, list[str]] = {}

    def visit(sub: Any, prefix: str) -> None:
        for (
            name,
            param,
        ) in sub._parameters.items():  # own parameters, duplicates included (named_parameters drops them)
            if param is not None:
                names.setdefault(param, []).append(prefix + name)
        for name, child in sub._modules.items():
            if child is not None:
                visit(child, f"{prefix}{name}.")

    visit(module, "")
    return [group for group in names.values() if len(group) > 1]


def set_shared_parameters(module: Any, shared_params: list[list[str]]) -> Any:
    """Tie the parameters again (after e.g. moving the module made copies): each group's names all point to
    the group's first parameter. Returns the module.

    Example:
        >>> import torch
        >>> net = torch.nn.Module()
        >>> net.a, net.b = torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)
        >>> set_shared_parameters(net, [["a.weight", "b.weight"]]).b.weight is net.a.weight
        True
    """
    for first, *others in shared_params:
        shared = _attribute(module, first)
        for path in others:
            owner, _, name = path.rpartition(".")
            setattr(_attribute(module, owner) if owner else module, name, shared)
    return module


def _attribute(module: Any, path: str) -> Any:
    for name in path.split("."):
        module = getattr(module, name)
    return module


def is_picklable(obj: object) -> bool:
    """Whether ``pickle.dumps(obj)`` works.

    Example:
        >>> is_picklable([1, 2]), is_picklable(lambda: 0)
        (True, False)
    """
    try:
        pickle.dumps(obj)
    except (pickle.PickleError, AttributeError, RuntimeError, TypeError):
        return False
    return True


def suggested_max_num_workers(local_world_size: int) -> int:
    """An upper bound for a DataLoader's ``num_workers``: the CPUs this process may use, shared among the
    machine's ``local_world_size`` processes, one left for each main process (at least 1).

    Example:
        >>> suggested_max_num_workers(1) >= 1
        True
    """
    if local_world_size < 1:
        raise ValueError(f"`local_world_size` should be >= 1, got {local_world_size}.")
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, cpus // local_world_size - 1)


class GradClipAlgorithmType(str, enum.Enum):
    """``gradient_clip_algorithm``'s values: ``"norm"`` clips the norm over all parameters together,
    ``"value"`` each gradient element.

    Example:
        >>> GradClipAlgorithmType("norm") == "norm", GradClipAlgorithmType.supported_types()
        (True, ['value', 'norm'])
    """

    VALUE = "value"
    NORM = "norm"

    @staticmethod
    def supported_type(val: str) -> bool:
        """Whether ``val`` names an algorithm."""
        return any(x.value == val for x in GradClipAlgorithmType)

    @staticmethod
    def supported_types() -> list[str]:
        """The algorithms' names."""
        return [x.value for x in GradClipAlgorithmType]


from ember.paths import refused_names  # noqa: E402 - Lightning's other names refuse use (docs/lightning_paths.md)

__getattr__ = refused_names(__name__)
