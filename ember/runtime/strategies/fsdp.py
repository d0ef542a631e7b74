"""FSDP: parameters, gradients and optimizer states sharded across ranks (FSDP2, `fully_shard`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

from ember.errors import ConfigError
from ember.runtime.activation_checkpointing import apply_activation_checkpointing, layer_classes
from ember.runtime.sharded_checkpoint import save_sharded
from ember.runtime.strategies.parallel import ParallelStrategy


def shard_module(
    module: torch.nn.Module,
    shard_modules: tuple[type[torch.nn.Module], ...] | None = None,
    reshard_after_forward: bool = True,
    **fully_shard_kwargs: Any,
) -> torch.nn.Module:
    """Shard each parameter-owning submodule (or each `shard_modules` instance), then the root, in place
    (`fully_shard_kwargs`: FSDP2's mp_policy, offload_policy)."""
    from torch.distributed.fsdp import fully_shard

    for sub in list(module.modules())[1:]:
        owns = any(True for _ in sub.parameters(recurse=False))
        if (shard_modules is not None and isinstance(sub, shard_modules)) or (shard_modules is None and owns):
            fully_shard(sub, reshard_after_forward=reshard_after_forward, **fully_shard_kwargs)
    fully_shard(module, reshard_after_forward=reshard_after_forward, **fully_shard_kwargs)
    return module


def mixed_precision_policy(mixed_precision: Any) -> Any:
    """FSDP2's `MixedPrecisionPolicy` for Lightning's `mixed_precision=` (FSDP1's `MixedPrecision` is
    converted: its param_dtype and reduce_dtype mean the same in FSDP2; FSDP2 casts no buffers, so
    buffer_dtype is refused)."""
    from torch.distributed.fsdp import MixedPrecision, MixedPrecisionPolicy

    if mixed_precision is None or isinstance(mixed_precision, MixedPrecisionPolicy):
        return mixed_precision
    if isinstance(mixed_precision, MixedPrecision):
        if mixed_precision.buffer_dtype is not None:
            raise ConfigError(
                "FSDPStrategy(mixed_precision=MixedPrecision(buffer_dtype=...)): FSDP2 does not cast "
                "buffers; drop buffer_dtype, or pass torch.distributed.fsdp.MixedPrecisionPolicy"
            )
        return MixedPrecisionPolicy(
            param_dtype=mixed_precision.param_dtype, reduce_dtype=mixed_precision.reduce_dtype
        )
    raise ConfigError(
        f"FSDPStrategy(mixed_precision={type(mixed_precision).__name__}): pass a "
        "torch.distributed.fsdp.MixedPrecisionPolicy (or FSDP1's MixedPrecision)"
    )


def offload_policy(cpu_offload: Any) -> Any:
    """FSDP2's `CPUOffloadPolicy` for Lightning's `cpu_offload=` (True, or FSDP1's
    `CPUOffload(offload_params=True)`)."""
    from torch.distributed.fsdp import CPUOffload, CPUOffloadPolicy, OffloadPolicy

    if isinstance(cpu_offload, OffloadPolicy):
        return cpu_offload
    if isinstance(cpu_offload, CPUOffload):
        cpu_offload = cpu_offload.offload_params
    if isinstance(cpu_offload, bool):
        return CPUOffloadPolicy() if cpu_offload else None
    raise ConfigError(f"FSDPStrategy(cpu_offload={cpu_offload!r}): pass True, False or a CPUOffloadPolicy")


class FSDPStrategy(ParallelStrategy):
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

    Lightning's FSDPStrategy options, on FSDP2: `activation_checkpointing_policy={Block}` recomputes each
    Block's forward in backward instead of keeping its activations; `mixed_precision` takes FSDP2's
    `MixedPrecisionPolicy` (or FSDP1's `MixedPrecision`, converted); `cpu_offload=True` keeps parameters,
    gradients and optimizer states in CPU memory (`CPUOffloadPolicy`).

    Preemption: FSDP has no single gradient bucket to carry a stop flag as DDP does, so the ranks agree
    on a pending SIGTERM with a one-element all-reduce every `stop_check_every_n_batches` training steps
    (default 8) instead of every step: the all-reduce and the host sync of reading it are paid once per
    N steps, and a SIGTERM stops the run at most N steps later (all ranks after the same step).

    Example:
        >>> ember.Trainer(strategy="fsdp", devices=2, accelerator="cpu")  # doctest: +SKIP
    """

    name = "fsdp"

    def __init__(
        self,
        *,
        shard_modules: tuple[type[torch.nn.Module], ...] | None = None,
        reshard_after_forward: bool = True,
        stop_check_every_n_batches: int = 8,
        activation_checkpointing_policy: Any = None,
        mixed_precision: Any = None,
        cpu_offload: Any = None,
        **kwargs: Any,
    ) -> None:
        unknown = sorted(set(kwargs) - {"max_failures", "timeout", "process_group_backend"})
        if unknown:
            raise ConfigError(
                f"FSDPStrategy has no argument {unknown[0]!r}; its arguments: shard_modules, "
                "reshard_after_forward, stop_check_every_n_batches, activation_checkpointing_policy, "
                "mixed_precision, cpu_offload, max_failures, timeout, process_group_backend"
            )
        if not isinstance(stop_check_every_n_batches, int) or stop_check_every_n_batches < 1:
            raise ConfigError(
                f"stop_check_every_n_batches={stop_check_every_n_batches!r} must be a positive int"
            )
        super().__init__(**kwargs)
        self.shard_modules, self.reshard_after_forward = shard_modules, reshard_after_forward
        if activation_checkpointing_policy is not None:
            layer_classes(activation_checkpointing_policy)  # refused here, at construction, if malformed
        self.activation_checkpointing_policy = activation_checkpointing_policy
        # FSDP2's forms, checked now (they import torch.distributed.fsdp: only when given)
        self.mixed_precision = (
            mixed_precision_policy(mixed_precision) if mixed_precision is not None else None
        )
        self.cpu_offload = offload_policy(cpu_offload) if cpu_offload is not None else None
        self.stop_check_every_n_batches = stop_check_every_n_batches
        self._steps = 0

    def setup_environment(self) -> None:
        try:
            from torch.distributed.fsdp import fully_shard  # noqa: F401
        except ImportError as exc:  # torch < 2.6
            raise ConfigError(
                f"strategy='fsdp' needs torch.distributed.fsdp.fully_shard (torch >= 2.6); "
                f"this is torch {torch.__version__}"
            ) from exc
        super().setup_environment()

    def setup_module(self, module: torch.nn.Module) -> torch.nn.Module:
        """Shard each parameter-owning submodule (or each `shard_modules` instance), then the root, in
        place."""
        self._start_run()
        self._steps = 0
        if self.activation_checkpointing_policy is not None:  # before sharding, as torch's FSDP2 examples do
            apply_activation_checkpointing(module, self.activation_checkpointing_policy)
        policies = {"mp_policy": self.mixed_precision, "offload_policy": self.cpu_offload}
        self._module = shard_module(
            module.to(self.root_device),
            self.shard_modules,
            self.reshard_after_forward,
            **{k: v for k, v in policies.items() if v is not None},
        )
        return self._module

    def training_step(
        self, module: Any, batch: Any, batch_idx: int, pass_index: bool = True, sync: bool = True
    ) -> Any:
        """Every N steps agree on a pending SIGTERM; set whether this backward syncs gradients (`sync`,
        False on an accumulation micro-step); run the step."""
        self._agree_on_batch_count(self._run())
        self._steps += 1
        if self._steps % self.stop_check_every_n_batches == 0 and self.any_rank(
            self._pending_signal is not None
        ):
            self._agreed_stop()
        module.set_requires_gradient_sync(sync)
        return module.training_step(batch, batch_idx) if pass_index else module.training_step(batch)

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
        return get_optimizer_state_dict(
            self._module, optimizer, options=StateDictOptions(full_state_dict=True, cpu_offload=True)
        )

    def load_optimizer_state_dict(self, optimizer: torch.optim.Optimizer, state: dict[str, Any]) -> None:
        from torch.distributed.checkpoint.state_dict import StateDictOptions, set_optimizer_state_dict

        assert self._module is not None
        set_optimizer_state_dict(
            self._module, optimizer, state, options=StateDictOptions(full_state_dict=True)
        )

    def save_sharded_checkpoint(self, trainer: Any, folder: str | os.PathLike[str]) -> Path:
        """Each rank writes its own shard of the weights (and optimizer state) into `folder` (DCP format).

        Every rank must call it. Reads the Trainer's public `optimizers`, `global_step` and `current_epoch`.
        Read it back in one process with `load_sharded_checkpoint(folder)`.
        """
        assert self._module is not None
        return save_sharded(
            self._module,
            trainer.optimizers,
            folder,
            global_step=trainer.global_step,
            epoch=trainer.current_epoch,
        )
