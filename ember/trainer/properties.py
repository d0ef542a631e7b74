"""Lightning's read-only Trainer attributes (and the few it lets callbacks set), over the running `Run`.

`Trainer` inherits them from `TrainerProperties`: callbacks read `trainer.current_epoch`,
`trainer.num_training_batches`, `trainer.callback_metrics`... as in Lightning. Each reads the current
run (the last one once it ended) or the Trainer's options; none of them starts or changes a run, but
`should_stop`, `accumulate_grad_batches` and `fit_loop.max_epochs`, which Lightning's callbacks set.
"""

from __future__ import annotations

import contextlib
import math
import signal
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import torch

from ember.callbacks.checkpoint import Checkpoint
from ember.callbacks.early_stopping import EarlyStopping
from ember.callbacks.model_checkpoint import ModelCheckpoint
from ember.callbacks.progress_bar_base import ProgressBar
from ember.errors import ConfigError
from ember.runtime.combined_loader import unflatten
from ember.runtime.init import SkipInitialisation
from ember.runtime.strategies.parallel import ParallelStrategy
from ember.trainer import data_fetch
from ember.trainer.dataloaders import CombinedBatches, length_of, resolve_limit, train_epoch_batches
from ember.trainer.fit_loop import FitLoop
from ember.trainer.optimization import AutomaticOptimization
from ember.trainer.run import Run
from ember.trainer.states import RunningStage, TrainerState, TrainerStatus

if TYPE_CHECKING:
    from ember.callbacks.callback import Callback
    from ember.trainer.options import Options
    from ember.trainer.progress import Progress


def _option(name: str) -> property:
    return property(
        lambda self: getattr(self.options, name), doc=f"The `{name}` option (read-only, as in Lightning)."
    )


def _whole_by_default(name: str) -> property:
    """A batch limit or interval, 1.0 (the whole epoch) when not given, as Lightning reports it."""
    return property(
        lambda self: 1.0 if getattr(self.options, name) is None else getattr(self.options, name),
        doc=f"The `{name}` option (read-only; 1.0 when not given, as in Lightning).",
    )


