"""When a fit's data hooks run: Lightning's moments, not the moment the run is built.

Lightning calls `val_dataloader()` when the validation data is first needed (the sanity check, after
`on_sanity_check_start`; else before `on_train_start` when the first epoch validates; else at the first
validation) and `train_dataloader()` after the sanity check (or earlier, where `estimated_stepping_batches`
or a tuner reads the training data). A dataloader method may read what `on_fit_start` set. The run knows
at build time only *how* to fetch each (`Run.fetch_train`, `Run.fetch_val`); these functions fetch once.
"""

from __future__ import annotations

import math
from typing import Any

from ember.errors import ConfigError
from ember.trainer.dataloaders import EpochIterator, train_epoch_batches
from ember.trainer.run import Run


def train_data(run: Run) -> EpochIterator | None:
    """The fit's training data, fetched the first time it is asked for (Lightning's FitLoop.setup_data);
    a resumed fit's data position is restored then, as Lightning loads its loader states there.

    Example:
        >>> train_data(None) is None  # no run (no fit yet): nothing to fetch
        True
    """
    if run is None or run.train_data is not None or run.fetch_train is None:
        return run.train_data if run is not None else None
    fetch, run.fetch_train = run.fetch_train, None
    run.train_data = fetch()
    run.train_loaded_at = run.progress.epoch  # reload_dataloaders_every_n_epochs counts from here
    batches = train_epoch_batches(run.options.limit_train_batches, run.train_data.loader)
    run.num_training_batches = int(batches) if math.isfinite(batches) else math.inf  # an int, as Lightning's
    from ember.trainer.participants import restore_data_position  # participants imports the run's parts

    restore_data_position(run)
    return run.train_data


def val_loaders(run: Run) -> list[Any]:
    """The fit's validation loaders, fetched the first time they are needed. Fetched by the sanity check for an
    epoch that does not validate, they count as not yet loaded for `reload_dataloaders_every_n_epochs`
    (Lightning's rule: the first validation fetches them again)."""
    if run.fetch_val is not None:
        fetch, run.fetch_val = run.fetch_val, None
        run.val_loaders = fetch()
        counted = not run.sanity_checking or run.will_validate_this_epoch
        run.val_loaded_at = run.progress.epoch if counted else -math.inf
    return run.val_loaders


def fetch_fit_data_again(run: Run) -> None:
    """Fetch fit's data again now from the `*_dataloader()` hooks, as Lightning's batch size finder resets its
    loops' loaders after a search: the training data, then the validation data unless validation is off (a
    batch size that changed mid-fit takes effect from the next batch the loop draws).

    Example:
        >>> fetch_fit_data_again(None)  # no run: nothing to fetch
    """
    if run is None:
        return
    if run.train_hook is None:
        raise ConfigError(
            "the training data was passed to fit, so it cannot be fetched again at another batch "
            "size; return it from the Module's or DataModule's train_dataloader()"
        )
    run.train_data, run.fetch_train = None, run.train_hook
    train_data(run)
    if run.val_hook is not None and run.options.limit_val_batches != 0:
        run.fetch_val = run.val_hook
        val_loaders(run)
