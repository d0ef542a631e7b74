"""Trainer: validates options, builds the run, and delegates to the loops.

`Trainer._run_with_flags` is the whole set-up sequence, in order: attach → environment →
checkpoint to resume → run folder and loggers → data and `setup` hooks → model on device →
optimizers → restore the participants → `on_fit_start` → sanity check → loop → teardown. Everything
the loops change lives in the typed `Run` (run.py); the properties below read it for callbacks.
"""

from __future__ import annotations

import contextlib
import datetime
import inspect
import math
import os
import signal
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import torch

from ember.callbacks.callback import Callback
from ember.callbacks.checkpoint import Checkpoint
from ember.callbacks.early_stopping import EarlyStopping
from ember.callbacks.model_checkpoint import ModelCheckpoint
from ember.callbacks.on_exception_checkpoint import OnExceptionCheckpoint
from ember.callbacks.progress_bar_base import ProgressBar
from ember.checkpoint import describe_state_dict_mismatch, save_checkpoint, to_safe
from ember.datamodule import DataModule
from ember.errors import CheckpointError, ConfigError
from ember.fs import storage_path
from ember.loggers.base import Logger
from ember.loggers.logger import DummyLogger
from ember.module import Module
from ember.profilers import PassThroughProfiler, resolve_profiler
from ember.runtime import cluster
from ember.runtime import devices as device_utils
from ember.runtime.combined_loader import unflatten
from ember.runtime.init import SkipInitialisation
from ember.runtime.precision import Precision
from ember.runtime.seed import Determinism
from ember.runtime.strategies.parallel import ParallelStrategy
from ember.trainer import build, compiled, data_fetch, loops, participants, profiling, resume
from ember.trainer.dataloaders import CombinedBatches, length_of, resolve_limit, train_epoch_batches
from ember.trainer.fit_loop import FitLoop
from ember.trainer.hooks import HookDispatcher, configure_model
from ember.trainer.optimization import AutomaticOptimization
from ember.trainer.options import Options, build_options, resolve_defaults, unknown_option_message
from ember.trainer.progress import Progress
from ember.trainer.refused_hooks import refuse_unsupported_hooks
from ember.trainer.reporting import Reporter
from ember.trainer.run import Run
from ember.trainer.signals import SignalHandler
from ember.trainer.states import RunningStage, TrainerFn, TrainerState, TrainerStatus
from ember.trainer.stopping import StopRules

LOG_FOLDER = resume.LOG_FOLDER


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


