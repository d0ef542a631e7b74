"""Sharded checkpoints (torch.distributed.checkpoint, "DCP"): every rank writes its own shard; one
process reads the folder back without a process group, and without running code from it.

Two layouts, one reader and one writer underneath:

- `save_sharded` (FSDPStrategy.save_sharded_checkpoint): `state_dict`, `optimizer_states` and extra values,
  all inside the DCP files;
- a Trainer checkpoint *folder* (ModelParallelStrategy(save_distributed_checkpoint=True), Lightning's
  layout): the DCP files hold `state_dict` and `optimizer_0`, `optimizer_1`, ...; global rank 0 writes
  everything else (progress, callbacks, hyperparameters) to `meta.pt`. `save_checkpoint_folder` writes it
  into a temporary folder and swaps it in under its name in one step (`ember.fs.replace_with_folder`), so
  a killed save leaves the previous checkpoint there complete. `folder_placeholders` stands in for its
  tensors until `load_module_shards` / `load_optimizer_shards` read them into a running sharded model
  (each rank reads the pieces its own shards need: DCP re-shards onto the mesh it runs on).

Example:
    >>> save_sharded(model, [optimizer], "run/sharded", global_step=16)  # doctest: +SKIP
    >>> state = load_sharded_checkpoint("run/sharded")  # doctest: +SKIP
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

from ember.errors import CheckpointError, ConfigError
from ember.fs import make_folders

#: The non-tensor part of a checkpoint folder (Lightning's name, lightning.fabric.utilities.load).
METADATA_NAME = "meta.pt"
#: The key prefix of the i-th optimizer's state inside a checkpoint folder's DCP files (Lightning's).
OPTIMIZER_KEY = "optimizer_{}"
#: The checkpoint keys whose values live in the DCP files; the rest goes to meta.pt.
SHARDED_KEYS = ("state_dict", "optimizer_states")


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


def load_sharded_checkpoint(folder: str | os.PathLike[str], keys: set[str] | None = None) -> dict[str, Any]:
    """Read a sharded (torch.distributed.checkpoint) folder in ONE process, no process group needed:
    returns plain tensors, e.g. `model.load_state_dict(load_sharded_checkpoint(f)["state_dict"])`.

    Opening it runs no code from the folder: torch reads the `.metadata` file with plain `pickle.load`
    and non-tensor values with `torch.load(weights_only=False)`; ember reads the first with an
    allow-list of DCP's own metadata classes and the second with `weights_only=True`, so a crafted
    folder is refused in one line (`CheckpointError`).

    `keys`: read only these top-level entries (or dotted prefixes, e.g. "optimizer_0.param_groups").

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
    planner = _safe_planner(keys)
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


def _enum_member_only(where: Path) -> Any:
    """What `builtins.getattr` means in a `.metadata` pickle: Python 3.11.0-3.11.4 (Debian 12's 3.11.2
    among them) pickle an Enum member as `getattr(EnumClass, name)`, later releases as `EnumClass(value)`.
    The class has come through the allow-list; only a member of an Enum among them is handed out, never
    another attribute (a method a crafted file could call next)."""
    import enum

    def member(owner: Any, name: Any) -> Any:
        if isinstance(owner, enum.EnumMeta) and isinstance(name, str) and name in owner.__members__:
            return owner.__members__[name]
        raise CheckpointError(
            f"{where / '.metadata'} asks for {getattr(owner, '__name__', type(owner).__name__)}.{name}, "
            "which is not a member of an enum of a torch.distributed.checkpoint folder; ember does not load "
            "it (it could run code). Use a folder save_sharded_checkpoint wrote"
        )

    return member


