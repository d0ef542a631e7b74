"""CheckpointPredictor: a Module loaded once per worker from a checkpoint, mapping batches to outputs.

The class of the Module comes from the checkpoint's recorded class path (``module_class``), or
from ``--model file.py:Class`` / a training config; it is imported like any code the user points
at. The checkpoint itself is loaded with ``weights_only=True``: no code from the file ever runs.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from ember.class_path import import_class as resolve_class
from ember.errors import CheckpointError, ConfigError

#: Columns carried from the input to the output by default (when present).
DEFAULT_KEEP = ("id", "path")


def import_class(spec: str, base_dir: str | None = None) -> type:
    """``pkg.module:Class``, ``pkg.module.Class`` or ``path/to/file.py:Class``."""
    return resolve_class(spec, base_dir, "model")


def resolve_module_class(ckpt_path: str | os.PathLike[str], model: str | None = None,
                         config: str | os.PathLike[str] | None = None) -> str:
    """The class spec to build the Module from, checked by importing it here; file paths made absolute."""
    from ember.checkpoint import load_checkpoint

    if model is None and config is not None:
        import yaml

        config_file = Path(config)
        if not config_file.is_file():
            raise ConfigError(f"config file {config_file} does not exist; pass --config path/to/config.yaml")
        section = (yaml.safe_load(config_file.read_text()) or {}).get("model") or {}
        if "class_path" not in section:
            raise ConfigError(f"{config_file} has no model.class_path; pass --model path/to/file.py:Class")
        model = _absolute(section["class_path"], str(config_file.resolve().parent))
    elif model is not None:
        model = _absolute(model, os.getcwd())
    if model is None:
        recorded = load_checkpoint(ckpt_path).get("module_class")
        if not recorded:
            raise CheckpointError(f"{ckpt_path} records no module class; pass --model path/to/file.py:Class")
        if recorded.startswith(("__main__.", "_ember_config_", "_ember_model_")):
            raise ConfigError(
                f"{ckpt_path} was saved from {recorded}, defined in a script or config file rather than an "
                "importable module; pass --model path/to/file.py:Class or --config the training config"
            )
        model = recorded
    cls = import_class(model)
    import torch

    if not issubclass(cls, torch.nn.Module) or not hasattr(cls, "load_from_checkpoint"):
        raise ConfigError(f"model {model!r} is {cls.__name__}, not an ember Module; point --model at the Module class")
    return model


def _absolute(spec: str, base_dir: str) -> str:
    module_part, sep, name = spec.partition(":")
    if sep and module_part.endswith(".py"):
        file = Path(module_part)
        if not file.is_absolute():
            file = Path(base_dir) / file
        return f"{file.resolve()}:{name}"
    return spec


class CheckpointPredictor:
    """``__init__`` loads the Module once (per worker); ``__call__`` maps a batch dict to outputs.

    ``input_column``: the column fed to ``predict_step`` ("auto": the only non-kept column, or the
    first tensor column; "all": the whole batch as a dict of tensors). Integer data becomes
    float32; then ``scale``, ``normalize=(mean, std)`` and ``shape`` (per row, e.g. (1, 28, 28)).
    Outputs (tensors, dicts or tuples of tensors) land on the CPU as numpy arrays, beside the
    ``keep`` columns of the input.

    Example:
        >>> ds.map_batches(CheckpointPredictor, concurrency=2,                       # doctest: +SKIP
        ...                fn_constructor_kwargs={"ckpt_path": "last.ckpt", "model": "model.py:Net"})
    """

    def __init__(self, ckpt_path: str, model: str, input_column: str = "auto", keep: tuple[str, ...] = DEFAULT_KEEP,
                 scale: float | None = None, normalize: tuple[float, float] | None = None,
                 shape: tuple[int, ...] | None = None, device: str = "auto") -> None:
        import torch

        cls = import_class(model)
        self.device = torch.device("cuda" if device == "auto" and torch.cuda.is_available() else
                                   ("cpu" if device == "auto" else device))
        self.module = cls.load_from_checkpoint(ckpt_path, map_location="cpu").to(self.device).eval()
        self.input_column, self.keep = input_column, tuple(keep)
        self.scale, self.normalize, self.shape = scale, normalize, tuple(shape) if shape else None
        self.batches = 0

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        import torch

        x = self._inputs(batch)
        with torch.inference_mode():
            outputs = self.module.predict_step(x, self.batches)
        self.batches += 1
        result = {k: batch[k] for k in self.keep if k in batch}
        result.update(outputs_to_numpy(outputs))
        return result

    def _inputs(self, batch: dict[str, np.ndarray]) -> Any:
        import torch

        if self.input_column == "all":
            return {k: self._tensor(v) for k, v in batch.items() if k not in self.keep and v.dtype != object}
        if self.input_column == "auto":
            self.input_column = pick_input_column(batch, self.keep)
        if self.input_column not in batch:
            raise ConfigError(f"no input column {self.input_column!r}; the data has columns {sorted(batch)}")
        x = self._tensor(batch[self.input_column])
        if not torch.is_floating_point(x):
            x = x.float()
        if self.scale is not None:
            x = x * self.scale
        if self.normalize is not None:
            x = (x - self.normalize[0]) / self.normalize[1]
        if self.shape is not None:
            x = x.reshape(len(x), *self.shape)
        return x.to(self.device)

    def _tensor(self, values: np.ndarray) -> Any:
        import torch

        if values.dtype == object:
            raise ConfigError("the input column holds ragged or Python values; pick a tensor column with --input-column")
        return torch.from_numpy(np.ascontiguousarray(values)).to(self.device)


def pick_input_column(batch: dict[str, np.ndarray], keep: tuple[str, ...]) -> str:
    candidates = [k for k in batch if k not in keep and not k.startswith("__")]
    tensors = [k for k in candidates if batch[k].ndim > 1]
    if len(candidates) == 1 or tensors:
        return candidates[0] if len(candidates) == 1 else tensors[0]
    raise ConfigError(f"cannot tell which column is the model input among {candidates}; pass --input-column NAME")


def outputs_to_numpy(outputs: Any, name: str = "output") -> dict[str, np.ndarray]:
    """predict_step's return value as columns: tensors moved to the CPU (GPU tensors included)."""
    import torch

    if isinstance(outputs, dict):
        columns: dict[str, np.ndarray] = {}
        for key, value in outputs.items():
            columns.update(outputs_to_numpy(value, str(key)))
        return columns
    if isinstance(outputs, (list, tuple)):
        columns = {}
        for i, value in enumerate(outputs):
            columns.update(outputs_to_numpy(value, f"{name}_{i}"))
        return columns
    if isinstance(outputs, torch.Tensor):
        tensor = outputs.detach().to("cpu")
        if tensor.dtype in (torch.bfloat16, torch.float16):
            tensor = tensor.float()
        return {name: tensor.numpy()}
    return {name: np.asarray(outputs)}
