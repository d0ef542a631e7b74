"""The store behind `Module.log`: values stay on their device until a flush point.

`log()` only keeps references (step values) or appends to a list (epoch values); nothing is
converted to a Python number, so the training step makes no host-device synchronisation.
Values are reduced and turned into floats only at flush points: every `log_every_n_steps`,
at epoch end, or when a callback asks for `trainer.callback_metrics`.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import Any

import torch

from ember.errors import ConfigError
from ember.module import LogOptions

_REDUCE_NAMES: dict[Any, str] = {
    "mean": "mean",
    "avg": "mean",
    "sum": "sum",
    "max": "max",
    "min": "min",
    torch.mean: "mean",
    torch.sum: "sum",
    torch.max: "max",
    torch.min: "min",
    max: "max",
    min: "min",
    sum: "sum",
}
# What Lightning compares a reduce_fx as (its _Metadata): a name stands for the torch function
_REDUCE_AS_LOGGED: dict[str, Any] = {
    "mean": torch.mean,
    "avg": torch.mean,
    "sum": torch.sum,
    "max": torch.max,
    "min": torch.min,
}
# Accumulated epoch values are folded into one tensor this often, to keep the lists short.
_FOLD_EVERY = 64


class _EpochValue:
    """Running reduction of one logged name over an epoch, kept as device tensors."""

    def __init__(self, reduce: str, dtype: torch.dtype = torch.float32) -> None:
        self.reduce = reduce
        # The reduced value's dtype as Lightning's result metric gives it: float32, or float64 when torch's
        # default was float64 at the first log ("64-true" steps) or a float64 value was logged.
        self.dtype = torch.float64 if dtype == torch.float64 else torch.float32
        self.values: list[torch.Tensor] = []
        self.weights: list[float] = []
        self.folded: tuple[torch.Tensor, float] | None = None

    def add(self, value: torch.Tensor, weight: float) -> None:
        if value.dtype == torch.float64:
            self.dtype = torch.float64
        self.values.append(value)
        self.weights.append(weight)
        if len(self.values) >= _FOLD_EVERY:
            self.folded = (self.compute_sum_like(), self.total_weight())
            self.values, self.weights = [], []

    def total_weight(self) -> float:
        return sum(self.weights) + (self.folded[1] if self.folded else 0.0)

    def compute_sum_like(self) -> torch.Tensor:
        """The reduction of everything so far; for "mean" this is the weighted *sum*.

        Folded one value at a time in Lightning's arithmetic (``acc + value * batch_size`` in the value's
        dtype, promoted to the result's), so an epoch value equals Lightning's to the last bit; done every
        `_FOLD_EVERY` logs and at epoch end, never in the step.
        """
        device = self.values[-1].device  # values restored from a checkpoint sit on the CPU
        if self.folded is not None:
            acc = self.folded[0].to(device)
        else:
            start = {"max": float("-inf"), "min": float("inf")}.get(self.reduce, 0.0)
            acc = torch.tensor(start, dtype=self.dtype, device=device)
        combine = {"max": torch.maximum, "min": torch.minimum}.get(self.reduce)
        for value, weight in zip(self.values, self.weights, strict=True):
            value = value.detach().reshape(()).to(device)
            if value.dtype not in (torch.float32, torch.float64):
                value = value.to(self.dtype)  # half values and integers are reduced in float32 (Lightning)
            if combine is not None:
                acc = combine(acc, value)
            else:
                acc = acc + (value * weight if self.reduce == "mean" else value)
        return acc

    def state_dict(self) -> dict[str, Any]:
        return {
            "reduce": self.reduce,
            "values": [v.detach() for v in self.values],
            "weights": list(self.weights),
            "folded": list(self.folded) if self.folded is not None else None,
            "dtype": str(self.dtype).removeprefix("torch."),
        }

    @classmethod
    def from_state_dict(cls, state: dict[str, Any]) -> _EpochValue:
        acc = cls(state["reduce"], getattr(torch, state.get("dtype", "float32")))
        acc.values, acc.weights = list(state["values"]), [float(w) for w in state["weights"]]
        folded = state.get("folded")
        acc.folded = (folded[0], float(folded[1])) if folded is not None else None
        return acc

    def compute(self) -> torch.Tensor:
        if not self.values:
            acc = self.folded[0] if self.folded else torch.tensor(float("nan"))
        else:
            acc = self.compute_sum_like()
        if (
            self.reduce == "mean"
        ):  # divided by a tensor: CUDA divides by a Python number as a reciprocal product
            acc = acc / torch.tensor(max(self.total_weight(), 1e-12), dtype=acc.dtype, device=acc.device)
        return acc.to(self.dtype)


class MetricStore:
    """Collects `self.log` calls for the current stage and hands reduced floats to loggers."""

    def __init__(self) -> None:
        self.stage: str = "train"
        self.default_on_step = True
        self.default_on_epoch = False
        self.in_epoch_hooks = False  # inside this stage's epoch-end hooks (set by the Reporter)
        self.current_batch: Any = None
        # The hook running (Lightning's _current_fx_name, set by the loops and the hook dispatcher), and the
        # arguments each (hook, name) was first logged with: Lightning refuses the same name again with
        # others.
        self.fx = ""
        self.logged_with: dict[tuple[str, str, int | None], tuple[Any, ...]] = {}
        self.step_values: dict[str, Any] = {}
        self.epoch_values: dict[str, _EpochValue] = {}
        self.epoch_metrics: dict[str, Any] = {}  # torchmetrics objects, computed at epoch end
        self.prog_bar_names: set[str] = set()
        self.hidden_from_logger: set[str] = set()
        self.sync_names: set[str] = set()
        # Epoch names of values logged on_step and on_epoch ("m_epoch" -> "m"): callback_metrics also shows
        # them under the plain name (Lightning's fork); a name the user chose to end in "_epoch" is not one of
        # them
        self.forked_epoch: dict[str, str] = {}
        # sync_dist epoch values reduced across ranks when the epoch-end hooks start (every rank reaches that
        # point together), so callbacks there read the reduced value as in Lightning; dropped when the name is
        # logged again
        self.synced_so_far: dict[str, torch.Tensor] = {}
        self.callback_values: dict[str, Any] = {}
        # Names whose results are float64 in trainer.callback_metrics, as in Lightning: logged as a float64
        # value or while torch's default dtype was float64 ("64-true" steps); the rest are float32. Shared by
        # stages.
        self.float64_names: set[str] = set()
        # Lightning's order of trainer.callback_metrics (shared like callback_values): a training step value's
        # names when first logged (the plain name of a forked one first), epoch values when their epoch ends
        self.key_order: dict[str, None] = {}
        self.superseded_steps: dict[str, Any] = {}  # step values an epoch value of the same name replaced
        self.forked_steps: dict[
            str, str
        ] = {}  # "m_step" -> "m" logged this epoch: Lightning also shows it as "m"
        # Several validation/test loaders: the loader running (None: one loader, or outside a loader's steps),
        # and which loader each epoch name came from, so results are split per loader as in Lightning.
        self.dataloader_idx: int | None = None
        self.loader_of: dict[str, int | None] = {}
        self.last_loader_of: dict[str, int | None] = {}
        # Replaced by the distributed strategy: reduce a tensor across ranks (sum/mean/max/min).
        self.sync_fn: Callable[[torch.Tensor, str], torch.Tensor] = lambda t, op: t

    # ---- called from Module.log -------------------------------------------------------------
    def log(self, name: str, value: Any, options: LogOptions) -> None:
        """Keep one `self.log(name, value, ...)` call's value, with its options (`Module.log`'s)."""
        prog_bar, logger, on_step, on_epoch, reduce_fx, sync_dist, batch_size, add_dataloader_idx = options
        if self.in_epoch_hooks and (on_step or on_epoch is False):  # Lightning's rule for these hooks
            raise ConfigError(
                f"self.log({name!r}, on_step={on_step}, on_epoch={on_epoch}) in an epoch-level hook "
                "(on_train_start, on_*_epoch_start/end): only on_step=False, on_epoch=True is allowed there"
            )
        on_step = self.default_on_step if on_step is None else on_step
        on_epoch = self.default_on_epoch if on_epoch is None else on_epoch
        logger = True if logger is None else logger  # Lightning: None (its default) means "to the loggers"
        if isinstance(reduce_fx, str):
            reduce_fx = reduce_fx.lower()  # Lightning reads "MEAN" as "mean"
        reduce = _REDUCE_NAMES.get(reduce_fx)
        if reduce is None:
            raise ConfigError(
                f"self.log({name!r}, reduce_fx={reduce_fx!r}): use 'mean', 'sum', 'max' or 'min'"
            )
        if not on_step and not on_epoch:
            raise ConfigError(
                f"self.log({name!r}, on_step=False, on_epoch=False) logs nowhere (Lightning refuses it "
                "too); set on_step=True or on_epoch=True"
            )
        loader = self.dataloader_idx
        arguments = (
            prog_bar,
            logger,
            on_step,
            on_epoch,
            _REDUCE_AS_LOGGED.get(reduce_fx, reduce_fx) if isinstance(reduce_fx, str) else reduce_fx,
            sync_dist,
            add_dataloader_idx,
            loader,
        )
        key = (self.fx, name, loader if add_dataloader_idx else None)
        first = self.logged_with.setdefault(key, arguments)
        if first is not arguments and first != arguments:
            raise ConfigError(
                f"self.log({name!r}) again in {self.fx or 'the same hook'} with other arguments than "
                "before (prog_bar, logger, on_step, on_epoch, reduce_fx, sync_dist, add_dataloader_idx); "
                "Lightning refuses this too: log a name with one set of arguments per hook, or rename one"
            )
        step_name, epoch_name = (f"{name}_step", f"{name}_epoch") if on_step and on_epoch else (name, name)
        if (
            self.dataloader_idx is not None
        ):  # several loaders: Lightning's suffix, after the _step/_epoch fork
            suffix = f"/dataloader_idx_{self.dataloader_idx}" if add_dataloader_idx else ""
            name, step_name, epoch_name = name + suffix, step_name + suffix, epoch_name + suffix
            self.loader_of[epoch_name] = self.dataloader_idx
        if prog_bar:
            self.prog_bar_names.update({step_name, epoch_name})  # Lightning's bar shows m_step and m_epoch
        if not logger:
            self.hidden_from_logger.update({name, step_name, epoch_name})
        if sync_dist:
            self.sync_names.add(epoch_name)
        if on_step and on_epoch:
            plain, sep, suffix = epoch_name.partition("/dataloader_idx_")
            self.forked_epoch[epoch_name] = plain[: -len("_epoch")] + sep + suffix

        tm = sys.modules.get(
            "torchmetrics"
        )  # a Metric only if the user imported torchmetrics (never on import ember)
        if tm is not None and isinstance(value, tm.Metric):
            if on_step:
                cached = getattr(value, "_forward_cache", None)
                self.step_values[step_name] = cached if cached is not None else value.compute()
            if on_epoch:
                self.epoch_metrics[epoch_name] = value
            return
        if isinstance(value, torch.Tensor):
            if value.numel() != 1:
                raise ConfigError(
                    f"self.log({name!r}) got a tensor of shape {tuple(value.shape)}; log a scalar "
                    "(e.g. value.mean()) or a torchmetrics Metric"
                )
            value = value.detach()
        elif isinstance(value, (int, float, bool)):
            value = float(value)
        else:
            raise ConfigError(
                f"self.log({name!r}) got {type(value).__name__}; log a number, tensor or Metric"
            )
        if on_step:
            # Lightning reduces a step value across ranks when it is logged (every rank logs it); the epoch
            # value accumulates this rank's own, reduced at the epoch's end
            self.step_values[step_name] = (
                self.sync_fn(value if isinstance(value, torch.Tensor) else torch.tensor(value), reduce)
                if sync_dist
                else value
            )
            if on_epoch:
                self.forked_steps[step_name] = name
            if step_name not in self.key_order and self.stage == "train":
                self.key_order[name] = None  # (the same name unless forked)
                self.key_order[step_name] = None
        if torch.get_default_dtype() == torch.float64 or getattr(value, "dtype", None) == torch.float64:
            self.float64_names.add(name)
        if on_epoch:
            acc = self.epoch_values.get(epoch_name)
            if acc is None:
                acc = self.epoch_values[epoch_name] = _EpochValue(reduce, torch.get_default_dtype())
            weight = batch_size if batch_size is not None else self._current_batch_size()
            self.synced_so_far.pop(epoch_name, None)
            acc.add(value if isinstance(value, torch.Tensor) else torch.tensor(value), float(weight))

    def _current_batch_size(self) -> int:
        from ember.runtime.devices import batch_size_of

        size = batch_size_of(self.current_batch) if self.current_batch is not None else None
        return size or 1

    # ---- flush points -------------------------------------------------------------------------
    def flush_step(self, for_callbacks: bool = True) -> dict[str, float]:
        """Latest step values as floats (one sync), for loggers; they stay visible to callbacks.

        Values logged with sync_dist=True were reduced across ranks when logged.
        """
        out = {k: to_float(v) for k, v in self.step_values.items()}
        if for_callbacks:  # an evaluation's step values are not callback metrics (Lightning)
            self.callback_values.update(out)
        return {k: v for k, v in out.items() if k not in self.hidden_from_logger}

    def end_epoch(self) -> dict[str, float]:
        """Reduce this stage's epoch values (across ranks when asked), reset Metrics, return floats."""
        out: dict[str, float] = {}
        for name, acc in self.epoch_values.items():
            value = self.synced_so_far.get(name)
            if value is None:
                value = acc.compute()
                if name in self.sync_names:
                    value = self.sync_fn(value, acc.reduce)
            out[name] = to_float(value)
        for name, metric in self.epoch_metrics.items():
            out[name] = to_float(metric.compute())
            metric.reset()
        self.epoch_values.clear()
        self.epoch_metrics.clear()
        self.synced_so_far.clear()
        forked, self.forked_epoch = self.forked_epoch, {}
        self.last_loader_of, self.loader_of = self.loader_of, {}
        self.forked_steps.clear()  # the plain names now show the epoch values
        # also over a step value of that name from another hook (Lightning updates them later);
        # the bar keeps the step value when only it was logged with prog_bar
        for name in out:
            if name in self.step_values:
                self.superseded_steps[name] = self.step_values.pop(name)
        order = self.key_order
        for name, number in out.items():
            alias = forked.get(name)  # also "acc_epoch/dataloader_idx_0" -> "acc/dataloader_idx_0"
            if alias is not None:
                order.setdefault(alias, None)  # Lightning lists the plain name before the forked one
                self.callback_values[alias] = number
            order.setdefault(name, None)
            self.callback_values[name] = number
        return {k: v for k, v in out.items() if k not in self.hidden_from_logger}

    def sync_epoch_so_far(self) -> None:
        """Reduce this epoch's sync_dist values across ranks now; called by every rank as the epoch-end hooks
        start, so `trainer.callback_metrics` read there holds the reduced values (Lightning's), with no
        collective when only one rank reads it."""
        for name, acc in self.epoch_values.items():
            if name in self.sync_names and (acc.values or acc.folded):
                self.synced_so_far[name] = self.sync_fn(acc.compute(), acc.reduce)

    def _epoch_values_so_far(self, aliases: bool = True) -> dict[str, float]:
        """This epoch's values (tensors and torchmetrics Metrics) before `end_epoch` resets them; sync_dist
        values as reduced by `sync_epoch_so_far` (a value logged after it is this rank's until end_epoch
        reduces it)."""
        synced = self.synced_so_far
        out = {
            name: to_float(synced[name] if name in synced else acc.compute())
            for name, acc in self.epoch_values.items()
            if acc.values or acc.folded
        }
        out.update({name: to_float(metric.compute()) for name, metric in self.epoch_metrics.items()})
        if aliases:  # callback_metrics' plain names of forked values
            for name in [n for n in out if n in self.forked_epoch]:
                out[self.forked_epoch[name]] = out[name]
        return out

    def split_by_loader(self, metrics: dict[str, float], loaders: int) -> list[dict[str, float]]:
        """One dict per loader (Lightning's validate/test result): each loader's metrics, plus the ones
        logged outside any loader's steps (in the epoch-end hooks).

        >>> store = MetricStore()
        >>> store.last_loader_of = {"acc/dataloader_idx_0": 0, "acc/dataloader_idx_1": 1}
        >>> store.split_by_loader({"acc/dataloader_idx_0": 0.5, "acc/dataloader_idx_1": 0.7, "mean": 0.6}, 2)
        [{'acc/dataloader_idx_0': 0.5, 'mean': 0.6}, {'acc/dataloader_idx_1': 0.7, 'mean': 0.6}]
        """
        owner = self.last_loader_of
        return [
            {k: v for k, v in metrics.items() if owner.get(k) in (i, None)} for i in range(max(loaders, 1))
        ]

    def metrics_for_callbacks(self) -> dict[str, torch.Tensor]:
        """What `trainer.callback_metrics` shows: epoch results and the latest step values."""
        merged = dict(self.callback_values)
        steps = {k: to_float(v) for k, v in self.step_values.items()}
        merged.update(steps)
        for (
            step_name,
            plain,
        ) in self.forked_steps.items():  # Lightning: a forked step value also under its name
            if step_name in steps:
                merged[plain] = steps[step_name]
        if (
            self.stage == "train" and not self.default_on_step
        ):  # on_train_epoch_end: Lightning shows epoch values
            merged.update(self._epoch_values_so_far())
        ordered = {k: merged[k] for k in self.key_order if k in merged}
        ordered.update(merged)  # names outside the order (a callback's writes) keep theirs, after
        return CallbackMetrics(
            self.callback_values,
            {k: torch.tensor(v, dtype=self._result_dtype(k)) for k, v in ordered.items()},
        )

    def _result_dtype(self, key: str) -> torch.dtype:
        """float64 for a callback metric (``name``, ``name_step``, ``name_epoch``,
        ``.../dataloader_idx_N``) of a name logged in float64; float32 otherwise."""
        if not self.float64_names:
            return torch.float32
        name = key.partition("/dataloader_idx_")[0]
        wide = {name, name.removesuffix("_step"), name.removesuffix("_epoch")} & self.float64_names
        return torch.float64 if wide else torch.float32

    def progress_bar_values(self) -> dict[str, float]:
        names = self.prog_bar_names
        merged = {k: v for k, v in self.callback_values.items() if k in names}
        if self.superseded_steps:
            merged.update({k: to_float(v) for k, v in self.superseded_steps.items() if k in names})
        merged.update({k: to_float(v) for k, v in self.step_values.items() if k in names})
        return merged

    # ---- resume state (a checkpoint participant) ---------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The epoch's running reductions and how to report them, so a run resumed mid-epoch logs the
        epoch values the uninterrupted run would have (torchmetrics objects keep their own state)."""
        return {
            "epoch_values": {name: acc.state_dict() for name, acc in self.epoch_values.items()},
            "prog_bar_names": sorted(self.prog_bar_names),
            "hidden_from_logger": sorted(self.hidden_from_logger),
            "sync_names": sorted(self.sync_names),
            "forked_epoch": dict(self.forked_epoch),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.epoch_values = {
            name: _EpochValue.from_state_dict(acc) for name, acc in state.get("epoch_values", {}).items()
        }
        self.prog_bar_names.update(state.get("prog_bar_names", []))
        self.hidden_from_logger.update(state.get("hidden_from_logger", []))
        self.sync_names.update(state.get("sync_names", []))
        self.forked_epoch.update(state.get("forked_epoch", {}))

    def reset_stage(self, stage: str, on_step: bool, on_epoch: bool) -> None:
        self.stage = stage
        self.default_on_step = on_step
        self.default_on_epoch = on_epoch


def to_float(value: Any) -> float:
    """A logged value (a tensor on any device, or a number) as a Python float: what loggers receive."""
    if isinstance(value, torch.Tensor):
        return float(
            value.detach().cpu().item()
        )  # float64 values keep their precision (Lightning keeps them)
    return float(value)


def is_finite(value: Any) -> bool:
    return math.isfinite(to_float(value))


class CallbackMetrics(dict):
    """``trainer.callback_metrics``: a dict whose writes reach the store, as Lightning's does
    (``LearningRateMonitor`` and users' callbacks add values that later callbacks read)."""

    def __init__(self, target: dict[str, Any], values: dict[str, torch.Tensor]) -> None:
        super().__init__(values)
        self._target = target

    def __setitem__(self, key: str, value: Any) -> None:
        super().__setitem__(key, value)
        self._target[key] = value.item() if isinstance(value, torch.Tensor) and value.numel() == 1 else value

    def update(self, *args: Any, **kwargs: Any) -> None:
        for key, value in dict(*args, **kwargs).items():
            self[key] = value
