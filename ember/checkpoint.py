"""What a checkpoint holds, how it is written atomically, and how it is loaded safely.

Shared by the Trainer, ModelCheckpoint, loggers and `Module.load_from_checkpoint`, so it sits
below them rather than inside `trainer/`: it imports nothing from ember but `errors`, `fs` and the
checkpoint-folder reader of `runtime/sharded_checkpoint.py`.
"""

from __future__ import annotations

import errno
import os
import pickle
import re
import zipfile
import zlib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, cast

import torch

from ember.errors import CheckpointError
from ember.fs import RemotePath, atomic_write, readable, storage_path
from ember.runtime.sharded_checkpoint import is_checkpoint_folder

FORMAT_VERSION = 1
#: The file `fit(ckpt_path="last")` resumes from (ModelCheckpoint keeps it current).
LAST_NAME = "last.ckpt"
#: The key under which every checkpoint stores the checksum of the rest of its contents.
CHECKSUM_KEY = "checksum"
_CHECKSUM_ALGORITHM = "crc32-arrays-v1"
_ZIP_MAGIC = b"PK\x03\x04"  # torch.save's format since 1.6
_LEGACY_MAGIC = b"\x80"  # a pickle stream: torch's format before 1.6


def save_checkpoint(state: Mapping[str, Any], path: str | os.PathLike[str] | RemotePath) -> Path | RemotePath:
    """Write `state` to `path` so that `path` is always either the old file or the complete new one.

    The contents are checked first (only what safe loading can restore: numbers, strings, tensors,
    numpy arrays and plain containers; anything else is refused here, naming its key, instead of
    at resume time) and a checksum of them is stored with them (`load_checkpoint` verifies it).
    The bytes go through `ember.fs.atomic_write`; a full disk or read-only folder is one
    CheckpointError naming the folder, and the previous file under `path` is left as it was.

    Example:
        >>> import tempfile, pathlib, torch
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "weights.ckpt"
        >>> _ = save_checkpoint({"state_dict": {"w": torch.ones(2)}}, path)
        >>> load_checkpoint(path)["state_dict"]["w"]
        tensor([1., 1.])
    """
    path = storage_path(path)  # a local Path, or a RemotePath on an object store (s3://, memory://, ...)
    payload = {k: v for k, v in state.items() if k != CHECKSUM_KEY}
    payload[CHECKSUM_KEY] = {"algorithm": _CHECKSUM_ALGORITHM, "value": payload_checksum(payload, check=True)}
    writer = None
    try:
        with atomic_write(path) as f:
            writer = _RecordingWriter(f)
            torch.save(payload, writer)  # type: ignore[arg-type]  # file-like: torch.save writes and flushes
    except (OSError, RuntimeError) as e:
        cause = writer.error if writer is not None and writer.error is not None else e
        if not isinstance(cause, OSError):
            raise
        raise _write_failed(path, cause) from None
    return path


class _RecordingWriter:
    """A file wrapper that remembers the OSError behind a failed write: torch.save reports a full
    disk as `RuntimeError: unexpected pos 814400 vs 814352`, which names neither cause nor folder."""

    def __init__(self, f: IO[Any]) -> None:
        self.f = f
        self.error: OSError | None = None

    def write(self, data: Any) -> int:
        try:
            return self.f.write(data)
        except OSError as e:
            self.error = e
            raise

    def flush(self) -> None:
        self.f.flush()


def _write_failed(path: Path | RemotePath, error: OSError) -> CheckpointError:
    reason = {
        errno.ENOSPC: "the disk is full",
        errno.EDQUOT: "the disk quota is exhausted",
        errno.EROFS: "the file system is read-only",
        errno.EACCES: "permission denied",
        errno.EPERM: "permission denied",
    }.get(error.errno or 0, error.strerror or type(error).__name__)
    return CheckpointError(
        f"could not write checkpoint {path.name} into {path.parent}: {reason}; free space or choose a "
        "writable folder (ModelCheckpoint(dirpath=...) or "
        "default_root_dir); the previous checkpoint there is unchanged"
    )


