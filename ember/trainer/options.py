"""The Trainer's options, checked once at construction and held as one plain object the loops read.

`fast_dev_run` is resolved here (it overrides the limits, epochs and sanity check), so nothing
downstream needs to know it exists.
"""

from __future__ import annotations

import dataclasses
import datetime
import math
import os
import sys
from collections.abc import Iterable
from typing import Any

from ember.errors import ConfigError, did_you_mean
from ember.fs import storage_path

# Lightning options that are spelled differently here, for a helpful error.
RENAMED = {
    "gpus": "accelerator='gpu', devices=N",
    "tpu_cores": "(TPUs are not supported)",
    "progress_bar_refresh_rate": "callbacks=[TQDMProgressBar(refresh_rate=...)]",
    "resume_from_checkpoint": "trainer.fit(model, ckpt_path=...)",
    "weights_save_path": "ModelCheckpoint(dirpath=...)",
    "checkpoint_callback": "enable_checkpointing",
}


@dataclasses.dataclass(frozen=True)
class Options:
    """What the loops need to know about the user's choices (already checked, fast_dev_run applied)."""

    max_epochs: int  # -1: no epoch limit (Lightning's spelling)
    min_epochs: int | None
    max_steps: int
    min_steps: int | None
    max_time: float | None
    limit_train_batches: int | float | None
    limit_val_batches: int | float | None
    limit_test_batches: int | float | None
    limit_predict_batches: int | float | None
    val_check_interval: int | float | None
    check_val_every_n_epoch: int | None
    num_sanity_val_steps: int
    accumulate_grad_batches: int
    gradient_clip_val: float | None
    gradient_clip_algorithm: str
    log_every_n_steps: int
    stop_on_nan: bool
    fast_dev_run: int
    overfit_batches: int | float = 0.0
    reload_dataloaders_every_n_epochs: int = 0  # 0: the data hooks are called once per fit
    inference_mode: bool = (
        True  # validate/test/predict under torch.inference_mode (else no_grad), as Lightning
    )

    def val_check_batches(self, num_training_batches: float) -> int | None:
        """Validate inside the epoch every this many batches (None: only at the epoch's end)."""
        interval = self.val_check_interval
        if interval is None or (isinstance(interval, float) and interval == 1.0):
            return None
        if isinstance(interval, float):
            if not math.isfinite(num_training_batches):
                raise ConfigError(
                    f"val_check_interval={interval} is a fraction but the training data has no length; pass "
                    "an int"
                )
            return max(1, int(num_training_batches * interval))
        return int(interval)


def build_options(given: dict[str, Any]) -> Options:
    """Check the Trainer's keyword arguments (`locals()` of its `__init__`, None already resolved by
    `resolve_defaults`) and apply fast_dev_run and overfit_batches (Lightning's order: fast_dev_run
    sets the limits unless overfit_batches is on, which then sets the train and val limits).

    Example:
        >>> opts = build_options({**DEFAULTS, "fast_dev_run": True})
        >>> opts.max_steps, opts.limit_val_batches, opts.num_sanity_val_steps
        (1, 1, 0)
        >>> build_options({**DEFAULTS, "max_epochs": -1}).max_epochs
        -1
    """
    check_options(given)
    dev = int(given["fast_dev_run"])
    overfit = given["overfit_batches"]
    max_epochs, max_steps = given["max_epochs"], given["max_steps"]
    if max_epochs is None:  # Lightning: 1000 unless max_steps (or a time limit) bounds the run
        max_epochs = 1000 if max_steps == -1 and given["max_time"] is None else -1
    train_limit, val_limit = given["limit_train_batches"], given["limit_val_batches"]
    if dev:
        train_limit = val_limit = dev
    if overfit:
        train_limit = val_limit = overfit
    return Options(
        max_epochs=1 if dev else max_epochs,
        min_epochs=given["min_epochs"],
        max_steps=dev if dev else max_steps,
        min_steps=given["min_steps"],
        max_time=as_seconds(given["max_time"]),
        limit_train_batches=train_limit,
        limit_val_batches=val_limit,
        limit_test_batches=dev if dev else given["limit_test_batches"],
        limit_predict_batches=dev if dev else given["limit_predict_batches"],
        val_check_interval=1.0 if dev else given["val_check_interval"],
        check_val_every_n_epoch=1 if dev else given["check_val_every_n_epoch"],
        num_sanity_val_steps=0 if dev else given["num_sanity_val_steps"],
        accumulate_grad_batches=given["accumulate_grad_batches"],
        gradient_clip_val=given["gradient_clip_val"],
        gradient_clip_algorithm=given["gradient_clip_algorithm"],
        # 0 turns step logging off (Lightning); the loop counts in steps, so "never" is a step never reached
        log_every_n_steps=given["log_every_n_steps"] or sys.maxsize,
        stop_on_nan=given["stop_on_nan"],
        fast_dev_run=dev,
        overfit_batches=overfit,
        reload_dataloaders_every_n_epochs=given.get("reload_dataloaders_every_n_epochs", 0),
        inference_mode=bool(given.get("inference_mode", True)),
    )


