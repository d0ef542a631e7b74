"""`ember predict`: a checkpoint over a dataset on a pool of workers, writing parquet (docs/inference.md).

    ember predict --ckpt last.ckpt --model model.py:ClassicNet --data test.parquet --output predictions/

The flags are unchanged; the parser is jsonargparse's (help shows each default). `--config` names a
training config (any layout `ember fit` reads, read by the same reader) whose `model.class_path` is
the Module class.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from ember.cli.classic_flags import checked_number
from ember.cli.parser import new_parser, parse
from ember.errors import ConfigError


class _Checked:
    """An argparse `type` with a readable name in --help ("positive int", not "<function ...>")."""

    def __init__(self, convert: Callable[[str], Any], name: str) -> None:
        self.convert, self.name = convert, name

    def __call__(self, text: Any) -> Any:
        # jsonargparse checks parsed values again through the type: a number comes back as a number
        return self.convert(text if isinstance(text, str) else repr(text))

    def __repr__(self) -> str:
        return self.name


def _checked(kind: type, ok: Callable[[Any], bool], wanted: str) -> Callable[[str], Any]:
    return lambda text: checked_number(text, kind, ok, wanted)


def _fraction(text: str) -> float:
    """A float, or a fraction such as 1/255."""
    try:
        if "/" in text:
            top, bottom = text.split("/", 1)
            return float(top) / float(bottom)
        return float(text)
    except (ValueError, ZeroDivisionError):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number or a fraction like 1/255") from None


POSITIVE_INT = _Checked(_checked(int, lambda v: v >= 1, "a positive whole number, e.g. 64"), "positive int")
NON_NEGATIVE_INT = _Checked(_checked(int, lambda v: v >= 0, "0 or a positive whole number"), "int >= 0")
NON_NEGATIVE_FLOAT = _Checked(
    _checked(float, lambda v: 0 <= v < float("inf"), "0 or a positive number, e.g. 0.5"), "float >= 0"
)
NUMBER = _Checked(_fraction, "number or fraction")


def build_predict_parser() -> Any:
    parser = new_parser(
        "ember predict", "Run a checkpoint over a dataset on a pool of workers, writing parquet."
    )
    add = parser.add_argument
    add("--ckpt", required=True, metavar="PATH", help="checkpoint to load (safely: weights only)")
    add("--data", required=True, metavar="PATH", help="parquet file, folder of parquet files or of images")
    add(
        "--output",
        "-o",
        required=True,
        metavar="DIR",
        help="folder for part-*.parquet and _manifest.json; re-running resumes",
    )
    add("--model", metavar="FILE.py:CLASS", help="the Module class (file.py:Class or package.module.Class)")
    add("--config", "-c", metavar="YAML", help="training config whose model.class_path names the class")
    add(
        "--trust-checkpoint-class",
        action="store_true",
        help="instead of --model, import the class path recorded in the checkpoint (runs that module's code: "
        "only for checkpoints you trust)",
    )
    add("--batch-size", type=POSITIVE_INT, default=256, metavar="N", help="rows per batch")
    add("--workers", type=POSITIVE_INT, metavar="N", help="worker processes (default: cores, or one per GPU)")
    add(
        "--threads",
        type=POSITIVE_INT,
        metavar="N",
        help="torch threads per worker (default: cores // workers)",
    )
    add(
        "--num-gpus",
        type=NON_NEGATIVE_FLOAT,
        metavar="G",
        help="GPUs per worker (default: 1 when CUDA is present)",
    )
    add(
        "--input-column",
        default="auto",
        metavar="COL",
        help="column fed to predict_step ('auto', a name, or 'all' for the whole batch dict)",
    )
    add("--keep", metavar="COL,...", help="input columns copied beside the outputs (default: id, path)")
    add("--scale", type=NUMBER, metavar="S", help="multiply inputs by S, e.g. 1/255")
    add("--normalize", metavar="MEAN,STD", help="then (x - MEAN) / STD, e.g. 0.2860,0.3530")
    add("--shape", metavar="D,...", help="reshape each row, e.g. 1,28,28")
    add(
        "--retries",
        type=NON_NEGATIVE_INT,
        default=0,
        metavar="N",
        help="re-run a batch on a new worker up to N times if its worker dies",
    )
    add("--overwrite", action="store_true", help="discard earlier outputs in --output instead of resuming")
    add(
        "--ray",
        nargs="?",
        const="",
        default=None,
        metavar="ADDRESS",
        help="run on a Ray cluster through Ray Data actor pools (ADDRESS, or RAY_ADDRESS / a local Ray)",
    )
    add("--no-progress", action="store_true", help="do not print rows/s and ETA")
    return parser


def _numbers(text: str | None, flag: str, count: int | None = None, kind: type = float) -> tuple | None:
    if text is None:
        return None
    try:
        values = tuple(kind(v) for v in text.split(","))
    except ValueError:
        raise ConfigError(
            f"{flag} {text!r}: write comma-separated numbers, e.g. {flag} 0.2860,0.3530"
        ) from None
    if count is not None and len(values) != count:
        raise ConfigError(f"{flag} {text!r} needs {count} comma-separated numbers")
    return values


def run_predict(argv: list[str]) -> None:
    parser = build_predict_parser()
    args = parse(parser, argv)
    from ember.inference import predict_to_parquet

    summary = predict_to_parquet(
        args.data,
        args.output,
        args.ckpt,
        model=args.model,
        config=args.config,
        batch_size=args.batch_size,
        workers=args.workers,
        threads=args.threads,
        num_gpus=args.num_gpus,
        input_column=args.input_column,
        keep=args.keep.split(",") if args.keep else None,
        scale=args.scale,
        normalize=_numbers(args.normalize, "--normalize", 2),
        shape=_numbers(args.shape, "--shape", kind=int),
        overwrite=args.overwrite,
        max_task_retries=args.retries,
        ray_address=args.ray,
        progress=not args.no_progress,
        trust_checkpoint_class=args.trust_checkpoint_class,
    )
    print(summary.line())
