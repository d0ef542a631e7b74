"""Batch-size scaling: Lightning's ``scale_batch_size`` and its ``BatchSizeFinder`` callback.

Each trial runs ``steps_per_trial`` steps (of fit, or batches of validate/test/predict) at one batch
size, with the data rebuilt from the module's or datamodule's ``*_dataloader()`` (which must read
the batch size from the tuned attribute). "power" doubles the size after each trial that fits in
memory and halves it after an out-of-memory error; "binsearch" then bisects between the last size
that fit and the first that did not, and takes ``margin`` off the result. Without an out-of-memory
error (on CPU) the search ends, as in Lightning, when the size reached the dataset's length, after
``max_trials`` trials, or at ``max_val``. The module's weights are put back after the search.
"""

from __future__ import annotations

import sys
import warnings
from typing import Any

import torch

from ember.callbacks.callback import Callback
from ember.callbacks.search_run import module_kept, refuse_distributed, search_trainer
from ember.callbacks.tuned_attributes import get_value, holders, missing, set_value
from ember.errors import ConfigError

MODES = ("power", "binsearch")
_LOADER_OF = {
    "fit": "train_dataloader",
    "validate": "val_dataloader",
    "test": "test_dataloader",
    "predict": "predict_dataloader",
}


def is_out_of_memory(error: BaseException) -> bool:
    """torch's out-of-memory errors (CUDA, cuDNN, cuBLAS allocation, CPU's 'DefaultCPUAllocator')."""
    if isinstance(error, getattr(torch, "OutOfMemoryError", ())):
        return True
    text = str(error)
    return isinstance(error, RuntimeError) and any(
        s in text
        for s in (
            "CUDA out of memory",
            "CUBLAS_STATUS_ALLOC_FAILED",
            "CUDNN_STATUS_NOT_SUPPORTED",
            "DefaultCPUAllocator: can't allocate",
        )
    )


