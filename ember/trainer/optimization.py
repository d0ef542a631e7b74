"""One optimization step: backward, accumulation, clipping, gradient scaling, scheduler stepping.

The per-batch path is written for the common case to cost few Python calls: hook lists are fetched
once per run (an empty list costs nothing) and autocast is entered only under mixed precision.

Accumulation windows are counted here only (`micro_step`): each training step tells the strategy
whether its backward synchronises gradients (`Strategy.training_step(..., sync=...)`), False on a
window's micro-steps but its last (which is also the epoch's last batch when an epoch ends inside one).
"""

from __future__ import annotations

import dataclasses
import functools
import warnings
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import torch

from ember.errors import ConfigError
from ember.module import Module, clip_parameters
from ember.runtime.scheduler_config import SchedulerConfig  # lives below the callbacks, which build one too
from ember.trainer.dataloaders import explain_step_error
from ember.trainer.hooks import takes_batch_idx
from ember.trainer.refused_hooks import overridden

if TYPE_CHECKING:
    from ember.trainer.run import Run


def parse_optimizers(result: Any, owner: str) -> tuple[list[torch.optim.Optimizer], list[SchedulerConfig]]:
    """Read what `configure_optimizers` returned, in any of the shapes Lightning accepts."""
    if isinstance(result, torch.optim.Optimizer):
        return [result], []
    if result is None:  # Lightning: fit runs, the weights are never updated
        warnings.warn(
            f"{owner}.configure_optimizers returned None: fit runs without an optimizer (the weights are not "
            "updated), as in Lightning; return an optimizer to train",
            stacklevel=2,
        )
        return [NoOptimizer()], []
    if isinstance(result, Mapping):
        return _from_dict(result, owner)
    if isinstance(result, (list, tuple)):
        if len(result) == 2 and isinstance(result[0], (list, tuple)) and isinstance(result[1], (list, tuple)):
            return list(result[0]), [_scheduler_config(s, owner) for s in result[1]]
        optimizers, schedulers = [], []
        for item in result:
            opts, scheds = parse_optimizers(item, owner)
            optimizers += opts
            schedulers += scheds
        if optimizers:
            return optimizers, schedulers
    raise ConfigError(
        f"{owner}.configure_optimizers returned {type(result).__name__}; return an optimizer, a list of "
        "them, "
        "(optimizers, schedulers), or {'optimizer': ..., 'lr_scheduler': ...}"
    )


class NoOptimizer(torch.optim.Optimizer):
    """What fit steps when `configure_optimizers` returns None (Lightning's _MockOptimizer): nothing is
    updated; a step still runs the closure it is given.

    Example:
        >>> optimizer = NoOptimizer()
        >>> optimizer.step(), optimizer.step(lambda: 1.0)
        (None, 1.0)
    """

    def __init__(self) -> None:
        super().__init__([torch.zeros(1)], {})

    def step(self, closure: Any = None) -> Any:
        return closure() if closure is not None else None

    def zero_grad(self, set_to_none: bool = True) -> None:
        pass


def _from_dict(
    result: Mapping[str, Any], owner: str
) -> tuple[list[torch.optim.Optimizer], list[SchedulerConfig]]:
    if "optimizer" not in result:
        raise ConfigError(
            f"{owner}.configure_optimizers returned a dict without 'optimizer' (keys: {sorted(result)})"
        )
    schedulers = []
    if result.get("lr_scheduler") is not None:
        config = _scheduler_config(result["lr_scheduler"], owner)
        config.monitor = config.monitor or result.get("monitor")
        schedulers.append(config)
    return [result["optimizer"]], schedulers


def _scheduler_config(item: Any, owner: str) -> SchedulerConfig:
    if isinstance(item, Mapping):
        unknown = set(item) - {f.name for f in dataclasses.fields(SchedulerConfig)}
        if "scheduler" not in item or unknown:
            raise ConfigError(
                f"{owner}.configure_optimizers: lr_scheduler dict needs 'scheduler' and may have "
                f"interval/frequency/monitor/name/strict (got {sorted(item)})"
            )
        config = SchedulerConfig(**item)
    else:
        config = SchedulerConfig(scheduler=item)
    if config.interval not in ("step", "epoch"):
        raise ConfigError(f"lr_scheduler interval={config.interval!r} must be 'step' or 'epoch'")
    return config


