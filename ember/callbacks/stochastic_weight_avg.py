"""StochasticWeightAveraging: average the weights of the
last epochs (Lightning's callback, on torch's swa_utils).

How it runs, as Lightning 2.6's: at the start of each epoch from `swa_epoch_start` (1-based when an int;
`int(swa_epoch_start * max_epochs)` when a float) to the last, the current weights are added to the average
(so the average holds the weights each of those epochs *started* with); from the first of them the optimizer
is driven by torch's `SWALR` (it takes the place of the module's scheduler); at the end of training the
averaged parameters are copied into the module. A module with batch norm then gets its running statistics
recomputed for the averaged weights in one extra training epoch, as in Lightning: the fit's max_epochs grows
by one, and that epoch starts with the averaged weights and the statistics reset (momentum None: a cumulative
average), runs `training_step` over the training batches in train mode without a backward, and steps the
optimizer once, at its last batch (no gradient: the weights stay the average). Its metrics are logged and its
validation runs; `current_epoch` and `global_step` end one higher
than the fit's own, and `max_epochs` is given back in `on_train_end`.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.optim.swa_utils import SWALR

from ember.callbacks.callback import Callback
from ember.errors import ConfigError, UnsupportedCombinationError
from ember.runtime.scheduler_config import SchedulerConfig

AvgFn = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


class StochasticWeightAveraging(Callback):
    """Stochastic Weight Averaging (Izmailov et al., 2018) over the last epochs of a fit.

    Example:
        >>> from ember.callbacks import StochasticWeightAveraging
        >>> swa = StochasticWeightAveraging(swa_lrs=1e-2, swa_epoch_start=0.75, annealing_epochs=2)
        >>> swa.n_averaged is None
        True
    """

    def __init__(
        self,
        swa_lrs: float | list[float],
        swa_epoch_start: int | float = 0.8,
        annealing_epochs: int = 10,
        annealing_strategy: str = "cos",
        avg_fn: AvgFn | None = None,
        device: torch.device | str | None = torch.device("cpu"),
    ) -> None:
        start_ok = (
            swa_epoch_start >= 1
            if isinstance(swa_epoch_start, int) and not isinstance(swa_epoch_start, bool)
            else isinstance(swa_epoch_start, float) and 0 <= swa_epoch_start <= 1
        )
        if not start_ok:
            raise ConfigError(
                f"StochasticWeightAveraging(swa_epoch_start={swa_epoch_start!r}) should be a >0 integer "
                "or a float between 0 and 1"
            )
        lrs = swa_lrs if isinstance(swa_lrs, list) else [swa_lrs]
        if not isinstance(swa_lrs, (float, list)) or not all(isinstance(lr, float) and lr > 0 for lr in lrs):
            raise ConfigError(
                f"StochasticWeightAveraging(swa_lrs={swa_lrs!r}) should be a positive float, or a list "
                "of positive floats (one per parameter group)"
            )
        if annealing_strategy not in ("cos", "linear"):
            raise ConfigError(
                f"StochasticWeightAveraging(annealing_strategy={annealing_strategy!r}): use 'cos' or 'linear'"
            )
        if avg_fn is not None and not callable(avg_fn):
            raise ConfigError(
                "StochasticWeightAveraging(avg_fn=...) should be callable (averaged, current, count)"
            )
        if device is not None and not isinstance(device, (torch.device, str)):
            raise ConfigError(
                f"StochasticWeightAveraging(device={device!r}) should be a torch.device, a str or None"
            )
        self._swa_epoch_start = swa_epoch_start
        self._swa_lrs = swa_lrs
        self._annealing_epochs, self._annealing_strategy = annealing_epochs, annealing_strategy
        self._avg_fn = avg_fn or self.avg_fn
        self._device = device
        self.n_averaged: torch.Tensor | None = None
        self._average_model: nn.Module | None = None
        self._swa_scheduler: Any = None
        self._scheduler_state: dict[str, Any] | None = None
        self._init_n_averaged = 0
        self._latest_update_epoch = -1
        self._initialized = False
        self._max_epochs = -1
        self._has_batch_norm = False
        self._momenta: dict[nn.modules.batchnorm._BatchNorm, float | None] | None = (
            None  # put back after the batch-norm epoch
        )
        self._accumulate_grad_batches = 1

    @property
    def swa_start(self) -> int:
        """The first averaged epoch, 0-based."""
        return max(int(self._swa_epoch_start) - 1, 0)

    @property
    def swa_end(self) -> int | float:
        """The last averaged epoch, 0-based (inf without max_epochs)."""
        return float("inf") if self._max_epochs == -1 else self._max_epochs - 1

    @staticmethod
    def avg_fn(averaged: torch.Tensor, current: torch.Tensor, num_averaged: torch.Tensor) -> torch.Tensor:
        """The equal-weight running mean (torch's swa_utils default)."""
        return averaged + (current - averaged) / (num_averaged + 1)

    # ---- the fit ---------------------------------------------------------------------------------
    def setup(self, trainer: Any, module: Any, stage: str) -> None:
        if type(trainer.strategy).__name__.startswith("FSDP"):
            raise UnsupportedCombinationError(
                "StochasticWeightAveraging does not support sharded models (FSDP); "
                "use strategy='ddp' or remove the callback"
            )
        self._average_model = copy.deepcopy(module)

    def on_fit_start(self, trainer: Any, module: Any) -> None:
        if len(trainer.optimizers) != 1:
            raise ConfigError(
                "StochasticWeightAveraging works with one optimizer; return a single optimizer "
                "from configure_optimizers"
            )
        if len(trainer.lr_scheduler_configs) > 1:
            raise ConfigError("StochasticWeightAveraging works with at most one lr_scheduler")
        if isinstance(self._swa_epoch_start, float):
            if trainer.max_epochs == -1:
                raise ConfigError(
                    "StochasticWeightAveraging(swa_epoch_start=<float>) needs max_epochs; pass "
                    "swa_epoch_start as an int epoch"
                )
            self._swa_epoch_start = int(trainer.max_epochs * self._swa_epoch_start)
        self._has_batch_norm = any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in module.modules())
        self._max_epochs = trainer.max_epochs
        if self._has_batch_norm and trainer.max_epochs != -1:
            trainer.fit_loop.max_epochs += 1  # the batch-norm epoch
        if (
            self._scheduler_state is not None
        ):  # resumed inside the SWA phase: SWALR comes back at the epoch start
            trainer.lr_scheduler_configs.clear()

    def on_train_epoch_start(self, trainer: Any, module: Any) -> None:
        epoch = trainer.current_epoch
        if not self._initialized and self.swa_start <= epoch <= self.swa_end:
            self._start_averaging(trainer, module)
        if self.swa_start <= epoch <= self.swa_end and epoch > self._latest_update_epoch:
            assert self._average_model is not None and self.n_averaged is not None
            self.update_parameters(self._average_model, module, self.n_averaged, self._avg_fn)
            self._latest_update_epoch = epoch
        if (
            self._max_epochs != -1 and epoch == self.swa_end + 1
        ):  # the batch-norm epoch (only with batch norm)
            self._start_batch_norm_epoch(trainer, module)

    def _start_averaging(self, trainer: Any, module: Any) -> None:
        self._initialized = True
        assert self._average_model is not None
        self._average_model = self._average_model.to(self._device or module.device)
        optimizer = trainer.optimizers[0]
        if isinstance(self._swa_lrs, float):
            self._swa_lrs = [self._swa_lrs] * len(optimizer.param_groups)
        for lr, group in zip(self._swa_lrs, optimizer.param_groups, strict=False):
            group["initial_lr"] = lr
        self._swa_scheduler = SWALR(
            optimizer,
            swa_lr=self._swa_lrs,  # type: ignore[arg-type]  # one per group: torch takes a list, its hint says float
            anneal_epochs=self._annealing_epochs,
            anneal_strategy=self._annealing_strategy,  # type: ignore[arg-type]
            last_epoch=trainer.max_epochs if self._annealing_strategy == "cos" else -1,
        )
        if self._scheduler_state is not None:
            self._swa_scheduler.load_state_dict(self._scheduler_state)
        configs = trainer.lr_scheduler_configs
        swa_config = SchedulerConfig(self._swa_scheduler)  # every epoch, as Lightning's
        if configs:
            configs[0] = swa_config
        else:
            configs.append(swa_config)
        if self.n_averaged is None:
            self.n_averaged = torch.tensor(self._init_n_averaged, dtype=torch.long, device=module.device)

    def _start_batch_norm_epoch(self, trainer: Any, module: Any) -> None:
        """The averaged weights, reset statistics, no backward, and one optimizer step at the epoch's last
        batch (accumulation over more batches than the epoch has), as Lightning's."""
        assert self._average_model is not None
        self.transfer_weights(self._average_model, module)
        self._momenta = self.reset_batch_norm(module)
        batches = trainer.num_training_batches
        if not math.isfinite(
            batches
        ):  # Lightning asserts the same ("Iterable-style datasets are not supported")
            raise ConfigError(
                "StochasticWeightAveraging recomputes batch norm over an epoch of known length; give the "
                "training data a length (or limit_train_batches=<int>), or remove the callback"
            )
        trainer.fit_loop._skip_backward = True
        self._accumulate_grad_batches = trainer.accumulate_grad_batches
        trainer.accumulate_grad_batches = int(batches) + 1

    def on_train_epoch_end(self, trainer: Any, module: Any) -> None:
        if self._momenta is not None:
            trainer.fit_loop._skip_backward = False

    def on_train_end(self, trainer: Any, module: Any) -> None:
        # current_epoch counts the last epoch as done here
        if self._has_batch_norm and self._max_epochs != -1 and trainer.current_epoch - 1 == self.swa_end + 1:
            trainer.accumulate_grad_batches = self._accumulate_grad_batches
            trainer.fit_loop.max_epochs -= 1
            for bn, momentum in (self._momenta or {}).items():
                bn.momentum = momentum
            self._momenta = None
        elif (
            trainer.current_epoch - 1 == self.swa_end or self._max_epochs == -1
        ) and self._average_model is not None:
            self.transfer_weights(self._average_model, module)  # the last SWA epoch, or no epoch limit

    @staticmethod
    def reset_batch_norm(module: nn.Module) -> dict[nn.modules.batchnorm._BatchNorm, float | None]:
        """Zero mean, unit variance, no batches counted, momentum None; returns the momenta to put back."""
        momenta: dict[nn.modules.batchnorm._BatchNorm, float | None] = {}
        for bn in module.modules():
            if isinstance(bn, nn.modules.batchnorm._BatchNorm) and bn.running_mean is not None:
                bn.reset_running_stats()
                momenta[bn] = bn.momentum
                bn.momentum = None
        return momenta

    @staticmethod
    def transfer_weights(source: nn.Module, target: nn.Module) -> None:
        for src, dst in zip(source.parameters(), target.parameters(), strict=True):
            dst.detach().copy_(src.to(dst.device))

    @staticmethod
    def update_parameters(
        average: nn.Module, model: nn.Module, n_averaged: torch.Tensor, avg_fn: AvgFn
    ) -> None:
        """Fold `model`'s parameters into `average` (the first time: copy them)."""
        for p_avg, p_model in zip(average.parameters(), model.parameters(), strict=True):
            target = p_avg.detach()
            current = p_model.detach().to(target.device)
            target.copy_(
                current if n_averaged == 0 else avg_fn(target, current, n_averaged.to(target.device))
            )
        n_averaged += 1

    # ---- resume state (Lightning's keys) ---------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        return {
            "n_averaged": 0 if self.n_averaged is None else self.n_averaged.item(),
            "latest_update_epoch": self._latest_update_epoch,
            "scheduler_state": None if self._swa_scheduler is None else self._swa_scheduler.state_dict(),
            "average_model_state": None if self._average_model is None else self._average_model.state_dict(),
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._init_n_averaged = state_dict["n_averaged"]
        self._latest_update_epoch = state_dict["latest_update_epoch"]
        self._scheduler_state = state_dict["scheduler_state"]
        if self._average_model is not None and state_dict.get("average_model_state") is not None:
            self._average_model.load_state_dict(state_dict["average_model_state"])
