"""The run's data (`Run.data`, a `RunData`): the one writer of it, and Lightning's moments to fetch it.

Lightning calls `val_dataloader()` when the validation data is first needed (the sanity check, after
`on_sanity_check_start`; else before `on_train_start` when the first epoch validates; else at the first
validation) and `train_dataloader()` after the sanity check (or earlier, where `estimated_stepping_batches`
or a tuner reads the training data). A dataloader method may read what `on_fit_start` set. The run knows
at build time only *how* to fetch each (`plan_data`: `RunData.fetch_train`, `RunData.fetch_val`); the
functions below fetch once, fetch again (`reload_dataloaders_every_n_epochs`, a batch size finder), and
count an epoch's batches. validate/test/predict fetch their data when their loop starts (`fetch_eval_data`).
"""

from __future__ import annotations

import inspect
import math
import warnings
from typing import TYPE_CHECKING, Any

from ember.errors import ConfigError
from ember.module import Module
from ember.runtime.combined_loader import CombinedLoader
from ember.trainer.dataloaders import (
    EpochIterator,
    as_batch_iterable,
    as_loader_list,
    collection_shape,
    combined_train_data,
    is_collection_of_loaders,
    train_epoch_batches,
    without_shuffle,
)

if TYPE_CHECKING:
    from ember.trainer.run import Run

_STEPS = {"validate": "validation_step", "test": "test_step", "predict": "predict_step"}
_HOOKS = {"validate": "val_dataloader", "test": "test_dataloader", "predict": "predict_dataloader"}


# ---- planning (when the run is built, after the `setup` hooks) ----------------------------------------
def plan_data(run: Run, data: dict[str, Any]) -> None:
    """Decide how this run's data will be fetched (nothing is fetched yet: Lightning's moments, above)."""
    module, dm = run.module, run.datamodule
    run.data.has_validation_step = type(module).validation_step is not Module.validation_step
    if run.stage != "fit":
        return
    train, val = data.get("train"), data.get("val")
    if val is not None and not run.data.has_validation_step:  # Lightning skips the loop and loads no data
        warnings.warn(
            f"validation data was passed but {type(module).__name__} has no validation_step; "
            "the validation loop is skipped (define validation_step to validate)",
            stacklevel=5,
        )
        val = None

    def defines(name: str) -> bool:
        return any(callable(getattr(owner, name, None)) for owner in (dm, module) if owner is not None)

    train_hook = train is None
    if train_hook and not defines("train_dataloader"):
        prepared_train_data(run, None)  # refused now, as Lightning refuses a fit without training data
    from_train_hook = lambda: prepared_train_data(run, _from_hook(run, "train_dataloader"))  # noqa: E731
    from_val_hook = lambda: prepared_val_loaders(run, _from_hook(run, "val_dataloader"))  # noqa: E731
    plan = run.data
    plan.fetch_train = from_train_hook if train_hook else (lambda: prepared_train_data(run, train))
    plan.train_hook = from_train_hook if train_hook else None
    if val is not None:
        plan.fetch_val = lambda: prepared_val_loaders(run, val)
    elif plan.has_validation_step and defines("val_dataloader"):
        plan.fetch_val = plan.val_hook = from_val_hook
    if run.options.reload_dataloaders_every_n_epochs:  # only data from the hooks changes when fetched again
        if train_hook:
            plan.reload_train = from_train_hook
        if val is None and plan.fetch_val is not None:
            plan.reload_val = from_val_hook


def _from_hook(run: Run, name: str) -> Any:
    """What the DataModule's (else the Module's) `name()` returns; None when neither defines it."""
    for owner in (run.datamodule, run.module):
        fn = getattr(owner, name, None) if owner is not None else None
        if callable(fn):
            return fn()
    return None


