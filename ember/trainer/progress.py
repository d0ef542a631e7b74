"""Where training is: the resume point, as a small stateful object."""

from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass
class Progress:
    """Counters that say exactly where a fit is, so a checkpoint can resume at the next batch.

    epoch:          the epoch being run (0-based).
    global_step:    optimizer steps taken so far (what schedulers and `max_steps` count).
    batch_idx:      batches finished in the current epoch.
    epoch_finished: the epoch's batches, its validation and `on_train_epoch_end` are all done.
    val_done_at:    `batch_idx` at which the last in-epoch validation finished (-1: none yet), so a
                    resume knows whether the validation due at the resume point still has to run.
    """

    epoch: int = 0
    global_step: int = 0
    batch_idx: int = 0
    total_batches: int = 0
    epoch_finished: bool = False
    val_done_at: int = -1

    def start_epoch(self) -> None:
        """Move to the next epoch if the current one is finished; a resumed mid-epoch run stays put."""
        if self.epoch_finished:
            self.epoch += 1
            self.batch_idx = 0
            self.epoch_finished = False
            self.val_done_at = -1

    def state_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        for field in dataclasses.fields(self):
            if field.name in state:
                setattr(self, field.name, state[field.name])

    @property
    def mid_epoch(self) -> bool:
        return self.batch_idx > 0 and not self.epoch_finished
