"""DDP and FSDP: one process per device, the model wrapped (DDP) or sharded (FSDP2), data sharded by ember.

torch.distributed is the engine (DESIGN decision 6): this file joins the process group, wraps the
module, inserts samplers and forwards collectives. Starting the processes is `runtime/launch.py`.

Preemption without a per-step collective: a SIGTERM on any rank only raises a local "pending"
flag. The flag rides in the gradient all-reduce DDP already does on every synchronising step (one
extra float appended to the first bucket, see `_stop_flag_hook`), so after that backward every rank
holds the same answer to "did any rank get a signal?", and all of them stop after the same step.

Example (in a script; `python train.py` starts 2 processes, torchrun works too):
    >>> trainer = ember.Trainer(strategy="ddp", devices=2, accelerator="cpu")  # doctest: +SKIP
    >>> trainer.fit(model, loader)  # doctest: +SKIP
"""

from __future__ import annotations

import atexit
import contextlib
import datetime
import os
import signal
import sys
import time
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, IterableDataset, RandomSampler

from ember.errors import ConfigError
from ember.runtime import devices as device_utils

_OPS = {"mean": "sum", "sum": "sum", "max": "max", "min": "min"}
#: Default collective timeout: long enough for a slow checkpoint write, short enough to surface a hang.
DEFAULT_TIMEOUT = datetime.timedelta(minutes=10)