def batch_outputs(output: Any, loss: torch.Tensor | None, accumulate: int) -> dict[str, Any]:
    """What `on_train_batch_end` receives under automatic optimization, as in Lightning (its ClosureResult):
    ``{"loss": the loss divided by accumulate_grad_batches, detached, **the other keys training_step
    returned}``, or ``{}`` when training_step returned None.

    Example:
        >>> batch_outputs({"loss": torch.tensor(3.0, requires_grad=True), "n": 1}, None, 1)
        {}
        >>> batch_outputs({"n": 1}, torch.tensor(3.0, requires_grad=True), 2)
        {'loss': tensor(1.5000), 'n': 1}
    """
    if loss is None:
        return {}
    outputs: dict[str, Any] = {"loss": None}
    if isinstance(output, Mapping):
        outputs.update(output)
    outputs["loss"] = (loss / accumulate if accumulate > 1 else loss).detach()
    return outputs


def loss_from_output(output: Any) -> torch.Tensor | None:
    """The scalar loss in what `training_step` returned (a tensor, or a dict with 'loss'); None when it
    returned None, which skips the backward (Lightning: the optimizer still steps, on no gradients)."""
    if output is None:
        warnings.warn(
            "training_step returned None: this batch is skipped (no backward; the optimizer steps on no "
            "gradients, as in Lightning). If this was on purpose, ignore this warning",
            stacklevel=2,
        )
        return None
    loss = output
    if isinstance(output, Mapping):
        if "loss" not in output:
            raise ConfigError(
                f"training_step returned a dict without 'loss' (keys: {sorted(output)}); add the loss"
            )
        loss = output["loss"]
    if not isinstance(loss, torch.Tensor):
        raise ConfigError(f"training_step returned {type(loss).__name__}; return a scalar loss tensor")
    if loss.dim() != 0 and loss.numel() != 1:
        raise ConfigError(
            f"training_step returned a loss of shape {tuple(loss.shape)}; reduce it to a scalar (e.g. "
            "loss.mean())"
        )
    if not loss.requires_grad:
        raise ConfigError(
            "training_step returned a loss that does not require grad; do not detach it or compute it under "
            "no_grad"
        )
    return loss


#: Module hooks that take over part of the automatic step: a Module overriding any of them runs through
#: Lightning's closure (`_hooked_batch`); one overriding none keeps the short path, so they cost nothing.
STEP_HOOKS = ("optimizer_step", "optimizer_zero_grad", "backward", "configure_gradient_clipping")


def module_override(module: Module, name: str) -> Any:
    """The Module's bound override of hook `name`, or None when it keeps ember's default (decided once per
    run)."""
    return getattr(module, name) if overridden(module, name, Module) else None


