"""Accelerator and device resolution, and moving nested batches onto a device."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import torch

from ember.errors import ConfigError

ACCELERATORS = ("auto", "cpu", "cuda", "gpu", "mps")


def mps_available() -> bool:
    backend = getattr(torch.backends, "mps", None)
    return bool(backend is not None and backend.is_available())


def resolve_accelerator(accelerator: str) -> str:
    """Turn "auto"/"gpu" into a concrete device type, failing clearly when it is not there."""
    if accelerator not in ACCELERATORS:
        raise ConfigError(f"accelerator={accelerator!r} is not known; use one of {', '.join(ACCELERATORS)}")
    if accelerator == "auto":
        if torch.cuda.is_available():
            return "cuda"
        return "mps" if mps_available() else "cpu"
    if accelerator in ("cuda", "gpu"):
        if not torch.cuda.is_available():
            raise ConfigError(
                f"accelerator={accelerator!r} but CUDA is not available on this machine; "
                "use accelerator='cpu' or 'auto'"
            )
        return "cuda"
    if accelerator == "mps" and not mps_available():
        raise ConfigError("accelerator='mps' but MPS is not available; use accelerator='cpu' or 'auto'")
    return accelerator


def _parse_devices(text: str) -> int | list[int]:
    """ "2" is a count, "0,1" (or "1,") a list of indices, as in Lightning; anything else is refused."""
    try:
        return [int(d) for d in text.split(",") if d.strip()] if "," in text else int(text)
    except ValueError:
        raise ConfigError(
            f"devices={text!r} is not a device count, 'auto' or a list of device indices; e.g. devices=1 or "
            "devices='0,1'"
        ) from None


def resolve_device_ids(device_type: str, devices: int | str | list[int]) -> list[int]:
    """`devices` as Lightning reads it: a count, "auto", or an explicit list of indices."""
    if devices == "auto":
        count = torch.cuda.device_count() if device_type == "cuda" else 1
        return list(range(max(count, 1)))
    if isinstance(devices, str):
        devices = _parse_devices(devices)
    if (
        isinstance(devices, bool)
        or not isinstance(devices, (int, list, tuple))
        or (
            not isinstance(devices, int)
            and not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in devices)
        )
    ):
        raise ConfigError(
            f"devices={devices!r} is not a device count, 'auto' or a list of device indices; e.g. devices=1 "
            "or devices=[0, 1]"
        )
    if isinstance(devices, int):
        if devices < 1:
            raise ConfigError(f"devices={devices} must be at least 1 (or 'auto')")
        ids = list(range(devices))
    else:
        ids = list(devices)
        if not ids:
            raise ConfigError("devices=[] names no device; pass a count, 'auto' or a list like [0, 1]")
    if device_type == "cuda" and max(ids) >= torch.cuda.device_count():
        raise ConfigError(
            f"devices={devices!r} asks for GPU {max(ids)} but only {torch.cuda.device_count()} are visible"
        )
    return ids


def root_device(device_type: str, index: int = 0) -> torch.device:
    return torch.device(device_type, index) if device_type in ("cuda", "mps") else torch.device("cpu")


def move_to_device(batch: Any, device: torch.device) -> Any:
    """Move every tensor in a nested batch (dicts, lists, tuples, namedtuples, dataclasses) to `device`.

    Copies are non-blocking, which overlaps host-to-device copies with compute when the
    tensors come from pinned memory (DataLoader(pin_memory=True)).
    """
    if isinstance(batch, torch.Tensor):
        return batch.to(device, non_blocking=True)
    if isinstance(batch, Mapping):
        return type(batch)({k: move_to_device(v, device) for k, v in batch.items()})  # type: ignore[call-arg]
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):  # namedtuple
        return type(batch)(*(move_to_device(v, device) for v in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(move_to_device(v, device) for v in batch)
    if dataclasses.is_dataclass(batch) and not isinstance(batch, type):
        changes = {
            f.name: move_to_device(getattr(batch, f.name), device)
            for f in dataclasses.fields(batch)
            if f.init
        }
        return dataclasses.replace(batch, **changes)
    if hasattr(batch, "to") and callable(batch.to) and not isinstance(batch, torch.nn.Module):
        return batch.to(device)
    return batch


def batch_size_of(batch: Any) -> int | None:
    """The leading dimension of the first tensor found in a batch (used to weight epoch means)."""
    if isinstance(batch, torch.Tensor):
        return int(batch.shape[0]) if batch.dim() > 0 else 1
    if isinstance(batch, Mapping):
        batch = list(batch.values())
    if isinstance(batch, (list, tuple)):
        for item in batch:
            size = batch_size_of(item)
            if size is not None:
                return size
    return None
