"""`ember fit | validate | test` — run a Module from a YAML config, with the classic script's flags;
`ember predict` — run a checkpoint over a dataset on a pool of workers (see docs/inference.md).

    ember fit --config examples/fashion_mnist/config.yaml --epochs 3 --lr 0.01 --resume
    ember predict --ckpt last.ckpt --data test.parquet --output predictions/ --workers 2

A config names the model and data classes (`class_path` + `init_args`, as LightningCLI does)
and the Trainer options. Flags override it. Unknown flags and unknown config keys are one-line
errors that name the key and the keys that exist.
"""

from __future__ import annotations

import argparse
import difflib
import inspect
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from ember.errors import ConfigError, EmberError, did_you_mean

CONFIG_KEYS = ("model", "data", "trainer", "seed", "checkpoint", "test_after_fit")
COMMANDS = ("fit", "validate", "test")


class _Parser(argparse.ArgumentParser):
    """argparse that reports a mistake on one line and suggests the flag that was meant."""

    def error(self, message: str) -> NoReturn:
        if message.startswith("unrecognized arguments:"):
            wrong = message.split(":", 1)[1].split()[0]
            flags = [o for a in self._actions for o in a.option_strings if o.startswith("--")]
            close = difflib.get_close_matches(wrong.split("=")[0], flags, n=1)
            hint = f"; did you mean {close[0]}?" if close else f"; run `{self.prog} --help` for the options"
            message = f"unknown option {wrong}{hint}"
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="ember", description="Train, evaluate and test ember Modules from a config file.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name in COMMANDS:
        sub = commands.add_parser(name, help=f"{name} a model described by a YAML config")
        sub.add_argument("--config", "-c", required=True, help="YAML file with model/data/trainer sections")
        sub.add_argument("--batch-size", type=_positive_int, metavar="N",
                         help="input batch size for training (data.batch_size)")
        sub.add_argument("--epochs", type=_positive_int, metavar="N", help="number of epochs to train (trainer.max_epochs)")
        sub.add_argument("--lr", type=_positive_float, metavar="LR", help="learning rate (model.lr)")
        sub.add_argument("--momentum", type=_non_negative_float, metavar="M", help="SGD momentum (model.momentum)")
        sub.add_argument("--accelerator", choices=["auto", "cpu", "cuda", "gpu", "mps"], help="device type")
        sub.add_argument("--no-cuda", action="store_true", help="train on the CPU even when a GPU is present")
        sub.add_argument("--seed", type=int, metavar="S", help="random seed")
        sub.add_argument("--save-interval", type=_positive_int, metavar="N", help="checkpoint every N optimizer steps")
        sub.add_argument("--resume", action="store_true", help="resume from the last checkpoint of this run folder")
        sub.add_argument("--root-dir", metavar="DIR", help="folder for logs and checkpoints (trainer.default_root_dir)")
        sub.add_argument("--ckpt", metavar="PATH", help="checkpoint to evaluate (validate/test), or 'last'/'best'")
        sub.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                         help="override any config value, e.g. --set trainer.max_steps=100 (repeatable)")
    _add_predict_parser(commands)
    return parser


def _add_predict_parser(commands: Any) -> None:
    sub = commands.add_parser("predict", help="run a checkpoint over a dataset on a pool of workers, writing parquet")
    sub.add_argument("--ckpt", required=True, metavar="PATH", help="checkpoint to load (safely: weights only)")
    sub.add_argument("--data", required=True, metavar="PATH", help="parquet file, folder of parquet files or of images")
    sub.add_argument("--output", "-o", required=True, metavar="DIR",
                     help="folder for part-*.parquet and _manifest.json; re-running resumes")
    sub.add_argument("--model", metavar="FILE.py:CLASS", help="the Module class (file.py:Class or package.module.Class)")
    sub.add_argument("--config", "-c", metavar="YAML", help="training config whose model.class_path names the class")
    sub.add_argument("--trust-checkpoint-class", action="store_true",
                     help="instead of --model, import the class path recorded in the checkpoint (runs that module's "
                          "code: only for checkpoints you trust)")
    sub.add_argument("--batch-size", type=_positive_int, default=256, metavar="N", help="rows per batch (default 256)")
    sub.add_argument("--workers", type=_positive_int, metavar="N", help="worker processes (default: cores, or one per GPU)")
    sub.add_argument("--threads", type=_positive_int, metavar="N",
                     help="torch threads per worker (default: cores // workers)")
    sub.add_argument("--num-gpus", type=_non_negative_float, metavar="G",
                     help="GPUs per worker (default: 1 when CUDA is present)")
    sub.add_argument("--input-column", default="auto", metavar="COL",
                     help="column fed to predict_step ('auto', a name, or 'all' for the whole batch dict)")
    sub.add_argument("--keep", metavar="COL,...", help="input columns copied beside the outputs (default: id, path)")
    sub.add_argument("--scale", type=_number, metavar="S", help="multiply inputs by S, e.g. 1/255")
    sub.add_argument("--normalize", metavar="MEAN,STD", help="then (x - MEAN) / STD, e.g. 0.2860,0.3530")
    sub.add_argument("--shape", metavar="D,...", help="reshape each row, e.g. 1,28,28")
    sub.add_argument("--retries", type=_non_negative_int, default=0, metavar="N",
                     help="re-run a batch on a new worker up to N times if its worker dies")
    sub.add_argument("--overwrite", action="store_true", help="discard earlier outputs in --output instead of resuming")
    sub.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                     help="run on a Ray cluster through Ray Data actor pools (ADDRESS, or RAY_ADDRESS / a local Ray)")
    sub.add_argument("--no-progress", action="store_true", help="do not print rows/s and ETA")