# ---- fit's data ---------------------------------------------------------------------------------
def train_data(run: Run | None) -> EpochIterator | None:
    """The fit's training data, fetched the first time it is asked for (Lightning's FitLoop.setup_data);
    a resumed fit's data position is restored then, as Lightning loads its loader states there.

    Example:
        >>> train_data(None) is None  # no run (no fit yet): nothing to fetch
        True
    """
    if run is None:
        return None
    data = run.data
    if data.train_data is not None or data.fetch_train is None:
        return data.train_data
    fetch, data.fetch_train = data.fetch_train, None
    data.train_data = fetch()
    data.train_loaded_at = run.progress.epoch  # reload_dataloaders_every_n_epochs counts from here
    batches = train_epoch_batches(run.options.limit_train_batches, data.train_data.loader)
    data.num_training_batches = int(batches) if math.isfinite(batches) else math.inf  # an int, as Lightning's
    from ember.trainer.participants import restore_data_position  # participants imports the run's parts

    restore_data_position(run)
    return data.train_data


def no_training_data(run: Run) -> None:
    """limit_train_batches=0: nothing is fetched and an epoch has no batches (Lightning's count)."""
    run.data.num_training_batches = 0


def count_epoch_batches(run: Run, data: EpochIterator) -> int | float:
    """The batches of the epoch starting on `data` (limit_train_batches applied), recorded on the run."""
    batches = train_epoch_batches(run.options.limit_train_batches, data.loader)
    run.data.num_training_batches = int(batches) if math.isfinite(batches) else math.inf
    return run.data.num_training_batches


def val_loaders(run: Run) -> list[Any]:
    """The fit's validation loaders, fetched the first time they are needed. Fetched by the sanity check
    for an epoch that does not validate, they count as not yet loaded for
    `reload_dataloaders_every_n_epochs` (Lightning's rule: the first validation fetches them again)."""
    data = run.data
    if data.fetch_val is not None:
        fetch, data.fetch_val = data.fetch_val, None
        data.val_loaders = fetch()
        counted = not run.loop.sanity_checking or run.will_validate_this_epoch
        data.val_loaded_at = run.progress.epoch if counted else -math.inf
    return data.val_loaders


def reload_train_if_due(run: Run) -> None:
    """reload_dataloaders_every_n_epochs: the training hook's new data at an epoch's start, when due."""
    data, epoch = run.data, run.progress.epoch
    every = run.options.reload_dataloaders_every_n_epochs
    if data.reload_train is not None and epoch - data.train_loaded_at >= every:
        data.train_data, data.train_loaded_at = data.reload_train(), epoch


def reload_val_if_due(run: Run) -> bool:
    """reload_dataloaders_every_n_epochs before a validation: Lightning sets the data up again when due (the
    hook's new loaders; given loaders are kept). True when it did (the loop's logger steps restart)."""
    data, epoch = run.data, run.progress.epoch
    every = run.options.reload_dataloaders_every_n_epochs
    if not (every > 0 and epoch - data.val_loaded_at >= every):
        return False
    if data.reload_val is not None:
        data.val_loaders = data.reload_val()
    data.val_loaded_at = epoch
    return True


def fetch_fit_data_again(run: Run | None) -> None:
    """Fetch fit's data again now from the `*_dataloader()` hooks, as Lightning's batch size finder resets its
    loops' loaders after a search: the training data, then the validation data unless validation is off (a
    batch size that changed mid-fit takes effect from the next batch the loop draws).

    Example:
        >>> fetch_fit_data_again(None)  # no run: nothing to fetch
    """
    if run is None:
        return
    data = run.data
    if data.train_hook is None:
        raise ConfigError(
            "the training data was passed to fit, so it cannot be fetched again at another batch "
            "size; return it from the Module's or DataModule's train_dataloader()"
        )
    data.train_data, data.fetch_train = None, data.train_hook
    train_data(run)
    if data.val_hook is not None and run.options.limit_val_batches != 0:
        data.fetch_val = data.val_hook
        val_loaders(run)


