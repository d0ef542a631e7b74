"""Lightning's batch-transfer hooks, shared by Module and DataModule (as Lightning's DataHooks are).

The defaults leave a batch as it is and move it to the device; the Trainer calls them only when a
Module or DataModule overrides one (the DataModule's override wins), so the defaults cost nothing.
"""

from __future__ import annotations

from typing import Any

import torch

from ember.runtime.devices import move_to_device


class BatchTransferHooks:
    """``on_before_batch_transfer`` → ``transfer_batch_to_device`` → ``on_after_batch_transfer``.

    >>> import torch
    >>> BatchTransferHooks().transfer_batch_to_device({"x": torch.ones(1)}, torch.device("cpu"), 0)
    {'x': tensor([1.])}
    """

    def on_before_batch_transfer(self, batch: Any, dataloader_idx: int) -> Any:
        return batch

    def transfer_batch_to_device(self, batch: Any, device: torch.device, dataloader_idx: int) -> Any:
        return move_to_device(batch, device)

    def on_after_batch_transfer(self, batch: Any, dataloader_idx: int) -> Any:
        return batch
