"""TorchTrainer.restore / can_restore: continue a run whose driver died, from its run folder.

The folder (`storage_path/name`, local or `s3://...`) holds `trainer.json` (the settings, plain JSON),
`result.json` and the checkpoints (see `checkpoint_manager.py`). `restore` builds a TorchTrainer with
the same name, storage path, scaling, checkpoint and failure settings and `train_loop_config` (when it
was JSON); its `fit()` starts the workers with `get_checkpoint()` = the last recorded checkpoint, the
report numbering and the kept checkpoints continuing where the killed run stopped.

These are Ray Train's V1 names (`RAY_TRAIN_V2_ENABLED=0`); Ray 2.60's default (V2) deprecates them and
resumes when the same `RunConfig(name, storage_path)` is fitted again, which ember does too. Unlike
Ray's `trainer.pkl`, nothing in the folder is code: the training function (and the datasets, which
Ray V1 also asks for) must be passed again.

Example:
    >>> if TorchTrainer.can_restore("/results/exp"):  # doctest: +SKIP
    ...     result = TorchTrainer.restore("/results/exp", train_loop_per_worker=train_func,
    ...                                   datasets={"train": ds}).fit()
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ember.errors import ConfigError
from ember.fs import is_url
from ember.fs.storage import storage_path
from ember.train.checkpoint_manager import read_settings
from ember.train.config import (
    CheckpointConfig,
    DataConfig,
    FailureConfig,
    RunConfig,
    ScalingConfig,
    TorchConfig,
)


def settings_of(trainer: Any) -> dict[str, Any]:
    """What `trainer.json` records: everything restore needs except code and data."""
    try:
        config, saved = json.loads(json.dumps(trainer.config)), True
    except (TypeError, ValueError):
        config, saved = None, False
    scaling = dataclasses.asdict(trainer.scaling)
    return {
        "scaling_config": scaling,
        "checkpoint_config": dataclasses.asdict(trainer.checkpoint_config),
        "failure_config": dataclasses.asdict(trainer.failure),
        "train_loop_config": config,
        "train_loop_config_saved": saved,
        "datasets": sorted(trainer.datasets),
        "torch_config": None if trainer.torch_config is None else dataclasses.asdict(trainer.torch_config),
        "dataset_config": dataclasses.asdict(trainer.dataset_config),
    }


def _split(path: str | os.PathLike[str]) -> tuple[str, str]:
    """(storage_path, name) of a run folder."""
    text = str(path).rstrip("/")
    if is_url(text):
        parent, _, name = text.rpartition("/")
        return parent, name
    folder = Path(text).expanduser().resolve()
    return str(folder.parent), folder.name


def can_restore(path: str | os.PathLike[str]) -> bool:
    """Does `path` hold a TorchTrainer run (its `trainer.json`)?"""
    try:
        return read_settings(storage_path(str(path).rstrip("/"))) is not None
    except (ConfigError, OSError):
        return False


if TYPE_CHECKING:
    from ember.train.torch_trainer import TorchTrainer

#: The trainer class restored (TorchTrainer or a subclass of it).
TrainerT = TypeVar("TrainerT", bound="TorchTrainer")


def restore(
    cls: type[TrainerT],
    path: str | os.PathLike[str],
    train_loop_per_worker: Any = None,
    train_loop_config: dict[str, Any] | None = None,
    datasets: dict[str, Any] | None = None,
    scaling_config: ScalingConfig | None = None,
) -> TrainerT:
    """A `cls` (TorchTrainer) that continues the run in `path`."""
    if train_loop_per_worker is None:
        raise ConfigError(
            "TorchTrainer.restore needs train_loop_per_worker=: ember never loads code from a run "
            "folder (Ray V1 unpickles its trainer.pkl); pass the same training function"
        )
    settings = read_settings(storage_path(str(path).rstrip("/")))
    if settings is None:
        raise ConfigError(
            f"TorchTrainer.restore: {path} holds no TorchTrainer run (no trainer.json); "
            "TorchTrainer.can_restore(path) tells beforehand"
        )
    _check_settings(settings, path)
    missing = sorted(set(settings["datasets"]) - set(datasets or {}))
    if missing:
        raise ConfigError(
            f"TorchTrainer.restore: pass datasets= again with {missing} (the run trained on "
            f"{settings['datasets']}; datasets are not stored in the run folder)"
        )
    if train_loop_config is None and not settings["train_loop_config_saved"]:
        raise ConfigError(
            "TorchTrainer.restore: the run's train_loop_config was not JSON, so it was not stored; "
            "pass train_loop_config= again"
        )
    root, name = _split(path)
    try:  # a field of the right type holding the wrong keys or values
        configs = _configs(settings, scaling_config)
    except (TypeError, ValueError) as exc:
        raise ConfigError(
            f"TorchTrainer.restore: {path}/trainer.json does not describe a run ({exc}); the file is "
            "damaged: restore it, or start a new run with another RunConfig(name=)"
        ) from None
    checkpoint_config, failure_config, scaling, torch_config, dataset_config = configs
    run_config = RunConfig(
        name=name, storage_path=root, checkpoint_config=checkpoint_config, failure_config=failure_config
    )
    return cls(
        train_loop_per_worker,
        train_loop_config=train_loop_config
        if train_loop_config is not None
        else settings["train_loop_config"],
        scaling_config=scaling,
        run_config=run_config,
        datasets=datasets,
        torch_config=torch_config,
        dataset_config=dataset_config,
    )


#: trainer.json's fields and the JSON types each must have (None: may be null).
_FIELDS = {
    "scaling_config": (dict,),
    "checkpoint_config": (dict,),
    "failure_config": (dict,),
    "train_loop_config_saved": (bool,),
    "datasets": (list,),
    "torch_config": (dict, type(None)),
    "dataset_config": (dict,),
}
_OPTIONAL = ("torch_config", "dataset_config")  # runs written before these were recorded have neither


def _check_settings(settings: dict[str, Any], path: Any) -> None:
    """One line when a field of trainer.json is missing or of the wrong JSON type (a damaged file)."""
    for field, types in _FIELDS.items():
        if field not in settings:
            if field in _OPTIONAL:
                continue
            problem = "is missing"
        elif isinstance(settings[field], types) and not (
            field == "datasets" and not all(isinstance(name, str) for name in settings[field])
        ):
            continue
        else:
            problem = f"is {type(settings[field]).__name__} {str(settings[field])[:60]!r}"
        raise ConfigError(
            f"TorchTrainer.restore: {path}/trainer.json's {field!r} {problem}; the file is damaged: "
            "restore it, or start a new run with another RunConfig(name=)"
        )


def _configs(settings: dict[str, Any], scaling_config: Any) -> tuple[Any, ...]:
    """The run's configs rebuilt from trainer.json (checkpoint, failure, scaling, torch, dataset)."""
    return (
        CheckpointConfig(**settings["checkpoint_config"]),
        FailureConfig(**settings["failure_config"]),
        scaling_config or ScalingConfig(**settings["scaling_config"]),
        # runs written before these were recorded have neither: the defaults they ran with
        TorchConfig(**settings["torch_config"]) if settings.get("torch_config") else None,
        DataConfig(**settings.get("dataset_config", {})),
    )
