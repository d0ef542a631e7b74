"""The `ember fit | validate | test` command: LightningCLI with any ember.Module / ember.DataModule.

    ember fit --config examples/fashion_mnist/config.yaml --trainer.max_epochs 2 --model.init_args.lr 0.1

It is `LightningCLI(subclass_mode_model=True, subclass_mode_data=True)` plus ember's additions:
`checkpoint:` (ModelCheckpoint arguments, save_last on), `test_after_fit:` (fit, then test and print
the test metrics), the classic script's flags (ember.cli.classic_flags), and printed results
(`test accuracy: 0.8153`) instead of a table.
"""

from __future__ import annotations

from typing import Any

from ember.cli.classic_flags import rewrite_classic_flags
from ember.cli.lightning_cli import LightningCLI, trainer_arguments
from ember.cli.parser import add_ember_arguments
from ember.errors import ConfigError


class EmberCommand(LightningCLI):
    allow_abbrev = False

    def __init__(self, argv: list[str]) -> None:
        from ember.cli.save_config import VersionedSaveConfigCallback

        super().__init__(
            subclass_mode_model=True,
            subclass_mode_data=True,
            args=argv,
            save_config_callback=VersionedSaveConfigCallback,
            parser_kwargs={"prog": f"ember {argv[0]}" if argv else "ember"},
        )

    def add_arguments_to_parser(self, parser: Any) -> None:
        add_ember_arguments(parser, self.subcommand or "fit")

    def refuse(self, error: ConfigError) -> Any:
        raise error  # `ember`'s main prints it as "ember fit: error: ..." and exits 2

    def rewrite_arguments(self, argv: list[str]) -> list[str]:
        rest, dotted = rewrite_classic_flags(argv)
        if not self._main_defaults():
            refuse_model_flags_without_a_model(argv, rest, dotted)
        return super().rewrite_arguments(rest + dotted)

    def before_instantiate_classes(self) -> None:
        """Values no class can use, refused by name before anything is built (--set model.init_args.lr=-5)."""
        for section in ("model", "data"):
            init_args = (self.config_of_subcommand.get(section) or {}).get("init_args") or {}
            for key, why in _POSITIVE.items():
                value = init_args.get(key) if hasattr(init_args, "get") else None
                if isinstance(value, (int, float)) and not isinstance(value, bool) and not value > 0:
                    raise ConfigError(f"{section}.init_args.{key}={value!r}: {why}")

    def instantiate_trainer(self, **extra: Any) -> Any:
        section = self.config_init.get("checkpoint")
        if section:
            from ember.callbacks import ModelCheckpoint

            try:
                checkpoint = ModelCheckpoint(**{"save_last": True, **section})
            except TypeError as e:
                raise ConfigError(f"checkpoint section: {e}") from None
            checkpoint.keep_last_current = True  # --resume continues from the newest epoch
            extra["callbacks"] = [checkpoint]
        return super().instantiate_trainer(**extra)

    def _run_subcommand(self, subcommand: str) -> None:
        arguments = trainer_arguments(self.subcommand_arguments(subcommand))
        if subcommand == "fit":
            self.trainer.fit(**arguments)
            if self.config_init.get("test_after_fit") and _has_test(self.model, self.datamodule):
                _print_results(self.trainer.test(self.model, datamodule=self.datamodule, verbose=False))
        elif subcommand in ("validate", "test"):
            arguments["verbose"] = False
            _print_results(getattr(self.trainer, subcommand)(**arguments))
        else:
            getattr(self.trainer, subcommand)(**arguments)


#: Arguments that name the model (or bring a config that may): after them, --lr has a model to set.
_MODEL_SOURCES = ("-c", "--config", "--model", "--model.class_path")


def refuse_model_flags_without_a_model(argv: list[str], rest: list[str], dotted: list[str]) -> None:
    """The classic script's --lr/--momentum set the model's arguments; without a model (no --model, no
    --config) say that, instead of jsonargparse's complaint about `model.init_args.lr`."""
    if any(arg.partition("=")[0] in _MODEL_SOURCES for arg in rest):
        return
    flags = [flag for flag in ("--lr", "--momentum") if any(a.partition("=")[0] == flag for a in argv)]
    if flags and any(arg.startswith("--model.init_args.") for arg in dotted):
        verb = "sets" if len(flags) == 1 else "set"
        raise ConfigError(
            f"{' and '.join(flags)} {verb} the model's arguments, but no model was given: name its class "
            "with --model path/to/model.py:Net (or package.module.Net), or pass --config config.yaml "
            "holding a model: section (docs/cli.md, 'The classic script's flags')"
        )


#: init_args that must be positive whatever the class (the keys the classic flags write).
_POSITIVE = {
    "lr": "the learning rate must be a positive number, e.g. 0.01",
    "learning_rate": "the learning rate must be a positive number, e.g. 0.01",
    "batch_size": "use a positive number of samples per batch, e.g. 64",
    "test_batch_size": "use a positive number of samples per batch, e.g. 1000",
}


def _has_test(model: Any, data: Any) -> bool:
    from ember.module import Module

    defines_step = type(model).test_step is not Module.test_step
    return defines_step and (
        callable(getattr(data, "test_dataloader", None)) or callable(getattr(model, "test_dataloader", None))
    )


def _print_results(results: list[dict[str, float]]) -> None:
    for metrics in results:
        for name, value in metrics.items():
            label = name.replace("_acc", " accuracy").replace("_loss", " loss").replace("_", " ")
            print(f"{label}: {value:.4f}")
