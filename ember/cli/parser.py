"""The jsonargparse parser of one subcommand, in LightningCLI's layout, and its one-line errors.

    seed_everything: 1
    trainer: {max_epochs: 3, callbacks: [{class_path: ember.callbacks.EarlyStopping, init_args: {...}}]}
    model: {class_path: my_model.MyModel, init_args: {lr: 0.01}}   # or model: {lr: 0.01} for a fixed class
    data: {class_path: ..., init_args: {...}}
    optimizer: {class_path: torch.optim.SGD, init_args: {lr: 0.1}}  # optional, overrides configure_optimizers
    lr_scheduler: {class_path: torch.optim.lr_scheduler.StepLR, init_args: {step_size: 3}}
    ckpt_path: null

jsonargparse resolves every `class_path` and checks it against the expected base class while
parsing, before `instantiate` calls anything. A parser built with `light=True` (only for `--help`)
has the same options without importing torch: class-typed sections are described, not typed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from ember.cli.argument_parser import ParseError
from ember.cli.trainer_options import LIGHTNING_ONLY_TRAINER_OPTIONS, TrainerOption
from ember.errors import ConfigError, did_you_mean

SUBCOMMANDS = ("fit", "validate", "test", "predict")


def new_parser(
    prog: str, description: str | None = None, parser_class: type | None = None, **kwargs: Any
) -> Any:
    """A LightningArgumentParser (or `parser_class`, a subclass) whose mistakes raise ConfigErrors. Without a
    description it has Lightning's ("Lightning Trainer command line tool"). No prefix matching unless
    `allow_abbrev=True` (LightningCLI passes it: Lightning's
    parser takes `--trainer.max_epoch` for max_epochs)."""
    from ember.cli.argument_parser import lightning_argument_parser

    if description is not None:
        kwargs["description"] = description
    kwargs.setdefault("allow_abbrev", False)
    return (parser_class or lightning_argument_parser())(prog=prog, **kwargs)


def parse(parser: Any, argv: list[str], skip_validation: bool = False) -> Any:
    """`parser.parse_args(argv)`, its mistakes as one-line ConfigErrors. `skip_validation` for --print_config:
    as jsonargparse prints it, a config that still lacks required values prints (to be filled in)."""
    try:
        return parser.parse_args(argv, _skip_validation=skip_validation)
    except ParseError as e:
        raise ConfigError(one_line(str(e), parser, _class_paths(argv))) from None


def parse_object(parser: Any, config: dict[str, Any], base: Any = None) -> Any:
    """`parser.parse_object(config, base)` (values in `config`
    win over `base`'s), mistakes as one-line ConfigErrors."""
    try:
        return parser.parse_object(config, base)
    except ParseError as e:
        raise ConfigError(one_line(str(e), parser)) from None


def _class_paths(argv: list[str]) -> dict[str, str]:
    """The class_path each section ends up with (for naming a misspelt init argument's closest name)."""
    import json

    found: dict[str, str] = {}
    for i, arg in enumerate(argv):
        flag, eq, value = arg.partition("=")
        value = value if eq else (argv[i + 1] if i + 1 < len(argv) else "")
        if flag == "--config":
            try:
                config = json.loads(value)
            except ValueError:
                continue
            for key, section in config.items():
                if isinstance(section, dict) and isinstance(section.get("class_path"), str):
                    found[key] = section["class_path"]
        elif flag.endswith(".class_path") or flag in ("--model", "--data"):
            found[flag[2:].removesuffix(".class_path")] = value
    return found


def add_run_arguments(
    parser: Any,
    subcommand: str | None,
    *,
    options: Sequence[TrainerOption],
    light: bool,
    model_class: type | None,
    datamodule_class: type | None,
    subclass_mode_model: bool,
    subclass_mode_data: bool,
    seed_everything_default: bool | int,
    auto_configure_optimizers: bool = False,
) -> None:
    """The arguments LightningCLI gives every parser, in its order: config, seed_everything, trainer.*, model,
    data (optimizers and the subcommand's own arguments come after the user's, see below)."""
    from jsonargparse import ActionConfigFile

    parser.add_argument(
        "-c",
        "--config",
        action=ActionConfigFile,
        help="a YAML config (LightningCLI's layout); give it several times: later ones win",
    )
    parser.add_argument(
        "--seed_everything",
        type=bool | int,
        default=seed_everything_default,
        help="seed python, numpy and torch: an integer, true (the seed in PL_GLOBAL_SEED, or 0, "
        "as Lightning 2.6) or false (no seeding)",
    )
    trainer = parser.add_argument_group("Trainer options (ember.Trainer's arguments)")
    for option in options:
        trainer.add_argument(f"--trainer.{option.name}", type=option.annotation, default=option.default)
    _add_class_section(
        parser,
        "model",
        model_class,
        subclass_mode_model or model_class is None,
        light,
        required=True,
        base="ember.Module",
    )
    # as Lightning: without a DataModule class the section is optional (the Module may have its own loaders)
    _add_class_section(
        parser,
        "data",
        datamodule_class,
        subclass_mode_data or datamodule_class is None,
        light,
        required=False,
        base="ember.DataModule",
    )
    if light and auto_configure_optimizers:
        add_optimizer_arguments(parser, light=True)
    if light and subcommand:
        add_subcommand_arguments(parser, subcommand)


def add_optimizer_arguments(parser: Any, light: bool = False) -> None:
    """`optimizer` and `lr_scheduler` (any subclass), unless `add_arguments_to_parser` added its own."""
    described = {
        "optimizer": "a torch.optim.Optimizer (class_path + init_args, without params); it replaces "
        "the model's configure_optimizers",
        "lr_scheduler": "a torch.optim.lr_scheduler class (class_path + init_args, without optimizer)",
    }
    if light:
        for key, text in described.items():
            parser.add_argument(
                f"--{key}", help=text, metavar="CONFIG | CLASS_PATH_OR_NAME | .INIT_ARG_NAME VALUE"
            )
        return
    if not parser._optimizers:
        parser.add_optimizer_args()
    if not parser._lr_schedulers:
        parser.add_lr_scheduler_args()


def add_subcommand_arguments(parser: Any, subcommand: str) -> None:
    """The Trainer method's own arguments, in its order (Lightning adds them from the method's signature)."""
    if subcommand == "predict":
        parser.add_argument(
            "--return_predictions",
            type=bool | None,
            default=None,
            help="keep the predictions and return them (null: yes, unless on many processes)",
        )
    parser.add_argument(
        "--ckpt_path",
        type=str | None,
        default=None,
        help="checkpoint to resume from (fit) or to evaluate: a file, 'last' or 'best'",
    )
    if subcommand in ("validate", "test"):
        parser.add_argument("--verbose", type=bool, default=True, help="print the metrics")
    parser.add_argument(
        "--weights_only",
        type=bool | None,
        default=None,
        help="ember always loads checkpoints with weights_only=True; null or true",
    )


def _add_class_section(
    parser: Any, key: str, cls: type | None, subclass_mode: bool, light: bool, required: bool, base: str
) -> None:
    if light:
        if subclass_mode:
            what = f"an {base} subclass: class_path + init_args"
        else:
            assert cls is not None  # a fixed class section always names its class
            what = f"{cls.__name__}'s arguments"
        parser.add_argument(
            f"--{key}",
            help=f"{what} (--{key}.help CLASS lists a class's arguments)",
            metavar="CONFIG | CLASS_PATH_OR_NAME | .INIT_ARG_NAME VALUE",
        )
        return
    if cls is None:
        from ember.datamodule import DataModule
        from ember.module import Module

        cls = Module if key == "model" else DataModule
    parser.add_lightning_class_args(cls, key, subclass_mode=subclass_mode, required=required)


def add_ember_arguments(parser: Any, subcommand: str) -> None:
    """ember's own keys, beside LightningCLI's (a Lightning config never has them)."""
    parser.add_argument(
        "--checkpoint",
        type=dict[str, bool | int | float | str | None] | None,
        default=None,
        help="ModelCheckpoint arguments (save_last on), e.g. {every_n_train_steps: 200}",
    )
    if subcommand == "fit":
        parser.add_argument(
            "--test_after_fit",
            type=bool,
            default=False,
            help="after fit, run test when the model has test_step and the data a test set",
        )


# ---- one-line errors ---------------------------------------------------------------------------------
def one_line(message: str, parser: Any = None, class_paths: dict[str, str] | None = None) -> str:
    """jsonargparse's (often nested, multi-line) message
    as the one line that names the problem and the fix."""
    text = re.sub(r'^(Parser key "config":\s*)+', "", str(message).strip())
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if match := re.search(r"(?i)Unrecognized arguments: (\S+)", text):
        return _unknown_option(match.group(1).split("=")[0], parser)
    if match := re.search(r"Key \"([\w.]+)\" is not expected", text) or re.search(
        r"No action for key \"([\w.]+)\"", text
    ):
        return _unknown_key(match.group(1), parser)
    keys = [k for k in re.findall(r'Parser key "([\w.]+)"', text) if k != "config"]
    keys += re.findall(r"NestedArg\(key='([\w.]+)'", text)
    outer = keys[0] if keys else "?"
    if found := re.search(r"does not correspond to a subclass of (\w+)", text):
        base = found.group(1)
        return (
            f"{outer}: {_given_value(text)} is not {_article(base)} "
            f"{_base_name(base)} subclass; point it at one"
        )
    if (match := re.search(r"Option '([\w.]+)' is not accepted", text)) and not keys:
        return _unknown_key(match.group(1), parser)
    if match := re.search(r"Option '(\w+)' is not accepted", text):
        given = re.search(r"Problem with given class_path '([\w.:]+)'", text)
        class_path = given.group(1) if given else (class_paths or {}).get(outer, "")
        return _unknown_init_arg(outer, class_path, match.group(1))
    if match := re.search(r"Expected a (.+?)\. Got value: (.*)", text):
        inner = keys[-1] if keys else "?"
        key = f"{outer}.init_args.{inner}" if inner != outer and outer in ("model", "data") else inner
        wanted = _type_name(match.group(1))
        return f"{key}={match.group(2).strip()!r}: expected {_article(wanted)} {wanted}"
    if (subtypes := re.search(r"Subtypes: \[(.*)\]", text)) and (
        given := re.search(r"Given value: (.+)", text)
    ):
        wanted = " or ".join(
            _type_name(t.strip()).replace("NoneType", "null") for t in subtypes.group(1).split(",")
        )
        return f"{outer}={given.group(1).strip()!r}: expected {wanted}"
    if "Expected a path but" in text or "Import path" in text:
        return f"{outer}: cannot import {_given_value(text)}; write package.module.Class or file.py:Class"
    deepest = [
        line
        for line in lines
        if not line.startswith(("Subtypes:", "Given value", "Errors:", "- Expected a <class 'NoneType'>"))
    ]
    return "; ".join(deepest[-2:]) if deepest else text


def _unknown_option(option: str, parser: Any) -> str:
    name = option.lstrip("-")
    if name.startswith("trainer.") and name[8:] in LIGHTNING_ONLY_TRAINER_OPTIONS:
        return f"{option}: ember's Trainer has no {name[8:]} (a Lightning option); remove it"
    known = [o for o in _option_strings(parser) if o.startswith("--")]
    return f"unknown option {option}; " + did_you_mean(
        option, known, "run with --help for the options"
    ).replace("did you mean '", "did you mean ").replace("'?", "?")


def _unknown_key(key: str, parser: Any) -> str:
    if key.startswith("trainer.") and key[8:] in LIGHTNING_ONLY_TRAINER_OPTIONS:
        return f"{key}: ember's Trainer has no {key[8:]} (a Lightning option); remove it"
    names = {o[2:] for o in _option_strings(parser) if o.startswith("--") and not o.endswith(("+", ".help"))}
    if key.split(".")[0] not in {n.split(".")[0] for n in names}:
        key = key.split(".")[0]  # a misspelt section: name the section, not the key inside it
    section = key.rpartition(".")[0]
    known = sorted(
        n
        for n in names - {"help", "config", "print_config", "print_shtab"}
        if n.rpartition(".")[0] == section
    ) + (["trainer"] if not section else [])
    return f"unknown key {key!r} in the config; " + did_you_mean(
        key, known, f"known keys: {', '.join(known)}"
    )


def _unknown_init_arg(section: str, class_path: str, name: str) -> str:
    known: list[str] = []
    try:
        import inspect

        from ember.class_path import imported_class

        # looked up, never imported: the name came from an error's text (None: the except below names it)
        cls: Any = imported_class(class_path)
        known = [p for p in inspect.signature(cls.__init__).parameters if p not in ("self", "args", "kwargs")]
        shown = cls.__name__
    except Exception:  # the class imported a moment ago; if not, the message still names the argument
        shown = class_path
    hint = did_you_mean(name, known, f"its arguments: {', '.join(known)}" if known else "check the spelling")
    return f"{section}.init_args.{name}: {shown} has no argument {name!r}; {hint}"


def _option_strings(parser: Any) -> Iterable[str]:
    if parser is None:
        return []
    return [o for action in parser._actions for o in action.option_strings]


def _given_value(text: str) -> str:
    from ember.cli.config import printable

    match = (
        re.search(r"'class_path': '([^']+)'", text)
        or re.search(r"Given value: (.+)", text)
        or re.search(r"Expected a path but (\S+)", text)
    )
    return printable(match.group(1).strip()) if match else "the class"


def _type_name(text: str) -> str:
    return re.sub(r"<class '(?:builtins\.)?([\w.]+)'>", r"\1", text)


_BASE_NAMES = {
    "Module": "ember.Module",
    "DataModule": "ember.DataModule",
    "Callback": "ember.Callback",
    "Logger": "ember.loggers.Logger",
    "Optimizer": "torch.optim.Optimizer",
}


def _base_name(base: str) -> str:
    return _BASE_NAMES.get(base, base)


def _article(word: str) -> str:
    return "an" if _base_name(word)[0].lower() in "aeiou" else "a"
