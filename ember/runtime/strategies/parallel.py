"""What DDP and FSDP share: one process per device, a process group, collectives, sharded data,
agreement on a stop signal, and the once-an-epoch check that the ranks hold equal batch counts.

Not a strategy by itself (`DDPStrategy` and `FSDPStrategy` complete it with how the module is
wrapped and how the stop flag travels).
"""

from __future__ import annotations

import datetime
import os
import signal
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist

from ember.errors import ConfigError
from ember.runtime import devices as device_utils
from ember.runtime import process_group
from ember.runtime.launch import Launcher, env_is_distributed, mark_interrupted
from ember.runtime.seed import reset_seed
from ember.runtime.sharding import shard_for_rank
from ember.runtime.strategies.protocol import OnAgreedStop, RunView, run_of

_OPS = {"mean": "sum", "sum": "sum", "max": "max", "min": "min"}


class ParallelStrategy:
    """The multi-process half of the protocol; subclasses add `setup_module` and `training_step`."""

    name = "parallel"
    device_mesh: Any = None  # ModelParallelStrategy's 2-D mesh; None here (Lightning's Module.device_mesh)

    def __init__(
        self,
        *,
        max_failures: int = 0,
        timeout: datetime.timedelta = process_group.DEFAULT_TIMEOUT,
        process_group_backend: str | None = None,
    ) -> None:
        if not isinstance(max_failures, int) or max_failures < 0:
            raise ConfigError(f"max_failures={max_failures!r} must be a non-negative int")
        self.max_failures, self.timeout = max_failures, timeout
        self.process_group_backend = process_group_backend
        self.device_type, self.device_ids = "cpu", [0]
        self._module: torch.nn.Module | None = None  # the user's module (unwrapped)
        self.cluster_environment: Any = (
            None  # a Trainer(plugins=[...]) cluster environment, checked against ours
        )
        self._start_run()

    def _start_run(self) -> None:
        """Forget everything about a previous run of this strategy object (setup_module calls it)."""
        self._pending_signal: int | None = None  # this rank's, not yet agreed
        self._on_agreed: OnAgreedStop | None = None
        self._stop_agreed = False
        self._stop_flag = torch.zeros(1)
        self._counted_epoch: int | None = None  # the epoch whose batch counts the ranks compared

    def set_cluster_environment(self, environment: Any) -> None:
        """Adopt Lightning's cluster-environment plugin after checking it describes this process group.

        ember's ranks are the launcher's (RANK/WORLD_SIZE, which the process group is joined with); a
        plugin that says otherwise would make the sampler and the group disagree, so it is refused.
        """
        said = {"world_size": environment.world_size(), "global_rank": environment.global_rank()}
        ours = {"world_size": self.world_size, "global_rank": self.global_rank}
        if said != ours:
            raise ConfigError(
                f"Trainer(plugins=[{type(environment).__name__}()]) says {said} but the launcher started "
                f"this process as {ours}; start the processes with the launcher the plugin describes"
            )
        self.cluster_environment = environment

    # ---- where we are ------------------------------------------------------------------------
    def configure(self, device_type: str, device_ids: list[int]) -> ParallelStrategy:
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
    def launcher(self) -> Launcher:
        """The process launcher: starts workers here, or tells a restarted worker to resume."""
        return Launcher(num_processes=len(self.device_ids), max_failures=self.max_failures)

    # ---- set-up -------------------------------------------------------------------------------
    def setup_environment(self) -> None:
        """Join the process group the launcher (ember's, torchrun, SLURM) described in the environment."""
        if not env_is_distributed():
            raise ConfigError(
                f"strategy={self.name!r} needs RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT; call "
                "trainer.fit from a "
                "script (ember starts the processes) or run it under torchrun"
            )
        # Lightning's DDP/FSDP re-seed here: the RNG streams training sees start from the seed again
        reset_seed()
        process_group.join(self.root_device, self.process_group_backend, self.timeout)

    def setup_module(self, module: torch.nn.Module) -> torch.nn.Module:
        raise NotImplementedError  # DDPStrategy wraps, FSDPStrategy shards

    def _agree_on_batch_count(self, run: RunView | None) -> None:
        """Once an epoch (its first step here): do all ranks hold the same number of training batches?

        Data ember shards has equal counts by construction; data the user sharded may not, and then a
        rank that runs out first leaves its peers waiting in a gradient all-reduce that never matches
        (a mismatched-collective error or a hang). One tiny all-gather an epoch turns that into one line.
        """
        epoch = getattr(run, "current_epoch", None)
        if run is None or epoch == self._counted_epoch or self.world_size == 1:
            return
        self._counted_epoch = epoch
        count = float(getattr(run, "num_training_batches", float("inf")))
        counts = (
            self.all_gather(torch.tensor([count], dtype=torch.float64, device=self.root_device))
            .flatten()
            .tolist()
        )
        if any(c == float("inf") for c in counts) or len(set(counts)) == 1:
            return  # unknown lengths cannot be compared; equal ones are fine
        listed = ", ".join(f"rank {rank}: {int(c)}" for rank, c in enumerate(counts))
        raise ConfigError(
            f"the ranks hold different numbers of training batches in epoch {epoch} ({listed}); "
            f"{self.name.upper()} "
            "needs the same number on every rank: pass the whole dataset and let ember shard it (a "
            "DataLoader or "
            "ember Dataset), or make every rank's shard the same size"
        )

    def agreed_batches(self, batches: Any, epoch: int) -> Any:
        """Training batches of unknown count (an iterable the user sharded), handed out only while every
        rank still has one: a tiny all-gather per batch. A rank that runs out while a peer has more would
        leave that peer in a gradient all-reduce that never matches (a hang, or steps summed across
        epochs); here every rank stops at the same batch with one line naming the counts."""
        iterator, count = iter(batches), 0
        while True:
            try:
                batch, has = next(iterator), 1.0
            except StopIteration:
                batch, has = None, 0.0
            flags = self.all_gather(
                torch.tensor([has], dtype=torch.float64, device=self.root_device)
            ).flatten()
            if flags.min() == 1.0:
                count += 1
                yield batch
                continue
            if flags.max() == 0.0:
                return
            listed = ", ".join(
                f"rank {rank}: {count if f == 0.0 else f'more than {count}'}"
                for rank, f in enumerate(flags.tolist())
            )
            raise ConfigError(
                f"the ranks hold different numbers of training batches in epoch {epoch} ({listed}); "
                f"{self.name.upper()} needs the same number on every rank: pass the whole dataset and let "
                "ember "
                "shard it (a DataLoader or ember Dataset), or make every rank's shard the same size"
            )

    def _run(self) -> RunView | None:
        return run_of(self._module)

    # ---- data ----------------------------------------------------------------------------------
    @property
    def distributed_sampler_kwargs(self) -> dict[str, int]:
        """One shard per rank (ModelParallelStrategy: per data-parallel rank)."""
        return {"num_replicas": self.world_size, "rank": self.global_rank}

    def process_dataloader(self, dataloader: Any, shuffle: bool) -> Any:
        """Give this rank its shard, with the same number of batches on every rank.

        As Lightning's Trainer: the DistributedSampler it adds to a training loader always shuffles (`shuffle`
        True; overfit_batches passes False), an evaluation loader's only when the loader did; seeded with the
        seed of seed_everything (else 0). ModelParallelStrategy: one shard per data-parallel rank."""
        shard = self.distributed_sampler_kwargs
        return shard_for_rank(
            dataloader, shard["num_replicas"], shard["rank"], shuffle=True if shuffle else None
        )

    # ---- collectives ---------------------------------------------------------------------------
    def reduce(self, tensor: torch.Tensor, op: str = "mean") -> torch.Tensor:
        """All-reduce a tensor (mean, sum, max or min); used by `self.log(..., sync_dist=True)`."""
        if op not in _OPS:
            raise ConfigError(f"reduce op {op!r} is not known; use one of {sorted(_OPS)}")
        value = (
            tensor.detach()
            .clone()
            .to(self.root_device, torch.float64 if self.root_device.type == "cpu" else torch.float32)
        )
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
        return process_group.any_rank(flag, self.root_device)

    # ---- checkpoints: the unwrapped module's own states (FSDP gathers them instead) ------------------
    def module_state_dict(self, module: torch.nn.Module) -> dict[str, Any]:
        return module.state_dict()  # the unwrapped module: keys without DDP's "module." prefix

    def load_module_state_dict(self, module: torch.nn.Module, state: dict[str, Any]) -> None:
        module.load_state_dict(state)

    def optimizer_state_dict(self, optimizer: torch.optim.Optimizer) -> dict[str, Any]:
        return optimizer.state_dict()

    def load_optimizer_state_dict(self, optimizer: torch.optim.Optimizer, state: dict[str, Any]) -> None:
        optimizer.load_state_dict(state)

    def save_sharded_checkpoint(self, trainer: Any, folder: str | os.PathLike[str]) -> Any:
        raise ConfigError(
            f"save_sharded_checkpoint needs strategy='fsdp' (this run uses {self.name!r}, whose ranks "
            "hold the same full weights); use trainer.save_checkpoint(path) for a checkpoint file"
        )

    def write_checkpoint(self, state: dict[str, Any], path: Any, write_file: Callable[..., Any]) -> None:
        """Every rank holds the full states (FSDP gathered them): rank zero writes the file."""
        if self.is_global_zero:
            write_file(state, path)

    loads_checkpoint_folders = False

    # ---- preemption ----------------------------------------------------------------------------
    def on_signal(self, signum: int, on_agreed: OnAgreedStop | None = None) -> None:
        """SIGTERM handler body: remember it; the ranks agree on it later (DDP: in the next synchronising
        backward; FSDP: at the next stop check), and `on_agreed` then runs on every rank."""
        self._pending_signal = signum
        if on_agreed is not None:
            self._on_agreed = on_agreed
        self._stop_flag.fill_(1.0)

    def set_stop_callback(self, on_agreed: OnAgreedStop | None) -> None:
        self._on_agreed = on_agreed

    def _agreed_stop(self) -> None:
        """Called on every rank after the same step: some rank got a signal, all stop after this step."""
        if self._stop_agreed:
            return
        self._stop_agreed = True
        signum = self._pending_signal or signal.SIGTERM
        if self._on_agreed is not None:
            self._on_agreed(signum)
        mark_interrupted()

    def teardown(self) -> None:
        self._module = None
        if dist.is_initialized():
            dist.destroy_process_group()
