"""Hyperparameters: what ``save_hyperparameters`` records, for Modules and DataModules alike
(Lightning's ``HyperparametersMixin``). The values travel in checkpoints and to the loggers."""

from __future__ import annotations

import copy
import functools
import inspect
import types
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any


class AttributeDict(dict):
    """A dict whose keys read as attributes: ``self.hparams.lr``.

    >>> AttributeDict(lr=0.1).lr
    0.1
    """

    def __getattr__(self, key: str) -> Any:
        try:
            return self[key]
        except KeyError:
            raise AttributeError(f"hparams has no {key!r}; saved keys: {sorted(self)}") from None

    def __setattr__(self, key: str, value: Any) -> None:
        self[key] = value


class HyperparametersMixin:
    """``save_hyperparameters()``, ``hparams`` and ``hparams_initial``.

    Example:
        >>> class Data(HyperparametersMixin):
        ...     def __init__(self, batch_size=32, root="data"):
        ...         self.save_hyperparameters(ignore="root")
        >>> Data(batch_size=64).hparams
        {'batch_size': 64}
    """

    def save_hyperparameters(
        self,
        *args: Any,
        ignore: str | Iterable[str] | None = None,
        frame: types.FrameType | None = None,
        logger: bool = True,
    ) -> None:
        """Record the ``__init__`` arguments in ``self.hparams`` (and in every checkpoint).

        With no arguments, every argument of the calling ``__init__`` is saved; pass names to keep
        only some, or a dict (or a namespace) to save it as is. ``ignore`` drops names (e.g. a
        whole model passed in); ``logger=False`` keeps them out of the loggers. ``frame`` (Lightning's):
        the frame whose arguments are read instead of the caller's, for a helper that saves on the
        ``__init__``'s behalf (``frame=inspect.currentframe().f_back``).
        """
        ignored = {ignore} if isinstance(ignore, str) else set(ignore or ())
        if len(args) == 1 and isinstance(args[0], Mapping):
            values = dict(args[0])
        elif len(args) == 1 and hasattr(args[0], "__dict__") and not isinstance(args[0], str):
            values = dict(vars(args[0]))
        else:
            here = inspect.currentframe()
            caller = frame if frame is not None else (here.f_back if here is not None else None)
            values = hierarchy_init_arguments(caller, self) if caller is not None else {}
            del here, caller
            if args:
                values = {k: values[k] for k in args if k in values}
        kept = {k: v for k, v in values.items() if k not in ignored}
        self.hparams.update(kept)
        self.__dict__["_hparams_initial"] = AttributeDict(copy.deepcopy(dict(self.hparams)))
        self.__dict__["_log_hyperparams"] = logger

    @property
    def hparams(self) -> AttributeDict:
        """The saved hyperparameters (mutable)."""
        return self.__dict__.setdefault("_hparams", AttributeDict())

    @property
    def hparams_initial(self) -> AttributeDict:
        """A copy of the hyperparameters as ``save_hyperparameters`` recorded them (later edits not
        included)."""
        return AttributeDict(copy.deepcopy(dict(self.__dict__.get("_hparams_initial", {}))))


def init_arguments(frame: Any) -> dict[str, Any]:
    """The named arguments of the function running in ``frame`` (the user's ``__init__``)."""
    code = frame.f_code
    count = code.co_argcount + code.co_kwonlyargcount
    names = list(code.co_varnames[:count])
    local_vars = frame.f_locals
    values = {n: local_vars[n] for n in names if n in local_vars and n not in ("self", "__class__")}
    if code.co_flags & inspect.CO_VARKEYWORDS:
        extra = code.co_varnames[count + (1 if code.co_flags & inspect.CO_VARARGS else 0)]
        values.update(local_vars.get(extra) or {})
    return values


def hierarchy_init_arguments(frame: Any, instance: Any) -> dict[str, Any]:
    """The arguments of the ``__init__`` running in ``frame`` and of every subclass ``__init__`` of the same
    object that called it through ``super().__init__(...)`` (Lightning's rule: a base class that saves its
    hyperparameters also records its subclasses' arguments; where both have a name, the subclass's call
    wins)."""
    levels = [init_arguments(frame)]
    outer = frame.f_back
    while outer is not None and _is_init_of(outer, instance):
        levels.append(init_arguments(outer))
        outer = outer.f_back
    merged: dict[str, Any] = {}
    for level in levels:  # innermost (the base class) first: the outer, more specific calls override
        merged.update(level)
    return merged


def _is_init_of(frame: Any, instance: Any) -> bool:
    code = frame.f_code
    return (
        code.co_name == "__init__"
        and code.co_argcount > 0
        and "__class__" in frame.f_locals
        and frame.f_locals.get(code.co_varnames[0]) is instance
    )


def accepted_arguments(cls: type, hparams: dict[str, Any]) -> dict[str, Any]:
    """Keep only the hyperparameters ``cls.__init__`` accepts (all, when it takes ``**kwargs``)."""
    # the class's own __init__ (what a call of the class runs), read off the class, not an instance
    params = inspect.signature(cls.__init__).parameters  # type: ignore[misc]
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return hparams
    return {k: v for k, v in hparams.items() if k in params}


class _ClassOnly(classmethod):
    """A classmethod that refuses a call on an instance, as Lightning's ``load_from_checkpoint`` does: the
    model it builds is returned, so ``model.load_from_checkpoint(path)`` would silently leave ``model`` as it
    was.

    Example:
        >>> class Thing:
        ...     @class_only
        ...     def build(cls):
        ...         return cls()
        >>> isinstance(Thing.build(), Thing)
        True
        >>> Thing().build()  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        TypeError: Thing.build is a classmethod that returns a new object; call it on the class: x ...
    """

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        method = super().__get__(instance, owner)
        if instance is None:
            return method
        kind = owner.__name__ if owner is not None else type(instance).__name__
        name = self.__func__.__name__

        @functools.wraps(self.__func__)
        def refused(*args: Any, **kwargs: Any) -> Any:
            raise TypeError(
                f"{kind}.{name} is a classmethod that returns a new object; call it on the class: "
                f"x = {kind}.{name}(...)"
            )

        return refused


if TYPE_CHECKING:
    # mypy passes the class as the first argument only to methods decorated with classmethod (or an alias
    # of it); a subclass is a plain decorator to it, so the type checker is shown classmethod itself
    class_only = classmethod
else:
    class_only = _ClassOnly
