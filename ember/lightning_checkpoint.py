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
#: What `lightning_keys` adds to ember's files: descriptive for ember (never restored from its own files).
LIGHTNING_KEYS = (VERSION_KEY, "hparams_name", "loops")


def is_lightning_checkpoint(checkpoint: Mapping[str, Any]) -> bool:
    """True for a file written by Lightning's Trainer (not for ember's, which also carry the version key).

    >>> is_lightning_checkpoint({"pytorch-lightning_version": "2.6.6", "loops": {}, "state_dict": {}})
    True
    >>> is_lightning_checkpoint(
    ...     {"pytorch-lightning_version": "2.0.0", "ember_version": "0.3", "state_dict": {}}
    ... )
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

    >>> fit_loop = {
    ...     "epoch_progress": {"current": {"completed": 1, "processed": 1}},
    ...     "epoch_loop.batch_progress": {
    ...         "current": {"completed": 3, "processed": 4}, "is_last_batch": False
    ...     },
    ... }
    >>> loops = {"fit_loop": fit_loop}
    >>> resume_point({"pytorch-lightning_version": "2.6.6", "global_step": 9, "loops": loops})
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
        raise CheckpointError(
            f"{where} looks like a Lightning checkpoint but its loop state lacks {error}; resume "
            "needs a checkpoint written by Lightning 2.x's Trainer"
        ) from None
    # A checkpoint written inside on_train_epoch_end has counted the epoch's batches but not the epoch.
    if batches.get("is_last_batch"):
        in_epoch = 0
        epochs_done = max(
            epochs_done, int(fit_loop["epoch_progress"]["current"].get("processed", epochs_done))
        )
    return ResumePoint(epoch=epochs_done, global_step=global_step, batches_done=in_epoch)


def resume_note(point: ResumePoint, where: str) -> str:
    """The one line ember prints when it reads a Lightning file for a run (a fit resumes from its point;
    validate/test/predict take its weights)."""
    position = (
        f"epoch {point.epoch}, batch {point.batches_done}"
        if point.mid_epoch
        else f"the start of epoch {point.epoch}"
    )
    return (
        f"ember: reading Lightning checkpoint {where}, which resumes at {position} (step "
        f"{point.global_step}) with its weights, optimizers, schedulers and counters; a Lightning file "
        "holds no RNG states nor data position, so a fit from "
        "it is not bitwise the run Lightning would have continued"
    )


def from_lightning(checkpoint: Mapping[str, Any], where: str = "the checkpoint") -> dict[str, Any]:
    """A Lightning checkpoint in ember's layout: what it holds, under the keys ember's participants read.

    Every key carries over as it is (weights, optimizer and scheduler states, hyperparameters, callback
    states — ember's callbacks use Lightning's state keys — and any key a module's ``on_save_checkpoint``
    added, which its ``on_load_checkpoint`` then reads, as in Lightning); the loop counters also become
    ember's progress. Nothing else is invented: no RNG streams nor data position (the file has none), so
    those participants are left as a fresh run has them.

    >>> fit_loop = {"epoch_progress": {"current": {"completed": 2, "processed": 2}},
    ...             "epoch_loop.batch_progress": {"current": {"completed": 0}, "total": {"completed": 10}}}
    >>> ckpt = {"pytorch-lightning_version": "2.6.6", "global_step": 10, "loops": {"fit_loop": fit_loop},
    ...         "state_dict": {}, "optimizer_states": [], "lr_schedulers": []}
    >>> from_lightning(ckpt)["progress"]  # doctest: +NORMALIZE_WHITESPACE
    {'epoch': 2, 'global_step': 10, 'batch_idx': 0, 'total_batches': 10, 'epoch_finished': False,
    'epoch_closed': False}
    """
    point = resume_point(checkpoint, where)
    converted = dict(checkpoint)
    batches = checkpoint["loops"]["fit_loop"]["epoch_loop.batch_progress"]
    converted["progress"] = {
        "epoch": point.epoch,
        "global_step": point.global_step,
        "batch_idx": point.batches_done,
        "total_batches": int(batches.get("total", {}).get("completed", 0)),
        "epoch_finished": False,
        "epoch_closed": False,
    }
    return converted


def lightning_keys(checkpoint: Mapping[str, Any]) -> dict[str, Any]:
    """The keys to add to an ember checkpoint so Lightning's ``load_from_checkpoint`` and
    ``Trainer.fit(ckpt_path=...)`` read it: the version (Lightning refuses a file without one), the
    hyperparameters' name, and the fit loop's counters in Lightning's layout (from ember's ``progress``).

    >>> sorted(lightning_keys({"hyper_parameters": {"lr": 0.1}, "state_dict": {}}))
    ['hparams_name', 'pytorch-lightning_version']
    """
    keys: dict[str, Any] = {VERSION_KEY: WRITTEN_VERSION}
    if checkpoint.get("hyper_parameters"):
        keys["hparams_name"] = "kwargs"
    if isinstance(checkpoint.get("progress"), Mapping):
        keys["loops"] = {"fit_loop": fit_loop_state(checkpoint["progress"])}
    return keys


def _counts(value: int, *names: str, **overrides: int) -> dict[str, int]:
    return {name: overrides.get(name, value) for name in names}


def fit_loop_state(progress: Mapping[str, Any]) -> dict[str, Any]:
    """ember's progress as Lightning 2.x's fit loop writes it at the same point.

    At an epoch boundary every epoch counter says "E epochs done", which Lightning starts as a fresh
    epoch E. Mid-epoch it is the state Lightning writes in ``on_train_batch_end`` after ``b``
    batches (the last one processed, not yet counted completed): Lightning then continues the epoch
    from a new iterator over the loader (its own behaviour for a file of its own, with a warning).

    >>> state = fit_loop_state({"epoch": 1, "global_step": 7, "batch_idx": 2, "total_batches": 7,
    ...                         "epoch_finished": False})
    >>> state["epoch_progress"]["current"], state["epoch_loop.batch_progress"]["current"]
    ... # doctest: +NORMALIZE_WHITESPACE
    ({'ready': 2, 'started': 2, 'processed': 1, 'completed': 1},
     {'ready': 2, 'started': 2, 'processed': 2, 'completed': 1})
    """
    epoch, step, in_epoch = (
        int(progress["epoch"]),
        int(progress["global_step"]),
        int(progress.get("batch_idx", 0)),
    )
    total = int(progress.get("total_batches", 0))
    mid_epoch = in_epoch > 0 and not progress.get("epoch_finished", False)
    done = epoch + 1 if progress.get("epoch_finished", False) else epoch
    epochs = (
        _counts(done + 1, "ready", "started", "processed", "completed", processed=done, completed=done)
        if mid_epoch
        else _counts(done, "ready", "started", "processed", "completed")
    )
    last = 1 if mid_epoch else 0  # the batch in whose on_train_batch_end the file was written
    batch_names = ("ready", "started", "processed", "completed")
    this_epoch = (
        min(step, in_epoch) if mid_epoch else 0
    )  # exact without accumulation; Lightning only reads totals
    steps = {
        "total": _counts(step, "ready", "completed"),
        "current": _counts(this_epoch, "ready", "completed"),
    }
    return {
        "state_dict": {},
        "epoch_progress": {"total": dict(epochs), "current": dict(epochs)},
        # Batches that ended with optimizer steps (Lightning's logging step): the steps with accumulation, the
        # batches with several optimizers stepped per batch (manual optimization).
        "epoch_loop.state_dict": {"_batches_that_stepped": (min(step, total) if total else step) - last},
        "epoch_loop.batch_progress": {
            "total": _counts(total, *batch_names, completed=total - last),
            "current": _counts(in_epoch, *batch_names, completed=in_epoch - last),
            "is_last_batch": not mid_epoch and in_epoch > 0,
        },
        "epoch_loop.scheduler_progress": {
            "total": _counts(0, "ready", "completed"),
            "current": _counts(0, "ready", "completed"),
        },
        "epoch_loop.automatic_optimization.optim_progress": {
            "optimizer": {
                "step": steps,
                "zero_grad": {
                    "total": _counts(step, "ready", "started", "completed"),
                    "current": _counts(steps["current"]["ready"], "ready", "started", "completed"),
                },
            }
        },
        "epoch_loop.manual_optimization.optim_step_progress": steps,
    }
