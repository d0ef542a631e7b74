"""Model parallelism as Lightning 2.6 has it: a 2-D device mesh (data parallel x tensor parallel) that the
Module parallelizes itself in `configure_model`, with FSDP2 `fully_shard` and DTensor `parallelize_module`.

    class GPT(ember.Module):
        def configure_model(self):
            tp, dp = self.device_mesh["tensor_parallel"], self.device_mesh["data_parallel"]
            parallelize_module(self.mlp, tp, {"up": ColwiseParallel(), "down": RowwiseParallel()})
            fully_shard(self, mesh=dp)

    trainer = ember.Trainer(strategy=ModelParallelStrategy(data_parallel_size=2, tensor_parallel_size=2),
                            devices=4)

The ranks of one tensor-parallel group compute on the same batch, so the data is sharded over the
data-parallel dimension only (rank r of the mesh's "data_parallel" dimension gets shard r).

Checkpoints (Lightning's two forms, chosen by `save_distributed_checkpoint`):

- True (the default, as in Lightning): the Trainer's checkpoint (ModelCheckpoint's `last.ckpt`,
  `trainer.save_checkpoint(path)`) is a *folder*: each rank writes its own shards of the weights and
  optimizer states with torch.distributed.checkpoint, global rank 0 the rest to `meta.pt`; it is written
  aside and swapped in whole, so a killed save leaves the previous checkpoint intact.
  `fit(ckpt_path=folder)` reads the shards into this run's mesh, which may differ from the one that
  wrote it (DCP re-shards); `Module.load_from_checkpoint(folder)` reads it whole in one process.
- False: the full (gathered) weights and optimizer states in one file on rank 0, loadable anywhere.

Either strategy setting resumes from either form (as Lightning's `load_checkpoint` does).
`strategy.save_sharded_checkpoint(trainer, folder)` / `load_sharded_checkpoint(trainer, folder)` remain for
FSDPStrategy's own shard layout.
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from ember.errors import ConfigError
from ember.fs import storage_path
from ember.runtime import process_group
from ember.runtime.sharded_checkpoint import (
    ShardedStates,
    load_module_shards,
    load_optimizer_shards,
    load_sharded_into,
    save_checkpoint_file_over_folder,
    save_checkpoint_folder,
)
from ember.runtime.strategies.fsdp import FSDPStrategy

MESH_DIMS = ("data_parallel", "tensor_parallel")


class ModelParallelStrategy(FSDPStrategy):
    """Lightning's `ModelParallelStrategy`: a (data_parallel_size x tensor_parallel_size) mesh the Module
    reads as `self.device_mesh` in `configure_model`, where it applies `parallelize_module` and `fully_shard`.

    Args:
        data_parallel_size: ranks per data-parallel group; "auto" is the number of nodes (Lightning's).
        tensor_parallel_size: ranks per tensor-parallel group; "auto" is the devices of one node.
        save_distributed_checkpoint: True (Lightning's default): checkpoints are folders, one shard per
            rank plus `meta.pt`; False: one file with the full states, gathered on rank 0.
        process_group_backend, timeout, max_failures: as for DDPStrategy.

    Example:
        >>> ModelParallelStrategy(data_parallel_size=1, tensor_parallel_size=2).name
        'model_parallel'
    """

    name = "model_parallel"
    #: The Trainer hands `fit(ckpt_path=folder)`'s tensors over as `ShardedStates`, read in by this strategy.
    loads_checkpoint_folders = True

    def __init__(
        self,
        data_parallel_size: int | str = "auto",
        tensor_parallel_size: int | str = "auto",
        save_distributed_checkpoint: bool = True,
        process_group_backend: str | None = None,
        timeout: datetime.timedelta = process_group.DEFAULT_TIMEOUT,
        *,
        max_failures: int = 0,
    ) -> None:
        for name, size in (
            ("data_parallel_size", data_parallel_size),
            ("tensor_parallel_size", tensor_parallel_size),
        ):
            if size != "auto" and (not isinstance(size, int) or isinstance(size, bool) or size < 1):
                raise ConfigError(f"ModelParallelStrategy({name}={size!r}): pass a positive int or 'auto'")
        super().__init__(
            max_failures=max_failures, timeout=timeout, process_group_backend=process_group_backend
        )
        self.data_parallel_size, self.tensor_parallel_size = data_parallel_size, tensor_parallel_size
        self.save_distributed_checkpoint = save_distributed_checkpoint
        self._device_mesh: Any = None

    @property
    def device_mesh(self) -> Any:
        """The 2-D `DeviceMesh` ("data_parallel", "tensor_parallel") once the processes have joined (read it
        in `configure_model` or later); None before (Lightning raises there; None keeps `hasattr` and
        protocol checks working on a strategy not yet set up)."""
        return self._device_mesh

    def mesh_shape(self) -> tuple[int, int]:
        """(data parallel, tensor parallel), "auto" resolved as Lightning does; their product must be the
        world."""
        per_node = len(self.device_ids)  # the Trainer's devices: processes per node
        nodes = max(1, self.world_size // per_node)
        dp = nodes if self.data_parallel_size == "auto" else int(self.data_parallel_size)
        tp = per_node if self.tensor_parallel_size == "auto" else int(self.tensor_parallel_size)
        if dp * tp != self.world_size:
            raise ConfigError(
                f"ModelParallelStrategy: data_parallel_size={dp} x tensor_parallel_size={tp} must equal "
                f"the number of processes ({self.world_size}); change the sizes or devices/num_nodes"
            )
        return int(dp), int(tp)

    def setup_environment(self) -> None:
        """Join the process group, then build the mesh (every rank, same shape)."""
        super().setup_environment()
        from torch.distributed.device_mesh import init_device_mesh

        self._device_mesh = init_device_mesh(
            self.root_device.type, self.mesh_shape(), mesh_dim_names=MESH_DIMS
        )

    @property
    def distributed_sampler_kwargs(self) -> dict[str, int]:
        """Shard over the data-parallel dimension: a tensor-parallel group's ranks see the same batches.
        (Before the mesh exists, i.e. before the processes join, the whole world's: nothing reads it then.)"""
        if self._device_mesh is None:
            return super().distributed_sampler_kwargs
        mesh = self._device_mesh["data_parallel"]
        return {"num_replicas": mesh.size(), "rank": mesh.get_local_rank()}

    def setup_module(self, module: torch.nn.Module) -> torch.nn.Module:
        """The Module parallelized itself in configure_model; move what is left to the device (no
        wrapping)."""
        if not _defines_configure_model(module):
            raise ConfigError(
                f"ModelParallelStrategy needs {type(module).__name__}.configure_model to parallelize the "
                "model (parallelize_module / fully_shard on self.device_mesh); define it, or use "
                "strategy='fsdp' to have ember shard it"
            )
        self._start_run()
        self._steps = 0
        self._module = module.to(self.root_device)
        return module

    def training_step(
        self, module: Any, batch: Any, batch_idx: int, pass_index: bool = True, sync: bool = True
    ) -> Any:
        """As FSDP's, where the root was `fully_shard`ed (accumulation micro-steps then skip the
        reduce-scatter)."""
        if hasattr(module, "set_requires_gradient_sync"):  # an FSDPModule: FSDP's step, with its sync choice
            return super().training_step(module, batch, batch_idx, pass_index, sync)
        self._agree_on_batch_count(self._run())
        return module.training_step(batch, batch_idx) if pass_index else module.training_step(batch)

    # ---- checkpoints: sharded folders (save_distributed_checkpoint=True) or full files --------------
    def write_checkpoint(self, state: dict[str, Any], path: Any, write_file: Callable[..., Any]) -> None:
        """Write the Trainer's checkpoint `state` at `path`: a folder (every rank its shards, rank 0 the rest
        with `write_file`); or, with save_distributed_checkpoint=False, one file from rank 0, which replaces a
        checkpoint folder of that name as Lightning's does."""
        if self.save_distributed_checkpoint:
            save_checkpoint_folder(
                state,
                path,
                is_global_zero=self.global_rank == 0,
                broadcast=self.broadcast,
                write_metadata=write_file,
            )
        elif self.global_rank == 0:
            save_checkpoint_file_over_folder(state, storage_path(path), write_file)

    def module_state_dict(self, module: torch.nn.Module) -> dict[str, Any]:
        """Each rank's shards (DTensors) for a folder; else the full weights, gathered (a collective)."""
        if not self.save_distributed_checkpoint:
            return super().module_state_dict(module)
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

        return get_model_state_dict(module, options=StateDictOptions(cpu_offload=True))

    def optimizer_state_dict(self, optimizer: torch.optim.Optimizer) -> dict[str, Any]:
        """Each rank's shards of the optimizer state (keyed by parameter name) for a folder; else the full
        state."""
        if not self.save_distributed_checkpoint:
            return super().optimizer_state_dict(optimizer)
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_optimizer_state_dict

        assert self._module is not None
        return get_optimizer_state_dict(self._module, optimizer, options=StateDictOptions(cpu_offload=True))

    def load_module_state_dict(self, module: torch.nn.Module, state: dict[str, Any]) -> None:
        """A folder's weights are read into this mesh's shards; a file's full weights are scattered."""
        if isinstance(state, ShardedStates):
            load_module_shards(module, state)
        else:
            super().load_module_state_dict(module, state)

    def load_optimizer_state_dict(self, optimizer: torch.optim.Optimizer, state: dict[str, Any]) -> None:
        if isinstance(state, ShardedStates):
            assert self._module is not None
            load_optimizer_shards(self._module, optimizer, state)
        else:
            super().load_optimizer_state_dict(optimizer, state)

    def load_sharded_checkpoint(self, trainer: Any, folder: str | os.PathLike[str]) -> None:
        """Read a `save_sharded_checkpoint` folder into the running model and optimizers, on this mesh
        (it may have been written on another one). Every rank must call it."""
        assert self._module is not None, "load_sharded_checkpoint needs a running model (call it in a hook)"
        load_sharded_into(self._module, list(trainer.optimizers), Path(folder))

    def teardown(self) -> None:
        self._device_mesh = None
        super().teardown()


def _defines_configure_model(module: torch.nn.Module) -> bool:
    """Whether the user's class (not ember's Module, whose hook does nothing) defines configure_model
    (read from the class hierarchy: runtime/ does not import the Module's layer)."""
    owner = next((cls for cls in type(module).__mro__ if "configure_model" in vars(cls)), None)
    return owner is not None and owner.__module__ != "ember.module"
