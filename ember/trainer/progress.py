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
    epoch_closed:   what follows `on_train_epoch_end` is done too (epoch metrics logged, epoch-interval
                    schedulers stepped). A checkpoint written inside `on_train_epoch_end` has
                    `epoch_finished` but not this, and the resumed run finishes that work first.
    """

    epoch: int = 0
    global_step: int = 0
    batch_idx: int = 0
    total_batches: int = 0
    epoch_finished: bool = False
    val_done_at: int = -1
    epoch_closed: bool = False

    def start_epoch(self) -> None:
        """Move to the next epoch if the current one is finished; a resumed mid-epoch run stays put."""
        if self.epoch_finished:
            self.epoch += 1
            self.batch_idx = 0
            self.epoch_finished = False
            self.epoch_closed = False
            self.val_done_at = -1

    def state_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        for field in dataclasses.fields(self):
            if field.name in state:
                setattr(self, field.name, state[field.name])
        if "epoch_closed" not in state:  # written before this field: behave as those versions did
            self.epoch_closed = self.epoch_finished

    @property
    def mid_epoch(self) -> bool:
        return self.batch_idx > 0 and not self.epoch_finished
