"""The loops: fit (train epochs with validation), evaluation (validate/test) and prediction.

Read top to bottom, `run_fit` is the whole training procedure; the rare paths (resume,
validation scheduling, flushing logs, signals) are named helpers below it.
"""

from __future__ import annotations

import math
import time
import warnings
from typing import Any

import torch

from ember.errors import DataError
from ember.runtime.devices import move_to_device
from ember.runtime.seed import preserve_rng_state, restore_rng_state
from ember.trainer.data import EpochIterator, explain_step_error, length_of, resolve_limit


def run_fit(trainer: Any) -> None:
    progress = trainer.progress
    trainer._hooks("on_train_start")
    if progress.epoch_finished and not progress.epoch_closed:
        with warnings.catch_warnings():  # the restored optimizer has not stepped in this process yet
            warnings.filterwarnings("ignore", "Detected call of `lr_scheduler.step\\(\\)` before")
            _close_train_epoch(trainer)  # resumed from a checkpoint written inside on_train_epoch_end
    while not _fit_done(trainer):
        progress.start_epoch()
        if trainer.max_epochs is not None and progress.epoch >= trainer.max_epochs:
            break
        run_train_epoch(trainer)
    trainer._hooks("on_train_end")


def _fit_done(trainer: Any) -> bool:
    progress = trainer.progress
    if trainer.max_steps != -1 and progress.global_step >= trainer.max_steps:
        return True
    if trainer._time_is_up():
        return True
    if trainer.should_stop:
        if progress.epoch + (1 if progress.epoch_finished else 0) >= (trainer.min_epochs or 0):
            return True
        trainer.should_stop = False  # min_epochs not reached: keep going
    return False


def run_train_epoch(trainer: Any) -> None:
    """One epoch of training batches, with validation wherever it is due, then the epoch-end hooks."""
    progress, hooks, module = trainer.progress, trainer._hooks, trainer.module
    data: EpochIterator = trainer._train_iter
    resume_at = progress.batch_idx
    trainer._enter_stage("train")
    module.train()
    data.set_epoch(progress.epoch)
    batches = data.start(resume_at, trainer._resume_epoch_start_rng)
    trainer.num_training_batches = int_or_inf(resolve_limit(trainer.limit_train_batches, length_of(data.loader), "limit_train_batches"))
    hooks("on_train_epoch_start")
    if resume_at and trainer._resume_rng is not None:
        restore_rng_state(trainer._resume_rng)  # continue the random streams where the checkpoint left them
    trainer._resume_rng = trainer._resume_epoch_start_rng = None
    if resume_at and _val_due_after(trainer, resume_at) and progress.val_done_at != resume_at:
        run_validation(trainer)  # the checkpoint was written between a batch and its validation

    batch_start, batch_end = hooks.get("on_train_batch_start"), hooks.get("on_train_batch_end")
    optimization, device, store = trainer._optimization, trainer._batch_device, trainer._stores["train"]
    limit, log_every = trainer.num_training_batches, trainer.log_every_n_steps
    batch_idx = resume_at
    for batch in batches:
        if batch_idx >= limit:
            break
        if device is not None:
            batch = move_to_device(batch, device)
        store.current_batch = batch
        for fn in batch_start:
            fn(batch, batch_idx)
        outputs = optimization.run(batch, batch_idx)
        batch_idx += 1
        progress.batch_idx = batch_idx
        progress.total_batches += 1
        for fn in batch_end:
            fn(outputs, batch, batch_idx - 1)
        if progress.global_step % log_every == 0 and progress.global_step != trainer._last_flush_step:
            trainer._flush_step_logs()
        if _val_due_after(trainer, batch_idx):
            run_validation(trainer)
        if trainer._signal_received and optimization.at_window_boundary:
            trainer._stop_on_signal()
        if trainer._should_end_epoch_early():
            break

    if batch_idx == 0 and trainer.limit_train_batches != 0:
        raise DataError(
            "the training data has no batches (an empty dataset, or drop_last=True with a batch size above its "
            "length), so fit would return without training; pass data with at least one batch"
        )
    if not optimization.at_window_boundary:
        optimization.step()  # the epoch ended inside an accumulation window
    if trainer.will_validate_this_epoch and progress.val_done_at != batch_idx and not trainer._signal_received:
        run_validation(trainer)
    _end_train_epoch(trainer)


def _end_train_epoch(trainer: Any) -> None:
    trainer._enter_stage("train", epoch_hooks=True)
    trainer.progress.epoch_finished = True
    trainer._hooks("on_train_epoch_end")
    _close_train_epoch(trainer)


def _close_train_epoch(trainer: Any) -> None:
    """After on_train_epoch_end (where ModelCheckpoint may save): epoch metrics, epoch-interval schedulers."""
    progress = trainer.progress
    trainer._enter_stage("train", epoch_hooks=True)
    if progress.global_step != trainer._last_flush_step:
        trainer._flush_step_logs()
    trainer._log_epoch_metrics("train")
    for config in trainer.lr_scheduler_configs:
        if config.interval == "epoch" and (progress.epoch + 1) % config.frequency == 0:
            from ember.trainer.optimization import step_scheduler

            step_scheduler(config, trainer)
    progress.epoch_closed = True
    trainer._enter_stage("train")


