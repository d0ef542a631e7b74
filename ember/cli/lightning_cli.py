"""`ember.cli.LightningCLI`: Lightning's LightningCLI on ember, so a script ports by changing its import.

    from ember.cli import LightningCLI          # was: from lightning.pytorch.cli import LightningCLI
    LightningCLI(MyModel, MyDataModule)         # python train.py fit --config cfg.yaml --trainer.max_epochs 2

Lightning's constructor arguments (parser_class: ember.cli.LightningArgumentParser or a subclass;
SaveConfigCallback(multifile=True) refused by name), config layout, `--print_config`, repeated `--config`,
dotted overrides, prefix matching, `PL_*` environment variables, class_path checked against its base
class while parsing (before anything is built), `cli.model`, `cli.datamodule`, `cli.trainer`,
`cli.config`, `cli.config_init`, the hooks `add_arguments_to_parser`, `before_instantiate_classes`,
`instantiate_classes`, `after_instantiate_classes`, `before_<subcommand>`, `after_<subcommand>`, a
CLI method named like the subcommand, and the static `configure_optimizers`. Compared with Lightning
2.6.6 scenario by scenario in tests/cli/test_lightning_cli_parity.py; the stated differences are in
docs/cli.md.
"""

from __future__ import annotations

import functools
import json
import sys
import types
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ember.class_path import check_recorded, import_class, no_new_imports
from ember.cli.config import load_config_file, resolve_class_path
from ember.cli.dump import dump_config
from ember.cli.parser import (
    SUBCOMMANDS,
    add_optimizer_arguments,
    add_run_arguments,
    add_subcommand_arguments,
    new_parser,
    parse,
    parse_object,
)
from ember.cli.save_config import SaveConfigCallback
from ember.cli.trainer_options import trainer_options
from ember.errors import ConfigError, did_you_mean
from ember.trainer import Trainer

#: LightningCLI arguments ember does not take, and why (refused by name, never ignored).
_REFUSED: dict[str, str] = {}


