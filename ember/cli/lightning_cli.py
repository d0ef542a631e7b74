"""`ember.cli.LightningCLI`: Lightning's LightningCLI on ember, so a script ports by changing its import.

    from ember.cli import LightningCLI          # was: from lightning.pytorch.cli import LightningCLI
    LightningCLI(MyModel, MyDataModule)         # python train.py fit --config cfg.yaml --trainer.max_epochs 2

Same constructor arguments where they mean something here (model_class, datamodule_class,
save_config_callback, save_config_kwargs, trainer_class, trainer_defaults, seed_everything_default,
parser_kwargs, subclass_mode_model, subclass_mode_data, args, run, auto_configure_optimizers); the
others are refused by name. Same config layout, `--print_config`, repeated `--config`, dotted
overrides, class_path checked against its base class while parsing (before anything is built),
`cli.model`, `cli.datamodule`, `cli.trainer`, `cli.config`, `cli.config_init`, and the hooks
`add_arguments_to_parser`, `before_instantiate_classes`, `before_<subcommand>`, `after_<subcommand>`.
"""

from __future__ import annotations

import json
import random
import sys
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ember.cli.config import load_config_file, resolve_class_path
from ember.cli.dump import dump_config
from ember.cli.parser import SUBCOMMANDS, add_run_arguments, new_parser, parse
from ember.cli.save_config import SaveConfigCallback
from ember.cli.trainer_options import trainer_options
from ember.errors import ConfigError, did_you_mean
from ember.trainer import Trainer

#: LightningCLI arguments ember does not take, and why (refused by name, never ignored).
_REFUSED = {
    "parser_class": "ember builds its jsonargparse parser itself; add arguments in add_arguments_to_parser",
    "load_from_checkpoint_support": "ember does not read a checkpoint's hyperparameters into the parser; "
                                    "give them in the config",
}