def _val_due_after(trainer: Any, batch_count: int) -> bool:
    """Is an in-epoch validation due after `batch_count` batches of this epoch?"""
    if not trainer.will_validate_this_epoch:
        return False
    interval = trainer.val_check_batches
    return interval is not None and batch_count % interval == 0


def int_or_inf(value: float) -> int | float:
    return int(value) if math.isfinite(value) else math.inf


def run_validation(trainer: Any) -> None:
    """Validation inside fit: eval mode, no grad, back to train mode; the progress records it ran."""
    was_training = trainer.module.training
    run_evaluation(trainer, "validate", trainer._val_loaders, trainer.limit_val_batches)
    trainer.module.train(was_training)
    trainer._enter_stage("train")


def run_sanity_check(trainer: Any) -> None:
    """A few validation batches before training, to fail fast; it leaves the RNG streams untouched."""
    steps = trainer.num_sanity_val_steps
    if not steps or not trainer._val_loaders or not trainer._has_validation_step:
        return
    trainer.sanity_checking = True
    with preserve_rng_state():
        trainer._hooks("on_sanity_check_start")
        run_evaluation(trainer, "validate", trainer._val_loaders, steps if steps > 0 else None, log=False)
        trainer._hooks("on_sanity_check_end")
    trainer.sanity_checking = False
    trainer._stores["validate"].callback_values.clear()
    trainer.module.train()


_EVAL = {
    "validate": ("validation_step", "on_validation"),
    "test": ("test_step", "on_test"),
}


def run_evaluation(trainer: Any, stage: str, loaders: list[Any], limit: Any, log: bool = True) -> list[dict[str, float]]:
    """Run validation_step/test_step over every loader; returns the epoch metrics per loader."""
    step_name, prefix = _EVAL[stage]
    module, hooks = trainer.module, trainer._hooks
    step_fn = getattr(module, step_name)
    trainer._enter_stage(stage)
    module.eval()
    hooks(f"{prefix}_start")
    hooks(f"{prefix}_epoch_start")
    batch_start, batch_end = hooks.get(f"{prefix}_batch_start"), hooks.get(f"{prefix}_batch_end")
    store = trainer._stores[stage]
    several = len(loaders) > 1
    seen = 0
    grad_mode = torch.no_grad() if stage == "validate" else torch.inference_mode()
    with grad_mode:
        for loader_idx, loader in enumerate(loaders):
            count = resolve_limit(limit, length_of(loader), f"limit_{'val' if stage == 'validate' else stage}_batches")
            for batch_idx, batch in enumerate(trainer._eval_batches(loader)):
                if batch_idx >= count:
                    break
                batch = move_to_device(batch, trainer._batch_device) if trainer._batch_device else batch
                store.current_batch = batch
                extra = (loader_idx,) if several else ()
                for fn in batch_start:
                    fn(batch, batch_idx, *extra)
                with trainer.precision_plugin.autocast():
                    try:
                        outputs = step_fn(batch, batch_idx, *extra)
                    except ValueError as e:
                        hint = explain_step_error(e, batch, step_name)
                        if hint is None:
                            raise
                        raise hint from e
                seen += 1
                for fn in batch_end:
                    fn(outputs, batch, batch_idx, *extra)
    if seen == 0 and loaders and limit != 0 and not trainer.sanity_checking:
        raise DataError(
            f"the {stage} data has no batches (an empty dataset, or drop_last=True with a batch size above its "
            f"length), so {stage} would report nothing; pass data with at least one batch"
        )
    trainer._enter_stage(stage, epoch_hooks=True)
    hooks(f"{prefix}_epoch_end")
    results = trainer._log_epoch_metrics(stage, log=log)
    if stage == "validate" and trainer._fitting and not trainer.sanity_checking:
        trainer.progress.val_done_at = trainer.progress.batch_idx  # before on_validation_end saves a checkpoint
    hooks(f"{prefix}_end")
    return [results]


def run_predict(trainer: Any, loaders: list[Any], return_predictions: bool) -> list[list[Any]]:
    module, hooks = trainer.module, trainer._hooks
    trainer._enter_stage("predict")
    module.eval()
    hooks("on_predict_start")
    hooks("on_predict_epoch_start")
    batch_start, batch_end = hooks.get("on_predict_batch_start"), hooks.get("on_predict_batch_end")
    results: list[list[Any]] = []
    with torch.inference_mode():
        for loader_idx, loader in enumerate(loaders):
            count = resolve_limit(trainer.limit_predict_batches, length_of(loader), "limit_predict_batches")
            outputs_for_loader: list[Any] = []
            for batch_idx, batch in enumerate(trainer._eval_batches(loader)):
                if batch_idx >= count:
                    break
                batch = move_to_device(batch, trainer._batch_device) if trainer._batch_device else batch
                for fn in batch_start:
                    fn(batch, batch_idx, loader_idx)
                with trainer.precision_plugin.autocast():
                    outputs = module.predict_step(batch, batch_idx, loader_idx) if len(loaders) > 1 else module.predict_step(batch, batch_idx)
                for fn in batch_end:
                    fn(outputs, batch, batch_idx, loader_idx)
                if return_predictions:
                    outputs_for_loader.append(outputs)
            results.append(outputs_for_loader)
    hooks("on_predict_epoch_end")
    hooks("on_predict_end")
    return results


def elapsed_since(start: float) -> float:
    return time.monotonic() - start
