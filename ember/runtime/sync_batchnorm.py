"""`Trainer(sync_batchnorm=True)`: BatchNorm layers normalise with the statistics of the whole global batch
(every rank's samples), as Lightning's `TorchSyncBatchNorm` plugin does, under DDP and FSDP.

The layers become `torch.nn.SyncBatchNorm` on GPUs (its fused kernels), and on CPU, where torch's class
refuses to run (and DDP refuses to wrap it), ember's `SyncBatchNorm`: the same arithmetic with
differentiable all-reduces (`torch.distributed.nn.functional.all_reduce`), so a gloo run trains as one
process would on the concatenated batch. The running statistics are updated as BatchNorm updates them
(unbiased variance), from the global batch, so they are equal on every rank.

Example:
    >>> import torch
    >>> net = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4))
    >>> convert_sync_batchnorm(net, "cpu")
    1
    >>> type(net[1]).__name__
    'SyncBatchNorm'
"""

from __future__ import annotations

import torch
import torch.distributed as dist
from torch.nn.modules.batchnorm import _BatchNorm


class SyncBatchNorm(_BatchNorm):
    """Batch norm over every rank's samples, on CPU (see the module docstring); plain batch norm in eval
    mode or without a process group. Not a `torch.nn.SyncBatchNorm`, which DDP refuses on CPU."""

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        process_group: object = None,
    ) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats)
        self.process_group = process_group

    def _check_input_dim(self, input: torch.Tensor) -> None:
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        synced = self.training and dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1
        if not synced:
            return super().forward(input)
        self._check_input_dim(input)
        return self._synced_forward(input)

    def _synced_forward(self, input: torch.Tensor) -> torch.Tensor:
        from torch.distributed.nn.functional import all_reduce  # differentiable: gradients reach every rank

        channels = input.size(1)
        dims = [0, *range(2, input.dim())]
        count = torch.tensor([input.numel() / channels], dtype=input.dtype)
        totals = all_reduce(
            torch.cat([input.sum(dims), (input * input).sum(dims), count]),
            group=self.process_group or dist.group.WORLD,
        )
        n = totals[-1]
        mean = totals[:channels] / n
        var = totals[channels : 2 * channels] / n - mean * mean  # biased, as batch norm normalises with
        if self.track_running_stats and self.running_mean is not None and self.running_var is not None:
            self._update_running_stats(mean.detach(), var.detach() * n.detach() / (n.detach() - 1))
        shape = [1, channels] + [1] * (input.dim() - 2)
        out = (input - mean.view(shape)) * torch.rsqrt(var.view(shape) + self.eps)
        if self.affine:
            out = out * self.weight.view(shape) + self.bias.view(shape)
        return out

    def _update_running_stats(self, mean: torch.Tensor, unbiased_var: torch.Tensor) -> None:
        assert self.num_batches_tracked is not None
        self.num_batches_tracked.add_(1)
        momentum = (1.0 / float(self.num_batches_tracked)) if self.momentum is None else self.momentum
        with torch.no_grad():
            self.running_mean.mul_(1 - momentum).add_(mean, alpha=momentum)  # type: ignore[union-attr]
            self.running_var.mul_(1 - momentum).add_(unbiased_var, alpha=momentum)  # type: ignore[union-attr]


def convert_sync_batchnorm(module: torch.nn.Module, device_type: str) -> int:
    """Replace every BatchNorm layer below `module` by a synchronised one for `device_type` ("cpu": ember's
    SyncBatchNorm, else torch's) holding the same parameters and running statistics (in place); returns how
    many were replaced."""
    replaced = 0
    for name, child in module.named_children():
        if isinstance(child, _BatchNorm) and not isinstance(child, (torch.nn.SyncBatchNorm, SyncBatchNorm)):
            setattr(
                module,
                name,
                _synced_copy(child, SyncBatchNorm if device_type == "cpu" else torch.nn.SyncBatchNorm),
            )
            replaced += 1
        else:
            replaced += convert_sync_batchnorm(child, device_type)
    return replaced


def _synced_copy(layer: _BatchNorm, cls: type) -> torch.nn.Module:
    synced = cls(layer.num_features, layer.eps, layer.momentum, layer.affine, layer.track_running_stats)
    synced.load_state_dict(layer.state_dict())  # weight, bias, running stats, num_batches_tracked
    synced.train(layer.training)
    for p_new, p_old in zip(synced.parameters(), layer.parameters(), strict=True):
        p_new.requires_grad_(p_old.requires_grad)
    reference = next(iter(layer.state_dict().values()), None)  # none without affine and running stats
    return synced.to(reference.device) if reference is not None else synced
