"""`OptimizerCallable` and `LRSchedulerCallable`: the type hints of a Module that takes its optimizer
from the command line as a callable (Lightning's dependency-injection form).

    def __init__(self, optimizer: OptimizerCallable = torch.optim.Adam): ...
    python main.py fit --model.optimizer Adam --model.optimizer.lr 0.01

(This module imports torch; ember.cli imports it only when one of the names is asked for.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch

OptimizerCallable = Callable[[Iterable], torch.optim.Optimizer]
LRSchedulerCallable = Callable[
    [torch.optim.Optimizer], torch.optim.lr_scheduler.LRScheduler | torch.optim.lr_scheduler.ReduceLROnPlateau
]