#: What an explicit None means for the Trainer arguments Lightning types as Optional (its defaults).
NONE_MEANS = {
    "precision": "32-true",
    "logger": True,
    "enable_checkpointing": True,
    "enable_progress_bar": True,
    "enable_model_summary": True,
    "num_sanity_val_steps": 2,
    "log_every_n_steps": 50,
    "gradient_clip_algorithm": "norm",
    "deterministic": False,
}
#: What barebones=True turns off, and the value it refuses for each (Lightning's checks).
BAREBONES_OFF = {
    "enable_checkpointing": False,
    "logger": False,
    "enable_progress_bar": False,
    "log_every_n_steps": 0,
    "enable_model_summary": False,
    "num_sanity_val_steps": 0,
}


def resolve_defaults(given: dict[str, Any]) -> dict[str, Any]:
    """Lightning's reading of the arguments: barebones turns features off (refusing one asked for),
    then an explicit None is the default.

    Example:
        >>> resolved = resolve_defaults({**DEFAULTS, "logger": None, "num_sanity_val_steps": None})
        >>> resolved["logger"], resolved["num_sanity_val_steps"]
        (True, 2)
        >>> resolve_defaults({"barebones": True, "log_every_n_steps": None})["log_every_n_steps"]
        0
    """
    resolved = dict(given)
    if resolved.get("barebones"):
        for name, off in BAREBONES_OFF.items():
            value = resolved.get(name)
            if value is not None and value is not off and value != off:
                raise ConfigError(
                    f"Trainer(barebones=True, {name}={value!r}): barebones turns {name} off; "
                    f"drop {name} or barebones"
                )
            resolved[name] = off
        for name, disabled in (("fast_dev_run", False), ("detect_anomaly", False), ("profiler", None)):
            value = resolved.get(name)
            if value is not None and value is not False and value != 0 and value != disabled:
                raise ConfigError(
                    f"Trainer(barebones=True, {name}={value!r}): barebones measures raw speed and "
                    f"excludes {name}; drop one of them"
                )
    for name, default in NONE_MEANS.items():
        if resolved.get(name, default) is None:
            resolved[name] = default
    return resolved


#: The loop-relevant defaults of `Trainer.__init__` (for examples and tests of this module).
DEFAULTS: dict[str, Any] = {
    "max_epochs": None,
    "min_epochs": None,
    "max_steps": -1,
    "min_steps": None,
    "max_time": None,
    "limit_train_batches": None,
    "limit_val_batches": None,
    "limit_test_batches": None,
    "limit_predict_batches": None,
    "val_check_interval": None,
    "check_val_every_n_epoch": 1,
    "num_sanity_val_steps": 2,
    "fast_dev_run": False,
    "accumulate_grad_batches": 1,
    "gradient_clip_val": None,
    "gradient_clip_algorithm": "norm",
    "log_every_n_steps": 50,
    "default_root_dir": None,
    "stop_on_nan": True,
    "overfit_batches": 0.0,
    "num_nodes": 1,
}