def _metadata_unpickler(stream: Any, where: Path) -> Any:
    import pickle

    class AllowList(pickle.Unpickler):
        def find_class(self, module: str, name: str) -> Any:
            if (module, name) == ("builtins", "getattr"):
                return _enum_member_only(where)
            if name in _DCP_METADATA_CLASSES.get(module, ()) or (
                module == "torch" and isinstance(getattr(torch, name, None), torch.dtype)
            ):
                return super().find_class(module, name)
            raise CheckpointError(
                f"{where / '.metadata'} names {module}.{name}, which is not part of a "
                "torch.distributed.checkpoint folder; ember does not load it (it could run code). Use a "
                "folder save_sharded_checkpoint wrote"
            )

    return AllowList(stream)


def _read_metadata(where: Path) -> Any:
    """The folder's `.metadata` (a pickle), read through the allow-list: a CheckpointError for anything
    else."""
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


def _safe_planner(keys: set[str] | None = None, into_existing: bool = False) -> Any:
    """DCP's planner, with non-tensor values read `weights_only=True` (torch's reads them with
    `weights_only=False`): for loading into an empty state dict (one process), or `into_existing`, into
    the running model's own state dicts (every rank)."""
    import io

    from torch.distributed.checkpoint.default_planner import DefaultLoadPlanner, set_element
    from torch.distributed.checkpoint.format_utils import _EmptyStateDictLoadPlanner

    base = DefaultLoadPlanner if into_existing else _EmptyStateDictLoadPlanner

    class SafePlanner(base):  # type: ignore[valid-type,misc]
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

    return SafePlanner() if into_existing else SafePlanner(keys)


def load_sharded_into(
    module: torch.nn.Module, optimizers: list[torch.optim.Optimizer], folder: str | os.PathLike[str]
) -> None:
    """Load a sharded folder into a running sharded `module` (and `optimizers`), on any mesh: each rank
    reads the pieces its own shards need, so a folder saved on 1x2 ranks loads on 2x1 (DCP re-shards).

    Every rank must call it (a collective). Only tensors are read (the weights and optimizer states),
    with the folder's index read through the same allow-list as `load_sharded_checkpoint`.
    """
    from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

    where = Path(folder)
    if not (where / ".metadata").is_file():
        raise CheckpointError(
            f"{where} is not a sharded checkpoint folder (no .metadata file); pass the folder "
            "save_sharded_checkpoint wrote"
        )
    model_state, optim_state = get_state_dict(module, optimizers)
    state: dict[str, Any] = {"state_dict": model_state}
    if optimizers:
        state["optimizer_states"] = optim_state
    _load_in_place(state, where)
    set_state_dict(
        module,
        optimizers,
        model_state_dict=state["state_dict"],
        optim_state_dict=state.get("optimizer_states", {}),
    )


def _load_in_place(state: dict[str, Any], where: Path) -> None:
    """DCP-load `where` into `state` (the running model's own state dicts, every rank): the index is read
    through the allow-list and non-tensor values with `weights_only=True`."""
    import torch.distributed.checkpoint as dcp

    planner = _safe_planner(into_existing=True)
    try:
        dcp.load(state, storage_reader=_safe_reader(where, _read_metadata(where)), planner=planner)
    except BaseException:  # torch's CheckpointException is a BaseException
        if planner.refused is not None:
            raise planner.refused from None
        raise


# ---- Trainer checkpoint folders (Lightning's layout: DCP files + meta.pt) --------------------------------
def is_checkpoint_folder(path: Any) -> bool:
    """Whether `path` is a Trainer checkpoint folder (Lightning's test: a folder holding `meta.pt`)."""
    return isinstance(path, Path) and path.is_dir() and (path / METADATA_NAME).is_file()


