"""The loops: fit (train epochs with validation), evaluation (validate/test) and prediction.

Read top to bottom, `run_fit` is the whole training procedure; the rare paths (resume, validation
scheduling, signals) are named helpers or live in their own files: when to stop in `stopping.py`,
what a resume still asks in `resume.py`. Every loop receives the typed `Run`, never the Trainer.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator
from typing import Any

import torch

from ember.errors import ConfigError, DataError
from ember.runtime.seed import preserve_rng_state
from ember.trainer import data_fetch, participants
from ember.trainer.dataloaders import explain_step_error, length_of, resolve_limit
from ember.trainer.hooks import call_module_hook, takes_batch_idx
from ember.trainer.optimization import AutomaticOptimization, SchedulerConfig, step_scheduler
from ember.trainer.run import Run
from ember.trainer.signals import stop_on_signal
from ember.trainer.stopping import END_EPOCH, SIGNALLED


def run_stage(run: Run, data: dict[str, Any], autolog_hparams: bool) -> Any:
    """The stage's loop with its start and end: fit (on_fit_start, the sanity check, the epochs, on_fit_end),
    or validate/test/predict (their data, then their loop); the loggers are finalized at every stage's end."""
    hooks, reporter = run.hooks, run.reporter
    assert hooks is not None
    if run.stage == "fit":
        run.loop.fitting = True
        with reporter.refusing_logs("on_fit_start"):
            hooks("on_fit_start")
        if autolog_hparams:  # Lightning: after on_fit_start, at every stage
            reporter.log_hyperparams(run.datamodule)
        if run.resume.training_state is not None:
            participants.restore_after_fit_start(run, *run.resume.training_state)
            run.resume.training_state = None
        run_sanity_check(run)
        fetch_train_data(run)
        run.resume.restore_rng_at_fit_start(run.progress)
        run_fit(run)
        with reporter.refusing_logs("on_fit_end"):
            hooks("on_fit_end")
        run.loop.fitting = False
        reporter.finalize("success")
        return None
    if autolog_hparams:
        reporter.log_hyperparams(run.datamodule)
    data_fetch.fetch_eval_data(run, data.get("data"))
    if run.stage in ("validate", "test"):
        limit = run.options.limit_val_batches if run.stage == "validate" else run.options.limit_test_batches
        results = run_evaluation(run, run.stage, run.data.eval_loaders, 1.0 if limit is None else limit)
        reporter.finalize("success")
        return results
    predictions = run_predict(run, run.data.eval_loaders, data.get("return_predictions", True))
    reporter.finalize("success")  # Lightning finalizes the loggers at the end of every stage
    return predictions


def run_fit(run: Run) -> None:
    progress, stop, hooks = run.progress, run.stop, run.hooks
    assert hooks is not None
    run.reporter.enter_stage(
        "train", epoch_hooks=True
    )  # on_train_start is training (not the sanity check's stage)
    left_open = run.resume.epoch_left_open(progress)
    if not left_open and (stop.fit_done(progress) or run.options.limit_train_batches == 0):
        # Lightning's FitLoop.skip: nothing to train (a Timer expired in on_fit_start, max_steps reached,
        # limit_train_batches=0), so neither on_train_start nor on_train_end runs
        return
    if run.will_validate_this_epoch:  # Lightning's FitLoop.on_run_start: the first epoch's validation data
        data_fetch.val_loaders(run)
    hooks("on_train_start")
    if left_open:
        with warnings.catch_warnings():  # the restored optimizer has not stepped in this process yet
            warnings.filterwarnings("ignore", "Detected call of `lr_scheduler.step\\(\\)` before")
            _close_train_epoch(run)  # resumed from a checkpoint written inside on_train_epoch_end
    while not stop.fit_done(progress):
        progress.start_epoch()
        if stop.epochs_done(progress):
            break
        data_fetch.reload_train_if_due(run)
        run_train_epoch(run)
    with run.reporter.refusing_logs("on_train_end"):  # from the Module and from callbacks, as in Lightning
        hooks("on_train_end")


