"""The one place hooks are called: callbacks and the Module, by name, in a documented order.

When a run starts, the list of functions to call is built for every hook name at once, from the
callbacks and the Module that actually override it: a hook nobody overrides is an empty list, so
it costs nothing per step, however many hook points exist. Order: the callbacks (in the order
given) then the Module, except for `*_epoch_end` hooks where the Module runs first so that what it
logs there is visible to callbacks such as ModelCheckpoint.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ember.callbacks.callback import Callback
from ember.module import Module

_MODULE_FIRST = frozenset(
    {"on_train_epoch_end", "on_validation_epoch_end", "on_test_epoch_end", "on_predict_epoch_end"}
)
#: Hook points dispatched by name (setup/teardown take the stage and are called in order by the Trainer;
#: on_save/on_load_checkpoint and on_exception take other arguments and have their own callers).
HOOK_NAMES = tuple(
    name for name in vars(Callback)
    if name.startswith("on_") and name not in ("on_save_checkpoint", "on_load_checkpoint", "on_exception")
)


def _overrides(obj: Any, base: type, name: str) -> bool:
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
        self._lists: dict[str, list[Callable[..., Any]]] = {name: self._build(name) for name in HOOK_NAMES}

    def get(self, name: str) -> list[Callable[..., Any]]:
        return self._lists[name]

    def _build(self, name: str) -> list[Callable[..., Any]]:
        from_callbacks: list[Callable[..., Any]] = [
            functools.partial(getattr(cb, name), self.trainer, self.module)
            for cb in self.callbacks
            if _overrides(cb, Callback, name)
        ]
        from_module = [getattr(self.module, name)] if _overrides(self.module, Module, name) else []
        return from_module + from_callbacks if name in _MODULE_FIRST else from_callbacks + from_module

    def wrap_each(self, wrap: Callable[[str, Callable[..., Any]], Callable[..., Any]]) -> None:
        """Replace every hook function by `wrap(name, fn)` (the profiler times each one)."""
        self._lists = {name: [wrap(name, fn) for fn in fns] for name, fns in self._lists.items()}

    def __call__(self, name: str, *args: Any) -> None:
        for fn in self._lists[name]:
            fn(*args)

    def call_exception(self, exception: BaseException) -> None:
        for cb in self.callbacks:
            if _overrides(cb, Callback, "on_exception"):
                cb.on_exception(self.trainer, self.module, exception)