def check_options(options: dict[str, Any]) -> None:
    def positive(name: str, allow_none: bool = True) -> None:
        value = options[name]
        if (value is None and allow_none) or (
            isinstance(value, int) and not isinstance(value, bool) and value >= 1
        ):
            return
        raise ConfigError(f"{name}={value!r} must be a positive integer")

    def at_least(name: str, low: int, meaning: str) -> None:
        value = options[name]
        if value is None or (isinstance(value, int) and not isinstance(value, bool) and value >= low):
            return
        raise ConfigError(f"{name}={value!r} must be an int >= {low}{meaning}")

    positive("accumulate_grad_batches", allow_none=False)
    positive("num_nodes", allow_none=False)
    at_least("max_epochs", -1, " (-1: no epoch limit)")
    at_least("min_steps", 0, "")
    dev = options["fast_dev_run"]
    if not isinstance(dev, (bool, int)) or dev < 0:
        raise ConfigError(
            f"fast_dev_run={dev!r} must be a bool or an int >= 0 (the number of batches per loop)"
        )
    positive("check_val_every_n_epoch")
    at_least("min_epochs", 0, "")
    at_least("num_sanity_val_steps", -1, " (-1 runs all validation batches, 0 none)")
    at_least("log_every_n_steps", 0, "")
    if "reload_dataloaders_every_n_epochs" in options:
        at_least("reload_dataloaders_every_n_epochs", 0, " (0: never reload)")
    clip = options["gradient_clip_val"]
    if clip is not None and (isinstance(clip, bool) or not isinstance(clip, (int, float)) or not clip >= 0):
        raise ConfigError(
            f"gradient_clip_val={clip!r} must be a number >= 0 (0 or None: no clipping); a negative value "
            "would flip the sign of every gradient"
        )
    root = options["default_root_dir"]
    if root is not None and storage_path(root).exists() and not storage_path(root).is_dir():
        raise ConfigError(
            f"default_root_dir={os.fspath(root)!r} is a file; pass a folder for logs and checkpoints"
        )
    if options["gradient_clip_algorithm"] not in ("norm", "value"):
        raise ConfigError(
            f"gradient_clip_algorithm={options['gradient_clip_algorithm']!r} must be 'norm' or 'value'"
        )
    if not isinstance(options["max_steps"], int) or options["max_steps"] < -1:
        raise ConfigError(f"max_steps={options['max_steps']!r} must be -1 (no limit) or a non-negative int")
    overfit = options["overfit_batches"]
    if (
        isinstance(overfit, bool)
        or not isinstance(overfit, (int, float))
        or not (0 <= overfit <= 1 or (overfit > 1 and overfit % 1 == 0))
    ):
        raise ConfigError(
            f"overfit_batches={overfit!r} must be a fraction in [0.0, 1.0] or an int batch count"
        )
    interval = options["val_check_interval"]
    if isinstance(interval, float) and not 0.0 < interval <= 1.0:
        raise ConfigError(
            f"val_check_interval={interval} must be in (0, 1] as a fraction, or an int batch count"
        )


def unknown_option_message(name: str, known: Iterable[str]) -> str:
    if name in RENAMED:
        return f"Trainer has no option {name!r}; use {RENAMED[name]}"
    known = list(known)
    hint = did_you_mean(name, known, f"known options: {', '.join(known)}")
    return f"Trainer has no option {name!r}; {hint}"


def as_seconds(value: Any) -> float | None:
    """max_time as seconds: a number, a timedelta, a dict like {'hours': 1}, or 'DD:HH:MM:SS'."""
    if value is None:
        return None
    seconds: float | None = None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    elif isinstance(value, datetime.timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, dict):
        try:
            seconds = datetime.timedelta(**value).total_seconds()
        except TypeError:
            seconds = None
    elif isinstance(value, str):
        parts = value.split(":")
        if len(parts) == 4 and all(p.strip().isdigit() for p in parts):
            days, hours, minutes, secs = (int(p) for p in parts)
            seconds = float(((days * 24 + hours) * 60 + minutes) * 60 + secs)
    if seconds is not None and seconds >= 0:
        return seconds
    raise ConfigError(
        f"max_time={value!r}: use seconds, a timedelta, a dict like {{'hours': 1}}, or 'DD:HH:MM:SS'"
    )