class Trials:
    """Runs trials for one search: the scratch Trainer settings, the data source, the size attribute.
    `in_run`: the search runs inside `trainer`'s own `method` (the callback), whose data gives the dataset's
    length; else (the Tuner) the ``*_dataloader()`` method is asked for it."""

    def __init__(
        self,
        trainer: Any,
        module: Any,
        datamodule: Any,
        method: str,
        steps: int,
        name: str,
        root: str,
        in_run: bool = False,
    ) -> None:
        self.trainer, self.module, self.datamodule, self.method = trainer, module, datamodule, method
        self.steps, self.name, self.root, self.in_run = steps, name, root, in_run
        self._length: tuple[int | None] | None = None
        self._first_loaders: Any = None  # what the first call of the data method returned

    @property
    def size(self) -> int:
        return int(get_value(self.module, self.name, self.datamodule))

    def dataset_length(self) -> int | None:
        """The length of the data's dataset (None for an iterable
        dataset), read once: it does not depend on the batch size."""
        if self._length is None:
            self._first_loaders = self._loader()
            self._length = (dataset_length_of(self._first_loaders),)
        return self._length[0]

    def _loader(self) -> Any:
        if (
            self.in_run
        ):  # Lightning reads its running loop's data (its fit's training data, fetched if not yet)
            loader = {
                "fit": self.trainer.train_dataloader,
                "validate": self.trainer.val_dataloaders,
                "test": self.trainer.test_dataloaders,
                "predict": self.trainer.predict_dataloaders,
            }[self.method]
            if loader is not None:
                return loader
        method = _LOADER_OF[self.method]
        owner = next((o for o in (self.datamodule, self.module) if callable(getattr(o, method, None))), None)
        if owner is None:
            raise ConfigError(
                f"the batch size finder rebuilds the data at each size from {method}() of the module or "
                f"datamodule, and neither defines it; define {method}() reading self.{self.name}"
            )
        return getattr(owner, method)()

    def adjust(
        self, factor: float = 1.0, value: int | None = None, max_val: int = 8192, desc: str = ""
    ) -> tuple[int, bool]:
        """Set the next size (`value`, or the current one times `factor`, at most `max_val`); unchanged
        when the current size already covers the whole dataset."""
        size = self.size
        length = self.dataset_length()
        if length is not None and size >= length:
            say(f"The batch size {size} is greater or equal than the length of your dataset: {length}.")
            return size, False
        new = value if value is not None else int(size * factor)
        if new > max_val:
            if desc:
                say(f"Batch size {new} exceeds max_val limit {max_val}, capping at {max_val}")
            new = max_val
        if desc:
            say(f"Batch size {size} {desc}, trying batch size {new}")
        set_value(self.module, self.name, new, self.datamodule)
        return new, new != size

    def reload_as_lightning_does(self) -> None:
        """Lightning's Tuner ends its search by setting the fit's data up again: an iterator made over the
        training data, then ``val_dataloader()`` called; both may draw from the global RNG (a DataLoader's
        iterator draws its base seed). ember has called ``train_dataloader()`` as often as Lightning by then
        (once more, for the dataset's length); it draws the iterator's seed (without starting workers) and
        calls ``val_dataloader()``, so the global RNG is where Lightning leaves it after
        ``Tuner.scale_batch_size``."""
        loaders = self._first_loaders
        for loader in (
            loaders.values()
            if isinstance(loaders, dict)
            else loaders
            if isinstance(loaders, (list, tuple))
            else [loaders]
        ):
            if isinstance(loader, torch.utils.data.DataLoader):  # _BaseDataLoaderIter.__init__'s one draw
                torch.empty((), dtype=torch.int64).random_(generator=loader.generator)
        validates = callable(getattr(self.module, "validation_step", None))
        owner = next(
            (o for o in (self.datamodule, self.module) if callable(getattr(o, "val_dataloader", None))), None
        )
        if validates and owner is not None:
            owner.val_dataloader()

    def run(self) -> None:
        """One trial: `steps` optimizer steps (fit) or batches (the other methods)."""
        limit = {
            "fit": "limit_val_batches",
            "validate": "limit_val_batches",
            "test": "limit_test_batches",
            "predict": "limit_predict_batches",
        }[self.method]
        options: dict[str, Any] = {limit: self.steps}
        if self.method == "fit":
            options.update(max_steps=self.steps, limit_train_batches=1.0)
        search = search_trainer(self.trainer, self.root, **options)
        if self.method == "fit":
            search.fit(self.module, datamodule=self.datamodule)
        elif self.method == "predict":
            search.predict(self.module, datamodule=self.datamodule, return_predictions=False)
        else:
            getattr(search, self.method)(self.module, datamodule=self.datamodule, verbose=False)


def dataset_length_of(loader: Any) -> int | None:
    """The number of samples behind a loader (the first of several), None when its dataset has no length.

    >>> dataset_length_of(torch.utils.data.DataLoader(list(range(10)), batch_size=4))
    10
    """
    loader = loader[0] if isinstance(loader, (list, tuple)) and loader else loader
    try:
        return len(loader.dataset)
    except (AttributeError, TypeError):  # an iterable dataset: no length
        return None


def scale_batch_size(
    trainer: Any,
    module: Any,
    datamodule: Any = None,
    method: str = "fit",
    mode: str = "power",
    steps_per_trial: int = 3,
    init_val: int = 2,
    max_trials: int = 25,
    batch_arg_name: str = "batch_size",
    margin: float = 0.05,
    max_val: int = 8192,
    in_run: bool = False,
) -> int | None:
    """Search the largest batch size that fits (see the module docstring); returns it, and leaves it in
    the tuned attribute. `in_run`: called from inside `trainer`'s running `method` (the callback)."""
    check(mode, margin, method)
    if trainer.fast_dev_run:
        warnings.warn(
            "Skipping batch size scaler since `fast_dev_run` is enabled.", UserWarning, stacklevel=2
        )
        return None
    refuse_distributed(trainer, "the batch size finder")
    if not holders(module, batch_arg_name, datamodule):
        raise missing(batch_arg_name)
    with module_kept(module, in_run) as root:
        trials = Trials(trainer, module, datamodule, method, steps_per_trial, batch_arg_name, root, in_run)
        size, _ = trials.adjust(value=init_val)
        search = power if mode == "power" else binsearch
        size = search(trials, size, max_trials, max_val)
        if mode == "binsearch" and margin > 0 and max(1, int(size * (1 - margin))) != size:
            reduced = max(1, int(size * (1 - margin)))
            say(f"Applying margin of {margin:.1%}, reducing batch size from {size} to {reduced}")
            size = reduced
            set_value(module, batch_arg_name, size, datamodule)
        if method == "fit" and not in_run:
            trials.reload_as_lightning_does()
    say(f"Finished batch size finder, will continue with full run using batch size {size}")
    return size