class LightningCLI:
    """Parse the command line (or `args`), build model, data and Trainer, and run the subcommand.

    Example:
        >>> args = ["--trainer.max_epochs", "2"]
        >>> cli = LightningCLI(MyModel, MyData, run=False, args=args)  # doctest: +SKIP
        >>> cli.trainer.fit(cli.model, datamodule=cli.datamodule)  # doctest: +SKIP
    """

    #: argparse's prefix matching, on as in Lightning (`--trainer.max_epoch 3` sets max_epochs); `ember fit`
    #: turns it off so that a misspelt option is answered with the closest name instead
    allow_abbrev = True

    def __init__(
        self,
        model_class: type | None = None,
        datamodule_class: type | None = None,
        save_config_callback: type | None = SaveConfigCallback,
        save_config_kwargs: dict | None = None,
        trainer_class: type = Trainer,
        trainer_defaults: dict[str, Any] | None = None,
        seed_everything_default: bool | int = True,
        parser_kwargs: dict[str, Any] | None = None,
        subclass_mode_model: bool = False,
        subclass_mode_data: bool = False,
        args: Sequence[str] | dict[str, Any] | None = None,
        run: bool = True,
        auto_configure_optimizers: bool = True,
        parser_class: type | None = None,
        load_from_checkpoint_support: bool = True,
        **unsupported: Any,
    ) -> None:
        for name in unsupported:
            reason = _REFUSED.get(name) or did_you_mean(
                name, _ARGUMENTS, f"its arguments: {', '.join(_ARGUMENTS)}"
            )
            raise ConfigError(f"LightningCLI has no argument {name!r} in ember; {reason}")
        if load_from_checkpoint_support is not False and load_from_checkpoint_support is not True:
            raise ConfigError(
                f"load_from_checkpoint_support={load_from_checkpoint_support!r}: pass True or False"
            )
        self.parser_class = _checked_parser_class(parser_class)
        if not (isinstance(trainer_class, type) and issubclass(trainer_class, Trainer)):
            raise ConfigError(f"trainer_class={trainer_class!r}: pass ember.Trainer or a subclass of it")
        self.model_class, self.datamodule_class = model_class, datamodule_class
        self.subclass_mode_model, self.subclass_mode_data = subclass_mode_model, subclass_mode_data
        self.save_config_callback, self.save_config_kwargs = (
            save_config_callback,
            dict(save_config_kwargs or {}),
        )
        self.trainer_class, self.trainer_defaults = trainer_class, dict(trainer_defaults or {})
        self.seed_everything_default, self.parser_kwargs = seed_everything_default, dict(parser_kwargs or {})
        self.auto_configure_optimizers = auto_configure_optimizers
        self.options = trainer_options(trainer_class)

        self.subcommand, argv, given = self._split_subcommand(args, run)
        self.parser = self._build_parser(self.subcommand)
        self.config_of_subcommand = self._parse(argv, given)
        self._read_checkpoint_hyperparameters()
        self.config = (
            _namespace(subcommand=self.subcommand, **{self.subcommand: self.config_of_subcommand})
            if self.subcommand
            else self.config_of_subcommand
        )
        self._set_seed(self.config_of_subcommand)
        self.before_instantiate_classes()
        self.instantiate_classes()
        self.after_instantiate_classes()
        if self.subcommand:
            self._run_subcommand(self.subcommand)

    # ---- hooks (LightningCLI's) -------------------------------------------------------------------
    def add_arguments_to_parser(self, parser: Any) -> None:
        """Override to add arguments (`parser.link_arguments`, `parser.add_argument`, ...)."""

    def before_instantiate_classes(self) -> None:
        """Called after parsing, before model, data and Trainer are built."""

    def after_instantiate_classes(self) -> None:
        """Called after model, data and Trainer are built, before the subcommand runs."""

    # ---- parsing ----------------------------------------------------------------------------------
    def _split_subcommand(self, args: Any, run: bool) -> tuple[str | None, list[str], dict | None]:
        if hasattr(args, "as_dict"):  # a jsonargparse Namespace, as Lightning takes
            args = args.as_dict()
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
        argv = self._take_main_configs(argv)
        if not argv or argv[0] in ("-h", "--help"):
            self._print_usage(argv)
        if argv[0] not in SUBCOMMANDS:
            hint = did_you_mean(argv[0], SUBCOMMANDS, f"use one of {', '.join(SUBCOMMANDS)}")
            self.refuse(ConfigError(f"unknown command {argv[0]!r}; {hint}"))
        return argv[0], argv[1:], None

    def _take_main_configs(self, argv: list[str]) -> list[str]:
        """`--config FILE` before the subcommand (`main.py --config config.yaml fit`): the file holds each
        subcommand's values under its name (fit: ..., test:
        ...); read with the main parser's default configs."""
        self._main_config_files: list[str] = []
        while argv and argv[0].partition("=")[0] in ("-c", "--config"):
            flag, eq, value = argv[0].partition("=")
            if not eq and len(argv) < 2:
                self.refuse(ConfigError(f"{flag} needs a file: {flag} path/to/config.yaml"))
            self._main_config_files.append(value if eq else argv[1])
            argv = argv[1:] if eq else argv[2:]
        return argv

    def _print_usage(self, argv: list[str]) -> None:
        """The top-level help (`--help`: stdout, exit 0) or,
        with no subcommand, Lightning's error (exit 2)."""
        prog = self._prog(None)
        text = (
            f"usage: {prog} [-h] [-c CONFIG] {{{','.join(SUBCOMMANDS)}}} ...\n\n"
            f"{self.parser_kwargs.get('description', 'Lightning Trainer command line tool')}\n\n"
            "subcommands:\n"
            + "".join(f"  {name:<10} {what}\n" for name, what in _SUBCOMMAND_HELP.items())
            + f"\nrun `{prog} fit --help` for a subcommand's options"
        )
        if argv:
            print(text)
            raise SystemExit(0)
        print(f"{text}\n{prog}: error: expected a subcommand: {', '.join(SUBCOMMANDS)}", file=sys.stderr)
        raise SystemExit(2)

    def _prog(self, subcommand: str | None) -> str:
        base = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "cli"
        return f"{base} {subcommand}" if subcommand else base

    def _build_parser(self, subcommand: str | None) -> Any:
        from ember.cli.argument_parser import name_callbacks_by_their_package

        name_callbacks_by_their_package()
        main = {k: v for k, v in self.parser_kwargs.items() if k not in SUBCOMMANDS}
        kwargs = dict(self.parser_kwargs.get(subcommand, main)) if subcommand else main
        if subcommand:
            # environment variables as Lightning's subcommands read them: PL_FIT__TRAINER__MAX_EPOCHS, and
            # only when the main parser's default_env is on (a
            # subcommand's own default_env changes nothing there)
            kwargs["env_prefix"] = f"{main.get('env_prefix', 'PL')}_{subcommand.upper()}_"
            kwargs["default_env"] = main.get("default_env", False)
            if subcommand not in self.parser_kwargs and "default_config_files" in kwargs:
                # the main parser's default configs hold each subcommand's values under its name (fit: ...)
                self._main_default_config_files = list(kwargs.pop("default_config_files") or [])
        kwargs.setdefault("allow_abbrev", self.allow_abbrev)
        parser = new_parser(
            kwargs.pop("prog", self._prog(subcommand)), parser_class=self.parser_class, **kwargs
        )
        add_run_arguments(
            parser,
            subcommand,
            options=self.options,
            light=False,
            model_class=self.model_class,
            datamodule_class=self.datamodule_class,
            subclass_mode_model=self.subclass_mode_model,
            subclass_mode_data=self.subclass_mode_data,
            seed_everything_default=self.seed_everything_default,
        )
        defaults = {f"trainer.{k}": v for k, v in self.trainer_defaults.items() if k != "callbacks"}
        if defaults:
            parser.set_defaults(defaults)
        self.add_arguments_to_parser(parser)
        if self.auto_configure_optimizers:
            add_optimizer_arguments(parser)
        self.link_optimizers_and_lr_schedulers(parser)
        if subcommand:
            add_subcommand_arguments(parser, subcommand)
        return parser

    @staticmethod
    def link_optimizers_and_lr_schedulers(parser: Any) -> None:
        """Optimizer/scheduler groups added with `link_to=KEY` are linked into that key (Lightning's)."""
        for key, (classes, link_to) in {**parser._optimizers, **parser._lr_schedulers}.items():
            if link_to == "AUTOMATIC":
                continue
            if isinstance(classes, tuple):
                parser.link_arguments(key, link_to)
            else:
                parser.link_arguments(key, link_to, compute_fn=_with_class_path(classes))

    def _parse(self, argv: list[str], given: dict | None) -> Any:
        print_config = None
        try:
            if given is not None:
                return parse_object(self.parser, given)  # a dict from the caller's own code
            argv, print_config = _take_print_config(self._main_defaults() + self.rewrite_arguments(argv))
            config = self._parse_argv(argv, printing=print_config is not None)
        except ConfigError as e:
            self.refuse(e)
        if print_config is not None:
            print(
                dump_config(
                    self.parser,
                    config,
                    skip_none="skip_null" in print_config,
                    skip_default="skip_default" in print_config,
                ),
                end="",
            )
            raise SystemExit(0)
        return config

    def _main_defaults(self) -> list[str]:
        """The main parser's configs, for the subcommand: `parser_kwargs={"default_config_files": [...]}`
        (when the subcommand has none of its own) then `--config FILE` given before the subcommand. Each
        file's `<subcommand>:` section is read first, so every argument after the subcommand overrides it."""
        import glob

        files = [
            file
            for pattern in getattr(self, "_main_default_config_files", [])
            for file in sorted(glob.glob(str(pattern)))
        ] + getattr(self, "_main_config_files", [])
        arguments: list[str] = []
        for file in files:
            section = self._subcommand_section(file)
            if section:
                arguments += ["--config", json.dumps(section)]
        return arguments

    def _subcommand_section(self, file: str) -> dict[str, Any] | None:
        from ember.cli.config import prepare_config
        from ember.config_file import read_yaml

        data = read_yaml(Path(file)) or {}
        if not isinstance(data, dict) or set(data) - set(SUBCOMMANDS):
            raise ConfigError(
                f"{file}: a config for the main parser (before the subcommand, or its "
                f"default_config_files) holds subcommand sections ({', '.join(SUBCOMMANDS)}): write its "
                f"values under {self.subcommand}:, or give it after the subcommand"
            )
        section = data.get(self.subcommand)
        return (
            prepare_config(section, str(Path(file).resolve().parent), self.options, file) if section else None
        )

    def _read_checkpoint_hyperparameters(self) -> None:
        """With `--ckpt_path FILE`, the model's arguments saved in the checkpoint override the config's
        (Lightning's rule: `test --ckpt_path` rebuilds the model
        that was trained, whatever the defaults now say)."""
        ckpt_path = self.config_of_subcommand.get("ckpt_path") if self.subcommand else None
        if not ckpt_path or not Path(ckpt_path).is_file():
            return
        from ember.checkpoint import load_checkpoint

        hparams = dict(load_checkpoint(ckpt_path).get("hyper_parameters") or {})
        hparams.pop("_instantiator", None)
        if not hparams:
            return
        model = self.config_of_subcommand.get("model")
        source = f"{ckpt_path} (its hyper_parameters)"
        try:  # a class the checkpoint names is used only if the user's code or command line imported it
            check_recorded(hparams, source)
        except ConfigError as e:
            self.refuse(e)
        if "_class_path" in hparams:
            hparams = {"class_path": hparams.pop("_class_path"), "dict_kwargs": hparams}
        elif isinstance(getattr(model, "class_path", None), str):  # subclass mode: the class the config names
            hparams = {
                "class_path": model.class_path,
                "init_args": _accepted(hparams, _import_class(model.class_path)),
            }
        elif self.model_class is not None:
            hparams = _accepted(hparams, self.model_class)
        with no_new_imports(source) as guard:  # and nothing else it says (a callable's path) imports a module
            try:
                parsed = parse_object(self.parser, {"model": hparams}, self.config_of_subcommand)
            except ConfigError as e:
                parsed = e
        try:
            guard.check()
        except ConfigError as e:
            self.refuse(e)
        if isinstance(parsed, ConfigError):
            self.refuse(
                ConfigError(f"the hyperparameters saved in {ckpt_path} do not fit the model: {parsed}")
            )
        self.config_of_subcommand = parsed

    def _parse_argv(self, argv: list[str], printing: bool) -> Any:
        try:
            return parse(self.parser, argv)
        except ConfigError as e:
            if not (printing and "arguments are required" in str(e)):
                raise
        # as jsonargparse's --print_config: a config still missing required values prints (to be filled in)
        return parse(self.parser, argv, skip_validation=True)

    def refuse(self, error: ConfigError) -> Any:
        """A command-line mistake, as Lightning's parser answers it: the message on stderr, exit status 2 (a
        `SystemExit` that is also the ConfigError, so both
        `except SystemExit` and `except ConfigError` see it)."""
        print(f"{self._prog(getattr(self, 'subcommand', None))}: error: {error}", file=sys.stderr)
        raise CommandLineError(str(error)) from None

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
            elif (
                flag == "--trainer"
            ):  # the whole group from a file or a YAML/JSON string (`--trainer trainer.yaml`)
                group = value if eq else next(items, None)
                if group is None:
                    raise ConfigError(
                        "--trainer needs a config: --trainer trainer.yaml or --trainer '{max_epochs: 2}'"
                    )
                out += ["--config", json.dumps(self._trainer_group(group))]
            elif flag in ("--model", "--data", "--model.class_path", "--data.class_path"):
                value = value if eq else next(items, "")
                section = flag[2:].split(".")[0]
                resolved = (
                    resolve_class_path(value, None, section)
                    if value.endswith(".py") or ".py:" in value
                    else value
                )
                out += [f"{flag}={resolved}"]
            else:
                out.append(arg)
        return out

    def _trainer_group(self, value: str) -> dict[str, Any]:
        """`--trainer FILE_OR_YAML` as a config holding only
        the trainer section (Lightning's group config)."""
        import yaml

        from ember.cli.config import prepare_config
        from ember.config_file import read_yaml

        path = Path(value)
        if path.is_file():
            data, base_dir = read_yaml(path, "--trainer"), str(path.resolve().parent)
        else:
            try:
                data, base_dir = yaml.safe_load(value), str(Path.cwd())
            except yaml.YAMLError:
                data = None
        if not isinstance(data, dict):
            raise ConfigError(
                f"--trainer {value!r}: give a YAML file or a mapping of Trainer options, "
                "e.g. --trainer '{max_epochs: 2}'"
            )
        return prepare_config({"trainer": data}, base_dir, self.options, value)

    def _set_seed(self, config: Any) -> None:
        from ember.runtime.seed import seed_everything

        seed = config.get("seed_everything")
        if seed is False or seed is None:
            return
        # true: Lightning 2.6 seeds from PL_GLOBAL_SEED, else 0; the seed used is written into the config
        config["seed_everything"] = seed_everything(None if seed is True else seed, workers=True)

    # ---- building ---------------------------------------------------------------------------------
    def instantiate_classes(self) -> None:
        """`config_init`, `datamodule`, `model` and `trainer`, built from the parsed config."""
        instantiate = (
            getattr(self.parser, "instantiate", None) or self.parser.instantiate_classes
        )  # 4.49 renamed it
        self.config_init = instantiate(self.config_of_subcommand)
        self.datamodule = self.config_init.get("data")
        self.model = self.config_init["model"]
        self._configure_optimizers(self.model, self.config_init)
        self.trainer = self.instantiate_trainer()

    def instantiate_trainer(self, **extra: Any) -> Any:
        """The Trainer from the config's `trainer` section; `extra` overrides it (its callbacks are added)."""
        options = dict(self.config_init["trainer"])
        callbacks = options.get("callbacks") or []
        callbacks = list(callbacks) if isinstance(callbacks, list) else [callbacks]
        # callbacks configured in their own section (parser.add_lightning_class_args(Callback, key))
        callbacks += [self.config_init.get(key) for key in self.parser.callback_keys]
        defaults = self.trainer_defaults.get("callbacks") or []
        callbacks += list(defaults) if isinstance(defaults, list) else [defaults]
        callbacks += extra.pop("callbacks", [])
        if self.save_config_callback is not None and not options.get("fast_dev_run"):
            callbacks.append(
                self.save_config_callback(self.parser, self.config_of_subcommand, **self.save_config_kwargs)
            )
        options["callbacks"] = callbacks
        return self.trainer_class(**{**options, **extra})

    def _configure_optimizers(self, model: Any, config: Any) -> None:
        """The config's optimizer (and lr_scheduler), built now with the model's parameters, become the
        model's configure_optimizers (returned through
        `LightningCLI.configure_optimizers`), as Lightning does."""
        if not self.auto_configure_optimizers:
            return
        optimizers = _automatic(self.parser._optimizers)
        schedulers = _automatic(self.parser._lr_schedulers)
        if len(optimizers) > 1 or len(schedulers) > 1:
            raise ConfigError(
                f"{type(self).__name__} builds configure_optimizers from at most one optimizer and one "
                f"lr_scheduler group with link_to='AUTOMATIC', found {optimizers + schedulers}; link "
                "the groups to the model and write configure_optimizers"
            )
        if not optimizers:
            return
        optimizer = _with_class_path(self.parser._optimizers[optimizers[0]][0])(config.get(optimizers[0]))
        scheduler = None
        if schedulers:
            scheduler = _with_class_path(self.parser._lr_schedulers[schedulers[0]][0])(
                config.get(schedulers[0])
            )
        if not optimizer:
            if scheduler:  # Lightning would drop it without a word
                raise ConfigError(
                    f"{schedulers[0]} is set but {optimizers[0]} is not; add --{optimizers[0]} "
                    "(e.g. --optimizer Adam) or remove the scheduler"
                )
            return
        from ember.module import Module

        if type(model).configure_optimizers is not Module.configure_optimizers:
            warnings.warn(
                f"`{type(model).__name__}.configure_optimizers` will be overridden by "
                f"`{type(self).__name__}.configure_optimizers`: {type(model).__name__}.configure_optimizers "
                f"is replaced by the config's optimizer{' and lr_scheduler' if scheduler else ''}",
                stacklevel=2,
            )
        built_optimizer = instantiate_class(model.parameters(), optimizer)
        built_scheduler = instantiate_class(built_optimizer, scheduler) if scheduler else None
        method = functools.partial(
            self.configure_optimizers, optimizer=built_optimizer, lr_scheduler=built_scheduler
        )
        functools.update_wrapper(method, self.configure_optimizers)
        model.configure_optimizers = types.MethodType(method, model)

    @staticmethod
    def configure_optimizers(lightning_module: Any, optimizer: Any, lr_scheduler: Any = None) -> Any:
        """What the model's configure_optimizers returns when
        the config names an optimizer; override to change it.

        Example:
            >>> import torch
        >>> opt = torch.optim.SGD(torch.nn.Linear(1, 1).parameters(), lr=0.1)
            >>> LightningCLI.configure_optimizers(None, opt) is opt
            True
        """
        if lr_scheduler is None:
            return optimizer
        from ember.cli.reduce_lr_on_plateau import ReduceLROnPlateau

        if isinstance(lr_scheduler, ReduceLROnPlateau):
            return {
                "optimizer": optimizer,
                "lr_scheduler": {"scheduler": lr_scheduler, "monitor": lr_scheduler.monitor},
            }
        if isinstance(lr_scheduler, _plateau()):
            raise ConfigError(
                "lr_scheduler torch.optim.lr_scheduler.ReduceLROnPlateau needs a monitored metric: "
                "use ember.cli.ReduceLROnPlateau with --lr_scheduler.monitor val_loss"
            )
        return [optimizer], [lr_scheduler]

    # ---- running ----------------------------------------------------------------------------------
    def _run_subcommand(self, subcommand: str) -> None:
        getattr(self, f"before_{subcommand}", lambda: None)()
        arguments = self.subcommand_arguments(subcommand)
        override = getattr(
            self, subcommand, None
        )  # a CLI method of the same name runs instead (Lightning's rule)
        if override is not None:
            override(**arguments)
        else:
            getattr(self.trainer, subcommand)(**trainer_arguments(arguments))
        getattr(self, f"after_{subcommand}", lambda: None)()

    def subcommand_arguments(self, subcommand: str) -> dict[str, Any]:
        """What the subcommand's method receives, as Lightning passes it: the config's values of the Trainer
        method's own arguments, the model, and the datamodule when there is one."""
        config = self.config_init
        if config.get("weights_only") is False:
            raise ConfigError("weights_only=false: ember loads checkpoints with weights_only=True only")
        arguments = {name: config.get(name) for name in _METHOD_ARGUMENTS[subcommand] if name in config}
        arguments["model"] = self.model
        if self.datamodule is not None:
            arguments["datamodule"] = self.datamodule
        return arguments