class AutomaticOptimization:
    """training_step → zero_grad → backward (→ accumulate) → clip → optimizer step → schedulers.

    The order is Lightning's (its optimizer closure runs training_step, then zero_grad on a window's first
    micro-batch, then backward). A Module overriding one of `STEP_HOOKS` gets Lightning's structure exactly:
    `optimizer_step(epoch, batch_idx, optimizer, optimizer_closure)` is called once per window and the
    closure runs training_step, zero_grad (`on_before_zero_grad`, `optimizer_zero_grad`) and `backward`;
    `optimizer.step(closure=...)` there runs the closure, then unscales, calls `on_before_optimizer_step` and
    `configure_gradient_clipping`, and steps. Its state (a checkpoint participant) is the position in the
    accumulation window and, mid-window in a single process, the gradients accumulated so far, so such a
    checkpoint resumes exactly.
    """

    def __init__(self, run: Run, optimizer: torch.optim.Optimizer, schedulers: list[SchedulerConfig]) -> None:
        assert run.hooks is not None
        self.run, self.optimizer = run, optimizer
        self.module, self.strategy, self.progress = run.module, run.strategy, run.progress
        # ReduceLROnPlateau at interval "step" steps after the batch's validation (the fit loop), as
        # Lightning's
        self.step_schedulers = [s for s in schedulers if s.interval == "step" and not s.needs_metric]
        self.pass_index = takes_batch_idx(run.module.training_step)  # training_step(batch) gets no batch_idx
        self.skipped = False  # the latest training_step returned None: no backward (nor GradScaler step)
        # no backward at all (Lightning's fit_loop._skip_backward: StochasticWeightAveraging's batch-norm
        # epoch, which also sets accumulate above the epoch's length, so only the accumulating path reads it)
        self.skip_backward = False
        self.accumulate = run.options.accumulate_grad_batches
        self.clip_val, self.clip_algorithm = (
            run.options.gradient_clip_val,
            run.options.gradient_clip_algorithm,
        )
        self.scaler = run.precision.scaler
        self.autocast = run.precision.autocast if run.precision.has_step_context else None
        get = functools.partial(keyed_hooks, run)
        self.before_zero_grad, self.before_backward = get("on_before_zero_grad"), get("on_before_backward")
        self.after_backward, self.before_optimizer_step = (
            get("on_after_backward"),
            get("on_before_optimizer_step"),
        )
        self.micro_step = 0  # micro-batches accumulated in the current window
        module = self.module
        self.hooked = any(overridden(module, name, Module) for name in STEP_HOOKS)
        self.custom_backward = module_override(module, "backward")
        self.custom_zero_grad = module_override(module, "optimizer_zero_grad")
        self.custom_clipping = module_override(module, "configure_gradient_clipping")
        self.lr_scheduler_step = module_override(module, "lr_scheduler_step")
        self.stepper = _ClosureStepper(self)

    @property
    def at_window_boundary(self) -> bool:
        return self.micro_step == 0

    def run_batch(self, batch: Any, batch_idx: int) -> Any:
        if self.hooked:
            return self._hooked_batch(batch, batch_idx)
        if self.accumulate > 1 or self.autocast is not None:
            return self._accumulating(batch, batch_idx)
        try:  # the common case, written out: one window per batch, full precision
            output = self.strategy.training_step(self.module, batch, batch_idx, self.pass_index)
        except ValueError as e:
            hint = explain_step_error(e, batch, "training_step")
            if hint is None:
                raise
            raise hint from e
        loss = (
            output
            if type(output) is torch.Tensor and output.requires_grad and output.ndim == 0
            else loss_from_output(output)
        )
        opt = self.optimizer
        for fn in self.before_zero_grad:
            fn(opt)
        opt.zero_grad()
        self.skipped = loss is None
        if loss is not None:
            self.run.reporter.last_loss = loss.detach()
            for fn in self.before_backward:
                fn(loss)
            scaler = self.scaler
            (scaler.scale(loss) if scaler is not None else loss).backward()
            for fn in self.after_backward:
                fn()
        self.step()
        if loss is None:  # Lightning's outputs for on_train_batch_end (see `batch_outputs`), written out here
            return {}
        if type(output) is torch.Tensor:
            return {"loss": loss.detach()}
        return batch_outputs(output, loss, 1)

    def _accumulating(self, batch: Any, batch_idx: int) -> Any:
        """One micro-batch of a window (or of mixed precision): the strategy skips the gradient sync
        (forward and backward) except on the window's last micro-batch, which is also the epoch's last
        batch when the epoch ends inside a window."""
        last_of_window = (
            self.micro_step + 1 >= self.accumulate or batch_idx + 1 >= self.run.data.num_training_batches
        )
        output = self._forward(batch, batch_idx, sync=last_of_window)
        loss = loss_from_output(output)
        if self.micro_step == 0:
            self._zero_grad(batch_idx)
        self.micro_step += 1
        finishes_window = self.micro_step >= self.accumulate or last_of_window  # Lightning steps there
        self.skipped = loss is None
        if loss is not None and not self.skip_backward:
            self.run.reporter.last_loss = loss.detach()
            self._backward(loss / self.accumulate if self.accumulate > 1 else loss)
        if finishes_window:
            self.step()
        return batch_outputs(output, loss, self.accumulate)

    def _forward(self, batch: Any, batch_idx: int, sync: bool) -> Any:
        """training_step through the strategy; `sync`: does this step's backward synchronise gradients."""
        try:  # costs nothing unless it raises (zero-cost exceptions)
            if self.autocast is None:
                return self.strategy.training_step(self.module, batch, batch_idx, self.pass_index, sync)
            with self.autocast():
                return self.strategy.training_step(self.module, batch, batch_idx, self.pass_index, sync)
        except ValueError as e:
            hint = explain_step_error(e, batch, "training_step")
            if hint is None:
                raise
            raise hint from e

    def _zero_grad(self, batch_idx: int) -> None:
        opt = self.optimizer
        for fn in self.before_zero_grad:
            fn(opt)
        if self.custom_zero_grad is not None:
            self.custom_zero_grad(self.progress.epoch, batch_idx, opt)
        else:
            opt.zero_grad()

    def _backward(self, loss: torch.Tensor) -> None:
        for fn in self.before_backward:
            fn(loss)
        scaler = self.scaler
        scaled = scaler.scale(loss) if scaler is not None else loss
        if self.custom_backward is not None:
            self.custom_backward(scaled)
        else:
            scaled.backward()
        for fn in self.after_backward:
            fn()

    def _hooked_batch(self, batch: Any, batch_idx: int) -> Any:
        """Lightning's structure, for a Module overriding a step hook: inside a window the closure runs alone
        (gradient sync skipped); on the window's last micro-batch `optimizer_step` receives it."""
        inside_window = (
            self.micro_step + 1 < self.accumulate and batch_idx + 1 < self.run.data.num_training_batches
        )
        closure = OptimizerClosure(
            self, batch, batch_idx, zero_grad=self.micro_step == 0, sync=not inside_window
        )
        self.micro_step += 1
        if inside_window:
            closure()  # its backward does not synchronise gradients (sync=False)
        else:
            self.micro_step = 0
            self.module.optimizer_step(self.progress.epoch, batch_idx, self.stepper, closure)
            self._after_step()
        if closure.output is _NOT_RUN:
            raise ConfigError(
                f"{type(self.module).__name__}.optimizer_step did not run optimizer_closure, so "
                "training_step never "
                "ran; call optimizer.step(closure=optimizer_closure), or optimizer_closure() to skip the step"
            )
        output = closure.output
        return batch_outputs(
            output, loss_from_output(output) if output is not None else None, self.accumulate
        )

    def before_step(self, opt: torch.optim.Optimizer) -> None:
        """After the window's backward, before the optimizer steps: on_before_optimizer_step hooks, then
        clipping."""
        for fn in self.before_optimizer_step:
            fn(opt)
        if self.custom_clipping is not None:
            self.custom_clipping(opt, self.clip_val, self.clip_algorithm)
        elif self.clip_val:
            clip_parameters(opt, self.clip_val, self.clip_algorithm)

    def step(self, batches_done: int | None = None) -> None:
        """Finish an accumulation window: unscale, hooks, clip, optimizer and per-step schedulers.

        `batches_done`: the epoch's batches so far, given when called after the epoch's last batch (an
        epoch of unknown length that ended inside a window); inside a batch it is that batch's index + 1."""
        opt, scaler = self.optimizer, self.scaler
        self.micro_step = 0
        if (
            self.hooked
        ):  # an epoch that ended inside a window (unknown length): the user's optimizer_step steps
            self.module.optimizer_step(
                self.progress.epoch, self.progress.batch_idx - 1, self.stepper, _no_closure
            )
            self._after_step(self.progress.batch_idx)
            return
        # Written out rather than calling before_step/_after_step: two calls fewer on every step.
        skipped_with_scaler = (
            scaler is not None and self.skipped
        )  # Lightning: no GradScaler step without a backward
        if scaler is not None and not skipped_with_scaler:
            scaler.unscale_(opt)
        for fn in self.before_optimizer_step:
            fn(opt)
        if self.custom_clipping is not None:
            self.custom_clipping(opt, self.clip_val, self.clip_algorithm)
        elif self.clip_val:
            clip_parameters(opt, self.clip_val, self.clip_algorithm)
        if scaler is None:
            opt.step()
        elif not skipped_with_scaler:
            scaler.step(opt)
            scaler.update()
        progress = self.progress
        progress.global_step += 1
        # Lightning's frequency counts the epoch's batches (batch_idx + 1), not global steps
        done = progress.batch_idx + 1 if batches_done is None else batches_done
        for config in self.step_schedulers:
            if done % config.frequency == 0:
                step_scheduler(config, self.run, self.lr_scheduler_step)

    def _after_step(self, batches_done: int | None = None) -> None:
        """Lightning counts a step once optimizer_step returns, whether or not it stepped the optimizer."""
        progress = self.progress
        progress.global_step += 1
        done = progress.batch_idx + 1 if batches_done is None else batches_done
        for config in self.step_schedulers:
            if done % config.frequency == 0:
                step_scheduler(config, self.run, self.lr_scheduler_step)

    # ---- resume state (a checkpoint participant) ---------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        grads = None
        if self.micro_step and self.run.strategy.world_size == 1:  # ranks' partial gradients differ: not kept
            grads = [p.grad for group in self.optimizer.param_groups for p in group["params"]]
        return {"micro_step": self.micro_step, "grads": grads}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        grads = state.get("grads")
        if not state.get("micro_step") or grads is None or self.run.strategy.world_size != 1:
            return  # the window starts afresh, as before this state was saved
        params = [p for group in self.optimizer.param_groups for p in group["params"]]
        if len(params) != len(grads):
            return
        for param, grad in zip(params, grads, strict=True):
            param.grad = None if grad is None else grad.to(param.device, param.dtype)
        self.micro_step = int(state["micro_step"])