def say(message: str) -> None:
    """A progress line, in Lightning's words (Lightning logs
    them at INFO, which its handler prints to stderr)."""
    print(message, file=sys.stderr)


def power(trials: Trials, size: int, max_trials: int, max_val: int) -> int:
    succeeded = False
    for trial in range(max_trials):
        if size >= max_val:
            say(f"Reached the maximum batch size limit of {max_val}. Stopping search.")
            break
        try:
            trials.run()
        except RuntimeError as error:
            if not is_out_of_memory(error):
                raise
            size, _ = trials.adjust(factor=0.5, desc="failed")
            if succeeded:
                break
            continue
        last_fit = size
        if trial + 1 >= max_trials:
            return last_fit
        # As Lightning 2.6: in power mode max_val only ends the search, it does not cap the doubling (the
        # size returned may exceed it: 12 -> 24 with max_val=16); binsearch caps.
        size, changed = trials.adjust(factor=2.0, desc="succeeded")
        if not changed:
            break
        succeeded = True
    return size


def binsearch(trials: Trials, size: int, max_trials: int, max_val: int) -> int:
    low, high, count = 1, None, 0
    while True:
        if size >= max_val:
            say(f"Reached the maximum batch size limit of {max_val}. Stopping search.")
            break
        try:
            trials.run()
        except RuntimeError as error:
            if not is_out_of_memory(error):
                raise
            high = size
            size, _ = trials.adjust(value=(high + low) // 2, desc="failed")
            if high - low <= 1:
                break
            continue
        count += 1
        if count >= max_trials:
            break
        low = size
        if high:
            if high - low <= 1:
                break
            size, changed = trials.adjust(value=(high + low) // 2, max_val=max_val, desc="succeeded")
        else:
            size, changed = trials.adjust(factor=2.0, max_val=max_val, desc="succeeded")
        if not changed:
            break
    return size


def check(mode: str, margin: float, method: str) -> None:
    if mode not in MODES:
        raise ConfigError(f"mode={mode!r} for the batch size finder; use 'power' or 'binsearch'")
    if not 0.0 <= margin < 1.0:
        raise ConfigError(f"margin={margin!r}; pass a fraction in [0, 1)")
    if method not in _LOADER_OF:
        raise ConfigError(f"method={method!r}; use one of {sorted(_LOADER_OF)}")


class BatchSizeFinder(Callback):
    """Lightning's ``BatchSizeFinder``: scales the batch size at the start of a fit (``on_fit_start``) or of
    validate/test/predict (``on_validation_start`` / ``on_test_start`` / ``on_predict_start``), then fetches
    the run's data again from the ``*_dataloader()`` methods, so the run goes on with the size found, as
    Lightning's does. ``optimal_batch_size`` holds it.

    A subclass may search at other moments by calling ``scale_batch_size(trainer, module)`` from another hook,
    e.g. at ``on_train_epoch_start`` of chosen epochs (Lightning's documented fine-tuning example): the epoch
    goes on with the new training data. The trials run in a search run of their own
    (ember/callbacks/search_run.py) from the module's current weights, which are put back after.

    Example:
        >>> finder = BatchSizeFinder(mode="binsearch", init_val=4)
        >>> finder.optimal_batch_size, finder.SUPPORTED_MODES
        (4, ('power', 'binsearch'))
    """

    SUPPORTED_MODES = MODES

    def __init__(
        self,
        mode: str = "power",
        steps_per_trial: int = 3,
        init_val: int = 2,
        max_trials: int = 25,
        batch_arg_name: str = "batch_size",
        margin: float = 0.05,
        max_val: int = 8192,
    ) -> None:
        mode = mode.lower() if isinstance(mode, str) else mode
        check(mode, margin, "fit")
        self.optimal_batch_size: int | None = init_val
        self._mode, self._steps_per_trial, self._init_val, self._max_trials = (
            mode,
            steps_per_trial,
            init_val,
            max_trials,
        )
        self._batch_arg_name, self._margin, self._max_val = batch_arg_name, margin, max_val

    def setup(self, trainer: Any, module: Any, stage: str) -> None:
        """Lightning's checks, before the run starts: one device,
        data the finder can fetch again, the attribute."""
        refuse_distributed(trainer, "the batch size finder")
        if stage == "fit" and getattr(trainer, "train_data_passed_to_fit", False):
            raise ConfigError(
                "The batch size finder cannot be used with dataloaders passed directly to .fit(): "
                "it must rebuild them with each batch size; return them from the Module's "
                "train_dataloader() or a DataModule, or drop BatchSizeFinder"
            )
        name = self._batch_arg_name
        if not holders(module, name, trainer.datamodule):
            raise missing(name)
        if hasattr(module, name) and name in getattr(module, "hparams", {}):
            warnings.warn(
                f"Field `model.{name}` and `model.hparams.{name}` are mutually exclusive! `model.{name}` "
                "will be used as the initial batch size for scaling. If this is not the intended "
                "behavior, please remove either one.",
                UserWarning,
                stacklevel=2,
            )

    def scale_batch_size(self, trainer: Any, module: Any) -> None:
        """Search now, for the running stage, and fetch the run's data again at the size found."""
        method = str(trainer.state.fn)  # Lightning's string enums: "fit", "validate", ...
        if str(trainer.state.status) != "running" or method not in _LOADER_OF:
            raise ConfigError(
                "BatchSizeFinder.scale_batch_size searches inside a running fit/validate/test/predict "
                "(call it from one of the callback's hooks); outside one, call "
                "Tuner(trainer).scale_batch_size(model)"
            )
        if method != "fit":
            loaders = {
                "validate": trainer.val_dataloaders,
                "test": trainer.test_dataloaders,
                "predict": trainer.predict_dataloaders,
            }[method]
            if isinstance(loaders, list) and len(loaders) > 1:
                prefix = {"validate": "val"}.get(method, method)
                raise ConfigError(
                    f"The Batch size finder cannot be used with multiple {prefix} dataloaders; "
                    "tune with one and pass the others afterwards"
                )
        self.optimal_batch_size = scale_batch_size(
            trainer,
            module,
            trainer.datamodule,
            method,
            self._mode,
            self._steps_per_trial,
            self._init_val,
            self._max_trials,
            self._batch_arg_name,
            self._margin,
            self._max_val,
            in_run=True,
        )
        if self.optimal_batch_size is not None:  # (None: skipped under fast_dev_run, nothing changed)
            trainer.reload_dataloaders()

    def on_fit_start(self, trainer: Any, module: Any) -> None:
        self.scale_batch_size(trainer, module)

    def on_validation_start(self, trainer: Any, module: Any) -> None:
        if trainer.sanity_checking or trainer.state.fn != "validate":
            return  # fit's validation: the fit's search ran at on_fit_start
        self.scale_batch_size(trainer, module)

    def on_test_start(self, trainer: Any, module: Any) -> None:
        self.scale_batch_size(trainer, module)

    def on_predict_start(self, trainer: Any, module: Any) -> None:
        self.scale_batch_size(trainer, module)
