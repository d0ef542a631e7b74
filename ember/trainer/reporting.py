"""Where logged values go: the per-stage stores behind `Module.log`, the loggers, the NaN check.

One `Reporter` per run. `enter_stage` points `Module.log` at the stage's store (with Lightning's
on_step/on_epoch defaults); flush points turn the stores' device tensors into floats for loggers
and callbacks.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import torch

from ember.errors import ConfigError, NonFiniteLossError
from ember.loggers.base import Logger
from ember.module import Module
from ember.trainer.metrics import MetricStore, is_finite, to_float
from ember.trainer.progress import Progress

STAGES = ("train", "validate", "test", "predict")


class RefusedLog:
    """Stands for the metric store inside a hook where Lightning refuses `self.log` (on_fit_start, setup,
    on_train_end, predict...), so such a call fails as it does there instead of being dropped.

    Example:
        >>> RefusedLog("on_fit_start").log("loss", 1.0)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ember.errors.ConfigError: self.log('loss') inside on_fit_start: logging is not allowed there (as ...
    """

    def __init__(self, hook: str) -> None:
        self.hook = hook

    def log(self, name: str, value: Any, options: Any = None) -> None:
        raise ConfigError(
            f"self.log({name!r}) inside {self.hook}: logging is not allowed there (as in Lightning); "
            "log from a step or an epoch hook, or write to self.logger directly"
        )


class Reporter:
    """The metric stores of one run and the loggers they report to."""

    def __init__(
        self,
        module: Module,
        progress: Progress,
        loggers: list[Logger],
        reduce: Callable[[torch.Tensor, str], torch.Tensor],
        stop_on_nan: bool,
    ) -> None:
        self.module, self.progress, self.loggers, self.stop_on_nan = module, progress, loggers, stop_on_nan
        self.link = module.run_link  # where `self.log` goes: this reporter points it at a store
        self.stores = {name: MetricStore() for name in STAGES}
        shared: dict[str, Any] = {}  # what callbacks see, across stages
        order: dict[str, None] = {}  # and in which order
        float64_names: set[str] = set()  # and which are float64
        for store in self.stores.values():
            store.callback_values, store.key_order = shared, order
            store.float64_names = float64_names
            store.sync_fn = reduce
        self.stage: str | None = None
        self.last_loss: torch.Tensor | None = None  # the latest training loss (detached), checked at flushes
        self.last_flush_step = -1
        self.logged_metrics: dict[str, float] = {}
        self.last_checkpoint: Callable[[], str] = lambda: ""  # for the NaN message: the last good checkpoint
        self.fitting = False  # set for a fit: its metrics go to the loggers at the 0-based step (below)
        # Manual optimization: a fit's logger step counts batches, not optimizer steps (two optimizers step
        # twice a batch), as Lightning's fit_loop.epoch_loop._batches_that_stepped
        self.counts_batches = False

    def enter_stage(self, stage: str, epoch_hooks: bool = False) -> None:
        """Point `Module.log` at this stage's store, with Lightning's on_step/on_epoch defaults."""
        self.stage = stage
        store = self.stores[stage]
        per_step = stage == "train" and not epoch_hooks
        store.reset_stage(stage, on_step=per_step, on_epoch=not per_step)
        store.in_epoch_hooks = epoch_hooks
        self.link.metric_store = store

    @contextlib.contextmanager
    def refusing_logs(self, hook: str) -> Iterator[None]:
        """Inside `hook` (run once per run or per evaluation, never per step) `self.log` raises, as in
        Lightning."""
        link = self.link
        previous, link.metric_store = link.metric_store, RefusedLog(hook)
        try:
            yield
        finally:
            link.metric_store = previous

    def refuse_logs(self, hook: str) -> None:
        """From now on (until a stage is entered) `self.log` raises, naming `hook` (Lightning refuses it in
        every predict hook)."""
        self.link.metric_store = RefusedLog(hook)

    # ---- to the loggers ----------------------------------------------------------------------
    def log_metrics(
        self, metrics: dict[str, float], step: int | None = None, epoch: int | None = None
    ) -> None:
        """`metrics` to `trainer.logged_metrics` and the loggers; `epoch` (Lightning's convenience column)
        goes to the loggers only, as in Lightning."""
        if not metrics:
            return
        self.logged_metrics.update(metrics)
        to_loggers = metrics
        if (
            epoch is not None
        ):  # Lightning's setdefault: an int (CSV writes `0`), and a user's own "epoch" wins
            to_loggers = dict(metrics)
            to_loggers.setdefault("epoch", epoch)
        for logger in self.loggers:
            logger.log_metrics(to_loggers, self.progress.global_step if step is None else step)

    @property
    def batches_stepped(self) -> int:
        """Lightning's logger step in a fit (`fit_loop.epoch_loop._batches_that_stepped`): the optimizer steps
        taken under automatic optimization, the batches trained under manual optimization."""
        progress = self.progress
        return progress.total_batches if self.counts_batches else progress.global_step

    def flush_step(self) -> None:
        """The latest step values to the loggers (every log_every_n_steps, and before an epoch closes)."""
        progress = self.progress
        self.last_flush_step = progress.total_batches if self.counts_batches else progress.global_step
        self.check_finite_loss()
        metrics = self.stores["train"].flush_step()
        if metrics:
            self._log_and_save(metrics)

    def flush_eval_step(self, stage: str, step: int) -> None:
        """An evaluation batch's on_step values to logged_metrics and the loggers at `step` (Lightning's
        count of logged evaluation batches), as Lightning logs them after each batch."""
        metrics = self.stores[stage].flush_step(for_callbacks=False)
        if metrics:
            self._log_and_save(metrics, step)

    def log_epoch(self, stage: str, log: bool = True) -> dict[str, float]:
        metrics = self.stores[stage].end_epoch()
        if log and metrics and stage in ("train", "validate", "test"):
            self._log_and_save(metrics)
        return metrics

    def _log_and_save(self, metrics: dict[str, float], step: int | None = None) -> None:
        epoch = self.progress.epoch if step is None else None
        if step is None:  # Lightning logs a fit's metrics at the step just taken, counted from 0
            progress = self.progress  # (batches_stepped written out: no call per flush)
            stepped = progress.total_batches if self.counts_batches else progress.global_step
            step = max(stepped - 1, 0) if self.fitting else progress.global_step
        self.log_metrics(metrics, step, epoch=epoch)
        for logger in self.loggers:
            logger.save()

    def log_hyperparams(self, datamodule: Any = None) -> None:
        """The module's and the datamodule's hyperparameters, merged, to every logger, then `logger.save()`
        (Lightning's, at the start of every stage; a module without saved hyperparameters sends `{}`).
        Lightning refuses a name both hold with different values."""
        merged: dict[str, Any] | None = None
        for owner in (self.module, datamodule):
            if owner is not None and getattr(owner, "_log_hyperparams", False):  # set by save_hyperparameters
                merged = {} if merged is None else merged
                for key, value in dict(getattr(owner, "hparams_initial", owner.hparams)).items():
                    if key in merged and merged[key] != value:
                        raise ConfigError(
                            f"hyperparameter {key!r} is {merged[key]!r} in the Module but {value!r} in the "
                            "DataModule; "
                            "rename one of them, or pass save_hyperparameters(logger=False) to one"
                        )
                    merged[key] = value
        for logger in self.loggers:
            if merged is not None:
                logger.log_hyperparams(merged)
            logger.log_graph(self.module)
            logger.save()

    def finalize(self, status: str) -> None:
        for logger in self.loggers:
            logger.finalize(status)

    # ---- checks and views --------------------------------------------------------------------
    def check_finite_loss(self) -> None:
        """Raise (or warn, with stop_on_nan=False) if the latest loss is NaN/inf. Called at flush points
        only."""
        loss = self.last_loss
        if loss is None or is_finite(loss):
            return
        last = self.last_checkpoint()
        message = (
            f"the training loss is {float(loss)} at step {self.progress.global_step} (epoch "
            f"{self.progress.epoch}); "
            f"no checkpoint is written from here{f', the last good one is {last}' if last else ''}; lower "
            "the "
            "learning rate or set gradient_clip_val, or pass Trainer(stop_on_nan=False) to continue"
        )
        if self.stop_on_nan:
            raise NonFiniteLossError(message)
        warnings.warn(message, stacklevel=2)

    def callback_metrics(self) -> dict[str, torch.Tensor]:
        metrics = self.stores["train"].metrics_for_callbacks()
        evaluating = self.stores.get(self.stage or "") if self.stage in ("validate", "test") else None
        if evaluating is not None and evaluating.in_epoch_hooks:  # Lightning: this epoch's values so far
            dict.update(metrics, {k: torch.tensor(v) for k, v in evaluating._epoch_values_so_far().items()})
        return metrics

    def logged_metrics_now(self) -> dict[str, float]:
        """`trainer.logged_metrics`: what was sent to the loggers, updated with the latest training step
        values and, inside a stage's epoch-end hooks, its epoch values so far (Lightning updates its dict
        after every batch and when read). Computed when read, so a step costs nothing for it."""
        logged = dict(self.logged_metrics)
        train = self.stores["train"]
        hidden = train.hidden_from_logger
        logged.update({k: to_float(v) for k, v in train.step_values.items() if k not in hidden})
        current = self.stores.get(self.stage or "")
        if current is not None and current.in_epoch_hooks and self.stage != "predict":
            so_far = current._epoch_values_so_far(aliases=False)
            logged.update({k: v for k, v in so_far.items() if k not in current.hidden_from_logger})
        return logged

    def progress_bar_metrics(self) -> dict[str, float]:
        values: dict[str, float] = {}  # only what was logged with prog_bar=True (Lightning 2 adds no "loss")
        for store in self.stores.values():
            values.update(store.progress_bar_values())
        return values

    # ---- resume state (a checkpoint participant) ---------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The epoch accumulators of every stage and what callbacks see, so an epoch mean after a
        mid-epoch resume is the uninterrupted run's."""
        return {
            "stores": {name: store.state_dict() for name, store in self.stores.items()},
            "callback_values": dict(self.stores["train"].callback_values),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        for name, store_state in (state.get("stores") or {}).items():
            if name in self.stores:
                self.stores[name].load_state_dict(store_state)
        self.stores["train"].callback_values.update(state.get("callback_values") or {})