def _positive_int(text: str) -> int:
    return _checked(text, int, lambda v: v >= 1, "a positive whole number, e.g. 64")


def _non_negative_int(text: str) -> int:
    return _checked(text, int, lambda v: v >= 0, "0 or a positive whole number")


def _positive_float(text: str) -> float:
    return _checked(text, float, lambda v: 0 < v < float("inf"), "a positive number, e.g. 0.01")


def _non_negative_float(text: str) -> float:
    return _checked(text, float, lambda v: 0 <= v < float("inf"), "0 or a positive number, e.g. 0.5")


def _checked(text: str, kind: type, ok: Any, wanted: str) -> Any:
    """argparse type: `text` as `kind`, refused in one line unless `ok(value)` (e.g. --lr -5, --batch-size 0)."""
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {wanted}") from None
    if not ok(value):
        raise argparse.ArgumentTypeError(f"{text} is out of range: use {wanted}")
    return value


def _number(text: str) -> float:
    """A float, or a fraction such as 1/255."""
    try:
        if "/" in text:
            top, bottom = text.split("/", 1)
            return float(top) / float(bottom)
        return float(text)
    except (ValueError, ZeroDivisionError):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number or a fraction like 1/255") from None


def _numbers(text: str | None, flag: str, count: int | None = None, kind: type = float) -> tuple | None:
    if text is None:
        return None
    try:
        values = tuple(kind(v) for v in text.split(","))
    except ValueError:
        raise ConfigError(f"{flag} {text!r}: write comma-separated numbers, e.g. {flag} 0.2860,0.3530") from None
    if count is not None and len(values) != count:
        raise ConfigError(f"{flag} {text!r} needs {count} comma-separated numbers")
    return values


def run_predict(args: argparse.Namespace) -> None:
    from ember.inference import predict_to_parquet

    summary = predict_to_parquet(
        args.data, args.output, args.ckpt, model=args.model, config=args.config, batch_size=args.batch_size,
        workers=args.workers, threads=args.threads, num_gpus=args.num_gpus, input_column=args.input_column,
        keep=args.keep.split(",") if args.keep else None, scale=args.scale,
        normalize=_numbers(args.normalize, "--normalize", 2), shape=_numbers(args.shape, "--shape", kind=int),
        overwrite=args.overwrite, max_task_retries=args.retries, ray_address=args.ray,
        progress=not args.no_progress, trust_checkpoint_class=args.trust_checkpoint_class,
    )
    print(summary.line())


