"""Lightning 2.x checkpoints: recognising them, where they resume, and the keys Lightning needs in ember's.

A Lightning checkpoint holds the weights (``state_dict``), ``optimizer_states``, ``lr_schedulers``,
``epoch``/``global_step`` and its loops' progress counters — but not the RNG states nor the data
iterator's position, so a resume from it is exact at an epoch boundary only. ember reads those
keys (``torch.load(weights_only=True)`` reads Lightning files: they hold tensors and plain data)
and writes the few Lightning needs so ``LightningModule.load_from_checkpoint`` opens ember's files.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ember.errors import CheckpointError

VERSION_KEY = "pytorch-lightning_version"
# The Lightning release whose layout ember's keys follow: Lightning migrates older files on load
# and warns about newer ones, so 2.0.0 means "nothing to migrate" to every Lightning 2.x.
WRITTEN_VERSION = "2.0.0"


def is_lightning_checkpoint(checkpoint: Mapping[str, Any]) -> bool:
    """True for a file written by Lightning's Trainer (not for ember's, which also carry the version key).

    >>> is_lightning_checkpoint({"pytorch-lightning_version": "2.6.6", "loops": {}, "state_dict": {}})
    True
    >>> is_lightning_checkpoint({"pytorch-lightning_version": "2.0.0", "ember_version": "0.3", "state_dict": {}})
    False
    """
    return VERSION_KEY in checkpoint and "ember_version" not in checkpoint


@dataclass(frozen=True)
class ResumePoint:
    """Where a Lightning checkpoint's run stood: epochs finished, optimizer steps, batches into the epoch."""

    epoch: int
    global_step: int
    batches_done: int

    @property
    def mid_epoch(self) -> bool:
        return self.batches_done > 0


def resume_point(checkpoint: Mapping[str, Any], where: str = "the checkpoint") -> ResumePoint:
    """Read the fit loop's counters (Lightning's ``loops.fit_loop``) into a ResumePoint.

    >>> fit_loop = {"epoch_progress": {"current": {"completed": 1, "processed": 1}},
    ...             "epoch_loop.batch_progress": {"current": {"completed": 3, "processed": 4}, "is_last_batch": False}}
    >>> resume_point({"pytorch-lightning_version": "2.6.6", "global_step": 9, "loops": {"fit_loop": fit_loop}})
    ResumePoint(epoch=1, global_step=9, batches_done=4)
    """
    try:
        fit_loop = checkpoint["loops"]["fit_loop"]
        epochs_done = int(fit_loop["epoch_progress"]["current"]["completed"])
        batches = fit_loop["epoch_loop.batch_progress"]
        # A file written in on_train_batch_end has processed the batch but not yet counted it completed.
        in_epoch = max(int(batches["current"]["completed"]), int(batches["current"].get("processed", 0)))
        global_step = int(checkpoint["global_step"])
    except (KeyError, TypeError, ValueError) as error:
        raise CheckpointError(f"{where} looks like a Lightning checkpoint but its loop state lacks {error}; resume "
                              "needs a checkpoint written by Lightning 2.x's Trainer") from None
    # A checkpoint written inside on_train_epoch_end has counted the epoch's batches but not the epoch.
    if batches.get("is_last_batch"):
        in_epoch = 0
        epochs_done = max(epochs_done, int(fit_loop["epoch_progress"]["current"].get("processed", epochs_done)))
    return ResumePoint(epoch=epochs_done, global_step=global_step, batches_done=in_epoch)


def resume_note(point: ResumePoint, where: str) -> str:
    """The one line ember prints when it resumes from a Lightning file."""
    position = f"epoch {point.epoch}, batch {point.batches_done}" if point.mid_epoch else f"the start of epoch {point.epoch}"
    return (f"ember: resuming from Lightning checkpoint {where} at {position} (step {point.global_step}): weights, "
            "optimizers, schedulers and counters restored; a Lightning file holds no RNG states nor data position, "
            "so the run is not bitwise the one Lightning would have continued")


def lightning_keys(checkpoint: Mapping[str, Any]) -> dict[str, Any]:
    """The keys to add to an ember checkpoint so Lightning's ``load_from_checkpoint`` reads it.

    >>> lightning_keys({"hyper_parameters": {"lr": 0.1}, "state_dict": {}})
    {'pytorch-lightning_version': '2.0.0', 'hparams_name': 'kwargs'}
    """
    keys: dict[str, Any] = {VERSION_KEY: WRITTEN_VERSION}
    if checkpoint.get("hyper_parameters"):
        keys["hparams_name"] = "kwargs"
    return keys
