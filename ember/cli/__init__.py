"""`ember fit | validate | test | predict`, and `ember.cli.LightningCLI` for your own scripts.

    ember fit --config examples/fashion_mnist/config.yaml --trainer.max_epochs 2 --model.init_args.lr 0.1
    ember fit --config config.yaml --print_config > full.yaml        # every option, defaults included
    ember predict --ckpt last.ckpt --data test.parquet --output predictions/ --workers 2

    from ember.cli import LightningCLI                               # was: lightning.pytorch.cli
    LightningCLI(MyModel, MyDataModule)

Built on jsonargparse (what LightningCLI uses), imported when a command runs; `ember fit --help`
imports neither torch nor the Trainer (see docs/cli.md).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ember.errors import ConfigError, EmberError, did_you_mean

if TYPE_CHECKING:
    from ember.cli.lightning_cli import LightningCLI
    from ember.cli.save_config import SaveConfigCallback

COMMANDS = ("fit", "validate", "test", "predict")
USAGE = """usage: ember {fit,validate,test,predict} ...

  fit        train a model described by a config (LightningCLI's layout)
  validate   run validation once
  test       run the test set once
  predict    run a checkpoint over a dataset on a pool of workers, writing parquet

`ember <command> --help` lists a command's options with their defaults."""


def main(argv: Sequence[str] | None = None) -> None:
    """The `ember` command. Every mistake is one line on
    stderr: exit 2 for a bad option or config, 1 otherwise."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        raise SystemExit(0 if argv else 2)
    command = argv[0]
    try:
        if command not in COMMANDS:
            raise ConfigError(
                f"unknown command {command!r}; "
                + did_you_mean(command, COMMANDS, f"use one of {', '.join(COMMANDS)}")
            )
        if command == "predict":
            from ember.cli.predict import run_predict

            run_predict(argv[1:])
            return
        from ember.cli.help import print_help, wants_light_help

        if wants_light_help(argv[1:]):
            print_help(command)
            return
        from ember.cli.command import EmberCommand

        EmberCommand(argv)
    except EmberError as e:
        print(f"ember {command}: error: {e}", file=sys.stderr)
        raise SystemExit(2 if isinstance(e, ConfigError) else 1) from None


def __getattr__(name: str) -> Any:
    if name == "LightningCLI":
        from ember.cli.lightning_cli import LightningCLI

        return LightningCLI
    if name == "LightningArgumentParser":
        from ember.cli.argument_parser import lightning_argument_parser

        return lightning_argument_parser()
    if name == "ReduceLROnPlateau":
        from ember.cli.reduce_lr_on_plateau import ReduceLROnPlateau

        return ReduceLROnPlateau
    if name in ("OptimizerCallable", "LRSchedulerCallable"):
        from ember.cli import callable_types

        return getattr(callable_types, name)
    if name == "instantiate_class":
        from ember.cli.lightning_cli import instantiate_class

        return instantiate_class
    if name == "SaveConfigCallback":
        from ember.cli.save_config import SaveConfigCallback

        return SaveConfigCallback
    from ember.paths import refused_names  # Lightning's other names refuse use (docs/lightning_paths.md)

    return refused_names(__name__)(name)


__all__ = [
    "LRSchedulerCallable",
    "LightningArgumentParser",
    "LightningCLI",
    "OptimizerCallable",
    "ReduceLROnPlateau",
    "SaveConfigCallback",
    "instantiate_class",
    "main",
]