def fetch_train_data(run: Run) -> None:
    """Lightning's FitLoop.setup_data: the training data is fetched after the sanity check (before a resumed
    run's RNG streams are put back), and not at all under limit_train_batches=0."""
    if run.options.limit_train_batches == 0:
        data_fetch.no_training_data(run)
        return
    data_fetch.train_data(run)
    interval, batches = run.options.val_check_interval, run.data.num_training_batches
    if (
        isinstance(interval, int)
        and interval > batches
        and run.options.check_val_every_n_epoch is not None
        and run.options.limit_val_batches != 0
    ):  # Lightning's check, here too
        raise ConfigError(
            f"val_check_interval={interval} is more than the {int(batches)} training batches of an "
            "epoch; lower it, set check_val_every_n_epoch=None to count batches across epochs, or "
            "limit_val_batches=0 to turn validation off"
        )


def _start_epoch_data(run: Run, data: Any) -> tuple[Any, Any]:
    """The epoch's batches from ``data`` (from the resumed position) and the epoch's batch limit, recorded on
    the run with the validation points it implies."""
    data.set_epoch(run.progress.epoch)
    batches = run.resume.start_epoch(data, run.progress)
    limit = data_fetch.count_epoch_batches(run, data)
    run.loop.val_check_batches = run.options.val_check_batches(limit)
    return batches, limit


def run_train_epoch(run: Run) -> None:
    """One epoch of training batches, with validation wherever it is due, then the epoch-end hooks."""
    progress, hooks, stop, reporter = run.progress, run.hooks, run.stop, run.reporter
    data, optimization = run.data.train_data, run.optimization
    assert hooks is not None and data is not None and optimization is not None
    resume_at = progress.batch_idx
    reporter.enter_stage("train", epoch_hooks=True)  # on_train_epoch_start logs epoch values only (Lightning)
    run.module.train()
    batches, limit = _start_epoch_data(run, data)
    hooks("on_train_epoch_start")
    if (
        run.data.train_data is not data
    ):  # a callback fetched the data again there (a batch size finder's search)
        data = run.data.train_data
        assert data is not None
        batches, limit = _start_epoch_data(run, data)
    reporter.enter_stage("train")
    # after on_train_epoch_start: a callback may swap in a scheduler there (StochasticWeightAveraging)
    epoch_schedulers, plateau_steps = _scheduler_points(run)
    run.loop.epoch_complete = False
    run.resume.restore_rng_mid_epoch(progress)
    if run.resume.validation_pending(progress, _val_due_after(run, resume_at)):
        run_validation(run)  # the checkpoint was written between a batch and its validation

    batch_start, batch_end = hooks.get("on_train_batch_start"), hooks.get("on_train_batch_end")
    store, log_every = reporter.stores["train"], run.options.log_every_n_steps
    counts_batches = (
        reporter.counts_batches
    )  # manual optimization: the logger step counts batches (Lightning)
    assert run.batches is not None
    prepare = run.batches.for_loop(run.module, run.datamodule)  # None: batches are used as given
    # check_val_every_n_epoch=None: Lightning counts batches across epochs for an int val_check_interval
    across_epochs = run.options.check_val_every_n_epoch is None
    next_val = _next_validation(run, progress.total_batches if across_epochs else resume_at)
    batch_idx = resume_at
    exhausted = skipped_rest = False
    sized = math.isfinite(limit)
    if not sized and run.strategy.world_size > 1:  # user-sharded data of unknown length: never a hang
        batches = run.strategy.agreed_batches(batches, progress.epoch)
    if not sized and not data.stateful:
        # Unknown length: look one batch ahead to know the last, as Lightning's fetcher does. Not for a
        # stateful iterable (ember.data, StatefulDataLoader): its position would count the batch fetched ahead
        # as trained.
        batches = _flag_last(batches, run)
    for batch in batches:
        if batch_idx >= limit:  # limit_train_batches: the epoch's length
            break
        if sized:
            run.loop.is_last_batch = batch_idx + 1 >= limit
        if prepare is not None:
            batch = prepare(batch, 0)
        store.current_batch = batch
        store.fx = "on_train_batch_start"  # (Lightning's key for self.log: the hook and the name)
        response = None
        for fn in batch_start:
            response = fn(batch, batch_idx)
        if response is not None and _skips_rest_of_epoch(response, batch_start, run.module):
            skipped_rest = True
            break
        store.fx = "training_step"
        outputs = optimization.run_batch(batch, batch_idx)
        batch_idx += 1
        progress.batch_idx = batch_idx
        progress.total_batches += 1
        if (
            batch_idx == limit and epoch_schedulers
        ):  # Lightning: after the epoch's last step, before the hooks
            _step_schedulers(run, epoch_schedulers, progress.epoch + 1)
        store.fx = "on_train_batch_end"
        for fn in batch_end:
            fn(outputs, batch, batch_idx - 1)
        stepped = progress.total_batches if counts_batches else progress.global_step
        # Lightning sends the step values to the loggers after a batch that stepped (not inside an
        # accumulation window) every log_every_n_steps, or when should_stop is set; trainer.logged_metrics
        # shows them anyway
        if (
            (stepped % log_every == 0 or stop.should_stop)
            and stepped != reporter.last_flush_step
            and optimization.micro_step == 0
        ):
            reporter.flush_step()
        if (progress.total_batches if across_epochs else batch_idx) == next_val:
            run_validation(run)
            next_val += run.loop.val_check_batches or 0
        if plateau_steps and optimization.micro_step == 0:  # ReduceLROnPlateau per step: after the validation
            _step_schedulers(run, plateau_steps, batch_idx)
        verdict = stop.after_batch(progress, optimization.micro_step)
        if verdict == SIGNALLED:
            stop_on_signal(run)
        if verdict == END_EPOCH:
            break
    else:
        exhausted = True

    if batch_idx == 0 and run.options.limit_train_batches != 0 and not skipped_rest:
        raise DataError(
            "the training data has no batches (an empty dataset, or drop_last=True with a batch size above "
            "its "
            "length), so fit would return without training; pass data with at least one batch"
        )
    if not optimization.at_window_boundary:
        optimization.step(batch_idx)  # the epoch (of unknown length, or stopped) ended inside a window
    run.loop.epoch_complete = batch_idx >= limit or exhausted  # Lightning steps epoch schedulers only then
    if exhausted and not math.isfinite(limit) and epoch_schedulers:  # the end is known only now
        _step_schedulers(run, epoch_schedulers, progress.epoch + 1)
    if (
        _val_due_at_epoch_end(run, batch_idx, exhausted)
        and progress.val_done_at != batch_idx
        and not stop.signal
        and not skipped_rest
    ):
        run_validation(run)
    _end_train_epoch(run)