def save_checkpoint_folder(
    state: dict[str, Any],
    final: str | os.PathLike[str],
    *,
    is_global_zero: bool,
    broadcast: Any,
    write_metadata: Any,
) -> Path:
    """Write the checkpoint `state` as a folder under `final`: each rank its shards of `state_dict` and
    `optimizer_states` (DTensors: DCP writes each rank's local pieces), global rank zero the rest with
    `write_metadata(rest, path)` (ember's checked, checksummed checkpoint writer). Every rank must call it.

    It is written into a fresh temporary folder beside `final` and swapped in under that name only when
    every rank succeeded, so `final` always holds the previous checkpoint or the complete new one; a save
    that failed anywhere raises on every rank and leaves no temporary folder behind.
    """
    from ember.fs import is_url, make_temporary_folder

    if is_url(final):
        raise ConfigError(
            "ModelParallelStrategy(save_distributed_checkpoint=True) writes a folder of shards on a local "
            f"or shared file system, not to {final}; pass a local dirpath, or "
            "save_distributed_checkpoint=False"
        )
    final = Path(final)
    made: tuple[str, str] | None = None
    if is_global_zero:
        try:
            make_folders(final.parent)
            _refuse_planted_links(final.parent)
            _remove_killed_saves(final)
            made = (
                "ok",
                str(make_temporary_folder(f".{final.name}.{os.getpid()}.", final.parent, ".ember-tmp")),
            )
        except Exception as e:  # every rank learns it (they wait in the broadcast), rank zero raises it
            made = ("error", f"{type(e).__name__}: {e}")
            broadcast(made)
            raise
    outcome, where = broadcast(made)
    if outcome == "error":
        raise CheckpointError(f"could not write checkpoint folder {final}: global rank 0 failed ({where})")
    folder = Path(where)
    sharded = {"state_dict": state["state_dict"]}
    for index, optimizer_state in enumerate(state.get("optimizer_states") or []):
        sharded[OPTIMIZER_KEY.format(index)] = optimizer_state
    error = _write_shards(sharded, folder)
    if is_global_zero and error is None:
        try:
            write_metadata({k: v for k, v in state.items() if k not in SHARDED_KEYS}, folder / METADATA_NAME)
        except Exception as e:  # said on every rank below, raised here
            error = e
    failed = broadcast(None if error is None else f"{type(error).__name__}: {error}")
    if is_global_zero:
        _finish(folder, final, failed)
    if error is not None:
        raise error
    if failed is not None:
        raise CheckpointError(f"could not write checkpoint folder {final}: global rank 0 failed ({failed})")
    broadcast(None)  # every rank returns once the folder is in place
    return final


def save_checkpoint_file_over_folder(state: dict[str, Any], final: Any, write_file: Any) -> None:
    """Rank zero, save_distributed_checkpoint=False: the full checkpoint as one file, `write_file(state,
    path)`. A checkpoint folder under that name (a run that wrote folders) is replaced by the file, as
    Lightning replaces it, but in one step: the file is written inside a temporary folder beside it and
    swapped in, so a killed save leaves the folder."""
    from ember.fs import make_temporary_folder, replace_with_folder

    if not is_checkpoint_folder(final):
        write_file(state, final)
        return
    _remove_killed_saves(final)
    folder = make_temporary_folder(f".{final.name}.{os.getpid()}.", final.parent, ".ember-tmp")
    write_file(state, folder / final.name)
    replace_with_folder(folder, final, entry=final.name)


def _remove_killed_saves(final: Path) -> None:
    """The temporary folders of earlier saves of `final` whose writer no longer runs (killed mid-save): never
    read by anything, so they go (ember's own names only: `.<name>.<pid>.<random>.ember-tmp`)."""
    from ember.fs import is_temporary, remove_temporary_folder
    from ember.fs.atomic import process_alive

    prefix = f".{final.name}."
    for entry in final.parent.iterdir():
        if not (entry.name.startswith(prefix) and is_temporary(entry.name)) or entry.is_symlink():
            continue
        pid = entry.name[len(prefix) :].split(".", 1)[0]
        if entry.is_dir() and pid.isdigit() and not process_alive(int(pid)):
            remove_temporary_folder(entry)


def _write_shards(sharded: dict[str, Any], folder: Path) -> BaseException | None:
    """Every rank writes its shards (a collective: torch reports a failure on any rank to all of them)."""
    import torch.distributed.checkpoint as dcp

    try:
        dcp.save(sharded, checkpoint_id=str(folder))
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # torch's CheckpointException is a BaseException
        return e if isinstance(e, Exception) else CheckpointError(f"torch.distributed.checkpoint: {e}")
    return None


