"""The one place hooks are called: callbacks and the Module, by name, in a documented order.

When a run starts, the list of functions to call is built for every hook name at once, from the
callbacks and the Module that actually override it: a hook nobody overrides is an empty list, so
it costs nothing per step, however many hook points exist. Order (Lightning's, trainer/call.py and
its loops): the callbacks in the order given, then the Module, for every hook; `on_train_epoch_end`
alone splits the callbacks — the others, the Module, then the monitoring ones (ModelCheckpoint,
EarlyStopping), so that these see what the Module logged in its `on_train_epoch_end`.
"""

from __future__ import annotations

import functools
import inspect
import types
import warnings
from collections.abc import Callable
from typing import Any

import torch

from ember.callbacks.callback import Callback
from ember.callbacks.early_stopping import EarlyStopping
from ember.callbacks.model_checkpoint import ModelCheckpoint
from ember.datamodule import DataModule
from ember.module import Module

_MONITORING = (ModelCheckpoint, EarlyStopping)  # run after the Module's on_train_epoch_end (Lightning's rule)
#: Hook points dispatched by name (setup/teardown take the stage and are called in order by the Trainer;
#: on_save/on_load_checkpoint and on_exception take other arguments and have their own callers).
HOOK_NAMES = tuple(
    name
    for name in vars(Callback)
    if name.startswith("on_") and name not in ("on_save_checkpoint", "on_load_checkpoint", "on_exception")
)


def _overrides(obj: Any, base: type, name: str) -> bool:
    if name in getattr(obj, "__dict__", ()):  # set on the instance (LambdaCallback's functions)
        return True
    impl = getattr(type(obj), name, None)
    return impl is not None and impl is not getattr(base, name, None)


class HookDispatcher:
    """`hooks("on_fit_start")` calls every override; `hooks.get(name)` is the list, for hot loops to
    fetch once (per run or per epoch) and iterate with no call per step when it is empty.

    Example:
        >>> import ember
        >>> class Loud(ember.Callback):
        ...     def on_fit_start(self, trainer, module):
        ...         print("fit starts")
        >>> hooks = HookDispatcher(None, ember.Module(), [Loud()])
        >>> hooks("on_fit_start")
        fit starts
        >>> hooks.get("on_train_batch_end")
        []
    """

    def __init__(self, trainer: Any, module: Module, callbacks: list[Callback]) -> None:
        self.trainer, self.module, self.callbacks = trainer, module, callbacks
        self.link = module.run_link  # its metric store learns which hook `self.log` is called from
        self._lists: dict[str, list[Callable[..., Any]]] = {name: self._build(name) for name in HOOK_NAMES}

    def get(self, name: str) -> list[Callable[..., Any]]:
        return self._lists[name]

    def _build(self, name: str) -> list[Callable[..., Any]]:
        callbacks = [cb for cb in self.callbacks if _overrides(cb, Callback, name)]
        late: list[Callback] = []
        if name == "on_train_epoch_end":  # ModelCheckpoint/EarlyStopping after the module, as Lightning
            late = [cb for cb in callbacks if isinstance(cb, _MONITORING)]
            callbacks = [cb for cb in callbacks if cb not in late]
        # only the Module's own hooks: Lightning calls on_sanity_check_start/_end on callbacks alone
        from_module = (
            [getattr(self.module, name)]
            if hasattr(Module, name) and _overrides(self.module, Module, name)
            else []
        )
        return (
            [self._bound(cb, name) for cb in callbacks] + from_module + [self._bound(cb, name) for cb in late]
        )

    def _bound(self, callback: Callback, name: str) -> Callable[..., Any]:
        function = getattr(callback, name)
        if name in vars(callback):  # a function set on the instance (LambdaCallback): still the callback's
            function = types.MethodType(
                lambda _owner, *args, _function=function, **kwargs: _function(*args, **kwargs), callback
            )
        return functools.partial(function, self.trainer, self.module)

    def wrap_each(self, wrap: Callable[[str, Callable[..., Any]], Callable[..., Any]]) -> None:
        """Replace every hook function by `wrap(name, fn)` (the profiler times each one)."""
        self._lists = {name: [wrap(name, fn) for fn in fns] for name, fns in self._lists.items()}

    def __call__(self, name: str, *args: Any) -> None:
        store = self.link.metric_store
        if store is not None:  # the hook `self.log` is called from (Lightning's _current_fx_name)
            store.fx = name
        for fn in self._lists[name]:
            fn(*args)

    def call_exception(self, exception: BaseException, datamodule: Any = None) -> None:
        """Lightning's order: every callback's on_exception, then the DataModule's."""
        for cb in self.callbacks:
            if _overrides(cb, Callback, "on_exception"):
                cb.on_exception(self.trainer, self.module, exception)
        if datamodule is not None and _overrides(datamodule, DataModule, "on_exception"):
            datamodule.on_exception(exception)


