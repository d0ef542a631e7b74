"""Model parallelism as Lightning 2.6 has it: a 2-D device mesh (data parallel x tensor parallel) that the
Module parallelizes itself in `configure_model`, with FSDP2 `fully_shard` and DTensor `parallelize_module`.

    class GPT(ember.Module):
        def configure_model(self):
            tp, dp = self.device_mesh["tensor_parallel"], self.device_mesh["data_parallel"]
            parallelize_module(self.mlp, tp, {"up": ColwiseParallel(), "down": RowwiseParallel()})
            fully_shard(self, mesh=dp)

    trainer = ember.Trainer(strategy=ModelParallelStrategy(data_parallel_size=2, tensor_parallel_size=2,
                                                           save_distributed_checkpoint=False), devices=4)

The ranks of one tensor-parallel group compute on the same batch, so the data is sharded over the
data-parallel dimension only (rank r of the mesh's "data_parallel" dimension gets shard r).

Checkpoints: ember's Trainer writes one checkpoint file holding the full (gathered) weights and optimizer
states, which any mesh (or one process) loads: `fit(ckpt_path=...)` resumes on a different mesh. Per-rank
shards (torch.distributed.checkpoint) are written by `strategy.save_sharded_checkpoint(trainer, folder)` and
read back into a running model on any mesh by `strategy.load_sharded_checkpoint(trainer, folder)`, or in
one process by `ember.runtime.distributed.load_sharded_checkpoint(folder)`. Lightning's default,
`save_distributed_checkpoint=True`, turns the Trainer's checkpoint *file* into such a folder; ember's
checkpoint files (ModelCheckpoint, `ckpt_path="last"`) are files, so that is refused at construction
with the alternative rather than silently writing something else.
"""

from __future__ import annotations

import datetime
import os
from pathlib import Path
from typing import Any

import torch

from ember.errors import ConfigError
from ember.runtime import process_group
from ember.runtime.sharded_checkpoint import load_sharded_into
from ember.runtime.strategies.fsdp import FSDPStrategy

MESH_DIMS = ("data_parallel", "tensor_parallel")


class ModelParallelStrategy(FSDPStrategy):
    """Lightning's `ModelParallelStrategy`: a (data_parallel_size x tensor_parallel_size) mesh the Module
    reads as `self.device_mesh` in `configure_model`, where it applies `parallelize_module` and `fully_shard`.

    Args:
        data_parallel_size: ranks per data-parallel group; "auto" is the number of nodes (Lightning's).
        tensor_parallel_size: ranks per tensor-parallel group; "auto" is the devices of one node.
        save_distributed_checkpoint: must be False (see the module docstring); shards are written by
            `save_sharded_checkpoint(trainer, folder)`.
        process_group_backend, timeout, max_failures: as for DDPStrategy.

    Example:
        >>> ModelParallelStrategy(data_parallel_size=1, tensor_parallel_size=2, save_distributed_checkpoint=False).name
        'model_parallel'
    """

    name = "model_parallel"

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
        if save_distributed_checkpoint:
            raise ConfigError(
                "ModelParallelStrategy(save_distributed_checkpoint=True) makes the Trainer's checkpoint "
                "a folder of shards, which ember's checkpoint files are not; pass "
                "save_distributed_checkpoint=False (full-state files that load on any mesh) and call "
                "strategy.save_sharded_checkpoint(trainer, folder) for per-rank shards"
            )
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
        """The 2-D `DeviceMesh` ("data_parallel", "tensor_parallel") once the processes have joined (read it in
        `configure_model` or later); None before (Lightning raises there; None keeps `hasattr` and protocol
        checks working on a strategy not yet set up)."""
        return self._device_mesh

    def mesh_shape(self) -> tuple[int, int]:
        """(data parallel, tensor parallel), "auto" resolved as Lightning does; their product must be the world."""
        per_node = len(self.device_ids)  # the Trainer's devices: processes per node
        nodes = max(1, self.world_size // per_node)
        dp = nodes if self.data_parallel_size == "auto" else self.data_parallel_size
        tp = per_node if self.tensor_parallel_size == "auto" else self.tensor_parallel_size
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
        """The Module parallelized itself in configure_model; move what is left to the device (no wrapping)."""
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
        """As FSDP's, where the root was `fully_shard`ed (accumulation micro-steps then skip the reduce-scatter)."""
        if hasattr(module, "set_requires_gradient_sync"):  # an FSDPModule: FSDP's step, with its sync choice
            return super().training_step(module, batch, batch_idx, pass_index, sync)
        self._agree_on_batch_count(self._run())
        return module.training_step(batch, batch_idx) if pass_index else module.training_step(batch)

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
