"""`ember <command> --help` without importing torch: the same parser, built from the Trainer's source.

LightningCLI's help needs every class imported; ember's command answers in a fraction of a second
by describing the class-typed sections (model, data, optimizer, lr_scheduler) instead of typing
them. `--model.help CLASS` (which imports the class) lists a class's arguments with their defaults.
"""

from __future__ import annotations

from ember.cli.classic_flags import HELP as CLASSIC_HELP
from ember.cli.parser import add_ember_arguments, add_run_arguments, new_parser
from ember.cli.trainer_options import trainer_options

DESCRIPTIONS = {
    "fit": "Train a model described by a config (LightningCLI's layout).",
    "validate": "Run validation once on a model described by a config.",
    "test": "Run the test set once on a model described by a config.",
}


def wants_light_help(argv: list[str]) -> bool:
    """`--help` / `-h` asked for, and nothing that needs a class imported (`--model.help X`)."""
    return any(a in ("-h", "--help") for a in argv) and not any(a.endswith(".help") for a in argv)


def print_help(subcommand: str) -> None:
    import argparse

    from jsonargparse import DefaultHelpFormatter

    class Formatter(DefaultHelpFormatter, argparse.RawDescriptionHelpFormatter):
        """jsonargparse's help (types and defaults) with the epilog's table kept as written."""

    parser = new_parser(
        f"ember {subcommand}",
        DESCRIPTIONS[subcommand],
        formatter_class=Formatter,
        epilog="The classic script's flags are kept as aliases:\n\n" + CLASSIC_HELP,
    )
    add_run_arguments(
        parser,
        subcommand,
        options=trainer_options(),
        light=True,
        model_class=None,
        datamodule_class=None,
        subclass_mode_model=True,
        subclass_mode_data=True,
        seed_everything_default=True,
        auto_configure_optimizers=True,
    )
    add_ember_arguments(parser, subcommand)
    parser.print_help()