_NOT_RUN = object()


def _no_closure() -> None:
    return None


class OptimizerClosure:
    """The `optimizer_closure` a Module's `optimizer_step` receives: training_step, then (on a window's first
    micro-batch) `on_before_zero_grad` and `optimizer_zero_grad`, then `backward` on the loss divided by
    `accumulate_grad_batches`. Calling it returns that loss, detached."""

    def __init__(
        self, owner: AutomaticOptimization, batch: Any, batch_idx: int, zero_grad: bool, sync: bool
    ) -> None:
        self.owner, self.batch, self.batch_idx, self.zero_grad = owner, batch, batch_idx, zero_grad
        self.sync = sync  # the step's backward synchronises gradients (the window's last micro-batch)
        self.output: Any = _NOT_RUN

    def __call__(self, *args: Any, **kwargs: Any) -> torch.Tensor | None:
        owner = self.owner
        with torch.enable_grad():
            output = owner._forward(self.batch, self.batch_idx, self.sync)
            loss = loss_from_output(output)
            if self.zero_grad:
                owner._zero_grad(self.batch_idx)
            owner.skipped = loss is None
            if loss is not None:  # None: training_step skipped this batch (no backward), as in Lightning
                owner.run.reporter.last_loss = loss.detach()
                if owner.accumulate > 1:
                    loss = loss / owner.accumulate
                owner._backward(loss)
        self.output = output
        return None if loss is None else loss.detach()