def prepared_train_data(run: Run, train: Any) -> EpochIterator:
    """fit's training data, ready for the loop (overfit_batches: unshuffled; sharded by the strategy)."""
    if train is None:
        raise ConfigError(
            "fit has no training data; pass trainer.fit(model, train_dataloaders=...), a datamodule, "
            "or define train_dataloader() on the Module"
        )
    overfit = run.options.overfit_batches
    if isinstance(train, CombinedLoader) or is_collection_of_loaders(train):  # Lightning's several loaders

        def prepare(loader: Any) -> Any:
            loader = without_shuffle(loader, "train") if overfit else loader
            return run.strategy.process_dataloader(loader, shuffle=not overfit)

        return EpochIterator(combined_train_data(train, prepare, run.options.limit_train_batches))
    train = as_batch_iterable(train, "train_dataloaders")
    if overfit:
        train = without_shuffle(train, "train")
    # Lightning's DistributedSampler shuffles a training loader (sequential or not) unless overfit_batches is
    # on
    return EpochIterator(run.strategy.process_dataloader(train, shuffle=not overfit))


def prepared_val_loaders(run: Run, val: Any) -> list[Any]:
    """fit's validation loaders, ready for the loop (the step must take dataloader_idx when there are
    several)."""
    vals = as_loader_list(val, "val_dataloaders")
    run.data.loader_shapes["val_loaders"] = collection_shape(val)
    if run.options.overfit_batches:
        vals = [without_shuffle(v, "val") for v in vals]
    loaders = [run.strategy.process_dataloader(v, shuffle=False) for v in vals]
    if run.data.has_validation_step:
        check_dataloader_idx(run.module, "validation_step", len(loaders))
    return loaders


# ---- validate/test/predict's data -----------------------------------------------------------------
def fetch_eval_data(run: Run, given: Any) -> None:
    """validate/test/predict's data (`given`, else the stage's `*_dataloader()` hook): fetched when the
    stage's loop starts (after configure_model and the checkpoint's weights, before the stage's start
    hooks), as Lightning's evaluation and prediction loops do."""
    stage, data = run.stage, run.data
    data.eval_data = given
    method = _HOOKS[stage]
    if given is None:
        given = _from_hook(run, method)
    if given is None:
        raise ConfigError(
            f"trainer.{stage} has no data; pass dataloaders=... or define {method}() on the Module"
        )
    if stage == "predict" and isinstance(given, CombinedLoader) and given.mode != "sequential":
        raise ConfigError(
            f'trainer.predict reads each loader on its own: pass CombinedLoader(mode="sequential") '
            f"(or the loaders as a list or dict), not mode={given.mode!r}"
        )
    data.eval_loaders = [
        run.strategy.process_dataloader(d, shuffle=False) for d in as_loader_list(given, "dataloaders")
    ]
    data.loader_shapes["eval_loaders"] = collection_shape(given)
    check_dataloader_idx(run.module, _STEPS[stage], len(data.eval_loaders))
    if stage == "validate":
        data.val_loaders = data.eval_loaders
        data.loader_shapes["val_loaders"] = data.loader_shapes["eval_loaders"]


def fetch_eval_data_again(run: Run) -> None:
    """`Trainer.reload_dataloaders` in validate/test/predict: the hook's data again (data passed in is kept),
    into the list the running loop already holds, so it draws from the new loaders."""
    data = run.data
    loaders = data.eval_loaders
    fetch_eval_data(run, data.eval_data)
    loaders[:] = data.eval_loaders
    data.eval_loaders = loaders
    if run.stage == "validate":
        data.val_loaders = loaders


def check_dataloader_idx(module: Module, step: str, loaders: int) -> None:
    """Several loaders: the step receives `dataloader_idx` (Lightning refuses a step without it)."""
    if loaders < 2:
        return
    params = inspect.signature(getattr(module, step)).parameters.values()
    if (
        any(p.name == "dataloader_idx" or p.kind is inspect.Parameter.VAR_POSITIONAL for p in params)
        or sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params) >= 3
    ):
        return
    raise ConfigError(
        f"{loaders} dataloaders were given but {type(module).__name__}.{step} takes no dataloader_idx; "
        f"define it as {step}(self, batch, batch_idx, dataloader_idx=0)"
    )