class TrainerProperties:
    """The attributes Lightning's Trainer answers, read from the run (`_run`) and the options."""

    # set by Trainer.__init__ (declared here for the type checker)
    options: Options
    progress: Progress
    _run: Run | None
    strategy: Any  # a Strategy, or a user's strategy object (build.select_strategy)
    callbacks: list[Callback]
    _unresolved: dict[str, bool]  # options left for the first fit to resolve (max_epochs, ...)
    _state: TrainerState
    _ended_counts: dict[str, dict[str, Any]]
    _logged_metrics: dict[str, float]

    min_epochs, max_steps, max_time = (_option(n) for n in ("min_epochs", "max_steps", "max_time"))

    @property
    def max_epochs(self) -> int | None:
        """The `max_epochs` option; when not given, None until a fit starts, then 1000 (or -1 when
        max_steps or max_time bounds the run), as in Lightning."""
        if self._unresolved["max_epochs"] and self._run is None and not self.options.fast_dev_run:
            return None
        run = self._run
        if (
            run is not None and run.stop.max_epochs is not None
        ):  # a fit's own count (a callback may change it)
            return run.stop.max_epochs
        return self.options.max_epochs

    @property
    def gradient_clip_algorithm(self) -> str | None:
        """The `gradient_clip_algorithm` option: None when not given (clipping is then by norm), as in
        Lightning."""
        return None if self._unresolved["gradient_clip_algorithm"] else self.options.gradient_clip_algorithm

    limit_train_batches, limit_val_batches = (
        _whole_by_default("limit_train_batches"),
        _whole_by_default("limit_val_batches"),
    )
    limit_test_batches = _whole_by_default("limit_test_batches")
    limit_predict_batches = _whole_by_default("limit_predict_batches")
    val_check_interval, check_val_every_n_epoch = (
        _whole_by_default("val_check_interval"),
        _option("check_val_every_n_epoch"),
    )
    num_sanity_val_steps, min_steps = _option("num_sanity_val_steps"), _option("min_steps")
    overfit_batches = _option("overfit_batches")
    fast_dev_run = property(
        lambda self: {0: False, 1: True}.get(self.options.fast_dev_run, self.options.fast_dev_run),
        doc="False, True (one batch) or the number of batches (Lightning's values).",
    )
    log_every_n_steps = _option("log_every_n_steps")
    reload_dataloaders_every_n_epochs = _option("reload_dataloaders_every_n_epochs")

    @property
    def accumulate_grad_batches(self) -> int:
        """Batches per optimizer step: the option, or what a callback set for this epoch of the run."""
        optimization = self._run.optimization if self._run is not None else None
        return getattr(optimization, "accumulate", self.options.accumulate_grad_batches)

    @accumulate_grad_batches.setter
    def accumulate_grad_batches(self, value: int) -> None:
        """Lightning's GradientAccumulationScheduler sets it at each epoch start; only a running fit with
        automatic optimization takes it (windows are closed at epoch ends, so none is cut)."""
        optimization = self._run.optimization if self._run is not None else None
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"accumulate_grad_batches={value!r} must be an int >= 1")
        if not isinstance(optimization, AutomaticOptimization):
            raise ConfigError(
                "trainer.accumulate_grad_batches can be set only during fit with automatic "
                "optimization (at an epoch start); pass Trainer(accumulate_grad_batches=...) otherwise"
            )
        optimization.accumulate = value

    gradient_clip_val = _option("gradient_clip_val")
    stop_on_nan = _option("stop_on_nan")

    # ---- where the run is (read by callbacks) ------------------------------------------------
    @property
    def current_epoch(self) -> int:
        """The epoch being run; once an epoch is closed (its epoch-end work done) it counts as completed,
        as in Lightning: after a fit stopped early (EarlyStopping, max_steps) it is the number of epochs
        run."""
        progress = self.progress
        return progress.epoch + 1 if progress.epoch_closed else progress.epoch

    @property
    def global_step(self) -> int:
        return self.progress.global_step

    @property
    def fit_loop(self) -> FitLoop:
        """Lightning's ``trainer.fit_loop`` as far as callbacks use it (``max_epochs``, ``_skip_backward``,
        ``epoch_loop._batches_that_stepped``), over the running fit."""
        return FitLoop(self._run)

    world_size = property(lambda self: self.strategy.world_size)
    global_rank = property(lambda self: self.strategy.global_rank)
    local_rank = property(lambda self: self.strategy.local_rank)
    node_rank = property(lambda self: self.strategy.node_rank)
    is_global_zero = property(lambda self: self.strategy.is_global_zero)
    num_devices = property(lambda self: len(self.device_ids))
    lightning_module = property(lambda self: self.module)
    model = lightning_module
    logger = property(lambda self: self.loggers[0] if self.loggers else None)
    sanity_checking = property(lambda self: self._run is not None and self._run.loop.sanity_checking)
    fitting = property(
        lambda self: self._run is not None and self._run.loop.fitting,
        doc="True inside `fit` (validation run by fit included), False in standalone validate/test/predict.",
    )
    stage = property(lambda self: self._run.reporter.stage if self._run is not None else None)
    training = property(lambda self: self.state.stage == RunningStage.TRAINING)
    validating = property(lambda self: self.state.stage == RunningStage.VALIDATING)
    testing = property(lambda self: self.state.stage == RunningStage.TESTING)
    predicting = property(lambda self: self.state.stage == RunningStage.PREDICTING)
    interrupted = property(lambda self: self._state.status == TrainerStatus.INTERRUPTED)

    @property
    def state(self) -> TrainerState:
        """Lightning's ``trainer.state``: status (initializing/running/finished/interrupted), fn and stage."""
        state, run = self._state, self._run
        if run is None or state.status != TrainerStatus.RUNNING:
            state.stage = None
        elif run.loop.sanity_checking:
            state.stage = RunningStage.SANITY_CHECKING
        else:  # before a loop enters its stage (on_fit_start, on_train_start): the call's own stage
            state.stage = RunningStage(run.reporter.stage or ("train" if run.stage == "fit" else run.stage))
        return state

    # ---- the data of the current (or last) run ------------------------------------------------
    @property
    def train_dataloader(self) -> Any:
        run = self._run
        loader = run.data.train_data.loader if run is not None and run.data.train_data is not None else None
        return (
            loader.combined.iterables if isinstance(loader, CombinedBatches) else loader
        )  # Lightning's collection

    val_dataloaders = property(lambda self: self._loaders_of("validate", "val_loaders"))
    test_dataloaders = property(lambda self: self._loaders_of("test", "eval_loaders"))
    predict_dataloaders = property(lambda self: self._loaders_of("predict", "eval_loaders"))
    num_val_batches = property(
        lambda self: self._batch_counts("validate" if self._stage() == "validate" else "fit", "val")
    )
    num_test_batches = property(lambda self: self._batch_counts("test", "eval"))
    num_predict_batches = property(lambda self: self._batch_counts("predict", "eval"))

    @property
    def num_training_batches(self) -> int | float:
        """The batches of a training epoch: the current fit's, else the last fit's (inf before any)."""
        run = self._run  # read on every batch (callbacks): the current fit's count straight away
        if run is not None and run.stage == "fit":
            return run.data.num_training_batches
        return self._ended_counts["fit"]["train"] if "fit" in self._ended_counts else math.inf

    def _loaders_of(self, stage: str, field: str) -> Any:
        """One loader, or the list when there are several (Lightning's shape); None before such a run."""
        run = self._run
        if run is None or (field == "eval_loaders" and run.stage != stage):
            return None
        loaders, shape = getattr(run.data, field), run.data.loader_shapes.get(field)
        if loaders and shape is not None:  # given as a dict or nested lists: answered in that shape
            return unflatten(list(loaders), shape)
        if len(loaders) == 1 and isinstance(loaders[0], CombinedBatches):
            return loaders[0].combined.iterables
        return None if not loaders else loaders[0] if len(loaders) == 1 else list(loaders)

    def _stage(self) -> str | None:
        return self._run.stage if self._run is not None else None

    def _batch_counts(self, stage: str, kind: str) -> Any:
        """The batch counts of the `kind` ("val", "eval") loaders of the current run when it is of `stage`,
        else of that stage's last run (Lightning's loops keep their counts); before any: inf batches, no
        loaders."""
        if self._run is not None and self._run.stage == stage:
            ran = self._run_loaders(self._run)
        else:
            ran = self._ended_counts.get(stage, {"train": math.inf, "val": [], "eval": []})
        option = "limit_val_batches" if kind == "val" or stage == "validate" else f"limit_{stage}_batches"
        found = (
            resolve_limit(getattr(self.options, option), length_of(loader), option) for loader in ran[kind]
        )
        return [int(n) if math.isfinite(n) else n for n in found]

    @staticmethod
    def _run_loaders(run: Run) -> dict[str, Any]:
        return {
            "train": run.data.num_training_batches,
            "val": list(run.data.val_loaders),
            "eval": list(run.data.eval_loaders) if run.stage != "fit" else [],
        }

    val_check_batches = property(
        lambda self: self._run.loop.val_check_batches if self._run is not None else None
    )
    #: Whether the training batch being run is the epoch's last (Lightning's Trainer.is_last_batch).
    is_last_batch = property(lambda self: self._run is not None and self._run.loop.is_last_batch)
    optimizers = property(lambda self: self._run.optimizers if self._run is not None else [])
    lr_scheduler_configs = property(lambda self: self._run.schedulers if self._run is not None else [])
    will_validate_this_epoch = property(
        lambda self: self._run is not None and self._run.will_validate_this_epoch
    )

    @property
    def should_stop(self) -> bool:
        return self._run.stop.should_stop if self._run is not None else self._pending_stop

    @should_stop.setter
    def should_stop(self, value: bool) -> None:
        if self._run is not None:
            self._run.stop.should_stop = bool(value)
        else:
            self._pending_stop = bool(value)

    @property
    def checkpoint_callbacks(self) -> list[Checkpoint]:
        """Every checkpoint callback (ModelCheckpoint, OnExceptionCheckpoint...), as Lightning lists them."""
        return [cb for cb in self.callbacks if isinstance(cb, Checkpoint)]

    @property
    def checkpoint_callback(self) -> Checkpoint | None:
        """The first of `checkpoint_callbacks` (Lightning's: whichever checkpoint callback comes first)."""
        found = self.checkpoint_callbacks
        return found[0] if found else None

    @property
    def _model_checkpoint(self) -> ModelCheckpoint | None:
        """The first ModelCheckpoint: where last.ckpt and the best checkpoint are."""
        return next((cb for cb in self.callbacks if isinstance(cb, ModelCheckpoint)), None)

    @property
    def early_stopping_callback(self) -> EarlyStopping | None:
        return next((cb for cb in self.callbacks if isinstance(cb, EarlyStopping)), None)

    @property
    def callback_metrics(self) -> dict[str, torch.Tensor]:
        return self._run.reporter.callback_metrics() if self._run is not None else {}

    @property
    def logged_metrics(self) -> dict[str, float]:
        """What the run logged for the loggers (logger=True): as in Lightning, the latest training step values
        after every batch (whether or not `log_every_n_steps` sent them to the loggers yet), the epoch
        values so far inside the epoch-end hooks, and every value the loggers were sent."""
        run = self._run
        return run.reporter.logged_metrics_now() if run is not None else dict(self._logged_metrics)

    @property
    def progress_bar_metrics(self) -> dict[str, float]:
        return self._run.reporter.progress_bar_metrics() if self._run is not None else {}

    @property
    def estimated_stepping_batches(self) -> int | float:
        """How many optimizer steps `fit` will take (for OneCycleLR and friends)."""
        data = (
            data_fetch.train_data(self._run) if self._run is not None and self._run.stage == "fit" else None
        )
        per_epoch = self.num_training_batches  # Lightning fetches the training data to know it
        if data is not None and not math.isfinite(per_epoch):
            per_epoch = train_epoch_batches(self.limit_train_batches, data.loader)
        max_epochs = self.max_epochs or self.options.max_epochs
        if max_epochs == -1:  # no epoch limit: max_steps, or forever
            return math.inf if self.max_steps == -1 else self.max_steps
        steps = (
            math.ceil(per_epoch / self.accumulate_grad_batches) * max(max_epochs, 1)
            if math.isfinite(per_epoch)
            else math.inf
        )
        if self.max_steps != -1:
            steps = min(steps, self.max_steps)
        return int(steps) if math.isfinite(steps) else steps

    # ---- more of Lightning's read-only attributes --------------------------------------------
    ckpt_path = property(
        lambda self: self._ckpt_path,
        doc="The checkpoint file the last fit/validate/test/predict loaded (resolved: 'best' -> its path).",
    )
    scaler = property(
        lambda self: self.precision_plugin.scaler, doc="The GradScaler under '16-mixed' on CUDA, else None."
    )
    evaluating = property(lambda self: self.state.stage is not None and self.state.stage.evaluating)
    received_sigterm = property(
        lambda self: self._run is not None and self._run.stop.signal == signal.SIGTERM,
        doc="Whether this run received SIGTERM (it then checkpoints and stops).",
    )
    # Lightning's: the sampler arguments of a parallel strategy, None on one device
    distributed_sampler_kwargs = property(
        lambda self: (
            self.strategy.distributed_sampler_kwargs if isinstance(self.strategy, ParallelStrategy) else None
        )
    )

    @property
    def early_stopping_callbacks(self) -> list[EarlyStopping]:
        return [cb for cb in self.callbacks if isinstance(cb, EarlyStopping)]

    @property
    def progress_bar_callback(self) -> ProgressBar | None:
        return next((cb for cb in self.callbacks if isinstance(cb, ProgressBar)), None)

    @property
    def enable_validation(self) -> bool:
        """Will fit validate: validation data given, `validation_step` overridden, limit_val_batches > 0."""
        run = self._run
        return (
            run is not None
            and run.data.has_val_data
            and run.data.has_validation_step
            and self.limit_val_batches > 0
        )

    @property
    def num_sanity_val_batches(self) -> list[int | float]:
        """Batches of each validation loader the sanity check runs: min(num_sanity_val_steps, its length)."""
        steps = math.inf if self.num_sanity_val_steps == -1 else self.num_sanity_val_steps  # -1: all of them
        return [min(steps, batches) for batches in self.num_val_batches]

    # ---- helpers Lightning's Trainer offers callbacks and scripts ------------------------------
    def print(self, *args: Any, **kwargs: Any) -> None:
        """`print` on global rank zero only (Lightning's `trainer.print`)."""
        if self.is_global_zero:
            print(*args, **kwargs)

    @contextlib.contextmanager
    def init_module(self, empty_init: bool | None = None) -> Iterator[None]:
        """Create the model's tensors on this process's device (`with trainer.init_module(): model = Net()`);
        `empty_init=True` skips the `torch.nn.init` initialisation (weights come from a checkpoint next)."""
        with (
            torch.device(self.strategy.root_device),
            SkipInitialisation() if empty_init else contextlib.nullcontext(),
        ):
            yield

    def log_metrics(self, metrics: dict[str, float], step: int | None = None) -> None:
        """Send metrics to every logger (rank zero). Callbacks use this; modules use `self.log`."""
        if self._run is not None:
            self._run.reporter.log_metrics(metrics, step)

    def check_finite_loss(self) -> None:
        """Raise (or warn, with stop_on_nan=False) if the latest loss is NaN/inf. Called at flush points
        only."""
        if self._run is not None:
            self._run.reporter.check_finite_loss()