class _ClosureStepper:
    """The optimizer `optimizer_step` receives (Lightning's LightningOptimizer): `step(closure=...)` runs the
    closure, unscales (mixed precision), calls on_before_optimizer_step and the clipping, then steps."""

    def __init__(self, owner: AutomaticOptimization) -> None:
        self._owner = owner
        self.optimizer = owner.optimizer

    def step(self, closure: Any = None, **kwargs: Any) -> Any:
        owner, opt = self._owner, self.optimizer
        scaler = owner.scaler
        if scaler is not None:  # a GradScaler cannot pass a closure to the optimizer: run it first
            if closure is not None:
                closure()
            scaler.unscale_(opt)
            owner.before_step(opt)
            result = scaler.step(opt, **kwargs)
            scaler.update()
            return result

        def closure_then_hooks() -> Any:
            result = closure() if closure is not None else None
            owner.before_step(opt)
            return result

        return opt.step(closure=closure_then_hooks, **kwargs)

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.optimizer.zero_grad(set_to_none=set_to_none)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.optimizer, name)


def keyed_hooks(run: Run, name: str) -> list[Callable[..., Any]]:
    """The hooks called `name` (callbacks', then the module's), each calling `self.log` under its own name:
    Lightning keys a logged value by the hook it comes from, so the twice-logged check does not count a
    hook run inside the training step as `training_step`. No hooks: the same empty list (no call is added
    to a step)."""
    assert run.hooks is not None
    fns = run.hooks.get(name)
    if not fns:
        return fns
    store = run.reporter.stores["train"]

    def keyed(fn: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any) -> Any:
            previous, store.fx = store.fx, name
            try:
                return fn(*args)
            finally:
                store.fx = previous

        return call

    return [keyed(fn) for fn in fns]


