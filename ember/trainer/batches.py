"""Batch preparation: a loader's batch as a step receives it, the same way in every loop.

Lightning's order: the transfer hooks (`on_before_batch_transfer`, `transfer_batch_to_device`,
`on_after_batch_transfer`, the DataModule's or the Module's) when one is overridden, else a plain move
to the run's device; then a "-true" precision's dtype conversion of the floats. The fit, evaluation
and prediction loops all call `BatchPreparation.for_loop` once when they start and the function it
returns on each batch.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import torch

from ember.runtime.devices import move_to_device
from ember.trainer.hooks import batch_transfer

Prepare = Callable[[Any, int], Any]


@dataclasses.dataclass(frozen=True)
class BatchPreparation:
    """How this run's batches reach a step (set by build.setup_model once the model is on its device).

    Example:
        >>> import torch, ember
        >>> preparation = BatchPreparation(torch.device("cpu"), device=None, convert=None)
        >>> preparation.for_loop(ember.Module(), None) is None  # on CPU without hooks: nothing to do
        True
        >>> halve = BatchPreparation(torch.device("cpu"), None, convert=lambda b: b / 2)
        >>> halve.for_loop(ember.Module(), None)(torch.ones(2), 0)
        tensor([0.5000, 0.5000])
    """

    root_device: torch.device  # where the transfer hooks are told to move the batch
    device: torch.device | None  # where batches are moved without hooks; None on CPU: they are not moved
    convert: Callable[[Any], Any] | None  # "-true" precisions: the batch's floats to the dtype (else None)

    def for_loop(self, module: Any, datamodule: Any) -> Prepare | None:
        """`prepare(batch, dataloader_idx)` for one loop (the transfer hooks are looked up as it starts);
        None when a batch is used as the loader gives it (no hook, CPU, no conversion): no call per batch."""
        transfer = batch_transfer(module, datamodule, self.root_device)
        device, convert = self.device, self.convert
        if transfer is None and device is None and convert is None:
            return None

        def prepare(batch: Any, dataloader_idx: int) -> Any:
            if transfer is not None:
                batch = transfer(batch, dataloader_idx)
            elif device is not None:
                batch = move_to_device(batch, device)
            return convert(batch) if convert is not None else batch

        return prepare
