"""Sharded checkpoints (torch.distributed.checkpoint, "DCP"): every rank writes its own shard; one
process reads the folder back without a process group, and without running code from it.

Example:
    >>> save_sharded(model, [optimizer], "run/sharded", global_step=16)  # doctest: +SKIP
    >>> state = load_sharded_checkpoint("run/sharded")  # doctest: +SKIP
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

from ember.errors import CheckpointError


def save_sharded(
    module: torch.nn.Module,
    optimizers: list[torch.optim.Optimizer],
    folder: str | os.PathLike[str],
    **extra: Any,
) -> Path:
    """Each rank writes its own shard of the weights and optimizer states into `folder`, plus `extra`.

    Every rank must call it (a collective). The keys are a Trainer checkpoint's: `state_dict`,
    `optimizer_states`, then `extra` (e.g. global_step, epoch).
    """
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict

    model_state, optim_state = get_state_dict(module, optimizers)
    _refuse_planted_links(Path(folder))
    dcp.save({"state_dict": model_state, "optimizer_states": optim_state, **extra}, checkpoint_id=str(folder))
    return Path(folder)


def _refuse_planted_links(folder: Path) -> None:
    """DCP opens its shard files by name: the folder, and anything already in it, must not be a link that
    would redirect a rank's writes (one line naming the link)."""
    from ember.fs import refuse_link, refuse_linked_folders

    refuse_linked_folders(folder)
    if folder.is_dir():
        for entry in folder.iterdir():
            refuse_link(entry, "checkpoint shard")


