"""What a checkpoint holds, how it is written atomically, and how it is loaded safely.

Shared by the Trainer, ModelCheckpoint, loggers and `Module.load_from_checkpoint`, so it sits
beside them rather than inside `trainer/`.
"""

from __future__ import annotations

import os
import pickle
import re
import sys
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from ember.callbacks.model_checkpoint import LAST_NAME
from ember.errors import CheckpointError

FORMAT_VERSION = 1


def save_checkpoint(state: Mapping[str, Any], path: str | os.PathLike[str]) -> Path:
    """Write `state` to `path` so that `path` is always either the old file or the complete new one.

    The bytes go to a temporary file in the same folder, are flushed and fsynced, and then
    renamed over `path` (atomic on POSIX); the folder is fsynced so the rename survives a crash.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(dict(state), f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)
    return path


def _fsync_dir(folder: Path) -> None:
    if sys.platform == "win32":
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def load_checkpoint(path: str | os.PathLike[str], map_location: Any = "cpu") -> dict[str, Any]:
    """Load a checkpoint without executing code from it (`weights_only=True`), mapped to CPU by default.

    Example:
        >>> ckpt = load_checkpoint("runs/version_0/checkpoints/last.ckpt")  # doctest: +SKIP
        >>> ckpt["progress"]["global_step"]                                   # doctest: +SKIP
    """
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint {path} does not exist; pass an existing file or ckpt_path='last'")
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as e:
        found = re.search(r"Unsupported global: GLOBAL ([\w.]+)", str(e))
        if found or "weights_only" in str(e):
            what = found.group(1) if found else "a non-tensor object"
            raise CheckpointError(
                f"checkpoint {path} contains {what}, which safe loading refuses to run; "
                "if you trust the file, load it with torch.load(path, weights_only=False) yourself"
            ) from None
        raise _corrupt(path, e) from None
    except (RuntimeError, EOFError, zipfile.BadZipFile, ValueError, OSError) as e:
        raise _corrupt(path, e) from None


def _corrupt(path: Path, error: BaseException) -> CheckpointError:
    size = path.stat().st_size if path.exists() else 0
    return CheckpointError(
        f"checkpoint {path} ({size} bytes) is truncated or corrupt ({type(error).__name__}); "
        "resume from an earlier checkpoint in the same folder or start without ckpt_path"
    )


def find_last_checkpoint(root: str | os.PathLike[str]) -> Path | None:
    """The newest `last.ckpt` (or, failing that, newest `*.ckpt`) anywhere under `root`."""
    root = Path(root)
    if not root.exists():
        return None
    candidates = [p for p in root.rglob(LAST_NAME) if p.is_file()]
    if not candidates:
        candidates = [p for p in root.rglob("*.ckpt") if p.is_file()]
    return max(candidates, key=lambda p: p.stat().st_mtime_ns) if candidates else None


def describe_state_dict_mismatch(module: torch.nn.Module, state_dict: Mapping[str, Any]) -> str | None:
    """A one-line description of why `state_dict` does not fit `module`, or None when it fits."""
    own = module.state_dict()
    missing = [k for k in own if k not in state_dict]
    unexpected = [k for k in state_dict if k not in own]
    shapes = [
        f"{k} {tuple(state_dict[k].shape)} vs {tuple(v.shape)}"
        for k, v in own.items()
        if k in state_dict and isinstance(v, torch.Tensor) and isinstance(state_dict[k], torch.Tensor)
        and v.shape != state_dict[k].shape
    ]
    parts = []
    if missing:
        parts.append(f"missing keys {_few(missing)}")
    if unexpected:
        parts.append(f"unexpected keys {_few(unexpected)}")
    if shapes:
        parts.append(f"shape mismatches {_few(shapes)}")
    return "; ".join(parts) or None


def _few(items: list[str], n: int = 4) -> str:
    shown = ", ".join(items[:n])
    return f"[{shown}{', ...' if len(items) > n else ''}] ({len(items)})"


def to_safe(value: Any) -> Any:
    """Reduce hyperparameters to what `weights_only` loading accepts: primitives, containers, tensors."""
    if value is None or isinstance(value, (bool, int, float, str, torch.Tensor)):
        return value
    if isinstance(value, Mapping):
        return {str(k): to_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_safe(v) for v in value]
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return repr(value)