def trainer_arguments(arguments: dict[str, Any]) -> dict[str, Any]:
    """`subcommand_arguments` as ember's Trainer methods take them: no weights_only (always weights only
    here), return_predictions only when given."""
    arguments = {k: v for k, v in arguments.items() if k != "weights_only"}
    if arguments.get("return_predictions", True) is None:
        del arguments["return_predictions"]
    return arguments


#: Each Trainer method's own arguments that the subcommand's config holds (Lightning's order).
_METHOD_ARGUMENTS = {
    "fit": ("ckpt_path", "weights_only"),
    "validate": ("ckpt_path", "verbose", "weights_only"),
    "test": ("ckpt_path", "verbose", "weights_only"),
    "predict": ("return_predictions", "ckpt_path", "weights_only"),
}


#: The subcommands' one-line descriptions (the Trainer methods' first lines, as Lightning's help shows them).
_SUBCOMMAND_HELP = {
    "fit": "Runs the full optimization routine.",
    "validate": "Perform one evaluation epoch over the validation set.",
    "test": "Perform one evaluation epoch over the test set.",
    "predict": "Run inference on your data.",
}

_ARGUMENTS = (
    "model_class",
    "datamodule_class",
    "save_config_callback",
    "save_config_kwargs",
    "trainer_class",
    "trainer_defaults",
    "seed_everything_default",
    "parser_kwargs",
    "parser_class",
    "subclass_mode_model",
    "subclass_mode_data",
    "args",
    "run",
    "auto_configure_optimizers",
    "load_from_checkpoint_support",
)


