"""Lightning's `lightning.pytorch.utilities` names that LightningModules and callbacks import, so that
`from lightning.pytorch.utilities import grad_norm, rank_zero_only` ports as `from ember.utilities import ...`.

`grad_norm` is what Lightning's docs log in `on_before_optimizer_step` to track gradients; the rank-zero
helpers run or report on global rank 0 only (every process of a DDP run executes the module's code).
"""

from __future__ import annotations

import logging
import warnings
from typing import Any

from ember.hyperparameters import AttributeDict
from ember.loggers.logger import global_rank, rank_zero_only

__all__ = ["AttributeDict", "grad_norm", "rank_zero_info", "rank_zero_only", "rank_zero_warn"]

_log = logging.getLogger("ember")


def grad_norm(module: Any, norm_type: float | int | str, group_separator: str = "/") -> dict[str, Any]:
    """The p-norm of each parameter's gradient, and of all of them as one vector (``..._norm_total``), keyed as
    Lightning's: ``grad_{p}_norm{group_separator}{parameter name}`` with ``p`` a float (``'inf'`` allowed).
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
    norms = {f"grad_{p}_norm{group_separator}{name}": param.grad.detach().norm(p)
             for name, param in module.named_parameters() if param.grad is not None}
    if norms:
        norms[f"grad_{p}_norm_total"] = torch.stack([n.to(torch.float32) for n in norms.values()]).norm(p)
    return norms


def rank_zero_info(message: str, *args: Any, stacklevel: int = 4, **kwargs: Any) -> None:
    """Log ``message`` at INFO level (the ``ember`` logger), on global rank 0 only.

    Example:
        >>> rank_zero_info("starting")
    """
    if global_rank() == 0:
        _log.info(message, *args, stacklevel=stacklevel, **kwargs)


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
    if global_rank() == 0:
        warnings.warn(message, stacklevel=stacklevel, **kwargs)