def step_scheduler(config: SchedulerConfig, run: Run, hook: Any = None) -> None:
    """Step one scheduler; `hook` is the Module's `lr_scheduler_step(scheduler, metric)` override, if any
    (Lightning passes the monitored value for ReduceLROnPlateau, None otherwise)."""
    metric = None
    if config.needs_metric:
        metrics = run.reporter.callback_metrics()
        if config.monitor not in metrics:
            if config.strict:
                raise ConfigError(
                    f"ReduceLROnPlateau monitors {config.monitor!r} but it was not logged; logged: "
                    f"{sorted(metrics)}"
                )
            return
        metric = metrics[config.monitor]
    if hook is not None:
        hook(config.scheduler, metric)
    elif metric is None:
        config.scheduler.step()
    else:
        config.scheduler.step(float(metric))


class ManualOptimization:
    """`automatic_optimization = False`: the Module calls backward and step itself."""

    at_window_boundary = True
    micro_step = 0

    def __init__(self, run: Run) -> None:
        assert run.hooks is not None
        self.run = run
        self.before_backward, self.after_backward = (
            keyed_hooks(run, "on_before_backward"),
            keyed_hooks(run, "on_after_backward"),
        )
        self.custom_backward = module_override(
            run.module, "backward"
        )  # Lightning's manual_backward calls it too
        self.pass_index = takes_batch_idx(run.module.training_step)

    def run_batch(self, batch: Any, batch_idx: int) -> Any:
        run = self.run
        with run.precision.autocast():
            try:
                output = run.strategy.training_step(run.module, batch, batch_idx, self.pass_index)
            except ValueError as e:
                hint = explain_step_error(e, batch, "training_step")
                if hint is None:
                    raise
                raise hint from e
        if isinstance(output, torch.Tensor):
            run.reporter.last_loss = output.detach()
            return {"loss": run.reporter.last_loss}  # Lightning's outputs for on_train_batch_end
        if isinstance(output, Mapping):
            outputs = dict(output)
            if isinstance(output.get("loss"), torch.Tensor):
                run.reporter.last_loss = outputs["loss"] = output["loss"].detach()
            return outputs
        if output is not None:
            raise ConfigError(
                f"training_step returned {type(output).__name__} under manual optimization; return "
                "a loss tensor, a dict, or nothing (Lightning's rule)"
            )
        return {}

    def manual_backward(self, loss: torch.Tensor, *args: Any, **kwargs: Any) -> None:
        """`Module.manual_backward`: the backward hooks and the Trainer's gradient scaling around
        `backward`."""
        for fn in self.before_backward:
            fn(loss)
        scaler = self.run.precision.scaler
        scaled = scaler.scale(loss) if scaler is not None else loss
        if self.custom_backward is not None:
            self.custom_backward(scaled, *args, **kwargs)
        else:
            scaled.backward(*args, **kwargs)
        for fn in self.after_backward:
            fn()

    def step(self, batches_done: int | None = None) -> None: ...

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


class StepCountingOptimizer:
    """What `self.optimizers()` returns under manual optimization: counts steps and applies scaling."""

    def __init__(self, optimizer: torch.optim.Optimizer, run: Run) -> None:
        assert run.hooks is not None
        self._optimizer = optimizer
        self._run = run
        self._before_step = keyed_hooks(run, "on_before_optimizer_step")

    @property
    def optimizer(self) -> torch.optim.Optimizer:
        return self._optimizer

    def step(self, closure: Any = None) -> Any:
        run = self._run
        for fn in self._before_step:
            fn(self._optimizer)
        scaler = run.precision.scaler
        if scaler is not None:
            result = scaler.step(self._optimizer, closure) if closure else scaler.step(self._optimizer)
            scaler.update()
        else:
            result = self._optimizer.step(closure) if closure is not None else self._optimizer.step()
        run.progress.global_step += 1
        return result

    def zero_grad(self, set_to_none: bool = True) -> None:
        self._optimizer.zero_grad(set_to_none=set_to_none)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._optimizer, name)