class LightningCLI:
    """Parse the command line (or `args`), build model, data and Trainer, and run the subcommand.

    Example:
        >>> cli = LightningCLI(MyModel, MyData, run=False, args=["--trainer.max_epochs", "2"])  # doctest: +SKIP
        >>> cli.trainer.fit(cli.model, datamodule=cli.datamodule)                                 # doctest: +SKIP
    """

    def __init__(self, model_class: type | None = None, datamodule_class: type | None = None,
                 save_config_callback: type | None = SaveConfigCallback, save_config_kwargs: dict | None = None,
                 trainer_class: type = Trainer, trainer_defaults: dict[str, Any] | None = None,
                 seed_everything_default: bool | int = True, parser_kwargs: dict[str, Any] | None = None,
                 subclass_mode_model: bool = False, subclass_mode_data: bool = False,
                 args: Sequence[str] | dict[str, Any] | None = None, run: bool = True,
                 auto_configure_optimizers: bool = True, **unsupported: Any) -> None:
        for name in unsupported:
            reason = _REFUSED.get(name) or did_you_mean(name, _ARGUMENTS, f"its arguments: {', '.join(_ARGUMENTS)}")
            raise ConfigError(f"LightningCLI has no argument {name!r} in ember; {reason}")
        if not (isinstance(trainer_class, type) and issubclass(trainer_class, Trainer)):
            raise ConfigError(f"trainer_class={trainer_class!r}: pass ember.Trainer or a subclass of it")
        self.model_class, self.datamodule_class = model_class, datamodule_class
        self.subclass_mode_model, self.subclass_mode_data = subclass_mode_model, subclass_mode_data
        self.save_config_callback, self.save_config_kwargs = save_config_callback, dict(save_config_kwargs or {})
        self.trainer_class, self.trainer_defaults = trainer_class, dict(trainer_defaults or {})
        self.seed_everything_default, self.parser_kwargs = seed_everything_default, dict(parser_kwargs or {})
        self.auto_configure_optimizers = auto_configure_optimizers
        self.options = trainer_options(trainer_class)

        self.subcommand, argv, given = self._split_subcommand(args, run)
        self.parser = self._build_parser(self.subcommand)
        self.config_of_subcommand = self._parse(argv, given)
        self.config = (_namespace(subcommand=self.subcommand, **{self.subcommand: self.config_of_subcommand})
                       if self.subcommand else self.config_of_subcommand)
        self.before_instantiate_classes()
        self.instantiate_classes()
        if self.subcommand:
            self._run_subcommand(self.subcommand)

    # ---- hooks (LightningCLI's) -------------------------------------------------------------------
    def add_arguments_to_parser(self, parser: Any) -> None:
        """Override to add arguments (`parser.link_arguments`, `parser.add_argument`, ...)."""

    def before_instantiate_classes(self) -> None:
        """Called after parsing, before model, data and Trainer are built."""

    # ---- parsing ----------------------------------------------------------------------------------
    def _split_subcommand(self, args: Any, run: bool) -> tuple[str | None, list[str], dict | None]:
        if isinstance(args, dict):
            if not run:
                return None, [], args
            keys = [k for k in args if k in SUBCOMMANDS]
            if len(keys) != 1:
                raise ConfigError(f"args as a dict needs exactly one of {', '.join(SUBCOMMANDS)} as a key")
            return keys[0], [], args[keys[0]]
        argv = list(sys.argv[1:] if args is None else args)
        if not run:
            return None, argv, None
        if not argv or argv[0] in ("-h", "--help"):
            self._print_usage(argv)
        if argv[0] not in SUBCOMMANDS:
            hint = did_you_mean(argv[0], SUBCOMMANDS, f"use one of {', '.join(SUBCOMMANDS)}")
            raise ConfigError(f"unknown command {argv[0]!r}; {hint}")
        return argv[0], argv[1:], None

    def _print_usage(self, argv: list[str]) -> None:
        print(f"usage: {self._prog(None)} {{{','.join(SUBCOMMANDS)}}} [--config CONFIG] [--print_config] ...\n"
              f"run `{self._prog(None)} fit --help` for a command's options")
        raise SystemExit(0 if argv else 2)

    def _prog(self, subcommand: str | None) -> str:
        base = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "cli"
        return f"{base} {subcommand}" if subcommand else base

    def _build_parser(self, subcommand: str | None, light: bool = False) -> Any:
        kwargs = self.parser_kwargs.get(subcommand, self.parser_kwargs) if subcommand else self.parser_kwargs
        kwargs = {k: v for k, v in kwargs.items() if k not in SUBCOMMANDS}
        parser = new_parser(kwargs.pop("prog", self._prog(subcommand)), **kwargs)
        add_run_arguments(parser, subcommand or "fit", options=self.options, light=light,
                          model_class=self.model_class, datamodule_class=self.datamodule_class,
                          subclass_mode_model=self.subclass_mode_model, subclass_mode_data=self.subclass_mode_data,
                          seed_everything_default=self.seed_everything_default,
                          auto_configure_optimizers=self.auto_configure_optimizers)
        defaults = {f"trainer.{k}": v for k, v in self.trainer_defaults.items() if k != "callbacks"}
        if defaults:
            parser.set_defaults(defaults)
        self.add_arguments_to_parser(parser)
        return parser

    def _parse(self, argv: list[str], given: dict | None) -> Any:
        if given is not None:
            return self.parser.parse_object(given)  # a dict from the caller's own code
        argv, print_config = _take_print_config(self.rewrite_arguments(argv))
        config = parse(self.parser, argv)
        if print_config is not None:
            print(dump_config(self.parser, config, skip_none="skip_null" in print_config,
                              skip_default="skip_default" in print_config), end="")
            raise SystemExit(0)
        self._set_seed(config)
        return config

    def rewrite_arguments(self, argv: list[str]) -> list[str]:
        """`--config FILE` read here (one-line errors, file.py:Class paths) and handed on as its contents."""
        out: list[str] = []
        items = iter(argv)
        for arg in items:
            flag, eq, value = arg.partition("=")
            if flag in ("-c", "--config"):
                path = value if eq else next(items, None)
                if path is None:
                    raise ConfigError("--config needs a file: --config path/to/config.yaml")
                out += ["--config", json.dumps(load_config_file(path, self.options))]
            elif flag in ("--model", "--data", "--model.class_path", "--data.class_path"):
                value = value if eq else next(items, "")
                section = flag[2:].split(".")[0]
                resolved = resolve_class_path(value, None, section) if value.endswith(".py") or ".py:" in value else value
                out += [f"{flag}={resolved}"]
            else:
                out.append(arg)
        return out

    def _set_seed(self, config: Any) -> None:
        from ember.runtime.seed import seed_everything

        seed = config.get("seed_everything")
        if seed is False or seed is None:
            return
        if seed is True:  # as Lightning: a random seed, written into the config so the saved one reproduces
            seed = random.randint(0, 2**32 - 1)
            config["seed_everything"] = seed
        seed_everything(seed, workers=True)

    # ---- building ---------------------------------------------------------------------------------
    def instantiate_classes(self) -> None:
        """`config_init`, `datamodule`, `model` and `trainer`, built from the parsed config."""
        instantiate = getattr(self.parser, "instantiate", None) or self.parser.instantiate_classes  # 4.49 renamed it
        self.config_init = instantiate(self.config_of_subcommand)
        self.datamodule = self.config_init.get("data")
        self.model = self.config_init["model"]
        self._configure_optimizers(self.model, self.config_init)
        self.trainer = self.instantiate_trainer()

    def instantiate_trainer(self, **extra: Any) -> Any:
        options = dict(self.config_init["trainer"])
        callbacks = options.get("callbacks") or []
        callbacks = list(callbacks) if isinstance(callbacks, list) else [callbacks]
        defaults = self.trainer_defaults.get("callbacks") or []
        callbacks += list(defaults) if isinstance(defaults, list) else [defaults]
        callbacks += extra.pop("callbacks", [])
        if self.save_config_callback is not None and not options.get("fast_dev_run"):
            callbacks.append(self.save_config_callback(self.parser, self.config_of_subcommand,
                                                       **self.save_config_kwargs))
        options["callbacks"] = callbacks
        return self.trainer_class(**options, **extra)

    def _configure_optimizers(self, model: Any, config: Any) -> None:
        optimizer, scheduler = config.get("optimizer"), config.get("lr_scheduler")
        if optimizer is None:
            if scheduler is not None:
                raise ConfigError("lr_scheduler is set but optimizer is not; add optimizer: {class_path: ...}")
            return
        from ember.module import Module

        if scheduler is not None and scheduler["class_path"].endswith(".ReduceLROnPlateau"):
            raise ConfigError("lr_scheduler ReduceLROnPlateau needs a monitored metric: return it from "
                              "configure_optimizers with 'monitor' instead of the config")
        if type(model).configure_optimizers is not Module.configure_optimizers:
            print(f"ember: {type(model).__name__}.configure_optimizers is replaced by the config's optimizer"
                  f"{' and lr_scheduler' if scheduler is not None else ''}", file=sys.stderr)
        model.configure_optimizers = types.MethodType(_optimizers_from_config(optimizer, scheduler), model)

    # ---- running ----------------------------------------------------------------------------------
    def _run_subcommand(self, subcommand: str) -> None:
        getattr(self, f"before_{subcommand}", lambda: None)()
        getattr(self.trainer, subcommand)(**self.subcommand_arguments(subcommand))
        getattr(self, f"after_{subcommand}", lambda: None)()

    def subcommand_arguments(self, subcommand: str) -> dict[str, Any]:
        config = self.config_init
        if config.get("weights_only") is False:
            raise ConfigError("weights_only=false: ember loads checkpoints with weights_only=True only")
        arguments: dict[str, Any] = {"model": self.model, "datamodule": self.datamodule,
                                     "ckpt_path": config.get("ckpt_path")}
        if subcommand in ("validate", "test"):
            arguments["verbose"] = config.get("verbose", True)
        if subcommand == "predict" and config.get("return_predictions") is not None:
            arguments["return_predictions"] = config.get("return_predictions")
        return arguments