def main(argv: Sequence[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "predict":
            run_predict(args)
            return
        config = load_config(args.config)
        apply_flags(config, args)
        run(args.command, config, args)
    except EmberError as e:
        print(f"ember {args.command}: error: {e}", file=sys.stderr)
        raise SystemExit(2 if isinstance(e, ConfigError) else 1) from None


# ---- configuration ----------------------------------------------------------------------------
def read_yaml(path: str | os.PathLike[str], flag: str = "--config") -> Any:
    """A YAML file's contents (safe_load), or one ConfigError saying why it cannot be read.

    Example:
        >>> read_yaml("no/such.yaml")
        Traceback (most recent call last):
        ...
        ember.errors.ConfigError: config file no/such.yaml does not exist; pass --config path/to/config.yaml
    """
    import yaml

    file = Path(path)
    if file.is_dir():
        raise ConfigError(f"config file {file} is a folder; pass {flag} path/to/config.yaml")
    try:
        raw = file.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"config file {file} does not exist; pass {flag} path/to/config.yaml") from None
    except PermissionError:
        raise ConfigError(f"cannot read config file {file}: permission denied; check its permissions") from None
    except OSError as e:
        raise ConfigError(f"cannot read config file {file}: {e.strerror or e}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{file} is not a text file (not UTF-8 YAML); pass {flag} the YAML config") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{file} is not valid YAML{where}: {getattr(e, 'problem', e)}") from None


def load_config(path: str | os.PathLike[str]) -> dict[str, Any]:
    file = Path(path)
    config = read_yaml(file) or {}
    if not isinstance(config, dict):
        raise ConfigError(f"{file} must hold a mapping with keys {', '.join(CONFIG_KEYS)}")
    for key in config:
        if key not in CONFIG_KEYS:
            raise ConfigError(_unknown_key(key, CONFIG_KEYS, f"top level of {file}"))
    config["_dir"] = str(file.resolve().parent)
    config["_file"] = str(file)
    return config


def apply_flags(config: dict[str, Any], args: argparse.Namespace) -> None:
    """The classic script's flags, written into the config sections they mean."""
    model_args = config.setdefault("model", {}).setdefault("init_args", {})
    data_args = config.setdefault("data", {}).setdefault("init_args", {})
    trainer = config.setdefault("trainer", {}) or {}
    config["trainer"] = trainer
    if args.batch_size is not None:
        data_args["batch_size"] = args.batch_size
    if args.lr is not None:
        model_args["lr"] = args.lr
    if args.momentum is not None:
        model_args["momentum"] = args.momentum
    if args.epochs is not None:
        trainer["max_epochs"] = args.epochs
    if args.accelerator is not None:
        trainer["accelerator"] = args.accelerator
    if args.no_cuda:
        trainer["accelerator"] = "cpu"
    if args.root_dir is not None:
        trainer["default_root_dir"] = args.root_dir
    if args.seed is not None:
        config["seed"] = args.seed
    if args.save_interval is not None:
        config.setdefault("checkpoint", {})["every_n_train_steps"] = args.save_interval
    for item in args.set:
        if "=" not in item:
            raise ConfigError(f"--set {item!r} needs KEY=VALUE, e.g. --set trainer.max_steps=100")
        key, raw = item.split("=", 1)
        _set_dotted(config, key, raw)


def _set_dotted(config: dict[str, Any], dotted: str, raw: str) -> None:
    import yaml

    parts = dotted.split(".")
    if parts[0] not in CONFIG_KEYS:
        raise ConfigError(_unknown_key(parts[0], CONFIG_KEYS, f"--set {dotted}"))
    node = config
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = yaml.safe_load(raw)


def _unknown_key(key: str, known: Sequence[str], where: str) -> str:
    hint = did_you_mean(key, known, f"known keys: {', '.join(known)}")
    return f"unknown key {key!r} in {where}; {hint}"


def import_class(spec: str, base_dir: str, base: type | tuple[type, ...] | None = None) -> type:
    """`pkg.module:Class`, `pkg.module.Class`, or `path/to/file.py:Class` (relative to the config file)."""
    from ember.class_path import import_class as resolve

    return resolve(spec, base_dir, "class_path", base=base)


def instantiate(section: dict[str, Any] | None, what: str, base_dir: str,
                base: type | tuple[type, ...] | None = None) -> Any:
    """Build `class_path(**init_args)`; the class is checked against `base` BEFORE it is called (as LightningCLI)."""
    if not isinstance(section, dict) or "class_path" not in section:
        raise ConfigError(f"config section {what!r} needs class_path (e.g. my_model.py:Net) and optional init_args")
    unknown = set(section) - {"class_path", "init_args"}
    if unknown:
        raise ConfigError(_unknown_key(sorted(unknown)[0], ("class_path", "init_args"), f"section {what!r}"))
    if not isinstance(section["class_path"], str):
        raise ConfigError(f"{what}.class_path must be a string like my_model.py:Net, not {section['class_path']!r}")
    cls = import_class(section["class_path"], base_dir, base)
    init_args = section.get("init_args") or {}
    if not isinstance(init_args, dict):
        raise ConfigError(f"{what}.init_args must be a mapping of argument names to values, not {init_args!r}")
    params = inspect.signature(cls.__init__).parameters
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        accepted = [p for p in params if p != "self"]
        for key in init_args:
            if key not in accepted:
                raise ConfigError(_unknown_key(key, accepted, f"{what}.init_args ({cls.__name__})"))
    for key, value in init_args.items():
        _check_argument(what, cls, params.get(key), key, value)
    return cls(**init_args)


def _check_argument(what: str, cls: type, param: inspect.Parameter | None, key: str, value: Any) -> None:
    """A text where the class expects a number (--set model.init_args.lr=fast), or a non-positive lr / batch size."""
    if param is None:
        return
    annotation = param.annotation if isinstance(param.annotation, str) else getattr(param.annotation, "__name__", "")
    default = param.default
    wants_number = annotation in ("int", "float") or (
        isinstance(default, (int, float)) and not isinstance(default, bool))
    if wants_number and isinstance(value, (str, bool)):
        raise ConfigError(f"{what}.init_args.{key}={value!r}: {cls.__name__} expects a number here "
                          f"(default {default!r}); write e.g. {key}={default if default is not param.empty else 1}")
    if key in _POSITIVE and isinstance(value, (int, float)) and not isinstance(value, bool) and not value > 0:
        raise ConfigError(f"{what}.init_args.{key}={value!r}: {_POSITIVE[key]}")


#: init_args that must be positive whatever the class (the keys the classic flags write).
_POSITIVE = {"lr": "the learning rate must be a positive number, e.g. 0.01",
             "learning_rate": "the learning rate must be a positive number, e.g. 0.01",
             "batch_size": "use a positive number of samples per batch, e.g. 64",
             "test_batch_size": "use a positive number of samples per batch, e.g. 1000"}


def _trainer_objects(options: dict[str, Any], base_dir: str) -> dict[str, Any]:
    """`trainer.callbacks` / `trainer.logger` entries written as class_path + init_args, built as LightningCLI does."""
    from ember.callbacks import Callback
    from ember.loggers.base import Logger

    out = dict(options)
    for key, base in (("callbacks", Callback), ("logger", Logger)):
        value = out.get(key)
        if isinstance(value, dict):
            out[key] = instantiate(value, f"trainer.{key}", base_dir, base)
        elif isinstance(value, list):
            out[key] = [instantiate(v, f"trainer.{key}[{i}]", base_dir, base) if isinstance(v, dict) else v
                        for i, v in enumerate(value)]
    return out


# ---- running ----------------------------------------------------------------------------------
def run(command: str, config: dict[str, Any], args: argparse.Namespace) -> None:
    import ember
    from ember.callbacks import ModelCheckpoint

    base_dir = config["_dir"]
    if config.get("seed") is not None:
        ember.seed_everything(config["seed"])
    model = instantiate(config.get("model"), "model", base_dir, ember.Module)
    data_section = config.get("data")
    data = (instantiate(data_section, "data", base_dir, ember.DataModule)
            if isinstance(data_section, dict) and data_section.get("class_path") else None)
    trainer_options = _trainer_objects(dict(config.get("trainer") or {}), base_dir)
    callbacks = []
    if config.get("checkpoint"):
        checkpoint = dict(config["checkpoint"])
        checkpoint.setdefault("save_last", True)
        try:
            callbacks.append(ModelCheckpoint(**checkpoint))
        except TypeError as e:
            raise ConfigError(f"checkpoint section: {e}") from None
    trainer = ember.Trainer(callbacks=callbacks, **trainer_options)

    if command == "fit":
        trainer.fit(model, datamodule=data, ckpt_path="last" if args.resume else args.ckpt)
        if config.get("test_after_fit", True) and _has_test(model, data):
            results = trainer.test(model, datamodule=data, verbose=False)
            _print_results("test", results)
        return
    ckpt = args.ckpt
    results = getattr(trainer, command)(model, datamodule=data, ckpt_path=ckpt, verbose=False)
    _print_results(command, results)


def _has_test(model: Any, data: Any) -> bool:
    from ember.module import Module

    defines_step = type(model).test_step is not Module.test_step
    return defines_step and (callable(getattr(data, "test_dataloader", None)) or callable(getattr(model, "test_dataloader", None)))


def _print_results(stage: str, results: list[dict[str, float]]) -> None:
    for metrics in results:
        for name, value in metrics.items():
            label = name.replace("_acc", " accuracy").replace("_loss", " loss").replace("_", " ")
            print(f"{label}: {value:.4f}")


if __name__ == "__main__":
    main()