def load_sharded_checkpoint(folder: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a sharded (torch.distributed.checkpoint) folder in ONE process, no process group needed:
    returns plain tensors, e.g. `model.load_state_dict(load_sharded_checkpoint(f)["state_dict"])`.

    Opening it runs no code from the folder: torch reads the `.metadata` file with plain `pickle.load`
    and non-tensor values with `torch.load(weights_only=False)`; ember reads the first with an
    allow-list of DCP's own metadata classes and the second with `weights_only=True`, so a crafted
    folder is refused in one line (`CheckpointError`).

    Example:
        >>> state = load_sharded_checkpoint("run/sharded")  # doctest: +SKIP
    """
    from torch.distributed.checkpoint.state_dict_loader import _load_state_dict

    where = Path(folder)
    if not (where / ".metadata").is_file():
        raise CheckpointError(
            f"{where} is not a sharded checkpoint folder (no .metadata file); pass the folder "
            "FSDPStrategy.save_sharded_checkpoint wrote"
        )
    metadata = _read_metadata(where)  # refused here, in one line, before torch's loader sees the folder
    planner = _safe_planner()
    state: dict[str, Any] = {}
    try:  # what torch's own dcp_to_torch_save does, with the safe reader and planner
        _load_state_dict(state, storage_reader=_safe_reader(where, metadata), planner=planner, no_dist=True)
    except BaseException:  # torch's CheckpointException is a BaseException
        if planner.refused is not None:  # torch wraps it: name the refusal, not the wrapper
            raise planner.refused from None
        raise
    return state


#: What a DCP `.metadata` pickle may name: torch's own metadata records, sizes, dtypes, paths.
_DCP_METADATA_CLASSES = {
    "torch.distributed.checkpoint.metadata": {
        "Metadata",
        "TensorStorageMetadata",
        "BytesStorageMetadata",
        "ChunkStorageMetadata",
        "TensorProperties",
        "MetadataIndex",
        "StorageMeta",
        "_MEM_FORMAT_ENCODING",
    },
    "torch.distributed.checkpoint.filesystem": {"_StorageInfo"},
    "torch.serialization": {"_get_layout"},
    "torch": {"Size"},
    "pathlib": {"Path", "PosixPath", "WindowsPath", "PurePath", "PurePosixPath", "PureWindowsPath"},
    "collections": {"OrderedDict"},
    "builtins": {"set", "frozenset", "slice", "complex"},
}


def _metadata_unpickler(stream: Any, where: Path) -> Any:
    import pickle

    class AllowList(pickle.Unpickler):
        def find_class(self, module: str, name: str) -> Any:
            if name in _DCP_METADATA_CLASSES.get(module, ()) or (
                module == "torch" and isinstance(getattr(torch, name, None), torch.dtype)
            ):
                return super().find_class(module, name)
            raise CheckpointError(
                f"{where / '.metadata'} names {module}.{name}, which is not part of a torch.distributed.checkpoint "
                "folder; ember does not load it (it could run code). Use a folder save_sharded_checkpoint wrote"
            )

    return AllowList(stream)


def _read_metadata(where: Path) -> Any:
    """The folder's `.metadata` (a pickle), read through the allow-list: a CheckpointError for anything else."""
    from torch.distributed.checkpoint.metadata import Metadata

    try:
        with open(where / ".metadata", "rb") as stream:
            metadata = _metadata_unpickler(stream, where).load()
    except CheckpointError:
        raise
    except PermissionError:
        raise CheckpointError(f"cannot read {where / '.metadata'}: permission denied") from None
    except Exception as e:  # a truncated or garbled pickle: whatever the unpickler raises
        raise CheckpointError(
            f"{where / '.metadata'} is not a readable sharded-checkpoint index "
            f"({type(e).__name__}: {str(e)[:160]}); pass the folder save_sharded_checkpoint wrote"
        ) from None
    if not isinstance(metadata, Metadata):
        raise CheckpointError(
            f"{where / '.metadata'} holds a {type(metadata).__name__}, not a "
            "torch.distributed.checkpoint Metadata; pass the folder save_sharded_checkpoint wrote"
        )
    return metadata


def _safe_reader(where: Path, metadata: Any) -> Any:
    """DCP's FileSystemReader, handing out the metadata ember already read through the allow-list."""
    from torch.distributed.checkpoint import FileSystemReader
    from torch.distributed.checkpoint.metadata import StorageMeta

    class SafeReader(FileSystemReader):
        def read_metadata(self, *args: Any, **kwargs: Any) -> Any:
            if getattr(metadata, "storage_meta", None) is None:
                metadata.storage_meta = StorageMeta()
            metadata.storage_meta.load_id = self.load_id
            return metadata

    return SafeReader(where)


def _safe_planner() -> Any:
    """DCP's planner for loading into an empty state dict, with non-tensor values read `weights_only=True`."""
    import io

    from torch.distributed.checkpoint.default_planner import set_element
    from torch.distributed.checkpoint.format_utils import _EmptyStateDictLoadPlanner

    class SafePlanner(_EmptyStateDictLoadPlanner):
        refused: Exception | None = None

        def load_bytes(self, read_item: Any, value: io.BytesIO) -> None:
            try:
                loaded = torch.load(value, weights_only=True)
            except Exception as e:  # weights_only refuses anything that would run code
                lines = str(e).strip().splitlines() or [type(e).__name__]
                why = next((line.strip() for line in lines if "GLOBAL" in line), lines[0])
                self.refused = CheckpointError(
                    f"the sharded checkpoint's value {read_item.dest_index.fqn!r} cannot be loaded safely "
                    f"({why[:160]}); ember does not run code from a checkpoint"
                )
                raise self.refused from None
            if self.flatten_state_dict:
                set_element(self.original_state_dict, self.mappings[read_item.dest_index.fqn], loaded)
            else:
                self.state_dict[read_item.dest_index.fqn] = loaded

    return SafePlanner()


def load_sharded_into(
    module: torch.nn.Module, optimizers: list[torch.optim.Optimizer], folder: str | os.PathLike[str]
) -> None:
    """Load a sharded folder into a running sharded `module` (and `optimizers`), on any mesh: each rank
    reads the pieces its own shards need, so a folder saved on 1x2 ranks loads on 2x1 (DCP re-shards).

    Every rank must call it (a collective). Only tensors are read (the weights and optimizer states),
    with the folder's index read through the same allow-list as `load_sharded_checkpoint`.
    """
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

    where = Path(folder)
    if not (where / ".metadata").is_file():
        raise CheckpointError(
            f"{where} is not a sharded checkpoint folder (no .metadata file); pass the folder "
            "save_sharded_checkpoint wrote"
        )
    model_state, optim_state = get_state_dict(module, optimizers)
    state = {"state_dict": model_state, **({"optimizer_states": optim_state} if optimizers else {})}
    dcp.load(state, storage_reader=_safe_reader(where, _read_metadata(where)))
    set_state_dict(
        module,
        optimizers,
        model_state_dict=state["state_dict"],
        optim_state_dict=state.get("optimizer_states", {}),
    )