def _skips_rest_of_epoch(response: Any, batch_start: list[Any], module: Any) -> bool:
    """The Module's `on_train_batch_start` returned -1: the rest of the epoch is skipped, that batch included,
    and the epoch ends without its end-of-epoch validation (Lightning's rule; callbacks' returns are
    ignored)."""
    return bool(response == -1) and getattr(batch_start[-1], "__self__", None) is module


def _flag_last(batches: Iterator[Any], run: Run) -> Iterator[Any]:
    """The batches, setting `run.loop.is_last_batch` before handing out the last one."""
    iterator = iter(batches)
    try:
        batch = next(iterator)
    except StopIteration:
        return
    for following in iterator:
        run.loop.is_last_batch = False
        yield batch
        batch = following
    run.loop.is_last_batch = True
    yield batch


def _end_train_epoch(run: Run) -> None:
    assert run.hooks is not None
    run.reporter.enter_stage("train", epoch_hooks=True)
    run.progress.epoch_finished = True
    run.reporter.stores["train"].sync_epoch_so_far()  # every rank, before any callback reads callback_metrics
    run.hooks("on_train_epoch_end")
    _close_train_epoch(run)


def _close_train_epoch(run: Run) -> None:
    """After on_train_epoch_end (where ModelCheckpoint may save): epoch metrics, then the epoch-interval
    ReduceLROnPlateau schedulers (they read metrics logged up to there; the other epoch-interval schedulers
    stepped after the epoch's last optimizer step, as in Lightning)."""
    progress, reporter = run.progress, run.reporter
    reporter.enter_stage("train", epoch_hooks=True)
    # (an epoch's last step values are not sent to the loggers: Lightning's rule)
    reporter.check_finite_loss()
    reporter.log_epoch("train")
    if run.loop.epoch_complete:
        plateaus = [c for c in _automatic_schedulers(run) if c.interval == "epoch" and c.needs_metric]
        _step_schedulers(run, plateaus, progress.epoch + 1)
    progress.epoch_closed = True
    reporter.enter_stage("train")


