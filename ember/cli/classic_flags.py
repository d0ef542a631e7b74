"""The classic script's flags (`--epochs 3 --lr 0.01 --resume`), kept as aliases of the dotted options.

Each is checked here (one line naming the flag, before anything runs) and rewritten into the option
it stands for, appended after the other arguments so it wins over the config files:

    --epochs N        --trainer.max_epochs N        --lr LR          --model.init_args.lr LR
    --batch-size N    --data.init_args.batch_size N --momentum M     --model.init_args.momentum M
    --seed S          --seed_everything S           --save-interval N  --checkpoint.every_n_train_steps N
    --accelerator A   --trainer.accelerator A       --no-cuda        --trainer.accelerator cpu
    --root-dir DIR    --trainer.default_root_dir DIR  --ckpt PATH    --ckpt_path PATH
    --resume          --ckpt_path last              --set K=V        --K V (ember's earlier override)
"""

from __future__ import annotations

import argparse
import json
from typing import Any, NoReturn

from ember.errors import ConfigError

HELP = __doc__.split("\n\n", 2)[2] if __doc__ else ""


def classic_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    parser.add_argument("--batch-size", type=_positive_int)
    parser.add_argument("--epochs", type=_positive_int)
    parser.add_argument("--lr", type=_positive_float)
    parser.add_argument("--momentum", type=_non_negative_float)
    parser.add_argument("--accelerator", choices=["auto", "cpu", "cuda", "gpu", "mps"])
    parser.add_argument("--no-cuda", action="store_true")
    parser.add_argument("--seed", type=int)
    parser.add_argument("--save-interval", type=_positive_int)
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--root-dir")
    parser.add_argument("--ckpt")
    parser.add_argument("--set", action="append", default=[])

    def error(message: str) -> NoReturn:
        raise ConfigError(message)

    parser.error = error  # type: ignore[method-assign]
    return parser


def rewrite_classic_flags(argv: list[str]) -> tuple[list[str], list[str]]:
    """(argv without the classic flags, the dotted arguments they stand for)."""
    known, rest = classic_parser().parse_known_args(argv)
    dotted: list[str] = []
    for item in known.set:
        if "=" not in item:
            raise ConfigError(f"--set {item!r} needs KEY=VALUE, e.g. --set trainer.max_steps=100")
        key, value = item.split("=", 1)
        dotted.append(f"--{key}={value}")
    pairs: list[tuple[str, Any]] = [
        ("trainer.max_epochs", known.epochs),
        ("model.init_args.lr", known.lr),
        ("model.init_args.momentum", known.momentum),
        ("data.init_args.batch_size", known.batch_size),
        ("seed_everything", known.seed),
        ("checkpoint.every_n_train_steps", known.save_interval),
        ("trainer.accelerator", "cpu" if known.no_cuda else known.accelerator),
        ("trainer.default_root_dir", known.root_dir),
        ("ckpt_path", "last" if known.resume else known.ckpt),
    ]
    dotted += [
        f"--{key}={json.dumps(value) if not isinstance(value, str) else value}"
        for key, value in pairs
        if value is not None
    ]
    return rest, dotted


def _positive_int(text: str) -> int:
    return checked_number(text, int, lambda v: v >= 1, "a positive whole number, e.g. 64")


def _positive_float(text: str) -> float:
    return checked_number(text, float, lambda v: 0 < v < float("inf"), "a positive number, e.g. 0.01")


def _non_negative_float(text: str) -> float:
    return checked_number(text, float, lambda v: 0 <= v < float("inf"), "0 or a positive number, e.g. 0.5")


def checked_number(text: str, kind: type, ok: Any, wanted: str) -> Any:
    """`text` as `kind`, refused in one line unless `ok(value)` (e.g. --lr -5, --batch-size 0); also
    `ember predict`'s number options."""
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {wanted}") from None
    if not ok(value):
        raise argparse.ArgumentTypeError(f"{text} is out of range: use {wanted}")
    return value