def _checked_parser_class(parser_class: type | None) -> type:
    from ember.cli.argument_parser import lightning_argument_parser

    base = lightning_argument_parser()
    if parser_class is None:
        return base
    if not (isinstance(parser_class, type) and issubclass(parser_class, base)):
        raise ConfigError(
            f"parser_class={parser_class!r}: pass ember.cli.LightningArgumentParser or a subclass"
        )
    return parser_class


class CommandLineError(ConfigError, SystemExit):
    """A mistake on the command line or in a config: exit
    status 2 (Lightning's parser exits so), message kept."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.code = 2


def instantiate_class(args: Any, init: dict[str, Any]) -> Any:
    """`init["class_path"]` called with `args` (one value or
    a tuple) and `init["init_args"]` (Lightning's helper).

    Example:
        >>> import torch
        >>> from ember.cli import instantiate_class
        >>> params = torch.nn.Linear(2, 1).parameters()
        >>> init = {"class_path": "torch.optim.SGD", "init_args": {"lr": 0.5}}
        >>> instantiate_class(params, init).defaults["lr"]
        0.5
    """
    cls = _import_class(init["class_path"])
    args = args if isinstance(args, tuple) else (args,)
    return cls(*args, **dict(init.get("init_args") or {}))


def _import_class(class_path: str) -> Any:
    """The class a config or the command line names (the user's word: importing it is what they asked)."""
    return import_class(class_path, what="class_path")


def _accepted(hparams: dict[str, Any], cls: Any) -> dict[str, Any]:
    """The saved hyperparameters `cls.__init__` takes (ember
    saves a parent class's too; a **kwargs takes all)."""
    import inspect

    try:
        parameters = inspect.signature(cls.__init__).parameters
    except (TypeError, ValueError):
        return hparams
    if any(p.kind is p.VAR_KEYWORD for p in parameters.values()):
        return hparams
    return {k: v for k, v in hparams.items() if k in parameters}


def _with_class_path(classes: Any) -> Any:
    """For a group of one fixed class (no class_path in the
    config): its init_args with the class_path added."""

    def add_class_path(init_args: Any) -> Any:
        if isinstance(classes, tuple):
            return init_args
        if hasattr(init_args, "as_dict"):
            init_args = init_args.as_dict()
        return {"class_path": f"{classes.__module__}.{classes.__name__}", "init_args": dict(init_args or {})}

    return add_class_path


def _automatic(groups: dict[str, tuple[Any, str]]) -> list[str]:
    return [key for key, (_, link_to) in groups.items() if link_to == "AUTOMATIC"]


def _plateau() -> type:
    import torch

    return torch.optim.lr_scheduler.ReduceLROnPlateau


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