def _automatic_schedulers(run: Run) -> list[SchedulerConfig]:
    """The schedulers the Trainer steps: none under manual optimization (the module steps its own)."""
    return run.schedulers if isinstance(run.optimization, AutomaticOptimization) else []


def _scheduler_points(run: Run) -> tuple[list[SchedulerConfig], list[SchedulerConfig]]:
    """Those stepped inside the epoch's batch loop: epoch-interval ones (but ReduceLROnPlateau) after the last
    batch, and step-interval ReduceLROnPlateau after each stepping batch's validation."""
    schedulers = _automatic_schedulers(run)
    return (
        [c for c in schedulers if c.interval == "epoch" and not c.needs_metric],
        [c for c in schedulers if c.interval == "step" and c.needs_metric],
    )


def _step_schedulers(run: Run, configs: list[SchedulerConfig], count: int) -> None:
    """Step each of `configs` whose frequency divides `count` (Lightning: epoch + 1, or the epoch's batch_idx
    + 1)."""
    for (
        config
    ) in configs:  # only an AutomaticOptimization's schedulers are ever given (_automatic_schedulers)
        optimization = run.optimization
        assert isinstance(optimization, AutomaticOptimization)
        if count % config.frequency == 0:
            step_scheduler(config, run, optimization.lr_scheduler_step)


def _val_due_at_epoch_end(run: Run, batch_count: int, exhausted: bool) -> bool:
    """Lightning validates after the epoch's last batch only when no in-epoch interval is set (or the
    epoch's length is unknown), and after any batch where `should_stop` ends the fit early; an epoch cut
    short by max_steps is not validated (max_time is a Timer: it sets `should_stop`)."""
    if not run.will_validate_this_epoch:
        return False
    if run.stop.should_stop and run.stop.can_stop_early(run.progress):
        return True
    completed = exhausted or batch_count >= run.data.num_training_batches
    return completed and (
        run.loop.val_check_batches is None or not math.isfinite(run.data.num_training_batches)
    )


def _val_due_after(run: Run, batch_count: int) -> bool:
    """Is an in-epoch validation due after `batch_count` batches of this epoch?"""
    interval = run.loop.val_check_batches
    return interval is not None and run.will_validate_this_epoch and batch_count % interval == 0


