"""Precision: autocast for the forward pass and gradient scaling for float16 (the "-mixed" precisions), or
weights, inputs and new tensors in one dtype (the "-true" precisions: "64-true", "bf16-true", "16-true")."""

from __future__ import annotations

import contextlib
from typing import Any

import torch

from ember.errors import ConfigError

_ALIASES = {
    "32": "32-true",
    "32-true": "32-true",
    32: "32-true",
    "16": "16-mixed",
    "16-mixed": "16-mixed",
    16: "16-mixed",
    "bf16": "bf16-mixed",
    "bf16-mixed": "bf16-mixed",
    "64": "64-true",
    "64-true": "64-true",
    64: "64-true",
    "bf16-true": "bf16-true",
    "16-true": "16-true",
}
#: The "-true" precisions: weights, floating-point inputs and tensors made in the step all in this dtype.
_TRUE_DTYPES = {"64-true": torch.float64, "bf16-true": torch.bfloat16, "16-true": torch.float16}
_NULL = contextlib.nullcontext()
#: Lightning precisions ember does not have, and what to use instead.
_REFUSED = {
    "transformer-engine": "precision='bf16-mixed' (ember has no Transformer Engine support)",
    "transformer-engine-float16": "precision='16-mixed' (ember has no Transformer Engine support)",
}


class Precision:
    """One object chosen at construction: `autocast()` around forward, `scaler` for float16 backward."""

    def __init__(self, precision: str | int, device_type: str) -> None:
        if precision in _REFUSED:
            raise ConfigError(f"precision={precision!r} is not supported; use {_REFUSED[precision]}")
        if precision not in _ALIASES:
            raise ConfigError(
                f"precision={precision!r} is not supported; use '32-true', '16-mixed', 'bf16-mixed', "
                "'64-true', 'bf16-true' or '16-true'"
            )
        self.name = _ALIASES[precision]
        self.device_type = device_type
        self.scaler: torch.amp.GradScaler | None = None
        if self.name == "16-mixed" and device_type == "cuda":
            self.scaler = torch.amp.GradScaler("cuda")

    @property
    def autocast_dtype(self) -> torch.dtype | None:
        return {"16-mixed": torch.float16, "bf16-mixed": torch.bfloat16}.get(self.name)

    @property
    def has_step_context(self) -> bool:
        """Whether `autocast()` does anything (32-true: no, so the step skips entering it)."""
        return self.name != "32-true"

    def autocast(self) -> Any:
        """The context entered around training/validation steps (a shared no-op for 32-true): autocast for
        "-mixed"; for "-true", new floating-point tensors in the step get the precision's dtype (as
        Lightning)."""
        true_dtype = _TRUE_DTYPES.get(self.name)
        if true_dtype is not None:
            return _default_dtype(true_dtype)
        dtype = self.autocast_dtype
        if dtype is None:
            return _NULL
        return torch.autocast(self.device_type, dtype=dtype)

    def convert_module(self, module: torch.nn.Module) -> torch.nn.Module:
        dtype = _TRUE_DTYPES.get(self.name)
        return module.to(dtype=dtype) if dtype is not None else module

    def input_converter(self) -> Any:
        """For "-true" precisions, a function giving a batch's floating-point tensors the precision's dtype
        (Lightning's convert_input); None otherwise, so the loops skip it at no cost.

        Example:
            >>> convert = Precision("bf16-true", "cpu").input_converter()
            >>> batch = {"x": torch.ones(2), "y": torch.tensor([1, 2])}
            >>> convert(batch)["x"].dtype, Precision("32", "cpu").input_converter()
            (torch.bfloat16, None)
        """
        dtype = _TRUE_DTYPES.get(self.name)
        if dtype is None:
            return None
        from torch.utils._pytree import tree_map_only

        def convert(batch: Any) -> Any:
            return tree_map_only(
                torch.Tensor, lambda t: t.to(dtype) if torch.is_floating_point(t) else t, batch
            )

        return convert

    def state_dict(self) -> dict[str, Any]:
        return self.scaler.state_dict() if self.scaler is not None else {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if self.scaler is not None and state:
            self.scaler.load_state_dict(state)


@contextlib.contextmanager
def _default_dtype(dtype: torch.dtype) -> Any:
    """torch's default floating-point dtype set to `dtype` inside, restored after."""
    before = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(before)