def payload_checksum(state: Any, check: bool = False) -> int:
    """A CRC-32 over the bytes, dtypes and shapes of every tensor and numpy array in `state`.

    Only the arrays: that is where a flipped bit goes unnoticed (a damaged pickle of the rest fails to
    load anyway), and a user who edits `module_class` or `hyper_parameters` and saves again keeps a
    loadable file.

    With `check=True` it also refuses, naming the key, anything safe loading could not restore.

    Example:
        >>> import torch
        >>> first = payload_checksum({"w": torch.zeros(2), "lr": 0.1})
        >>> first == payload_checksum({"w": torch.zeros(2), "lr": 0.2})
        True
        >>> payload_checksum({"w": torch.zeros(2)}) == payload_checksum({"w": torch.ones(2)})
        False
    """
    crc = 0
    for chunk in _chunks(state, "", check):
        crc = zlib.crc32(chunk, crc)
    return crc


_PRIMITIVES = (type(None), bool, int, float, complex, str, bytes, torch.dtype, torch.device)


def _chunks(value: Any, key: str, check: bool) -> Iterator[bytes | memoryview]:
    if isinstance(value, torch.Tensor):
        yield f"T{value.dtype}{tuple(value.shape)}".encode()
        yield _tensor_bytes(value)
    elif isinstance(value, _PRIMITIVES):
        return
    elif isinstance(value, Mapping):
        for k, v in value.items():
            if check and not isinstance(k, _PRIMITIVES):
                raise _unsafe(f"{key}[{k!r}] (the key itself)", k)
            yield from _chunks(v, f"{key}[{k!r}]", check)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from _chunks(v, f"{key}[{i}]", check)
    elif isinstance(value, (set, frozenset)):
        return
    elif _is_numpy(value):
        if check and value.dtype.hasobject:
            raise _unsafe(key, value, "a numpy array of Python objects")
        yield f"N{value.dtype.str}{getattr(value, 'shape', ())}".encode()
        yield _numpy_bytes(value)
    elif check:
        raise _unsafe(key, value)


def _tensor_bytes(tensor: torch.Tensor) -> bytes | memoryview:
    try:
        t = tensor.detach()
        if t.is_sparse:
            t = t.to_dense()
        if t.is_quantized:
            t = t.int_repr()
        t = t.cpu().reshape(-1)
        return t.view(torch.uint8).numpy().data if t.numel() else b""  # the array's bytes, not copied
    except (RuntimeError, TypeError, NotImplementedError):  # meta, nested, or other exotic tensors
        return b"?"


def _is_numpy(value: Any) -> bool:
    import sys

    np = sys.modules.get("numpy")
    return np is not None and isinstance(value, (np.ndarray, np.generic))


def _numpy_bytes(value: Any) -> bytes:
    import numpy as np

    return np.ascontiguousarray(value).tobytes()


def _unsafe(key: str, value: Any, what: str | None = None) -> CheckpointError:
    what = what or f"a {type(value).__module__}.{type(value).__qualname__}"
    return CheckpointError(
        f"checkpoint key {key or '(top level)'} holds {what}, which safe loading cannot restore, so the "
        "checkpoint could not be resumed; store plain data there instead (numbers, strings, lists, dicts, "
        "tensors, numpy arrays), e.g. obj.state_dict() or vars(obj), in on_save_checkpoint"
    )


