"""The strategy protocol: how the model and data are spread over processes, as the Trainer sees it.

Every strategy (single device, DDP, FSDP) implements ALL of it, so a caller never asks "does this
strategy have X?" (no `getattr(strategy, ..., None)`): where a strategy has nothing to do, its method
says so (`training_step`'s `sync` changes nothing for one process; `launcher` is None when no processes
must be started; `save_sharded_checkpoint` refuses with one line outside FSDP).

What a strategy may read from the run it serves is `RunView`: two public Trainer attributes, reached
through the module it set up (`module.trainer`). It never writes into the Trainer; it reports an
agreed stop through the callback the Trainer hands to `on_signal`.

The order the Trainer calls it in:

    configure(device_type, device_ids)       once, when the Trainer is built with a strategy object
    launcher.prepare(stage, ckpt_path)       multi-process only: start the workers here, or pick a resume
    setup_environment()                      join the process group
    process_dataloader(loader, shuffle)      per loader: this rank's shard
    setup_module(module)                     to the device; wrapped (DDP) or sharded in place (FSDP)
    training_step(module, batch, batch_idx, pass_index, sync)
                                             per batch, forward through the wrapper; `sync` False on an
                                             accumulation micro-step (the Trainer's optimization step
                                             decides it: it counts the window, no strategy counts again)
    reduce / all_gather / broadcast / barrier / any_rank     collectives (identity for one process)
    module_state_dict / optimizer_state_dict (+ load_*)      what a checkpoint file holds: full states
    write_checkpoint(state, path, write_file)                where a checkpoint goes: rank zero's file,
                                                             or (model parallel) a folder from every rank
    on_signal(signum, on_agreed)             from the SIGTERM/SIGINT handler
    teardown()

Example:
    >>> import torch
    >>> from ember.runtime.strategies import SingleDeviceStrategy, Strategy
    >>> isinstance(SingleDeviceStrategy(torch.device("cpu")), Strategy)
    True
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import torch

#: The callback `on_signal` receives: called once, on every rank, with the signal all ranks agreed to stop on.
OnAgreedStop = Callable[[int], None]


@runtime_checkable
class Strategy(Protocol):
    """What every strategy implements; the Trainer and TorchTrainer use nothing else."""

    name: str

    @property
    def device_mesh(self) -> Any:
        """ModelParallelStrategy's DeviceMesh, which `Module.device_mesh` hands on; None for the others."""

    # ---- where this process is -------------------------------------------------------------
    @property
    def world_size(self) -> int: ...
    @property
    def global_rank(self) -> int: ...
    @property
    def local_rank(self) -> int: ...
    @property
    def node_rank(self) -> int: ...
    @property
    def is_global_zero(self) -> bool: ...
    @property
    def root_device(self) -> torch.device: ...
    @property
    def launcher(self) -> Any:
        """An object with `prepare(stage, ckpt_path)` that starts the workers, or None (one process)."""

    @property
    def distributed_sampler_kwargs(self) -> dict[str, int]:
        """How the data is sharded (Lightning's name): `{"num_replicas": ..., "rank": ...}`; the world for DDP
        and FSDP, the data-parallel dimension of the mesh for ModelParallelStrategy, `1, 0` for one
        process."""

    def configure(self, device_type: str, device_ids: list[int]) -> Strategy:
        """Take the Trainer's resolved accelerator and devices; returns self."""

    # ---- set-up and the step -----------------------------------------------------------------
    def setup_environment(self) -> None:
        """Join the process group (nothing for one process)."""

    def setup_module(self, module: torch.nn.Module) -> torch.nn.Module:
        """Move the module to the device and wrap or shard it; returns what the forward goes through."""

    def training_step(
        self, module: Any, batch: Any, batch_idx: int, pass_index: bool = True, sync: bool = True
    ) -> Any:
        """`module.training_step(batch, batch_idx)`, through the wrapper; `module.training_step(batch)` when
        `pass_index` is False (a step without batch_idx, as Lightning). `sync`: whether this step's backward
        synchronises gradients across processes — False on an accumulation window's micro-steps but its
        last. It is given here, at forward time, because that is when DDP prepares its reducer (and FSDP2
        reads `set_requires_gradient_sync` when the backward hooks fire): a context around backward would
        come too late for both."""

    def process_dataloader(self, dataloader: Any, shuffle: bool) -> Any:
        """This rank's shard, with the same number of batches on every rank."""

    # ---- collectives (every rank calls them) ------------------------------------------------
    def reduce(self, tensor: torch.Tensor, op: str = "mean") -> torch.Tensor: ...
    def all_gather(self, tensor: torch.Tensor) -> torch.Tensor: ...
    def broadcast(self, obj: Any, src: int = 0) -> Any: ...
    def barrier(self, name: str | None = None) -> None: ...
    def any_rank(self, flag: bool) -> bool:
        """True if `flag` is true on any rank (at checkpoints and epoch ends, never per step)."""

    # ---- checkpoints: full (unsharded, unwrapped) states ----------------------------------------
    def module_state_dict(self, module: torch.nn.Module) -> dict[str, Any]: ...
    def load_module_state_dict(self, module: torch.nn.Module, state: dict[str, Any]) -> None: ...
    def optimizer_state_dict(self, optimizer: torch.optim.Optimizer) -> dict[str, Any]: ...
    def load_optimizer_state_dict(self, optimizer: torch.optim.Optimizer, state: dict[str, Any]) -> None: ...
    def save_sharded_checkpoint(self, trainer: Any, folder: str | os.PathLike[str]) -> Any:
        """One shard per rank (FSDP); the others refuse with one line."""

    def write_checkpoint(self, state: dict[str, Any], path: Any, write_file: Callable[..., Any]) -> None:
        """Write the Trainer's checkpoint `state` at `path`; every rank calls it. Rank zero writes one file
        with `write_file(state, path)`; ModelParallelStrategy writes a folder, each rank its shards."""

    @property
    def loads_checkpoint_folders(self) -> bool:
        """True when `fit(ckpt_path=folder)`'s tensors are read into this strategy's own shards after the
        model is set up (ModelParallelStrategy), so the Trainer leaves them out of the loaded checkpoint."""

    # ---- preemption and the end --------------------------------------------------------------
    def set_stop_callback(self, on_agreed: OnAgreedStop | None) -> None:
        """Register, on every rank when a run starts, what runs once the ranks agree to stop after a signal
        (the rank that was signalled is not the only one that must stop)."""

    def on_signal(self, signum: int, on_agreed: OnAgreedStop | None = None) -> None:
        """Called from the signal handler. The stop callback (or `on_agreed`, which replaces it) runs once
        every rank knows (one process: at once), after the same step on all ranks."""

    def teardown(self) -> None: ...


class RunView(Protocol):
    """The only things a strategy reads from the run: public Trainer attributes (Lightning's names)."""

    current_epoch: int
    num_training_batches: int | float


def run_of(module: Any) -> RunView | None:
    """The run `module` is attached to (its public `trainer`), or None outside a Trainer."""
    try:
        return module.trainer
    except Exception:  # a Module raises when unattached; a plain nn.Module has no trainer at all
        return None
