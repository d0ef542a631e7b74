"""The one place hooks are called: callbacks and the Module, by name, in a documented order.

For each hook name the list of functions to call is built once, from the callbacks and the
Module that actually override it, so a hook nobody overrides costs an empty loop. Order: the
callbacks (in the order given) then the Module, except for `*_epoch_end` hooks where the Module
runs first so that what it logs there is visible to callbacks such as ModelCheckpoint.
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


def _overrides(obj: Any, base: type, name: str) -> bool:
    impl = getattr(type(obj), name, None)
    return impl is not None and impl is not getattr(base, name, None)


class HookDispatcher:
    """`hooks("on_fit_start")` calls every override; `hooks.get(name)` gives the list for hot loops."""

    def __init__(self, trainer: Any, module: Module, callbacks: list[Callback]) -> None:
        self.trainer, self.module, self.callbacks = trainer, module, callbacks
        self._lists: dict[str, list[Callable[..., Any]]] = {}

    def get(self, name: str) -> list[Callable[..., Any]]:
        found = self._lists.get(name)
        if found is None:
            found = self._lists[name] = self._build(name)
        return found

    def _build(self, name: str) -> list[Callable[..., Any]]:
        from_callbacks: list[Callable[..., Any]] = [
            functools.partial(getattr(cb, name), self.trainer, self.module)
            for cb in self.callbacks
            if _overrides(cb, Callback, name)
        ]
        from_module = [getattr(self.module, name)] if _overrides(self.module, Module, name) else []
        return from_module + from_callbacks if name in _MODULE_FIRST else from_callbacks + from_module

    def __call__(self, name: str, *args: Any) -> None:
        for fn in self.get(name):
            fn(*args)

    def call_exception(self, exception: BaseException) -> None:
        for cb in self.callbacks:
            if _overrides(cb, Callback, "on_exception"):
                cb.on_exception(self.trainer, self.module, exception)