def env_is_distributed() -> bool:
    """True inside a worker started by ember's launcher, torchrun, or a SLURM/MPI-style launcher."""
    return all(name in os.environ for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"))


def join_process_group(backend: str, timeout: datetime.timedelta) -> None:
    """`dist.init_process_group` from RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT, the rendezvous store bound
    to MASTER_ADDR rather than to every interface.

    torch's env:// rendezvous makes rank 0 a TCPStore server listening on *all* interfaces, whatever
    MASTER_ADDR says, so any host that can reach the machine could talk to a local run's store. ember
    binds the listening socket itself and hands it to the store (`master_listen_fd`): a loopback
    MASTER_ADDR (ember's own launcher uses 127.0.0.1) listens on loopback only, an IP address on that
    address only. A host *name* keeps torch's behaviour (a name can resolve to 127.0.1.1 on the master
    while the other nodes reach it by its network address), as does torchrun, whose agent owns the store.
    """
    address = _store_bind_address()
    if address is None:
        dist.init_process_group(backend, timeout=timeout)
        return
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    port = int(os.environ["MASTER_PORT"])
    if rank == 0:
        store = dist.TCPStore(os.environ["MASTER_ADDR"], port, world, True, timeout=timeout, wait_for_workers=False,
                              master_listen_fd=_listening_socket(address, port))
    else:
        store = dist.TCPStore(os.environ["MASTER_ADDR"], port, world, False, timeout=timeout)
    dist.init_process_group(backend, store=store, rank=rank, world_size=world, timeout=timeout)


def _store_bind_address() -> str | None:
    """The IP the rendezvous store should listen on, or None to leave it to torch (see join_process_group)."""
    import ipaddress

    if os.environ.get("TORCHELASTIC_USE_AGENT_STORE", "").lower() == "true":
        return None  # torchrun's agent already serves the store; the ranks are its clients
    host = os.environ.get("MASTER_ADDR", "")
    if host == "localhost":
        return "127.0.0.1"
    try:
        return str(ipaddress.ip_address(host.strip("[]")))
    except ValueError:
        return None


def _listening_socket(address: str, port: int) -> int:
    """A socket listening on exactly (address, port); its descriptor is handed over to the TCPStore."""
    import socket

    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((address, port))
        sock.listen(socket.SOMAXCONN)
    except OSError as e:
        sock.close()
        raise ConfigError(f"rank 0 cannot listen on MASTER_ADDR={address} MASTER_PORT={port} ({e.strerror or e}); "
                          "set MASTER_ADDR to an address of this machine and MASTER_PORT to a free port") from None
    return sock.detach()  # the store owns the descriptor from now on


class DDPStrategy:
    """DistributedDataParallel on one machine (spawned) or many (torchrun), same interface as SingleDeviceStrategy.

    Args:
        max_failures: restart all workers from the last checkpoint up to this many times when one
            dies or raises (only when ember starts the workers; torchrun has `--max-restarts`).
        timeout: collective timeout; a rank stuck longer than this raises instead of hanging.
        process_group_backend: "gloo" or "nccl"; default nccl on CUDA, gloo otherwise.
        **ddp_kwargs: passed to `torch.nn.parallel.DistributedDataParallel` (e.g. find_unused_parameters).

    Example:
        >>> ember.Trainer(strategy=DDPStrategy(max_failures=1), devices=2)  # doctest: +SKIP
    """

    name = "ddp"

    def __init__(self, *, max_failures: int = 0, timeout: datetime.timedelta = DEFAULT_TIMEOUT,
                 process_group_backend: str | None = None, **ddp_kwargs: Any) -> None:
        if not isinstance(max_failures, int) or max_failures < 0:
            raise ConfigError(f"max_failures={max_failures!r} must be a non-negative int")
        self.max_failures, self.timeout = max_failures, timeout
        self.process_group_backend, self.ddp_kwargs = process_group_backend, ddp_kwargs
        self.device_type, self.device_ids = "cpu", [0]
        self._ddp: torch.nn.parallel.DistributedDataParallel | None = None
        self._trainer: Any = None
        self._pending_signal: int | None = None  # this rank's, not yet agreed
        self._stop_flag = torch.zeros(1)
        self._counted_epoch: int | None = None  # the epoch whose batch counts the ranks compared

    # ---- where we are ------------------------------------------------------------------------
    def configure(self, device_type: str, device_ids: list[int]) -> DDPStrategy:
        """Called by the Trainer with the resolved accelerator and devices."""
        self.device_type, self.device_ids = device_type, list(device_ids)
        return self

    @property
    def world_size(self) -> int:
        return int(os.environ.get("WORLD_SIZE", len(self.device_ids)))

    @property
    def global_rank(self) -> int:
        return int(os.environ.get("RANK", 0))

    @property
    def local_rank(self) -> int:
        return int(os.environ.get("LOCAL_RANK", 0))

    @property
    def node_rank(self) -> int:
        return int(os.environ.get("GROUP_RANK", os.environ.get("NODE_RANK", 0)))

    @property
    def is_global_zero(self) -> bool:
        return self.global_rank == 0

    @property
    def root_device(self) -> torch.device:
        if self.device_type == "cpu":
            return torch.device("cpu")
        ids = self.device_ids
        index = ids[self.local_rank] if self.local_rank < len(ids) else self.local_rank
        return device_utils.root_device(self.device_type, index)

    @property
    def launcher(self) -> Any:
        """The process launcher: starts workers here, or tells a restarted worker to resume."""
        from ember.runtime.launch import Launcher

        return Launcher(num_processes=len(self.device_ids), max_failures=self.max_failures)

    # ---- set-up -------------------------------------------------------------------------------
    def setup_environment(self) -> None:
        """Join the process group the launcher (ember's, torchrun, SLURM) described in the environment."""
        if not env_is_distributed():
            raise ConfigError(
                "strategy='ddp' needs RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT; call trainer.fit from a "
                "script (ember starts the processes) or run it under torchrun"
            )
        install_error_report()
        if self.device_type == "cuda":
            torch.cuda.set_device(self.root_device)
        if not dist.is_initialized():
            backend = self.process_group_backend or ("nccl" if self.device_type == "cuda" else "gloo")
            join_process_group(backend, self.timeout)
            # The group outlives fit (test/predict may follow) but not the process: see leave_process_group.
            atexit.register(leave_process_group)

    def setup_module(self, module: torch.nn.Module) -> torch.nn.Module:
        """Move to this rank's device and wrap in DDP, with the stop-flag riding the gradient all-reduce."""
        module = module.to(self.root_device)
        device_ids = [self.root_device.index] if self.root_device.type == "cuda" else None
        self._ddp = torch.nn.parallel.DistributedDataParallel(module, device_ids=device_ids, **self.ddp_kwargs)
        self._stop_flag = torch.zeros(1, device=self.root_device)
        self._ddp.register_comm_hook(self, _stop_flag_hook)
        return self._ddp

    # ---- the step ------------------------------------------------------------------------------
    def training_step(self, module: Any, batch: Any, batch_idx: int) -> Any:
        """Call `module.training_step` through the DDP wrapper, so backward all-reduces gradients.

        Whether this backward synchronises is decided here, at forward time (that is when DDP
        prepares its reducer): not on accumulation micro-steps, always on the epoch's last batch.
        """
        assert self._ddp is not None, "setup_module was not called"
        self._trainer = getattr(module, "_trainer", None)
        self._agree_on_batch_count()
        sync = self._syncs_this_step(batch_idx)
        with _forward_as(module, module.training_step), (contextlib.nullcontext() if sync else self._ddp.no_sync()):
            return self._ddp(batch, batch_idx)

    def _agree_on_batch_count(self) -> None:
        """Once an epoch (its first step here): do all ranks hold the same number of training batches?

        Data ember shards has equal counts by construction; data the user sharded may not, and then a
        rank that runs out first leaves its peers waiting in a gradient all-reduce that never matches
        (a mismatched-collective error or a hang). One tiny all-gather an epoch turns that into one line.
        """
        trainer = self._trainer
        epoch = getattr(trainer, "current_epoch", None)
        if trainer is None or epoch == self._counted_epoch or self.world_size == 1:
            return
        self._counted_epoch = epoch
        count = float(getattr(trainer, "num_training_batches", float("inf")))
        counts = self.all_gather(torch.tensor([count], dtype=torch.float64, device=self.root_device)).flatten().tolist()
        if any(c == float("inf") for c in counts) or len(set(counts)) == 1:
            return  # unknown lengths cannot be compared; equal ones are fine
        listed = ", ".join(f"rank {rank}: {int(c)}" for rank, c in enumerate(counts))
        raise ConfigError(
            f"the ranks hold different numbers of training batches in epoch {epoch} ({listed}); DDP needs the same "
            "number on every rank: pass the whole dataset and let ember shard it (a DataLoader or ember Dataset), "
            "or make every rank's shard the same size"
        )

    def _syncs_this_step(self, batch_idx: int) -> bool:
        trainer = self._trainer
        optimization = getattr(trainer, "_optimization", None)
        accumulate = getattr(trainer, "accumulate_grad_batches", 1)
        if trainer is None or accumulate == 1 or not hasattr(optimization, "micro_step"):
            return True
        last_batch = batch_idx + 1 >= trainer.num_training_batches
        return optimization.micro_step + 1 >= accumulate or last_batch

    def no_backward_sync(self, enabled: bool) -> Any:
        """Nothing to do here: `training_step` already chose, at forward time, whether backward syncs."""
        return contextlib.nullcontext()

    # ---- data ----------------------------------------------------------------------------------
    def process_dataloader(self, dataloader: Any, shuffle: bool) -> Any:
        """Give this rank its shard, with the same number of batches on every rank."""
        return shard_for_rank(dataloader, self.world_size, self.global_rank)

    # ---- collectives ---------------------------------------------------------------------------
    def reduce(self, tensor: torch.Tensor, op: str = "mean") -> torch.Tensor:
        """All-reduce a tensor (mean, sum, max or min); used by `self.log(..., sync_dist=True)`."""
        if op not in _OPS:
            raise ConfigError(f"reduce op {op!r} is not known; use one of {sorted(_OPS)}")
        value = tensor.detach().clone().to(self.root_device, torch.float64 if self.root_device.type == "cpu" else torch.float32)
        dist.all_reduce(value, op=getattr(dist.ReduceOp, _OPS[op].upper()))
        if op == "mean":
            value /= self.world_size
        return value.to(tensor.dtype) if tensor.is_floating_point() else value

    def all_gather(self, tensor: torch.Tensor) -> torch.Tensor:
        parts = [torch.empty_like(tensor) for _ in range(self.world_size)]
        dist.all_gather(parts, tensor.contiguous())
        return torch.stack(parts)

    def broadcast(self, obj: Any, src: int = 0) -> Any:
        box = [obj]
        dist.broadcast_object_list(box, src=src)
        return box[0]

    def barrier(self, name: str | None = None) -> None:
        if dist.is_initialized():
            dist.barrier()

    def any_rank(self, flag: bool) -> bool:
        value = torch.tensor([1.0 if flag else 0.0], device=self.root_device)
        dist.all_reduce(value, op=dist.ReduceOp.MAX)
        return bool(value.item())

    def module_state_dict(self, module: torch.nn.Module) -> dict[str, Any]:
        return module.state_dict()  # the unwrapped module: keys without DDP's "module." prefix

    # ---- preemption ----------------------------------------------------------------------------
    def on_signal(self, signum: int) -> None:
        """SIGTERM handler body: remember it; the next synchronising backward tells every rank."""
        self._pending_signal = signum
        self._stop_flag.fill_(1.0)

    def _agreed_stop(self) -> None:
        """Called on every rank after the same backward: some rank got a signal, all stop after this step."""
        if self._trainer is not None and not self._trainer._signal_received:
            self._trainer._signal_received = self._pending_signal or signal.SIGTERM
            mark_interrupted()

    def teardown(self) -> None:
        self._ddp = None
        if dist.is_initialized():
            dist.destroy_process_group()


def leave_process_group() -> None:
    """At exit: destroy the group, then let gloo's threads finish releasing the last collective's tensors.

    A gloo worker thread drops its references to a finished collective's tensors just after the caller's
    `wait()` returns, and dropping them takes the GIL. If the main thread reaches interpreter
    finalization first, Python ends that thread inside a C++ destructor and the process aborts with
    "terminate called without an active exception" (seen about once in 12 runs of a script that
    all-gathers right before it exits). Sleeping hands the GIL to any such thread; 50 ms is ample for a
    release that takes microseconds, and is paid once per worker process.
    """
    if dist.is_available() and dist.is_initialized():
        with contextlib.suppress(Exception):
            dist.destroy_process_group()
    time.sleep(0.05)


class FSDPStrategy(DDPStrategy):
    """Fully sharded data parallel (FSDP2, `torch.distributed.fsdp.fully_shard`): parameters, gradients
    and optimizer states are split across ranks, so a model need not fit one device.

    Every submodule that owns parameters (a Linear, a Conv, an Embedding, ...) is sharded as one unit,
    then the root; pass `shard_modules` (a tuple of module classes, e.g. your transformer block) to shard
    bigger units instead. The Module object itself is sharded in place (no wrapper), so `self(x)` and
    `self.layer` keep working in the step methods.

    Checkpoints: the Trainer's checkpoint files hold the full (gathered) weights and optimizer states,
    so `fit(ckpt_path=...)`, `torch.load` or a single process read them as usual. For models too large
    to gather, `save_sharded_checkpoint(trainer, folder)` writes one shard per rank with
    torch.distributed.checkpoint, and `load_sharded_checkpoint(folder)` reads it back in one process.

    Preemption: a SIGTERM on any rank is agreed on with a one-element all-reduce before each step
    (FSDP has no single gradient bucket to carry the flag as DDP does).

    Example:
        >>> ember.Trainer(strategy="fsdp", devices=2, accelerator="cpu")  # doctest: +SKIP
    """

    name = "fsdp"

    def __init__(self, *, shard_modules: tuple[type[torch.nn.Module], ...] | None = None,
                 reshard_after_forward: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.shard_modules, self.reshard_after_forward = shard_modules, reshard_after_forward
        self._module: torch.nn.Module | None = None

    def setup_environment(self) -> None:
        try:
            from torch.distributed.fsdp import fully_shard  # noqa: F401
        except ImportError as exc:  # torch < 2.6
            raise ConfigError(f"strategy='fsdp' needs torch.distributed.fsdp.fully_shard (torch >= 2.6); "
                              f"this is torch {torch.__version__}") from exc
        super().setup_environment()

    def setup_module(self, module: torch.nn.Module) -> torch.nn.Module:
        """Shard each parameter-owning submodule (or each `shard_modules` instance), then the root, in place."""
        from torch.distributed.fsdp import fully_shard

        module = module.to(self.root_device)
        wanted = self.shard_modules
        for sub in list(module.modules())[1:]:
            owns = any(True for _ in sub.parameters(recurse=False))
            if (wanted is not None and isinstance(sub, wanted)) or (wanted is None and owns):
                fully_shard(sub, reshard_after_forward=self.reshard_after_forward)
        fully_shard(module, reshard_after_forward=self.reshard_after_forward)
        self._module = module
        return module

    def training_step(self, module: Any, batch: Any, batch_idx: int) -> Any:
        """Agree on a pending SIGTERM (tiny all-reduce), choose whether gradients sync, run the step."""
        self._trainer = getattr(module, "_trainer", None)
        self._agree_on_batch_count()
        if self.any_rank(self._pending_signal is not None):
            self._agreed_stop()
        module.set_requires_gradient_sync(self._syncs_this_step(batch_idx))
        return module.training_step(batch, batch_idx)

    # ---- checkpoints: full states on every save, so one process can load them --------------------
    def module_state_dict(self, module: torch.nn.Module) -> dict[str, Any]:
        """The full weights, gathered to CPU (a collective: every rank calls it)."""
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

        return get_model_state_dict(module, options=StateDictOptions(full_state_dict=True, cpu_offload=True))

    def load_module_state_dict(self, module: torch.nn.Module, state: dict[str, Any]) -> None:
        from torch.distributed.checkpoint.state_dict import StateDictOptions, set_model_state_dict

        set_model_state_dict(module, state, options=StateDictOptions(full_state_dict=True))

    def optimizer_state_dict(self, optimizer: torch.optim.Optimizer) -> dict[str, Any]:
        """The full optimizer state, keyed by parameter name (a collective)."""
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_optimizer_state_dict

        assert self._module is not None
        return get_optimizer_state_dict(self._module, optimizer,
                                        options=StateDictOptions(full_state_dict=True, cpu_offload=True))

    def load_optimizer_state_dict(self, optimizer: torch.optim.Optimizer, state: dict[str, Any]) -> None:
        from torch.distributed.checkpoint.state_dict import StateDictOptions, set_optimizer_state_dict

        assert self._module is not None
        set_optimizer_state_dict(self._module, optimizer, state, options=StateDictOptions(full_state_dict=True))

    def save_sharded_checkpoint(self, trainer: Any, folder: str | os.PathLike[str]) -> Path:
        """Each rank writes its own shard of the weights (and optimizer state) into `folder` (DCP format).

        Every rank must call it. Read it back in one process with `load_sharded_checkpoint(folder)`.
        """
        import torch.distributed.checkpoint as dcp
        from torch.distributed.checkpoint.state_dict import get_state_dict

        assert self._module is not None
        model_state, optim_state = get_state_dict(self._module, trainer.optimizers)
        state = {"state_dict": model_state, "optimizer_states": optim_state,
                 "global_step": trainer.global_step, "epoch": trainer.current_epoch}
        dcp.save(state, checkpoint_id=str(folder))
        return Path(folder)


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

    from ember.errors import CheckpointError

    where = Path(folder)
    if not (where / ".metadata").is_file():
        raise CheckpointError(f"{where} is not a sharded checkpoint folder (no .metadata file); pass the folder "
                              "FSDPStrategy.save_sharded_checkpoint wrote")
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
        "Metadata", "TensorStorageMetadata", "BytesStorageMetadata", "ChunkStorageMetadata", "TensorProperties",
        "MetadataIndex", "StorageMeta", "_MEM_FORMAT_ENCODING",
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

    from ember.errors import CheckpointError

    class AllowList(pickle.Unpickler):
        def find_class(self, module: str, name: str) -> Any:
            if name in _DCP_METADATA_CLASSES.get(module, ()) or (
                    module == "torch" and isinstance(getattr(torch, name, None), torch.dtype)):
                return super().find_class(module, name)
            raise CheckpointError(
                f"{where / '.metadata'} names {module}.{name}, which is not part of a torch.distributed.checkpoint "
                "folder; ember does not load it (it could run code). Use a folder save_sharded_checkpoint wrote"
            )

    return AllowList(stream)


def _read_metadata(where: Path) -> Any:
    """The folder's `.metadata` (a pickle), read through the allow-list: a CheckpointError for anything else."""

    from torch.distributed.checkpoint.metadata import Metadata

    from ember.errors import CheckpointError

    try:
        with open(where / ".metadata", "rb") as stream:
            metadata = _metadata_unpickler(stream, where).load()
    except CheckpointError:
        raise
    except PermissionError:
        raise CheckpointError(f"cannot read {where / '.metadata'}: permission denied") from None
    except Exception as e:  # a truncated or garbled pickle: whatever the unpickler raises
        raise CheckpointError(f"{where / '.metadata'} is not a readable sharded-checkpoint index "
                              f"({type(e).__name__}: {str(e)[:160]}); pass the folder save_sharded_checkpoint wrote") from None
    if not isinstance(metadata, Metadata):
        raise CheckpointError(f"{where / '.metadata'} holds a {type(metadata).__name__}, not a "
                              "torch.distributed.checkpoint Metadata; pass the folder save_sharded_checkpoint wrote")
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
            from ember.errors import CheckpointError

            try:
                loaded = torch.load(value, weights_only=True)
            except Exception as e:  # weights_only refuses anything that would run code
                lines = str(e).strip().splitlines() or [type(e).__name__]
                why = next((line.strip() for line in lines if "GLOBAL" in line), lines[0])
                self.refused = CheckpointError(
                    f"the sharded checkpoint's value {read_item.dest_index.fqn!r} cannot be loaded safely "
                    f"({why[:160]}); ember does not run code from a checkpoint")
                raise self.refused from None
            if self.flatten_state_dict:
                set_element(self.original_state_dict, self.mappings[read_item.dest_index.fqn], loaded)
            else:
                self.state_dict[read_item.dest_index.fqn] = loaded

    return SafePlanner()


def _stop_flag_hook(strategy, bucket):  # type: ignore[no-untyped-def]  # DDP rejects string annotations here
    """DDP comm hook: DDP's gradient averaging, with the stop flag appended to the first bucket.

    Costs one extra element in an all-reduce that happens anyway, instead of a collective per step.
    """
    world = dist.get_world_size()
    grads = bucket.buffer().div_(world)
    carries_flag = bucket.index() == 0
    payload = torch.cat([grads, strategy._stop_flag.to(grads.dtype)]) if carries_flag else grads
    future = dist.all_reduce(payload, async_op=True).get_future()

    def unpack(done: torch.futures.Future[list[torch.Tensor]]) -> torch.Tensor:
        reduced = done.value()[0]
        if not carries_flag:
            return reduced
        if reduced[-1].item() > 0:
            strategy._agreed_stop()
        return reduced[:-1]

    return future.then(unpack)


@contextlib.contextmanager
def _forward_as(module: torch.nn.Module, method: Any) -> Iterator[None]:
    """Make the wrapper's next call of `module.forward` run `method` instead (once).

    The original forward is put back before `method` runs, so `self(x)` inside training_step
    still calls the user's forward.
    """
    had_own = "forward" in module.__dict__
    original = module.__dict__.get("forward")

    def restore() -> None:
        if had_own:
            module.forward = original
        else:
            module.__dict__.pop("forward", None)

    def redirected(*args: Any, **kwargs: Any) -> Any:
        restore()
        return method(*args, **kwargs)

    module.forward = redirected
    try:
        yield
    finally:
        restore()


# ---- data sharding ---------------------------------------------------------------------------
def shard_for_rank(data: Any, world_size: int, rank: int) -> Any:
    """This rank's part of `data`, every rank getting the same number of batches.

    - a DataLoader over a map-style dataset gets a DistributedSampler (shuffle kept; the last
      samples repeat to fill, as torch does, so counts are equal);
    - an ember.data batch iterable is rebuilt over `streaming_split(world_size, equal=True)[rank]`;
    - anything else is returned as is, with a warning when it cannot be checked.

    Example:
        >>> loader = DataLoader(list(range(10)), batch_size=2)
        >>> [b.tolist() for b in shard_for_rank(loader, 2, 1)]
        [[1, 3], [5, 7], [9]]
    """
    if world_size == 1:
        return data
    if isinstance(data, DataLoader):
        return _with_distributed_sampler(data, world_size, rank)
    shard = _shard_ember_batches(data, world_size, rank)
    if shard is not None:
        return shard
    import warnings

    warnings.warn(
        f"ember cannot shard a {type(data).__name__} across {world_size} ranks; each rank iterates it as "
        "given, so make sure every rank gets the same number of batches (or pass a DataLoader / ember Dataset)",
        stacklevel=3,
    )
    return data


def _with_distributed_sampler(loader: DataLoader, world_size: int, rank: int) -> DataLoader:
    if isinstance(loader.dataset, IterableDataset) or isinstance(loader.sampler, DistributedSampler):
        return loader  # an IterableDataset shards itself; a DistributedSampler is already there
    if loader.batch_sampler is not None and type(loader.batch_sampler).__name__ != "BatchSampler":
        raise ConfigError(
            f"the DataLoader uses a custom batch_sampler ({type(loader.batch_sampler).__name__}); ember cannot "
            "shard it across ranks: give it a DistributedSampler yourself"
        )
    shuffle = isinstance(loader.sampler, RandomSampler)
    seed = int(os.environ.get("EMBER_GLOBAL_SEED", 0))
    sampler = DistributedSampler(loader.dataset, num_replicas=world_size, rank=rank, shuffle=shuffle, seed=seed)
    return DataLoader(
        loader.dataset,
        batch_size=loader.batch_size,
        sampler=sampler,
        num_workers=loader.num_workers,
        collate_fn=loader.collate_fn,
        pin_memory=loader.pin_memory,
        drop_last=loader.drop_last,
        timeout=loader.timeout,
        worker_init_fn=loader.worker_init_fn,
        multiprocessing_context=loader.multiprocessing_context,
        generator=loader.generator,
        prefetch_factor=loader.prefetch_factor if loader.num_workers else None,
        persistent_workers=loader.persistent_workers,
    )


def _shard_ember_batches(batches: Any, world_size: int, rank: int) -> Any:
    """Rebuild an ember.data BatchIterable (what iter_torch_batches returns) over this rank's equal shard."""
    if hasattr(batches, "streaming_split"):  # a Dataset given directly
        return batches.streaming_split(world_size, equal=True)[rank]
    dataset = getattr(getattr(batches, "_make_stream", None), "__self__", None)
    if dataset is None or not hasattr(dataset, "streaming_split"):
        return None
    from ember.data.iterate import BatchIterable

    shard = dataset.streaming_split(world_size, equal=True)[rank]
    return BatchIterable(
        shard._stream,
        batch_size=batches.batch_size,
        convert=batches._convert,
        drop_last=batches.drop_last,
        local_shuffle_buffer_size=batches.local_shuffle_buffer_size,
        local_shuffle_seed=_same_on_every_rank(batches._shuffle_seed),
        prefetch_batches=batches.prefetch_batches,
        num_rows=shard._known_count(),
    )


def _same_on_every_rank(seed: int | None) -> int | None:
    """Rank 0's shuffle seed for every rank (once, at set-up).

    A seed drawn at random differs per rank, but a checkpoint holds rank 0's iterator state, so a
    resumed rank 1 would shuffle with another seed than it started with. One seed for all ranks
    keeps resume exact; the shards differ, so the shuffles do too.
    """
    if seed is None or not dist.is_available() or not dist.is_initialized():
        return seed
    holder = [seed]
    dist.broadcast_object_list(holder, src=0)
    return int(holder[0])


# ---- reporting to the launcher ---------------------------------------------------------------
# Errors a rank raises only because a peer went away: never the root cause when another rank failed.
SECONDARY_MARKERS = ("Connection closed by peer", "Connection reset by peer", "DistBackendError",
                     "Broken pipe", "NCCL communicator was aborted", "ProcessGroupGloo")


def is_secondary_failure(error_text: str) -> bool:
    """Does this traceback only say that a peer process disappeared?"""
    return any(marker in error_text for marker in SECONDARY_MARKERS)


def _launch_dir() -> Path | None:
    where = os.environ.get("EMBER_LAUNCH_DIR")
    return Path(where) if where else None


def exception_line(error: BaseException) -> str:
    """`module.Type: first line of the message`: what a traceback's last line would be, without the C++
    stack frames some torch errors append to their message (their last line is `frame #27: ...`).

    Example:
        >>> exception_line(ValueError("bad value\\nException raised from foo at bar.cpp:1\\nframe #0: ..."))
        'ValueError: bad value'
    """
    kind = type(error)
    name = kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
    message = str(error).strip().splitlines()
    return f"{name}: {message[0]}" if message else name


def install_error_report() -> None:
    """Under ember's launcher, write an uncaught exception's traceback where the launcher reads it."""
    folder = _launch_dir()
    if folder is None or getattr(sys.excepthook, "_ember", False):
        return
    previous = sys.excepthook

    def report(kind: type[BaseException], value: BaseException, tb: Any) -> None:
        text = "".join(traceback.format_exception(kind, value, tb))
        rank = os.environ.get("RANK", "0")
        (folder / f"rank_{rank}.err").write_text(text)
        (folder / f"rank_{rank}.summary").write_text(exception_line(value))
        if is_secondary_failure(text):
            # Only a consequence of a peer failing: the launcher names that peer; one line here, not a wall.
            last = text.strip().splitlines()[-1]
            print(f"ember: rank {rank} stopped because a peer process went away ({last[:160]})", file=sys.stderr)
            return
        previous(kind, value, tb)

    report._ember = True  # type: ignore[attr-defined]
    sys.excepthook = report


def mark_interrupted() -> None:
    """Tell ember's launcher that this rank stops on an agreed signal (not a failure)."""
    folder = _launch_dir()
    if folder is not None:
        (folder / f"rank_{os.environ.get('RANK', '0')}.interrupted").touch()
