"""Lightning's `lightning.pytorch.utilities.model_summary.model_summary` at ember's path: the summary table of
a model that the ModelSummary callback prints (docs/lightning_paths.md).

``ModelSummary(model, max_depth=1)`` is ember's ``Summary``; ``summarize(model, max_depth)`` builds one. Every
other public name of Lightning's module imports as a placeholder that refuses use, naming the alternative.

Example:
    >>> import torch
    >>> summarize(torch.nn.Sequential(torch.nn.Linear(2, 3)), max_depth=1).total_parameters
    9
"""

from __future__ import annotations

from typing import Any

from ember.callbacks.model_summary import Summary as ModelSummary
from ember.callbacks.model_summary import human_readable_count as get_human_readable_count
from ember.paths import refused_names

__all__ = ["ModelSummary", "get_human_readable_count", "summarize"]


def summarize(lightning_module: Any, max_depth: int = 1) -> ModelSummary:
    """The summary of ``lightning_module`` down to ``max_depth`` (Lightning's ``summarize``)."""
    return ModelSummary(lightning_module, max_depth=max_depth)


__getattr__ = refused_names(__name__)
