"""Where a tuned value lives: the module, its hparams, the attached datamodule and its hparams.

Lightning's rule (``lightning_hasattr``/``lightning_getattr``/``lightning_setattr``): every one of
those places that has the name holds it; reading takes the last of them, writing sets them all.
"""

from __future__ import annotations

from typing import Any

from ember.errors import ConfigError


def holders(module: Any, name: str, datamodule: Any = None) -> list[Any]:
    """The objects (or hparams dicts) that hold `name`, in Lightning's order.

    >>> class M:
    ...     lr = 0.1
    ...     hparams = {"lr": 0.2}
    >>> [type(h).__name__ for h in holders(M(), "lr")]
    ['M', 'dict']
    """
    found: list[Any] = []
    for owner in (module, datamodule):
        if owner is None:
            continue
        if hasattr(owner, name):
            found.append(owner)
        hparams = getattr(owner, "hparams", None)
        if hparams is not None and name in hparams:
            found.append(hparams)
    return found


def get_value(module: Any, name: str, datamodule: Any = None) -> Any:
    """The value of `name` in the last place holding it (Lightning's ``lightning_getattr``)."""
    found = holders(module, name, datamodule)
    if not found:
        raise missing(name)
    holder = found[-1]
    return holder[name] if isinstance(holder, dict) else getattr(holder, name)


def set_value(module: Any, name: str, value: Any, datamodule: Any = None) -> None:
    """Set `name` everywhere it is held (Lightning's ``lightning_setattr``)."""
    found = holders(module, name, datamodule)
    if not found:
        raise missing(name)
    for holder in found:
        if isinstance(holder, dict):
            holder[name] = value
        else:
            setattr(holder, name, value)


def missing(name: str) -> ConfigError:
    return ConfigError(
        f"{name!r} is neither an attribute of the model nor in model.hparams nor in the datamodule "
        f"(or its hparams); add it (e.g. self.{name} = ... or save_hyperparameters()) or name "
        "the attribute that holds the value"
    )


class LearningRateAttributeError(ConfigError, AttributeError):
    """The model holds no learning rate to update: an
    AttributeError, as Lightning's learning-rate finder raises."""


def lr_attribute(module: Any, attr_name: str) -> str:
    """The attribute holding the learning rate: `attr_name` when given, else 'lr' or 'learning_rate'."""
    if attr_name:
        if not holders(module, attr_name):
            raise LearningRateAttributeError(
                f"the learning-rate attribute {attr_name!r} is neither an attribute of the model nor "
                "in model.hparams; pass the name that holds it as attr_name"
            )
        return attr_name
    for name in ("lr", "learning_rate"):
        if holders(module, name):
            return name
    raise LearningRateAttributeError(
        "the learning-rate finder updates the model's 'lr' or 'learning_rate' (attribute or hparams) "
        "and the model has neither; add one, pass attr_name=..., or update_attr=False"
    )