def _finish(folder: Path, final: Path, failed: str | None) -> None:
    """Rank zero: swap the complete folder in under its name, or drop it after a failure."""
    from ember.fs import remove_temporary_folder, replace_with_folder

    if failed is not None:
        remove_temporary_folder(folder)
        return
    replace_with_folder(folder, final)


class ShardedStates(dict):
    """Stands in, in a checkpoint read from a folder, for the states DCP loads straight into the running
    model's shards: the names and shapes (tensors on the "meta" device) or the optimizer's param_groups, so
    the checks before loading see what the folder holds; `folder` and `key` say where the values are."""

    def __init__(self, values: dict[str, Any], folder: Path, key: str) -> None:
        super().__init__(values)
        self.folder, self.key = folder, key


def folder_placeholders(folder: Path) -> dict[str, Any]:
    """`state_dict` and `optimizer_states` of a checkpoint folder, as `ShardedStates` (no tensor is read)."""
    from torch.distributed.checkpoint.metadata import TensorStorageMetadata

    metadata = _read_metadata(folder)
    weights: dict[str, Any] = {}
    optimizers: set[int] = set()
    for fqn, item in metadata.state_dict_metadata.items():
        top, _, name = fqn.partition(".")
        if top == "state_dict" and isinstance(item, TensorStorageMetadata):
            weights[name] = torch.empty(item.size, dtype=item.properties.dtype, device="meta")
        elif top.startswith("optimizer_") and top[len("optimizer_") :].isdigit():
            optimizers.add(int(top[len("optimizer_") :]))
    keys = {f"{OPTIMIZER_KEY.format(i)}.param_groups" for i in optimizers}
    groups = load_sharded_checkpoint(folder, keys) if keys else {}
    states: dict[str, Any] = {"state_dict": ShardedStates(weights, folder, "state_dict")}
    if optimizers:  # none: a weights-only checkpoint (the Trainer says so if fit is asked to resume it)
        states["optimizer_states"] = [
            ShardedStates(
                {"state": {}, "param_groups": groups[OPTIMIZER_KEY.format(i)]["param_groups"]},
                folder,
                OPTIMIZER_KEY.format(i),
            )
            for i in range(len(optimizers))
        ]
    return states


def folder_full_states(folder: Path) -> dict[str, Any]:
    """`state_dict` and `optimizer_states` of a checkpoint folder, whole, in ONE process (no process group):
    for loading into a plain module (`Module.load_from_checkpoint`) or resuming without shards."""
    states = load_sharded_checkpoint(folder)
    count = sum(1 for key in states if key.startswith("optimizer_"))
    whole: dict[str, Any] = {"state_dict": states.get("state_dict", {})}
    if count:  # none: a weights-only checkpoint
        whole["optimizer_states"] = [states[OPTIMIZER_KEY.format(i)] for i in range(count)]
    return whole


def load_module_shards(module: torch.nn.Module, states: ShardedStates) -> None:
    """Read a checkpoint folder's weights into the running sharded `module` (every rank: a collective)."""
    from torch.distributed.checkpoint.state_dict import get_model_state_dict, set_model_state_dict

    model_state = get_model_state_dict(module)
    _load_in_place({states.key: model_state}, states.folder)
    set_model_state_dict(module, model_state)


def load_optimizer_shards(
    module: torch.nn.Module, optimizer: torch.optim.Optimizer, states: ShardedStates
) -> None:
    """Read a checkpoint folder's optimizer state into `optimizer` of the running sharded `module`."""
    from torch.distributed.checkpoint.state_dict import get_optimizer_state_dict, set_optimizer_state_dict

    optimizer_state = get_optimizer_state_dict(module, optimizer)
    _load_in_place({states.key: optimizer_state}, states.folder)
    set_optimizer_state_dict(module, optimizer, optim_state_dict=optimizer_state)