class Trainer:
    """Runs fit / validate / test / predict for a `Module` on CPU, CUDA or MPS.

    Example:
        >>> import torch, ember
        >>> class Tiny(ember.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.layer = torch.nn.Linear(4, 1)
        ...     def training_step(self, batch, batch_idx):
        ...         return self.layer(batch).pow(2).mean()
        ...     def configure_optimizers(self):
        ...         return torch.optim.SGD(self.parameters(), lr=0.1)
        >>> data = torch.utils.data.DataLoader(torch.randn(32, 4), batch_size=8)
        >>> trainer = ember.Trainer(max_epochs=2, logger=False, enable_progress_bar=False,
        ...                         enable_checkpointing=False, enable_model_summary=False)
        >>> trainer.fit(Tiny(), data)
        >>> trainer.global_step
        8
    """

    def __init__(
        self,
        *,
        accelerator: str = "auto",
        devices: int | str | list[int] = "auto",
        num_nodes: int = 1,
        strategy: str | Any = "auto",
        plugins: Any = None,
        precision: str | int | None = None,
        max_epochs: int | None = None,
        min_epochs: int | None = None,
        max_steps: int = -1,
        min_steps: int | None = None,
        max_time: str | float | datetime.timedelta | dict[str, int] | None = None,
        limit_train_batches: int | float | None = None,
        limit_val_batches: int | float | None = None,
        limit_test_batches: int | float | None = None,
        limit_predict_batches: int | float | None = None,
        overfit_batches: int | float = 0.0,
        val_check_interval: int | float | None = None,
        check_val_every_n_epoch: int | None = 1,
        reload_dataloaders_every_n_epochs: int = 0,
        num_sanity_val_steps: int | None = None,
        fast_dev_run: bool | int = False,
        accumulate_grad_batches: int = 1,
        gradient_clip_val: float | None = None,
        gradient_clip_algorithm: str | None = None,
        deterministic: bool | None = None,
        benchmark: bool | None = None,
        detect_anomaly: bool = False,
        inference_mode: bool = True,
        use_distributed_sampler: bool = True,
        sync_batchnorm: bool = False,
        profiler: str | Any | None = None,
        barebones: bool = False,
        log_every_n_steps: int | None = None,
        default_root_dir: str | os.PathLike[str] | None = None,
        callbacks: Callback | list[Callback] | None = None,
        logger: bool | Logger | Iterable[Logger] | None = None,
        enable_checkpointing: bool | None = None,
        enable_progress_bar: bool | None = None,
        enable_model_summary: bool | None = None,
        enable_autolog_hparams: bool = True,
        model_registry: str | None = None,
        compile: bool | dict[str, Any] = False,
        stop_on_nan: bool = True,
        **unknown: Any,
    ) -> None:
        if unknown:
            known = [
                p for p in inspect.signature(Trainer.__init__).parameters if p not in ("self", "unknown")
            ]
            raise ConfigError(unknown_option_message(next(iter(unknown)), known))
        # Lightning reports these as given (None) until a fit resolves them: max_epochs 1000 or -1, clipping by norm.
        self._unresolved = {
            "max_epochs": max_epochs is None,
            "gradient_clip_algorithm": gradient_clip_algorithm is None,
        }
        given = resolve_defaults(locals())  # None means Lightning's default; barebones turns features off
        self.options: Options = build_options(given)
        self.barebones = barebones
        #: Lightning's: False sends no hyperparameters (nor graph, nor save()) to the loggers at a stage's start
        self.enable_autolog_hparams = bool(enable_autolog_hparams)
        self.device_type = device_utils.resolve_accelerator(accelerator)
        self.device_ids = device_utils.resolve_device_ids(self.device_type, devices)
        # before the strategy reads RANK; a launch that disagrees is refused when a run starts (Lightning accepts
        # Trainer(num_nodes=8) on any machine)
        self._num_nodes_problem = cluster.num_nodes_problem(num_nodes, devices, self.device_ids)
        self.num_nodes = num_nodes
        # Lightning's model-registry name (before any ":version"); ember uploads to no registry (see _start_checks)
        self._model_registry = model_registry.split(":")[0] if model_registry else None
        self.strategy = build.select_strategy(strategy, self.device_type, self.device_ids)
        build.apply_plugins(plugins, self.strategy)
        if not use_distributed_sampler and getattr(self.strategy, "world_size", 1) > 1:
            # one process: no sampler is replaced either way (Lightning's), so False is accepted there
            raise ConfigError(
                "Trainer(use_distributed_sampler=False) with several processes: ember always shards the "
                "data with a DistributedSampler; drop the option, or shard it yourself in a single process"
            )
        self.use_distributed_sampler = use_distributed_sampler
        #: BatchNorm layers become SyncBatchNorm under DDP, FSDP and ModelParallelStrategy (Lightning's option)
        self.sync_batchnorm = bool(sync_batchnorm)
        self.precision_plugin = Precision(given["precision"], self.device_type)
        self.precision = self.precision_plugin.name
        self.deterministic = bool(given["deterministic"])
        self.benchmark = build.apply_benchmark(benchmark, self.deterministic)
        self.detect_anomaly = detect_anomaly
        self.profiler = resolve_profiler(profiler) or PassThroughProfiler()
        self._profiling = profiler is not None
        self.default_root_dir = storage_path(
            default_root_dir if default_root_dir is not None else os.getcwd()
        )
        self.compile_options = compile
        self._dynamo_ctx: Any = (
            None  # the compiler context of a torch.compile(module) given to fit/validate/...
        )
        self.enable_model_summary = given["enable_model_summary"]
        dev = bool(self.options.fast_dev_run)
        self.callbacks = build.build_callbacks(
            callbacks,
            given["enable_checkpointing"],
            given["enable_progress_bar"],
            given["enable_model_summary"],
            self.options.max_time,
            restarts=build.restarts_possible(self.strategy),
        )
        # fast_dev_run: Lightning's DummyLogger stands in for the loggers (trainer.logger set, nothing written)
        self._logger_option = (
            ([DummyLogger()] if given["logger"] not in (False, None, []) else False)
            if dev
            else given["logger"]
        )
        # the user's loggers are trainer.logger(s) from the start, as in Lightning; the default ones are made
        # when a run starts (their version folder follows a resumed checkpoint's)
        self.loggers: list[Logger] = build.given_loggers(self._logger_option)
        self.progress = Progress()  # kept across runs: a Trainer used again continues where it was
        self.module: Module | None = None
        self.datamodule: DataModule | None = None
        self.log_dir: str | None = str(self.default_root_dir)  # the run folder once a run made it
        self.train_data_passed_to_fit = False  # set by each fit (see fit)
        self._run: Run | None = None  # the current run, or the last one once it ended
        # the batch counts of the last ended run of each stage: Lightning's loops keep theirs (a test after fit
        # still reports fit's num_training_batches and num_val_batches)
        self._ended_counts: dict[str, dict[str, Any]] = {}
        self._pending_stop = False  # should_stop set before any run
        self._ckpt_path: str | None = None
        self._state = TrainerState()
        self._logged_metrics: dict[str, float] = {}  # what the latest run logged (see `logged_metrics`)

    min_epochs, max_steps, max_time = (_option(n) for n in ("min_epochs", "max_steps", "max_time"))

    @property
    def max_epochs(self) -> int | None:
        """The `max_epochs` option; when not given, None until a fit starts, then 1000 (or -1 when max_steps or
        max_time bounds the run), as in Lightning."""
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
        """The `gradient_clip_algorithm` option: None when not given (clipping is then by norm), as in Lightning."""
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
        """The epoch being run; once an epoch is closed (its epoch-end work done) it counts as completed, as in
        Lightning: after a fit stopped early (EarlyStopping, max_steps) it is the number of epochs run."""
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
    sanity_checking = property(lambda self: self._run is not None and self._run.sanity_checking)
    fitting = property(
        lambda self: self._run is not None and self._run.fitting,
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
        elif run.sanity_checking:
            state.stage = RunningStage.SANITY_CHECKING
        else:  # before a loop enters its stage (on_fit_start, on_train_start): the call's own stage
            state.stage = RunningStage(run.reporter.stage or ("train" if run.stage == "fit" else run.stage))
        return state

    # ---- the data of the current (or last) run ------------------------------------------------
    @property
    def train_dataloader(self) -> Any:
        run = self._run
        loader = run.train_data.loader if run is not None and run.train_data is not None else None
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
            return run.num_training_batches
        return self._ended_counts["fit"]["train"] if "fit" in self._ended_counts else math.inf

    def _loaders_of(self, stage: str, field: str) -> Any:
        """One loader, or the list when there are several (Lightning's shape); None before such a run."""
        run = self._run
        if run is None or (field == "eval_loaders" and run.stage != stage):
            return None
        loaders, shape = getattr(run, field), run.loader_shapes.get(field)
        if loaders and shape is not None:  # given as a dict or nested lists: answered in that shape
            return unflatten(list(loaders), shape)
        if len(loaders) == 1 and isinstance(loaders[0], CombinedBatches):
            return loaders[0].combined.iterables
        return None if not loaders else loaders[0] if len(loaders) == 1 else list(loaders)

    def _stage(self) -> str | None:
        return self._run.stage if self._run is not None else None

    def _batch_counts(self, stage: str, kind: str) -> Any:
        """The batch counts of the `kind` ("val", "eval") loaders of the current run when it is of `stage`, else of that stage's last
        run (Lightning's loops keep their counts); before any: inf batches, no loaders."""
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
            "train": run.num_training_batches,
            "val": list(run.val_loaders),
            "eval": list(run.eval_loaders) if run.stage != "fit" else [],
        }

    val_check_batches = property(lambda self: self._run.val_check_batches if self._run is not None else None)
    #: Whether the training batch being run is the epoch's last (Lightning's Trainer.is_last_batch).
    is_last_batch = property(lambda self: self._run is not None and self._run.is_last_batch)
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
        after every batch (whether or not `log_every_n_steps` sent them to the loggers yet), the epoch values so
        far inside the epoch-end hooks, and every value the loggers were sent."""
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
        return run is not None and run.has_val_data and run.has_validation_step and self.limit_val_batches > 0

    @property
    def num_sanity_val_batches(self) -> list[int | float]:
        """Batches of each validation loader the sanity check runs: min(num_sanity_val_steps, its length)."""
        steps = math.inf if self.num_sanity_val_steps == -1 else self.num_sanity_val_steps  # -1: all of them
        return [min(steps, batches) for batches in self.num_val_batches]

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

    # ---- entry points -------------------------------------------------------------------------
    def fit(
        self,
        model: Module,
        train_dataloaders: Any = None,
        val_dataloaders: Any = None,
        datamodule: DataModule | None = None,
        ckpt_path: str | os.PathLike[str] | None = None,
        weights_only: bool | None = None,
    ) -> None:
        """Train `model`; with `ckpt_path` ("last" or a file) resume exactly where that checkpoint was.
        `weights_only` (Lightning's, for every stage): None or True loads the file safely, as torch.load does by
        default; False, your word that the file is trusted, lets it unpickle any object."""
        if isinstance(train_dataloaders, DataModule):
            datamodule, train_dataloaders = train_dataloaders, None
        #: fit was given its training data directly (not through the Module or a DataModule): a callback that
        #: must rebuild the training loader (BatchSizeFinder) refuses, as Lightning's does
        self.train_data_passed_to_fit = train_dataloaders is not None
        self._run_stage_with(
            model, "fit", datamodule, ckpt_path, weights_only, train=train_dataloaders, val=val_dataloaders
        )

    def validate(
        self,
        model: Module | None = None,
        dataloaders: Any = None,
        ckpt_path: Any = None,
        verbose: bool = True,
        datamodule: DataModule | None = None,
        weights_only: bool | None = None,
    ) -> list[dict[str, float]]:
        """Run `validation_step` over the data once; returns the logged epoch metrics (Lightning's argument order)."""
        return self._evaluate("validate", model, dataloaders, ckpt_path, datamodule, verbose, weights_only)

    def test(
        self,
        model: Module | None = None,
        dataloaders: Any = None,
        ckpt_path: Any = None,
        verbose: bool = True,
        datamodule: DataModule | None = None,
        weights_only: bool | None = None,
    ) -> list[dict[str, float]]:
        """Run `test_step` over the data once; returns the logged epoch metrics, e.g. `[{"test_acc": 0.91}]`."""
        return self._evaluate("test", model, dataloaders, ckpt_path, datamodule, verbose, weights_only)

    def predict(
        self,
        model: Module | None = None,
        dataloaders: Any = None,
        datamodule: DataModule | None = None,
        return_predictions: bool | None = None,
        ckpt_path: Any = None,
        weights_only: bool | None = None,
    ) -> list[Any] | None:
        """Run `predict_step` over the data in inference mode; returns the outputs (a list per loader).

        `return_predictions=None` (the default) returns them, as Lightning does for every strategy that does not
        spawn processes (ember has none that does); pass False to keep memory flat on large data.
        """
        return_predictions = True if return_predictions is None else bool(return_predictions)
        if isinstance(dataloaders, DataModule):
            datamodule, dataloaders = dataloaders, None
        results = self._run_stage_with(
            model,
            "predict",
            datamodule,
            ckpt_path,
            weights_only,
            data=dataloaders,
            return_predictions=return_predictions,
        )
        if not return_predictions:
            return None
        return results[0] if len(results) == 1 else results

    def _evaluate(
        self,
        stage: str,
        model: Any,
        data: Any,
        ckpt_path: Any,
        datamodule: Any,
        verbose: bool,
        weights_only: bool | None,
    ) -> list[dict[str, float]]:
        if isinstance(data, DataModule):
            datamodule, data = data, None
        results = self._run_stage_with(model, stage, datamodule, ckpt_path, weights_only, data=data)
        if verbose and self.is_global_zero and results:
            for i, metrics in enumerate(results):
                shown = "  ".join(f"{k}={v:.4f}" for k, v in metrics.items())
                print(f"{stage} results{f' (loader {i})' if len(results) > 1 else ''}: {shown}")
        return results

    # ---- the run ------------------------------------------------------------------------------
    def _run_stage_with(
        self, model: Any, stage: str, datamodule: Any, ckpt_path: Any, weights_only: bool | None, **data: Any
    ) -> Any:
        self._start_checks(ckpt_path, weights_only)
        self._state.fn, self._state.status = TrainerFn(stage), TrainerStatus.RUNNING
        try:
            with Determinism(self.deterministic), torch.autograd.set_detect_anomaly(self.detect_anomaly):
                result = self._run_with_flags(model, stage, datamodule, ckpt_path, weights_only, **data)
        except BaseException:
            self._state.status = TrainerStatus.INTERRUPTED
            raise
        finally:
            if self.module is not None:  # a compiled model's steps are compiled for the stage only
                compiled.uncompile_steps(self.module)
        self._state.status = TrainerStatus.FINISHED
        return result

    def _start_checks(self, ckpt_path: Any, weights_only: bool | None) -> None:
        """What Lightning accepts at construction and ember checks when a run starts (one line each)."""
        if self._num_nodes_problem is not None:
            raise ConfigError(self._num_nodes_problem)
        if self._model_registry is not None and self.is_global_zero:
            # Lightning uploads only through litmodels' LitModelCheckpoint; without it the name changes nothing
            warnings.warn(
                f"Trainer(model_registry={self._model_registry!r}): ember uploads no checkpoints to "
                "Lightning's model registry (litmodels); they are written as files by ModelCheckpoint",
                stacklevel=4,
            )
        if weights_only not in (None, True, False):
            raise ConfigError(f"weights_only={weights_only!r} must be None, True or False")
        if isinstance(ckpt_path, str) and (ckpt_path == "registry" or ckpt_path.startswith("registry:")):
            raise ConfigError(
                f"ckpt_path={ckpt_path!r} reads Lightning's cloud model registry (litmodels), which "
                "ember does not reach; pass the checkpoint's file path or URL instead"
            )

    def _run_with_flags(
        self, model: Any, stage: str, datamodule: Any, ckpt_path: Any, weights_only: bool | None, **data: Any
    ) -> Any:
        if model is None and ckpt_path is None and stage != "fit" and self.module is not None:
            ckpt_path = "best"  # Lightning's rule: no model given, the attached one is evaluated at its best checkpoint
            warnings.warn(
                f"trainer.{stage}() was called without a model: the best checkpoint of the previous fit is "
                f"used; pass {stage}(ckpt_path='best') or (ckpt_path='last') to say so, or the model to use "
                "its current weights",
                stacklevel=4,
            )
        module = self._attach(model, datamodule)
        refuse_unsupported_hooks(module, Module, self.datamodule, DataModule, self.callbacks, Callback)
        launcher = self.strategy.launcher
        if (
            launcher is not None
        ):  # DDP: starts the workers here (never returns), or picks a restart's checkpoint
            ckpt_path = launcher.prepare(stage, ckpt_path)
        self.strategy.setup_environment()
        ckpt_file = self._checkpoint_file(ckpt_path)
        self._ckpt_path = str(ckpt_file) if ckpt_file is not None else None
        into_shards = getattr(self.strategy, "loads_checkpoint_folders", False)  # a folder's tensors: later
        checkpoint = (
            resume.load_for_resume(ckpt_file, weights_only, into_shards) if ckpt_file is not None else None
        )
        self.loggers, self.log_dir = build.setup_run_dir(
            self._logger_option, self.loggers, self.default_root_dir, self.strategy, checkpoint, ckpt_file
        )
        if self._run is not None:
            self._ended_counts[self._run.stage] = self._run_loaders(
                self._run
            )  # counted when asked (len may cost)
        run = self._run = self._new_run(stage, module)
        with run.reporter.refusing_logs("setup"):
            build.setup_data_and_hooks(run, data)
        configure_model(
            module, self.strategy.root_device
        )  # after setup, before the weights are placed or restored
        build.setup_model(run, self.compile_options, self.sync_batchnorm)
        # fast_dev_run: checkpoint and early-stopping callbacks are kept (trainer.checkpoint_callbacks) but never
        # run, as Lightning skips them in that mode
        skipped = (ModelCheckpoint, EarlyStopping) if self.fast_dev_run else ()
        dispatched = [cb for cb in self.callbacks if not isinstance(cb, skipped)]
        run.hooks = HookDispatcher(self, module, dispatched)
        if (
            checkpoint is not None
        ):  # the module's on_load_checkpoint: before configure_optimizers (Lightning's order)
            self._check_checkpoint(run, checkpoint, ckpt_file, chosen_by_ember=ckpt_path == "last")
        if stage == "fit":
            with run.reporter.refusing_logs("configure_optimizers"):
                build.setup_optimization(run)
        if checkpoint is not None:
            self._restore(run, checkpoint, ckpt_file)
        if self._profiling:
            profiling.start_profiling(run, self.profiler, self.log_dir or str(self.default_root_dir))
        handler = SignalHandler(run, interrupt=stage == "fit")
        failed = True
        try:
            result = self._run_stage(run, data)
            failed = False
            return result
        except BaseException as exc:
            run.hooks.call_exception(exc, run.datamodule)
            run.reporter.finalize("failed")
            raise
        finally:
            handler.restore()
            self._teardown(run, hooks=not failed)  # Lightning runs no teardown hook after on_exception
            if self._profiling:
                profiling.finish_profiling(self.profiler, run)

    def _run_stage(self, run: Run, data: dict[str, Any]) -> Any:
        hooks = run.hooks
        assert hooks is not None
        if run.stage == "fit":
            run.fitting = True
            with run.reporter.refusing_logs("on_fit_start"):
                hooks("on_fit_start")
            if self.enable_autolog_hparams:  # Lightning: after on_fit_start, at every stage
                run.reporter.log_hyperparams(run.datamodule)
            if run.resume.training_state is not None:
                participants.restore_after_fit_start(run, *run.resume.training_state)
                run.resume.training_state = None
            loops.run_sanity_check(run)
            loops.fetch_train_data(run)
            run.resume.restore_rng_at_fit_start(run.progress)
            loops.run_fit(run)
            with run.reporter.refusing_logs("on_fit_end"):
                hooks("on_fit_end")
            run.fitting = False
            run.reporter.finalize("success")
            return None
        if self.enable_autolog_hparams:
            run.reporter.log_hyperparams(run.datamodule)
        build.fetch_eval_data(run, data)
        if run.stage in ("validate", "test"):
            limit = self.limit_val_batches if run.stage == "validate" else self.limit_test_batches
            results = loops.run_evaluation(run, run.stage, run.eval_loaders, limit)
            run.reporter.finalize("success")
            return results
        predictions = loops.run_predict(run, run.eval_loaders, data.get("return_predictions", True))
        run.reporter.finalize("success")  # Lightning finalizes the loggers at the end of every stage
        return predictions

    def _attach(self, model: Any, datamodule: Any) -> Module:
        if model is None:
            if self.module is None:
                raise ConfigError("no model given; pass one, e.g. trainer.test(model, dataloaders)")
            model = self.module  # compiled again if it was given compiled (Lightning keeps it compiled)
        else:  # torch.compile(module): the Module behind it runs, its steps compiled with the wrapper's settings
            model, self._dynamo_ctx = compiled.unwrap_compiled(model)
        if not isinstance(model, Module):
            raise ConfigError(
                f"the model is a {type(model).__name__}, not an ember.Module; subclass ember.Module "
                "(a torch.nn.Module with training_step and configure_optimizers), or pass torch.compile(module)"
            )
        if self._dynamo_ctx is not None:
            if self.strategy.name == "model_parallel":  # Lightning refuses it there too
                raise ConfigError(
                    "a torch.compile'd model cannot be given with ModelParallelStrategy; pass the "
                    "module itself and compile its layers in configure_model, after parallelizing"
                )
            compiled.compile_steps(model, self._dynamo_ctx)
        if datamodule is not None and not isinstance(datamodule, DataModule):
            raise ConfigError(f"datamodule must be an ember.DataModule; got {type(datamodule).__name__}")
        self.module, self.datamodule = model, datamodule
        model.trainer = self
        if datamodule is not None:
            datamodule.trainer = self
        self.callbacks = build.with_module_callbacks(self.callbacks, model)
        return model

    def _new_run(self, stage: str, module: Module) -> Run:
        reporter = Reporter(
            module, self.progress, self.loggers, self.strategy.reduce, self.options.stop_on_nan
        )
        self._logged_metrics.clear()  # Lightning resets them when fit/validate/test/predict starts
        reporter.logged_metrics, reporter.fitting = self._logged_metrics, stage == "fit"
        ckpt = self._model_checkpoint
        reporter.last_checkpoint = lambda: ckpt.last_model_path if ckpt is not None else ""
        stop = StopRules(self.options)
        stop.should_stop, self._pending_stop = False, False
        return Run(
            trainer=self,
            stage=stage,
            options=self.options,
            module=module,
            strategy=self.strategy,
            precision=self.precision_plugin,
            progress=self.progress,
            callbacks=self.callbacks,
            loggers=self.loggers,
            reporter=reporter,
            stop=stop,
            resume=resume.ResumePlan(),
            datamodule=self.datamodule,
        )

    # ---- checkpoints --------------------------------------------------------------------------
    def _checkpoint_file(self, ckpt_path: Any) -> Path | None:
        if ckpt_path is None:
            return None
        own: list[Path] = []
        model_checkpoint = self._model_checkpoint
        last_name = model_checkpoint.CHECKPOINT_NAME_LAST if model_checkpoint is not None else "last"
        exception_files = tuple(
            cb.ckpt_path for cb in self.callbacks if isinstance(cb, OnExceptionCheckpoint)
        )
        if ckpt_path == "last":  # only then: reading a logger's folder may start its run (MLflow)
            given = [
                cb.dirpath
                for cb in self.callbacks
                if isinstance(cb, ModelCheckpoint) and cb.dirpath is not None
            ]
            own = resume.own_checkpoint_folders(
                given,
                build.logger_option_dir(self._logger_option),
                self.default_root_dir,
                logger_off=self._logger_option is False,
            )
        best = getattr(
            self.checkpoint_callback, "best_model_path", ""
        )  # Lightning reads the first checkpoint callback
        return resume.resolve_ckpt_path(
            ckpt_path, own, self.default_root_dir, best, self.is_global_zero, last_name, exception_files
        )

    def _check_checkpoint(self, run: Run, ckpt: dict[str, Any], where: Path, chosen_by_ember: bool) -> None:
        with run.reporter.refusing_logs("on_load_checkpoint"):  # Lightning refuses self.log there
            self._check_checkpoint_refusing_logs(run, ckpt, where, chosen_by_ember)

    def _check_checkpoint_refusing_logs(
        self, run: Run, ckpt: dict[str, Any], where: Path, chosen_by_ember: bool
    ) -> None:
        """The module's `on_load_checkpoint`, then whether the (maybe changed) checkpoint fits the module."""
        module = run.module
        module.on_load_checkpoint(
            ckpt
        )  # Lightning: before the weights are loaded, so it may rename or fix them
        # strict_loading=False (Lightning's attribute): missing and extra keys are let through; shapes still must fit
        problem = (
            describe_state_dict_mismatch(module, ckpt.get("state_dict", {}))
            if module.strict_loading
            else None
        )
        if problem:
            raise CheckpointError(
                f"{where} was saved from {ckpt.get('module_class', 'another model')} and does not fit "
                f"{type(module).__name__}: {problem}; pass the checkpoint of this model or start without ckpt_path"
            )
        if (
            run.stage == "fit" and "optimizer_states" not in ckpt
        ):  # Lightning's restore fails here too (KeyError)
            raise CheckpointError(
                f"{where} holds only the model's weights (ModelCheckpoint(save_weights_only=True)), not the optimizer "
                "and loop state fit resumes; start from it with Module.load_from_checkpoint(...) and fit without ckpt_path"
            )
        if run.stage == "fit":
            resume.check_hyperparameters(
                ckpt.get("hyper_parameters"), to_safe(dict(module.hparams)), where, chosen_by_ember
            )

    def _restore(self, run: Run, ckpt: dict[str, Any], where: Path) -> None:
        """Every participant's state (the optimizers' after on_fit_start, `restore_after_fit_start`)."""
        with run.reporter.refusing_logs(
            "on_load_checkpoint"
        ):  # and load_state_dict: Lightning refuses self.log
            participants.restore(run, ckpt, where)
        if run.stage == "fit":
            run.resume.training_state = (ckpt, where)  # optimizers and schedulers: after on_fit_start

    def save_checkpoint(
        self, filepath: str | os.PathLike[str], weights_only: bool | None = None, storage_options: Any = None
    ) -> None:
        """Write a checkpoint atomically (on global rank zero; every rank must call it). `weights_only=True`: the
        model's weights only. `storage_options` is for a custom CheckpointIO plugin in Lightning, whose default
        refuses it as ember does (write to an ``s3://`` path for remote storage)."""
        if storage_options is not None:
            raise ConfigError(
                "save_checkpoint(storage_options=...) needs a custom CheckpointIO plugin, which ember "
                "does not have (Lightning's default refuses it too); pass an s3:// or other URL as "
                "filepath to choose the storage"
            )
        if self._run is None:
            raise ConfigError("save_checkpoint needs a model attached; call trainer.fit(model, ...) first")
        state = participants.collect(self._run, bool(weights_only))
        if getattr(self.strategy, "writes_checkpoints", False):  # ModelParallelStrategy: folders, every rank
            self.strategy.write_checkpoint(state, filepath, save_checkpoint)
        elif self.is_global_zero:
            save_checkpoint(state, filepath)
        self.strategy.barrier("save_checkpoint")

    # ---- for callbacks ------------------------------------------------------------------------
    def reload_dataloaders(self) -> None:
        """Fetch the running stage's data again now from the module's or datamodule's ``*_dataloader()`` (data
        passed to validate/test/predict is kept): what a batch size finder does after it changed the size, as
        Lightning's resets its loops' loaders. During a fit the current epoch goes on with the new training data
        when this is called from ``on_train_epoch_start`` (or earlier); nothing happens outside a run.

        Example:
            >>> import ember
            >>> ember.Trainer(logger=False, enable_progress_bar=False).reload_dataloaders()  # no run: nothing
        """
        run = self._run
        if run is None or self._state.status != TrainerStatus.RUNNING:
            return
        if run.stage == "fit":
            data_fetch.fetch_fit_data_again(run)
            return
        loaders = run.eval_loaders
        build.fetch_eval_data(run, {"data": run.eval_data})
        loaders[:] = run.eval_loaders  # the loop already holds this list: it draws from the new loaders
        run.eval_loaders = loaders
        if run.stage == "validate":
            run.val_loaders = loaders

    def log_metrics(self, metrics: dict[str, float], step: int | None = None) -> None:
        """Send metrics to every logger (rank zero). Callbacks use this; modules use `self.log`."""
        if self._run is not None:
            self._run.reporter.log_metrics(metrics, step)

    def check_finite_loss(self) -> None:
        """Raise (or warn, with stop_on_nan=False) if the latest loss is NaN/inf. Called at flush points only."""
        if self._run is not None:
            self._run.reporter.check_finite_loss()

    def _teardown(self, run: Run, hooks: bool = True) -> None:
        with run.reporter.refusing_logs("teardown"):
            for cb in run.callbacks if hooks else ():
                cb.teardown(self, run.module, stage=run.stage)  # by keyword, as Lightning calls it
            if hooks:
                run.module.teardown(run.stage)
                if run.datamodule is not None:
                    run.datamodule.teardown(run.stage)
        run.reporter.stage = None
