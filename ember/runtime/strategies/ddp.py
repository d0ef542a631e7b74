"""DDP: one process per device, the module wrapped in DistributedDataParallel, gradients averaged.

Preemption without a per-step collective: a SIGTERM on any rank only raises a local "pending"
flag. The flag rides in the gradient all-reduce DDP already does on every synchronising step (one
extra float appended to the first bucket, see `_stop_flag_hook`), so after that backward every rank
holds the same answer to "did any rank get a signal?", and all of them stop after the same step.

`wrap_module` is the one DDP wrapping in ember: the Trainer's strategy and TorchTrainer's
`prepare_model` both use it.

Example (in a script; `python train.py` starts 2 processes, torchrun works too):
    >>> trainer = ember.Trainer(strategy="ddp", devices=2, accelerator="cpu")  # doctest: +SKIP
    >>> trainer.fit(model, loader)  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import datetime
from collections.abc import Iterator
from typing import Any

import torch
import torch.distributed as dist

from ember.runtime import process_group
from ember.runtime.strategies.parallel import ParallelStrategy


def wrap_module(
    module: torch.nn.Module, device: torch.device, *, move: bool = True, **ddp_kwargs: Any
) -> torch.nn.parallel.DistributedDataParallel:
    """`module` (moved to `device` unless `move=False`) wrapped in DistributedDataParallel for this rank
    (device_ids on CUDA only, as DDP wants for a single-device module)."""
    if move:
        module = module.to(device)
    device_ids = [device.index] if device.type == "cuda" else None
    return torch.nn.parallel.DistributedDataParallel(module, device_ids=device_ids, **ddp_kwargs)


class DDPStrategy(ParallelStrategy):
    """DistributedDataParallel on one machine (spawned) or many (torchrun).

    Args:
        max_failures: restart all workers from the last checkpoint up to this many times when one
            dies or raises (only when ember starts the workers; torchrun has `--max-restarts`).
        timeout: collective timeout; a rank stuck longer than this raises instead of hanging.
        process_group_backend: "gloo" or "nccl"; default nccl on CUDA, gloo otherwise.
        **ddp_kwargs: passed to `torch.nn.parallel.DistributedDataParallel` (e.g. find_unused_parameters).

    Gradient accumulation: the micro-steps of a window (`training_step(..., sync=False)`, as the Trainer
    decides) run their forward under DDP's `no_sync()`, so their backward does not all-reduce; only the
    window's last one does.

    Example:
        >>> ember.Trainer(strategy=DDPStrategy(max_failures=1), devices=2)  # doctest: +SKIP
    """

    name = "ddp"

    def __init__(
        self,
        *,
        max_failures: int = 0,
        timeout: datetime.timedelta = process_group.DEFAULT_TIMEOUT,
        process_group_backend: str | None = None,
        **ddp_kwargs: Any,
    ) -> None:
        super().__init__(
            max_failures=max_failures, timeout=timeout, process_group_backend=process_group_backend
        )
        self.ddp_kwargs = ddp_kwargs
        self._ddp: torch.nn.parallel.DistributedDataParallel | None = None

    def setup_module(self, module: torch.nn.Module) -> torch.nn.Module:
        """Move to this rank's device and wrap in DDP, with the stop-flag riding the gradient all-reduce."""
        self._start_run()
        self._module = module
        self._ddp = wrap_module(module, self.root_device, **self.ddp_kwargs)
        self._stop_flag = torch.zeros(1, device=self.root_device)
        self._ddp.register_comm_hook(self, _stop_flag_hook)
        return self._ddp

    def training_step(
        self, module: Any, batch: Any, batch_idx: int, pass_index: bool = True, sync: bool = True
    ) -> Any:
        """Call `module.training_step` through the DDP wrapper, so backward all-reduces gradients; under
        `no_sync()` when `sync` is False (an accumulation micro-step: DDP decides at forward time, when it
        prepares its reducer)."""
        assert self._ddp is not None, "setup_module was not called"
        self._agree_on_batch_count(self._run())
        with (
            _forward_as(module, module.training_step),
            contextlib.nullcontext() if sync else self._ddp.no_sync(),
        ):
            return self._ddp(batch, batch_idx) if pass_index else self._ddp(batch)

    def teardown(self) -> None:
        self._ddp = None
        super().teardown()


def _stop_flag_hook(strategy, bucket):  # unannotated: DDP rejects string annotations here
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
    original: Any = module.__dict__.get("forward")

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