def _next_validation(run: Run, batch_count: int) -> int | float:
    """The batch count after which the next in-epoch validation is due (inf: none this epoch)."""
    interval = run.loop.val_check_batches
    if interval is None or not run.will_validate_this_epoch:
        return math.inf
    return (batch_count // interval + 1) * interval


def _int_or_inf(value: float) -> int | float:
    return int(value) if math.isfinite(value) else math.inf


def run_validation(run: Run) -> None:
    """Validation inside fit: eval mode, no grad, back to train mode; the progress records it ran."""
    if run.optimization is None or run.optimization.at_window_boundary:
        # Lightning releases the gradients before validation (the default zero_grad, or the module's
        # override), except inside an accumulation window, whose gradients the next batches still add to
        with run.reporter.refusing_logs("on_validation_model_zero_grad"):
            run.module.on_validation_model_zero_grad()
    data_fetch.val_loaders(run)  # the first validation fetches the data when nothing did before
    if data_fetch.reload_val_if_due(run):  # Lightning sets the data up again (given loaders too)
        run.loop.eval_log_steps.clear()  # and counts the logger steps from 0 again
    run_evaluation(run, "validate", run.data.val_loaders, run.options.limit_val_batches)
    run.reporter.enter_stage("train")


def run_sanity_check(run: Run) -> None:
    """A few validation batches before training, to fail fast; it leaves the RNG streams untouched."""
    steps = run.options.num_sanity_val_steps
    if (
        not steps
        or not run.data.has_val_data
        or not run.data.has_validation_step
        or run.options.limit_val_batches == 0
    ):
        return
    assert run.hooks is not None
    seen_by_callbacks = run.reporter.stores["validate"].callback_values  # shared by every stage's store
    restored = dict(seen_by_callbacks)  # a resumed run's values: the sanity check must not wipe them
    run.loop.sanity_checking = True
    with preserve_rng_state():
        with run.reporter.refusing_logs("on_sanity_check_start"):
            run.hooks("on_sanity_check_start")
        run_evaluation(
            run,
            "validate",
            data_fetch.val_loaders(run),
            run.options.limit_val_batches,
            log=False,
            cap=steps if steps > 0 else None,
        )
        with run.reporter.refusing_logs("on_sanity_check_end"):
            run.hooks("on_sanity_check_end")
    run.loop.sanity_checking = False
    seen_by_callbacks.clear()  # the sanity check's metrics are discarded
    seen_by_callbacks.update(restored)
    run.module.train()


_EVAL = {
    "validate": ("validation_step", "on_validation"),
    "test": ("test_step", "on_test"),
}


def _inference_mode(run: Run) -> bool:
    """Lightning's evaluation context: inference mode for validate/test/predict under
    `inference_mode=True`, but no_grad for fit's validation, under FSDP and with the gloo backend."""
    if run.loop.fitting or not run.options.inference_mode or type(run.strategy).__name__ == "FSDPStrategy":
        return False
    import torch.distributed as dist

    return not (dist.is_available() and dist.is_initialized() and dist.get_backend() == "gloo")


def run_evaluation(
    run: Run, stage: str, loaders: list[Any], limit: Any, log: bool = True, cap: int | None = None
) -> list[dict[str, float]]:
    """Run validation_step/test_step over every loader; returns the epoch metrics per loader."""
    step_name, prefix = _EVAL[stage]
    module, hooks, reporter = run.module, run.hooks, run.reporter
    assert hooks is not None
    step_fn = getattr(module, step_name)
    with_index = takes_batch_idx(step_fn)  # Lightning drops batch_idx for a step that cannot take it
    reporter.enter_stage(stage, epoch_hooks=True)  # the start hooks log epoch values only (Lightning)
    was_training = module.training
    with reporter.refusing_logs(f"{prefix}_model_eval"):
        if not call_module_hook(module, f"{prefix}_model_eval"):
            module.eval()
    assert run.batches is not None
    prepare = run.batches.for_loop(module, run.datamodule)
    hooks(f"{prefix}_start")
    hooks(f"{prefix}_epoch_start")
    reporter.enter_stage(stage)
    batch_start, batch_end = hooks.get(f"{prefix}_batch_start"), hooks.get(f"{prefix}_batch_end")
    store = reporter.stores[stage]
    several = len(loaders) > 1
    seen = 0
    grad_mode = torch.inference_mode() if _inference_mode(run) else torch.no_grad()
    with grad_mode:
        for loader_idx, loader in enumerate(loaders):
            store.dataloader_idx = loader_idx if several else None  # names get /dataloader_idx_N (Lightning)
            count = resolve_limit(
                limit, length_of(loader), f"limit_{'val' if stage == 'validate' else stage}_batches"
            )
            if cap is not None:  # the sanity check: num_sanity_val_steps of the limited batches
                count = min(count, cap)
            for batch_idx, batch in enumerate(loader):
                if batch_idx >= count:
                    break
                if prepare is not None:
                    batch = prepare(batch, loader_idx)
                store.current_batch = batch
                extra = (loader_idx,) if several else ()
                store.fx = f"{prefix}_batch_start"
                for fn in batch_start:
                    fn(batch, batch_idx, *extra)
                store.fx = step_name
                with run.precision.autocast():
                    try:
                        outputs = step_fn(batch, batch_idx, *extra) if with_index else step_fn(batch, *extra)
                    except ValueError as e:
                        hint = explain_step_error(e, batch, step_name)
                        if hint is None:
                            raise
                        raise hint from e
                seen += 1
                store.fx = f"{prefix}_batch_end"
                for fn in batch_end:
                    fn(outputs, batch, batch_idx, *extra)
                if (
                    log
                ):  # on_step values, at Lightning's step: the loader's logged batches so far (this fit's)
                    step = run.loop.eval_log_steps.get(loader_idx, 0)
                    reporter.flush_eval_step(stage, step)
                    run.loop.eval_log_steps[loader_idx] = step + 1
    if seen == 0 and loaders and limit != 0 and not run.loop.sanity_checking:
        raise DataError(
            f"the {stage} data has no batches (an empty dataset, or drop_last=True with a batch size above "
            "its "
            f"length), so {stage} would report nothing; pass data with at least one batch"
        )
    store.dataloader_idx = None
    reporter.enter_stage(stage, epoch_hooks=True)
    store.sync_epoch_so_far()  # every rank, before any callback reads callback_metrics
    hooks(f"{prefix}_epoch_end")
    results = reporter.log_epoch(stage, log=log)
    if stage == "validate" and run.loop.fitting and not run.loop.sanity_checking:
        run.progress.val_done_at = run.progress.batch_idx  # before on_validation_end saves a checkpoint
    with reporter.refusing_logs(f"{prefix}_end"):
        hooks(f"{prefix}_end")
    with reporter.refusing_logs(f"{prefix}_model_train"):
        if not call_module_hook(
            module, f"{prefix}_model_train"
        ):  # Lightning: the override, else the mode before
            module.train(was_training)
    return store.split_by_loader(results, len(loaders))


def run_predict(run: Run, loaders: list[Any], return_predictions: bool) -> list[list[Any]]:
    module, hooks = run.module, run.hooks
    assert hooks is not None
    run.reporter.enter_stage("predict")
    run.reporter.refuse_logs("predict")  # Lightning refuses self.log in every predict hook
    was_training = module.training
    if not call_module_hook(module, "on_predict_model_eval"):
        module.eval()
    assert run.batches is not None
    prepare = run.batches.for_loop(module, run.datamodule)
    hooks("on_predict_start")
    hooks("on_predict_epoch_start")
    batch_start, batch_end = hooks.get("on_predict_batch_start"), hooks.get("on_predict_batch_end")
    with_index = takes_batch_idx(module.predict_step)
    results: list[list[Any]] = []
    with torch.inference_mode() if _inference_mode(run) else torch.no_grad():
        for loader_idx, loader in enumerate(loaders):
            index = (
                (loader_idx,) if len(loaders) > 1 else ()
            )  # dataloader_idx is passed only with several (Lightning)
            count = resolve_limit(
                run.options.limit_predict_batches, length_of(loader), "limit_predict_batches"
            )
            outputs_for_loader: list[Any] = []
            for batch_idx, batch in enumerate(loader):
                if batch_idx >= count:
                    break
                if prepare is not None:
                    batch = prepare(batch, loader_idx)
                for fn in batch_start:
                    fn(batch, batch_idx, *index)
                args = (batch, batch_idx) if with_index else (batch,)
                with run.precision.autocast():
                    outputs = module.predict_step(*args, *index)
                for fn in batch_end:
                    fn(outputs, batch, batch_idx, *index)
                if return_predictions:
                    outputs_for_loader.append(outputs)
            results.append(outputs_for_loader)
    hooks("on_predict_epoch_end")
    hooks("on_predict_end")
    module.train(was_training)  # Lightning puts the mode back after predicting
    return results


def on_exception(run: Run, exc: BaseException) -> None:
    """The on_exception hooks (callbacks, module, datamodule), then the loggers' "failed" status."""
    assert run.hooks is not None  # set in the set-up sequence, before any loop runs
    run.hooks.call_exception(exc, run.datamodule)
    run.reporter.finalize("failed")


def teardown(run: Run, hooks: bool = True) -> None:
    """The stage's `teardown` hooks (callbacks, module, datamodule), unless the run failed (Lightning runs no
    teardown hook after on_exception)."""
    with run.reporter.refusing_logs("teardown"):
        for cb in run.callbacks if hooks else ():
            cb.teardown(run.trainer, run.module, stage=run.stage)  # by keyword, as Lightning calls it
        if hooks:
            run.module.teardown(run.stage)
            if run.datamodule is not None:
                run.datamodule.teardown(run.stage)
    run.reporter.stage = None