def load_checkpoint(
    path: str | os.PathLike[str] | RemotePath,
    map_location: Any = "cpu",
    weights_only: bool | None = None,
    *,
    into_shards: bool = False,
) -> dict[str, Any]:
    """Load a checkpoint without executing code from it (`weights_only=True`), mapped to CPU by default.
    `weights_only=False` (the caller's word that the file is trusted) lets torch unpickle any object in it.

    A checkpoint *folder* (ModelParallelStrategy(save_distributed_checkpoint=True): DCP shards + `meta.pt`)
    is read whole in this one process (CPU tensors); `into_shards=True` reads none of its tensors but
    stands in for them (`ShardedStates`), for a strategy that loads them into its own shards.

    Numpy arrays stored by `on_save_checkpoint` come back as numpy arrays (only numpy's array and
    scalar constructors are allowed beyond torch's own safe list). The stored checksum is verified:
    a flipped bit is a CheckpointError naming the file, never silently different weights.

    Example:
        >>> ckpt = load_checkpoint("runs/version_0/checkpoints/last.ckpt")  # doctest: +SKIP
        >>> ckpt["progress"]["global_step"]                                   # doctest: +SKIP
    """
    path = storage_path(path)
    if isinstance(path, Path) and is_checkpoint_folder(path):  # folders are local (s3:// ones are refused)
        return _load_folder(path, map_location, weights_only, into_shards)
    _check_readable(path)
    try:
        with _numpy_allowed():
            ckpt = torch.load(
                readable(path), map_location=map_location, weights_only=weights_only is not False
            )
    except pickle.UnpicklingError as e:
        found = re.search(r"Unsupported global: GLOBAL ([\w.]+)", str(e))
        if found or "weights_only" in str(e):
            what = found.group(1) if found else "a non-tensor object"
            raise CheckpointError(
                f"checkpoint {path} contains {what}, which safe loading refuses to run; "
                "if you trust the file, load it with torch.load(path, weights_only=False) yourself"
            ) from None
        raise _corrupt(path, e) from None
    except PermissionError:
        raise _permission_denied(path) from None
    except (RuntimeError, EOFError, zipfile.BadZipFile, ValueError, OSError, KeyError) as e:
        raise _corrupt(path, e) from None
    if isinstance(ckpt, dict):
        _verify_checksum(path, ckpt)
    # torch.load says Any: a dict for every checkpoint file (weights_only=False may unpickle anything else)
    return cast(dict[str, Any], ckpt)


def _load_folder(
    path: Path, map_location: Any, weights_only: bool | None, into_shards: bool
) -> dict[str, Any]:
    """A checkpoint folder: its `meta.pt` (checked as any checkpoint file), with its tensors added."""
    from ember.runtime.sharded_checkpoint import METADATA_NAME, folder_full_states, folder_placeholders

    if not (path / ".metadata").is_file():
        raise CheckpointError(
            f"checkpoint folder {path} has {METADATA_NAME} but no .metadata (its shards' index): it is "
            "incomplete; resume from an earlier checkpoint in the same folder"
        )
    ckpt = load_checkpoint(path / METADATA_NAME, map_location, weights_only)
    ckpt.update(folder_placeholders(path) if into_shards else folder_full_states(path))
    return ckpt


def _check_readable(path: Path | RemotePath) -> None:
    """Say what is wrong with the path itself (missing, a folder, unreadable, not a checkpoint)."""
    try:
        with path.open("rb") as f:
            head = f.read(4)
    except FileNotFoundError:
        raise CheckpointError(
            f"checkpoint {path} does not exist; pass an existing file or ckpt_path='last'"
        ) from None
    except IsADirectoryError:
        raise CheckpointError(
            f"checkpoint {path} is a folder, not a file or a checkpoint folder (no meta.pt); pass the "
            ".ckpt file inside it (a save_sharded_checkpoint folder is loaded with load_sharded_checkpoint)"
        ) from None
    except PermissionError:
        raise _permission_denied(path) from None
    if not head.startswith(_ZIP_MAGIC) and not head.startswith(_LEGACY_MAGIC):
        shown = head.decode("latin-1").encode("unicode_escape").decode()
        raise CheckpointError(
            f"{path} is not a PyTorch checkpoint (it starts with {shown!r}, not a zip archive as torch.save "
            "writes); pass the .ckpt file written by ember or torch.save"
        )


def _permission_denied(path: Path | RemotePath) -> CheckpointError:
    return CheckpointError(
        f"permission denied reading checkpoint {path}; make it readable for this user (chmod u+r) or copy it"
    )