_TRANSFER_HOOKS = ("on_before_batch_transfer", "transfer_batch_to_device", "on_after_batch_transfer")


def batch_transfer(module: Module, datamodule: Any, device: torch.device) -> Callable[[Any, int], Any] | None:
    """Lightning's batch transfer, `fn(batch, dataloader_idx)`: on_before_batch_transfer,
    transfer_batch_to_device, on_after_batch_transfer — each from the DataModule when it overrides it, else
    from the Module. None when neither overrides any of them: the loops then move batches themselves, at no
    extra cost per batch.

    >>> import torch, ember
    >>> class Doubling(ember.Module):
    ...     def on_after_batch_transfer(self, batch, dataloader_idx):
    ...         return batch * 2
    >>> batch_transfer(Doubling(), None, torch.device("cpu"))(torch.ones(2), 0)
    tensor([2., 2.])
    >>> batch_transfer(ember.Module(), None, torch.device("cpu")) is None
    True
    """
    chosen = []
    for name in _TRANSFER_HOOKS:
        in_data = datamodule is not None and _overrides(datamodule, DataModule, name)
        in_module = _overrides(module, Module, name)
        if in_data and in_module:
            warnings.warn(
                f"{name} is overridden in both the Module and the DataModule; the DataModule's runs "
                "(as in Lightning)",
                stacklevel=2,
            )
        chosen.append((getattr(datamodule if in_data else module, name), in_data or in_module))
    if not any(custom for _, custom in chosen):
        return None
    (before, _), (transfer, _), (after, _) = chosen
    from ember.trainer.reporting import RefusedLog  # (reporting imports this module's neighbours)

    refused = [RefusedLog(name) for name in _TRANSFER_HOOKS]  # Lightning refuses self.log in these hooks

    link = module.run_link

    def apply(batch: Any, dataloader_idx: int) -> Any:
        store = link.metric_store
        try:
            link.metric_store = refused[0]
            batch = before(batch, dataloader_idx)
            link.metric_store = refused[1]
            batch = transfer(batch, device, dataloader_idx)
            link.metric_store = refused[2]
            return after(batch, dataloader_idx)
        finally:
            link.metric_store = store

    return apply


def configure_model(module: Module, device: torch.device) -> None:
    """Lightning calls `configure_model` at the start of every fit/validate/test/predict, after `setup`, with
    new tensors created on the run's device; the hook must be idempotent."""
    if _overrides(module, Module, "configure_model"):
        with torch.device(device):
            module.configure_model()


def call_module_hook(module: Module, name: str) -> bool:
    """Call the Module's override of `name`; False (nothing called) when it keeps the default."""
    if not _overrides(module, Module, name):
        return False
    getattr(module, name)()
    return True


def takes_batch_idx(step: Callable[..., Any]) -> bool:
    """Lightning passes `batch_idx` to a step method only when it can take it: a parameter named so, `*args`,
    or at least two parameters besides `self` (decided once per run, so a step costs nothing extra).

    >>> class M:
    ...     def training_step(self, batch): ...
    ...     def validation_step(self, batch, idx): ...
    >>> takes_batch_idx(M().training_step), takes_batch_idx(M().validation_step)
    (False, True)
    """
    step = getattr(step, "__wrapped__", step)
    spec = inspect.getfullargspec(step)
    args = spec.args[1:] if inspect.ismethod(step) or (spec.args and spec.args[0] == "self") else spec.args
    return "batch_idx" in args or spec.varargs is not None or len(args) >= 2
