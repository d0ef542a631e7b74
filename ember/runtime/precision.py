"""Precision: autocast for the forward pass and gradient scaling for float16."""

from __future__ import annotations

import contextlib
from typing import Any

import torch

from ember.errors import ConfigError

_ALIASES = {
    "32": "32-true", "32-true": "32-true", 32: "32-true",
    "16": "16-mixed", "16-mixed": "16-mixed", 16: "16-mixed",
    "bf16": "bf16-mixed", "bf16-mixed": "bf16-mixed",
    "64": "64-true", "64-true": "64-true", 64: "64-true",
}
_NULL = contextlib.nullcontext()
#: Lightning precisions ember does not have, and what to use instead.
_REFUSED = {
    "bf16-true": "precision='bf16-mixed' (bfloat16 autocast, float32 weights)",
    "16-true": "precision='16-mixed' (float16 autocast with gradient scaling, float32 weights)",
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
                f"precision={precision!r} is not supported; use '32-true', '16-mixed', 'bf16-mixed' or '64-true'"
            )
        self.name = _ALIASES[precision]
        self.device_type = device_type
        self.scaler: torch.amp.GradScaler | None = None
        if self.name == "16-mixed" and device_type == "cuda":
            self.scaler = torch.amp.GradScaler("cuda")

    @property
    def autocast_dtype(self) -> torch.dtype | None:
        return {"16-mixed": torch.float16, "bf16-mixed": torch.bfloat16}.get(self.name)

    def autocast(self) -> Any:
        """The context entered around training/validation steps (a shared no-op for full precision)."""
        dtype = self.autocast_dtype
        if dtype is None:
            return _NULL
        return torch.autocast(self.device_type, dtype=dtype)

    def convert_module(self, module: torch.nn.Module) -> torch.nn.Module:
        return module.double() if self.name == "64-true" else module

    def state_dict(self) -> dict[str, Any]:
        return self.scaler.state_dict() if self.scaler is not None else {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if self.scaler is not None and state:
            self.scaler.load_state_dict(state)
