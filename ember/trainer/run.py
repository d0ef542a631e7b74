"""The run: everything one `fit` / `validate` / `test` / `predict` call works on, in one typed object.

The Trainer builds a `Run` (`ember.trainer.build`) and hands it to the loops; the loops, the
optimization step, the stop rules and the checkpoint participants read the run, never the Trainer's
private fields. Callbacks still receive the Trainer (Lightning's signature): `trainer` here is that
public face, used only to pass it on to hooks and to its public methods.

Each part of the run has ONE writer (tests/test_trainer_structure.py checks it):

    the run's own fields           set when the Trainer builds it (trainer.py `_new_run`); the late ones
                                   (hooks, the model on its device, the optimizers) by build.py
    run.data     RunData           the data: how and when it is fetched, reloaded, counted — data_fetch.py
    run.loop     LoopState         where the loops are inside a stage (sanity check, last batch,
                                   validation interval) — loops.py
    run.progress Progress          the resume point (epoch, step, batch) — loops.py and the optimization step
    run.stop     StopRules         when to stop — stopping.py (and the Trainer's `should_stop` for callbacks)
    run.resume   ResumePlan        what a restored checkpoint still asks — resume.py / participants.py
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch

from ember.callbacks.callback import Callback
from ember.datamodule import DataModule
from ember.loggers.base import Logger
from ember.module import Module
from ember.runtime.precision import Precision
from ember.trainer.batches import BatchPreparation
from ember.trainer.dataloaders import EpochIterator
from ember.trainer.hooks import HookDispatcher
from ember.trainer.optimization import AutomaticOptimization, ManualOptimization, SchedulerConfig
from ember.trainer.options import Options
from ember.trainer.progress import Progress
from ember.trainer.reporting import Reporter
from ember.trainer.resume import ResumePlan
from ember.trainer.stopping import StopRules

if TYPE_CHECKING:
    from ember.trainer.trainer import Trainer


@dataclasses.dataclass(eq=False)
class RunData:
    """The run's data and when it is fetched (written by data_fetch.py only).

    Lightning fetches a fit's data when it is first needed, not when the run is built: the run knows at
    build time only *how* to fetch each part (`fetch_train`, `fetch_val`), and, with
    `reload_dataloaders_every_n_epochs`, how to fetch it again (`reload_train`, `reload_val`).
    """

    has_validation_step: bool = False  # the module overrides validation_step
    train_data: EpochIterator | None = None
    num_training_batches: int | float = math.inf  # of an epoch (Trainer.num_training_batches)
    val_loaders: list[Any] = dataclasses.field(default_factory=list)
    eval_loaders: list[Any] = dataclasses.field(default_factory=list)  # validate/test/predict's own data
    # the collection the val/eval loaders were given as (a dict, nested lists), for trainer.val_dataloaders
    # & co. to answer in that shape as Lightning's (its CombinedLoader.iterables); None: one loader, or a list
    loader_shapes: dict[str, Any] = dataclasses.field(default_factory=dict)
    # how to fetch fit's data the first time it is needed; None once fetched, or when there is none
    fetch_train: Callable[[], EpochIterator] | None = None
    fetch_val: Callable[[], list[Any]] | None = None
    # reload_dataloaders_every_n_epochs: fetch the hook's data again (None: not asked, or the data was passed
    # in), and the epoch each was last fetched at
    reload_train: Callable[[], EpochIterator] | None = None
    reload_val: Callable[[], list[Any]] | None = None
    train_loaded_at: int = 0
    val_loaded_at: float = 0
    # fetch fit's data from the module's or datamodule's hooks (None: the data was passed to fit), and what
    # was passed to validate/test/predict (None: their hook): what `Trainer.reload_dataloaders` fetches again
    train_hook: Callable[[], EpochIterator] | None = None
    val_hook: Callable[[], list[Any]] | None = None
    eval_data: Any = None

    @property
    def has_val_data(self) -> bool:
        """Validation data was given or a `val_dataloader()` is defined (fetched or not yet: Lightning's
        `_data_source.is_defined()`)."""
        return bool(self.val_loaders) or self.fetch_val is not None


@dataclasses.dataclass(eq=False)
class LoopState:
    """Where the loops are inside the stage (written by loops.py only; the Trainer's properties read it)."""

    fitting: bool = False  # inside fit (its validation included): Trainer.fitting
    sanity_checking: bool = False
    is_last_batch: bool = False  # the training batch being run is the epoch's last (Trainer.is_last_batch)
    # the epoch ran all its batches (not stopped early): its epoch schedulers step
    epoch_complete: bool = True
    val_check_batches: int | None = None  # validate inside the epoch every this many batches
    # the logger step of the next evaluation batch, per loader: counts on across a fit's validations until
    # the data is reloaded (Lightning's `_seen_batches_per_dataloader`)
    eval_log_steps: dict[int, int] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(eq=False)
class Run:
    """The state of one run. Built once per entry-point call; the last one stays readable afterwards."""

    trainer: Trainer  # passed to callback hooks; its public methods only
    stage: str  # "fit", "validate", "test" or "predict"
    options: Options
    module: Module
    strategy: Any  # SingleDeviceStrategy, DDPStrategy or FSDPStrategy
    precision: Precision
    progress: Progress  # owned by the Trainer: a Trainer used again continues it
    callbacks: list[Callback]
    loggers: list[Logger]
    reporter: Reporter  # metric stores (Module.log) and loggers
    stop: StopRules
    resume: ResumePlan  # what a restored checkpoint still asks of the loops
    datamodule: DataModule | None = None
    data: RunData = dataclasses.field(default_factory=RunData)
    loop: LoopState = dataclasses.field(default_factory=LoopState)
    # ---- set by build.py once, in the set-up sequence ----
    hooks: HookDispatcher | None = None  # once the callbacks and the module are final
    wrapped: torch.nn.Module | None = None  # the module as the strategy wrapped it (DDP)
    batches: BatchPreparation | None = None  # a loader's batch -> the step's (device, dtype, hooks)
    optimizers: list[torch.optim.Optimizer] = dataclasses.field(default_factory=list)
    schedulers: list[SchedulerConfig] = dataclasses.field(default_factory=list)
    optimization: AutomaticOptimization | ManualOptimization | None = None

    @property
    def will_validate_this_epoch(self) -> bool:
        every = self.options.check_val_every_n_epoch
        return (
            self.data.has_val_data
            and self.data.has_validation_step
            and self.options.limit_val_batches != 0
            and (every is None or (self.progress.epoch + 1) % every == 0)
        )
