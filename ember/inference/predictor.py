"""CheckpointPredictor: a Module loaded once per worker from a checkpoint, mapping batches to outputs.

The class of the Module comes from ``--model file.py:Class`` or a training config; it is imported
like any code the user points at. The checkpoint itself is loaded with ``weights_only=True``, and
the class path it records (``module_class``) is imported only on an explicit opt-in
(``trust_checkpoint_class=True``, ``--trust-checkpoint-class``): opening a file never runs code
from it, and a crafted checkpoint cannot make ember import a module of its choosing.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from ember.class_path import USER_MODULE_PREFIX
from ember.class_path import import_class as resolve_class
from ember.config_file import read_yaml
from ember.errors import CheckpointError, ConfigError

#: Columns carried from the input to the output by default (when present).
DEFAULT_KEEP = ("id", "path")


def import_class(spec: str, base_dir: str | None = None) -> type:
    """``pkg.module:Class``, ``pkg.module.Class`` or ``path/to/file.py:Class``: an ember Module class."""
    from ember.module import Module

    return resolve_class(spec, base_dir, "model", base=Module)


def resolve_module_class(
    ckpt_path: str | os.PathLike[str],
    model: str | None = None,
    config: str | os.PathLike[str] | None = None,
    trust_checkpoint_class: bool = False,
) -> str:
    """The class spec to build the Module from, checked by importing it here; file paths made absolute.

    The class path recorded in the checkpoint is used only with ``trust_checkpoint_class=True``:
    importing it runs that module's code, and the file decides which module that is.
    """
    if model is None and config is not None:
        config_file = Path(config)
        loaded = read_yaml(config_file, "--config")
        section = (loaded.get("model") if isinstance(loaded, dict) else None) or {}
        if not isinstance(section, dict) or "class_path" not in section:
            raise ConfigError(f"{config_file} has no model.class_path; pass --model path/to/file.py:Class")
        model = _absolute(section["class_path"], str(config_file.resolve().parent))
    elif model is not None:
        model = _absolute(model, os.getcwd())
    if model is None:
        model = _recorded_class(ckpt_path, trust_checkpoint_class)
    import_class(model)
    return model


def _recorded_class(ckpt_path: str | os.PathLike[str], trusted: bool) -> str:
    """The checkpoint's ``module_class``, if the caller opted in to importing it."""
    from ember.checkpoint import load_checkpoint

    recorded = load_checkpoint(ckpt_path).get("module_class")  # weights_only: reading it runs nothing
    if not isinstance(recorded, str) or not recorded:
        raise CheckpointError(f"{ckpt_path} records no module class; pass --model path/to/file.py:Class")
    if recorded.startswith(("__main__.", USER_MODULE_PREFIX)):
        raise ConfigError(
            f"{ckpt_path} was saved from {recorded}, defined in a script or config file rather than an "
            "importable module; pass --model path/to/file.py:Class or --config the training config"
        )
    if not trusted:
        raise ConfigError(
            f"name the Module class: --model path/to/file.py:Class or --config the training config (the "
            f"checkpoint says {recorded[:200]!r}; --trust-checkpoint-class "
            "imports that module, running its code)"
        )
    return recorded


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

    def __init__(
        self,
        ckpt_path: str,
        model: str,
        input_column: str = "auto",
        keep: tuple[str, ...] = DEFAULT_KEEP,
        scale: float | None = None,
        normalize: tuple[float, float] | None = None,
        shape: tuple[int, ...] | None = None,
        device: str = "auto",
    ) -> None:
        import torch

        cls: Any = import_class(model)  # a Module subclass: load_from_checkpoint is its classmethod
        self.device = torch.device(
            "cuda"
            if device == "auto" and torch.cuda.is_available()
            else ("cpu" if device == "auto" else device)
        )
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
            raise ConfigError(
                "the input column holds ragged or Python values; pick a tensor column with --input-column"
            )
        return torch.from_numpy(np.ascontiguousarray(values)).to(self.device)


def check_inputs(
    batch: dict[str, np.ndarray], input_column: str, keep: tuple[str, ...], shape: tuple[int, ...] | None
) -> None:
    """Refuse, in the driver and before any worker starts, an input column or --shape that cannot work.

    Example:
        >>> check_inputs({"image": np.zeros((1, 28, 28))}, "auto", (), (3, 3))
        ... # doctest: +ELLIPSIS, +NORMALIZE_WHITESPACE
        Traceback (most recent call last):
        ...
        ember.errors.ConfigError: --shape 3,3 holds 9 values a row, but input column 'image' has 784
        (28x28); ...
    """
    if input_column == "all":
        return
    column = pick_input_column(batch, keep) if input_column == "auto" else input_column
    if column not in batch:
        raise ConfigError(f"--input-column {column!r}: no such column; the data has columns {sorted(batch)}")
    values = batch[column]
    if values.dtype == object:
        raise ConfigError(
            f"input column {column!r} holds ragged or Python values; pick a tensor column with --input-column"
        )
    if shape is None:
        return
    if any(d < 1 for d in shape):
        raise ConfigError(
            f"--shape {','.join(map(str, shape))}: every size must be a positive number, e.g. 1,28,28"
        )
    per_row = int(np.prod(values.shape[1:], dtype=np.int64))
    wanted = int(np.prod(shape, dtype=np.int64))
    if wanted != per_row:
        dims = "x".join(map(str, values.shape[1:])) or "1"
        example = f"1,{','.join(map(str, values.shape[1:]))}" if values.ndim > 1 else str(per_row)
        raise ConfigError(
            f"--shape {','.join(map(str, shape))} holds {wanted} values a row, but input column "
            f"{column!r} has {per_row} ({dims}); use a shape of {per_row} values, e.g. --shape {example}"
        )


def pick_input_column(batch: dict[str, np.ndarray], keep: tuple[str, ...]) -> str:
    candidates = [k for k in batch if k not in keep and not k.startswith("__")]
    tensors = [k for k in candidates if batch[k].ndim > 1]
    if len(candidates) == 1 or tensors:
        return candidates[0] if len(candidates) == 1 else tensors[0]
    raise ConfigError(
        f"cannot tell which column is the model input among {candidates}; pass --input-column NAME"
    )


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
