"""`LightningArgumentParser`: jsonargparse's ArgumentParser with Lightning's helpers, built when first used.

    parser.add_lightning_class_args(EarlyStopping, "early_stopping")      # a callback configured from the CLI
    parser.add_optimizer_args(torch.optim.Adam)                          # --optimizer.lr (an Adam, always)
    parser.add_lr_scheduler_args(torch.optim.lr_scheduler.ExponentialLR) # --lr_scheduler.gamma

The class is made on first use (jsonargparse is imported only when a command-line parser is needed, so
`import ember` stays fast); `ember.cli.LightningArgumentParser` returns it. Its mistakes raise
`ParseError` (a ConfigError) so that LightningCLI can answer them in one line.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from ember.errors import ConfigError


class ParseError(ConfigError):
    """jsonargparse's message as it came; `ember.cli.parser.parse` turns it into one line."""


@cache
def lightning_argument_parser() -> type:
    """The LightningArgumentParser class (jsonargparse imported here, once)."""
    from jsonargparse import ArgumentParser

    class LightningArgumentParser(ArgumentParser):
        """jsonargparse's ArgumentParser with Lightning's `add_lightning_class_args`, `add_optimizer_args`
        and `add_lr_scheduler_args`; environment variables are read as `PL_...` when `default_env=True`.

        Example:
            >>> import torch
            >>> from ember.cli import LightningArgumentParser
            >>> parser = LightningArgumentParser(exit_on_error=False)
            >>> parser.add_optimizer_args(torch.optim.SGD)
            >>> parser.parse_args(["--optimizer.lr", "0.5"]).optimizer.lr
            0.5
        """

        def __init__(
            self,
            *args: Any,
            description: str = "Lightning Trainer command line tool",
            env_prefix: str = "PL",
            default_env: bool = False,
            **kwargs: Any,
        ) -> None:
            kwargs.setdefault("exit_on_error", False)
            super().__init__(
                *args, description=description, env_prefix=env_prefix, default_env=default_env, **kwargs
            )
            self.callback_keys: list[str] = []
            self._optimizers: dict[str, tuple[Any, str]] = {}
            self._lr_schedulers: dict[str, tuple[Any, str]] = {}

        def error(self, message: str, ex: Exception | None = None) -> Any:
            raise ParseError(message)  # nested parsers (subclasses) raise too: condensed once, by parse()

        def add_lightning_class_args(
            self, lightning_class: Any, nested_key: str, subclass_mode: bool = False, required: bool = True
        ) -> list[str]:
            """Arguments of a Trainer, Module, DataModule or Callback class (or a function returning one)
            under `nested_key`; a Callback's key adds the built callback to the Trainer's callbacks."""
            from jsonargparse import class_from_function

            from ember.callbacks import Callback
            from ember.datamodule import DataModule
            from ember.module import Module
            from ember.trainer import Trainer

            if callable(lightning_class) and not isinstance(lightning_class, type):
                lightning_class = class_from_function(lightning_class)
            if not (
                isinstance(lightning_class, type)
                and issubclass(lightning_class, (Trainer, Module, DataModule, Callback))
            ):
                raise ConfigError(
                    f"add_lightning_class_args({lightning_class!r}): pass a subclass of Trainer, "
                    "Module, DataModule or Callback, or a function returning one"
                )
            if issubclass(lightning_class, Callback):
                self.callback_keys.append(nested_key)
            if subclass_mode:
                return self.add_subclass_arguments(
                    lightning_class, nested_key, fail_untyped=False, required=required
                )
            return self.add_class_arguments(
                lightning_class,
                nested_key,
                fail_untyped=False,
                sub_configs=True,
                instantiate=not issubclass(lightning_class, Trainer),
            )

        def add_optimizer_args(
            self, optimizer_class: Any = None, nested_key: str = "optimizer", link_to: str = "AUTOMATIC"
        ) -> None:
            """An optimizer's arguments under `nested_key` (a
            tuple of classes: any subclass, by class_path)."""
            import torch

            optimizer_class = (torch.optim.Optimizer,) if optimizer_class is None else optimizer_class
            _check_classes(
                optimizer_class, (torch.optim.Optimizer,), "add_optimizer_args", "torch.optim.Optimizer"
            )
            self._add_unbuilt(optimizer_class, nested_key, "params")
            self._optimizers[nested_key] = (optimizer_class, link_to)

        def add_lr_scheduler_args(
            self, lr_scheduler_class: Any = None, nested_key: str = "lr_scheduler", link_to: str = "AUTOMATIC"
        ) -> None:
            """A learning-rate scheduler's arguments under `nested_key` (a tuple of classes: any subclass)."""
            schedulers = lr_scheduler_types()
            lr_scheduler_class = schedulers if lr_scheduler_class is None else lr_scheduler_class
            _check_classes(
                lr_scheduler_class,
                schedulers,
                "add_lr_scheduler_args",
                "torch.optim.lr_scheduler.LRScheduler or ReduceLROnPlateau",
            )
            self._add_unbuilt(lr_scheduler_class, nested_key, "optimizer")
            self._lr_schedulers[nested_key] = (lr_scheduler_class, link_to)

        def _add_unbuilt(self, classes: Any, nested_key: str, skipped: str) -> None:
            # not instantiated by the parser: LightningCLI builds them with the model's parameters
            kwargs: dict[str, Any] = {"instantiate": False, "fail_untyped": False, "skip": {skipped}}
            if isinstance(classes, tuple):
                self.add_subclass_arguments(classes, nested_key, **kwargs)
            else:
                self.add_class_arguments(classes, nested_key, sub_configs=True, **kwargs)

    LightningArgumentParser.__module__ = "ember.cli"
    return LightningArgumentParser


@cache
def name_callbacks_by_their_package() -> None:
    """Configs write `ember.callbacks.EarlyStopping`, as Lightning's write
    `lightning.pytorch.callbacks.EarlyStopping`.

    jsonargparse names a class by the shortest package exporting it, and `ember` re-exports the common
    callbacks (`ember.EarlyStopping`); its table of remembered paths (private: skipped if it moves) is told
    the documented one. (Imports the callbacks, so torch: called when a LightningCLI builds its parser.)
    """
    try:
        from jsonargparse._util import resolved_import_paths

        remember = resolved_import_paths.add
    except (ImportError, AttributeError):
        return
    from ember import callbacks

    # the ones `ember` re-exports at its top (the ambiguous names)
    for name in (
        "Callback",
        "EarlyStopping",
        "ModelCheckpoint",
        "LearningRateMonitor",
        "BasePredictionWriter",
    ):
        remember(getattr(callbacks, name), f"ember.callbacks.{name}")


def lr_scheduler_types() -> tuple[type, ...]:
    """The scheduler base classes a config may name (as Lightning's LRSchedulerTypeTuple)."""
    import torch

    from ember.cli.reduce_lr_on_plateau import ReduceLROnPlateau

    return torch.optim.lr_scheduler.LRScheduler, ReduceLROnPlateau


def _check_classes(given: Any, bases: tuple[type, ...], method: str, wanted: str) -> None:
    classes = given if isinstance(given, tuple) else (given,)
    if not all(isinstance(c, type) and issubclass(c, bases) for c in classes):
        raise ConfigError(f"{method}({given!r}): pass a subclass of {wanted} (or a tuple of them)")