_ARGUMENTS = ("model_class", "datamodule_class", "save_config_callback", "save_config_kwargs", "trainer_class",
              "trainer_defaults", "seed_everything_default", "parser_kwargs", "subclass_mode_model",
              "subclass_mode_data", "args", "run", "auto_configure_optimizers")


def _optimizers_from_config(optimizer: Any, scheduler: Any) -> Any:
    """configure_optimizers built from the config's class_path + init_args (as LightningCLI does)."""
    def configure_optimizers(module: Any) -> Any:
        opt = _build(optimizer, module.parameters())
        if scheduler is None:
            return opt
        sched = _build(scheduler, opt)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched}}

    return configure_optimizers


def _build(spec: Any, first: Any) -> Any:
    import importlib

    class_path = spec["class_path"]
    module, _, name = class_path.rpartition(".")
    cls = getattr(importlib.import_module(module), name)
    init_args = dict(spec.get("init_args") or {})
    return cls(first, **init_args)


def _take_print_config(argv: list[str]) -> tuple[list[str], str | None]:
    kept, flags = [], None
    for arg in argv:
        if arg == "--print_config" or arg.startswith("--print_config="):
            flags = arg.partition("=")[2]
        else:
            kept.append(arg)
    return kept, flags


def _namespace(**values: Any) -> Any:
    from jsonargparse import Namespace

    return Namespace(**values)