def _verify_checksum(path: Path | RemotePath, ckpt: dict[str, Any]) -> None:
    stored = ckpt.get(CHECKSUM_KEY)
    if not isinstance(stored, Mapping) or stored.get("algorithm") != _CHECKSUM_ALGORITHM:
        return  # written before checksums (or by torch.save): nothing to compare against
    payload = {k: v for k, v in ckpt.items() if k != CHECKSUM_KEY}
    if payload_checksum(payload) != stored.get("value"):
        raise CheckpointError(
            f"checkpoint {path} is corrupt: its contents do not match the checksum stored when it was "
            "written (damaged on disk or in transfer); resume from an earlier checkpoint in the same folder "
            "(if you changed its tensors yourself, delete its 'checksum' entry)"
        )


@contextmanager
def _numpy_allowed() -> Iterator[None]:
    """Let safe loading rebuild numpy arrays and scalars (their constructors only), for this load."""
    try:
        import numpy as np
    except ImportError:  # pragma: no cover - numpy comes with torch in practice
        yield
        return
    multiarray = getattr(np, "_core", None) or np.core
    allowed = [multiarray.multiarray._reconstruct, multiarray.multiarray.scalar, np.ndarray, np.dtype]
    allowed += [type(np.dtype(c)) for c in "?bhilqBHILQefdgFDGSUV"]
    with torch.serialization.safe_globals(allowed):
        yield


def _corrupt(path: Path | RemotePath, error: BaseException) -> CheckpointError:
    size = path.stat().st_size if path.exists() else 0
    return CheckpointError(
        f"checkpoint {path} ({size} bytes) is truncated or corrupt ({type(error).__name__}); "
        "resume from an earlier checkpoint in the same folder or start without ckpt_path"
    )


def find_last_checkpoint(
    folder: str | os.PathLike[str] | RemotePath, name: str = LAST_NAME[:-5]
) -> Path | RemotePath | None:
    """The newest of `folder/last.ckpt` and its versions `last-v1.ckpt`, `last-v2.ckpt`, ... (a new run in a
    used folder writes the next version, as in Lightning, whose ckpt_path="last" also takes the newest), or
    None. `name`: a ModelCheckpoint's CHECKPOINT_NAME_LAST. One
    run's own checkpoint folder, never searched recursively."""
    base = storage_path(folder)
    found, candidate = [], base / f"{name}.ckpt"
    while candidate.is_file() or is_checkpoint_folder(candidate):
        found.append(candidate)
        candidate = base / f"{name}-v{len(found)}.ckpt"
    if not found:
        return None
    if isinstance(base, Path):
        return max(found, key=lambda p: p.stat().st_mtime_ns)
    return found[-1]  # object stores: the highest version is the newest run's


def describe_plain_file(ckpt: Any) -> str | None:
    """What `ckpt` is when it is not an ember checkpoint but a file a plain script saved, or None.

    Example:
        >>> import torch
        >>> describe_plain_file({"fc.weight": torch.zeros(1)})
        "a plain state_dict (1 tensors such as 'fc.weight', as torch.save(model.state_dict()) writes)"
    """
    if not isinstance(ckpt, Mapping):
        return f"a {type(ckpt).__name__}, not a dict"
    if "state_dict" in ckpt:
        return None
    if {"state", "param_groups"} <= set(ckpt):
        return "a plain optimizer state_dict (as torch.save(optimizer.state_dict()) writes)"
    tensors = [k for k, v in ckpt.items() if isinstance(v, torch.Tensor)]
    if tensors:
        return (
            f"a plain state_dict ({len(tensors)} tensors such as {tensors[0]!r}, "
            "as torch.save(model.state_dict()) writes)"
        )
    return f"not an ember checkpoint (keys: {sorted(map(str, ckpt))[:6]})"


def describe_state_dict_mismatch(module: torch.nn.Module, state_dict: Mapping[str, Any]) -> str | None:
    """A one-line description of why `state_dict` does not fit `module`, or None when it fits."""
    own = module.state_dict()
    missing = [k for k in own if k not in state_dict]
    unexpected = [k for k in state_dict if k not in own]
    shapes = [
        f"{k} {tuple(state_dict[k].shape)} vs {tuple(v.shape)}"
        for k, v in own.items()
        if k in state_dict
        and isinstance(v, torch.Tensor)
        and isinstance(state_dict[k], torch.Tensor)
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
