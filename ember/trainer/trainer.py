"""Trainer: validates options, builds the run, and delegates to the loops.

`Trainer._run_with_flags` is the whole set-up sequence, in order: attach → environment →
checkpoint to resume → run folder and loggers → data and `setup` hooks → model on device →
optimizers → restore the participants → `on_fit_start` → sanity check → loop → teardown. Everything
the loops change lives in the typed `Run` (run.py); Lightning's read-only attributes, which read it
for callbacks, are inherited from `TrainerProperties` (properties.py).
"""

from __future__ import annotations

import datetime
import inspect
import os
import warnings
from collections.abc import Iterable
from typing import Any

import torch

from ember.callbacks.callback import Callback
from ember.datamodule import DataModule
from ember.errors import ConfigError
from ember.fs import storage_path
from ember.loggers.base import Logger
from ember.loggers.logger import DummyLogger
from ember.module import Module
from ember.profilers import PassThroughProfiler, resolve_profiler
from ember.runtime import cluster
from ember.runtime import devices as device_utils
from ember.runtime.precision import Precision
from ember.runtime.seed import Determinism
from ember.trainer import build, compiled, data_fetch, loops, participants, profiling, resume
from ember.trainer.hooks import configure_model
from ember.trainer.options import Options, build_options, resolve_defaults, unknown_option_message
from ember.trainer.progress import Progress
from ember.trainer.properties import TrainerProperties
from ember.trainer.refused_hooks import refuse_unsupported_hooks
from ember.trainer.reporting import Reporter
from ember.trainer.run import Run
from ember.trainer.signals import SignalHandler
from ember.trainer.states import TrainerFn, TrainerState, TrainerStatus
from ember.trainer.stopping import StopRules

LOG_FOLDER = resume.LOG_FOLDER


class Trainer(TrainerProperties):
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
        if unknown:  # the accepted names: every parameter but self and **unknown
            names = [*inspect.signature(Trainer.__init__).parameters][1:-1]
            raise ConfigError(unknown_option_message(next(iter(unknown)), names))
        # None means Lightning's default; barebones turns features off Lightning reports these as given (None)
        # until a fit resolves them: max_epochs 1000 or -1, clip by norm
        given = resolve_defaults(locals())
        self._unresolved = {"max_epochs": max_epochs is None}
        self._unresolved["gradient_clip_algorithm"] = gradient_clip_algorithm is None
        self.options: Options = build_options(given)
        self.barebones = barebones
        #: Lightning's: False sends no hyperparameters (nor graph, nor save()) to the loggers at a stage's
        #: start
        self.enable_autolog_hparams = bool(enable_autolog_hparams)
        self.device_type = device_utils.resolve_accelerator(accelerator)
        self.device_ids = device_utils.resolve_device_ids(self.device_type, devices)
        # before the strategy reads RANK; a launch that disagrees is refused when a run starts (Lightning
        # accepts Trainer(num_nodes=8) on any machine)
        self._num_nodes_problem = cluster.num_nodes_problem(num_nodes, devices, self.device_ids)
        self.num_nodes = num_nodes
        # Lightning's model-registry name (before any ":version"); ember uploads to no registry (see
        # _start_checks)
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
        #: BatchNorm layers become SyncBatchNorm under DDP, FSDP and ModelParallelStrategy (Lightning's
        #: option)
        self.sync_batchnorm = bool(sync_batchnorm)
        self.precision_plugin = Precision(given["precision"], self.device_type)
        self.precision = self.precision_plugin.name
        self.deterministic = bool(given["deterministic"])
        self.benchmark = build.apply_benchmark(benchmark, self.deterministic)
        self.detect_anomaly = detect_anomaly
        self.profiler = resolve_profiler(profiler) or PassThroughProfiler()
        self._profiling = profiler is not None
        self.default_root_dir = storage_path(os.getcwd() if default_root_dir is None else default_root_dir)
        self.compile_options = compile
        self._dynamo_ctx: Any = None  # the compiler context of a torch.compile(module) given to fit...
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
        # fast_dev_run: Lightning's DummyLogger stands in for the loggers (trainer.logger set, nothing
        # written)
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
        # the current run, or the last one once it ended the batch counts of the last ended run of each stage:
        # Lightning's loops keep theirs (a test after fit still reports fit's num_training_batches and
        # num_val_batches)
        self._run: Run | None = None
        self._ended_counts: dict[str, dict[str, Any]] = {}
        self._pending_stop = False  # should_stop set before any run
        self._ckpt_path: str | None = None
        self._state = TrainerState()
        self._logged_metrics: dict[str, float] = {}  # what the latest run logged (see `logged_metrics`)

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
        `weights_only` (Lightning's, for every stage): None or True loads the file safely, as torch.load
        does by default; False, your word that the file is trusted, lets it unpickle any object."""
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
        """Run `validation_step` over the data once; returns the logged epoch metrics (Lightning's argument
        order)."""
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
        """Run `test_step` over the data once; returns the logged epoch metrics, e.g. `[{"test_acc":
        0.91}]`."""
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

        `return_predictions=None` (the default) returns them, as Lightning does for every strategy that does
        not spawn processes (ember has none that does); pass False to keep memory flat on large data.
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
        build.check_run_start(
            self._num_nodes_problem, self._model_registry, self.is_global_zero, ckpt_path, weights_only
        )
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

    def _run_with_flags(
        self, model: Any, stage: str, datamodule: Any, ckpt_path: Any, weights_only: bool | None, **data: Any
    ) -> Any:
        if model is None and ckpt_path is None and stage != "fit" and self.module is not None:
            # Lightning's rule: no model given, the attached one is evaluated at its best checkpoint
            ckpt_path = "best"
            warnings.warn(
                f"trainer.{stage}() was called without a model: the best checkpoint of the previous fit is "
                f"used; pass {stage}(ckpt_path='best') or (ckpt_path='last') to say so, or the model to use "
                "its current weights",
                stacklevel=4,
            )
        module = self._attach(model, datamodule)
        refuse_unsupported_hooks(module, Module, self.datamodule, DataModule, self.callbacks, Callback)
        launcher = self.strategy.launcher
        # DDP: starts the workers here (never returns), or picks a restart's checkpoint
        if launcher is not None:
            ckpt_path = launcher.prepare(stage, ckpt_path)
        self.strategy.setup_environment()
        ckpt_file = resume.checkpoint_file(
            ckpt_path,
            self.callbacks,
            lambda: build.logger_option_dir(self._logger_option),
            self._logger_option is False,
            self.default_root_dir,
            self.is_global_zero,
        )
        self._ckpt_path = str(ckpt_file) if ckpt_file is not None else None
        checkpoint = (
            None if ckpt_file is None else resume.load_for_resume(ckpt_file, weights_only, self.strategy)
        )
        self.loggers, self.log_dir = build.setup_run_dir(
            self._logger_option, self.loggers, self.default_root_dir, self.strategy, checkpoint, ckpt_file
        )
        if self._run is not None:  # the last run's counts, counted when asked (len may cost)
            self._ended_counts[self._run.stage] = self._run_loaders(self._run)
        run = self._run = self._new_run(stage, module)
        with run.reporter.refusing_logs("setup"):
            build.setup_data_and_hooks(run, data)
        # after setup, before the weights are placed or restored
        configure_model(module, self.strategy.root_device)
        build.setup_model(run, self.compile_options, self.sync_batchnorm)
        build.setup_hooks(run, fast_dev_run=bool(self.fast_dev_run))
        # the module's on_load_checkpoint: before configure_optimizers (Lightning's order)
        if checkpoint is not None:
            resume.check_checkpoint(run, checkpoint, ckpt_file, chosen_by_ember=ckpt_path == "last")
        if stage == "fit":
            with run.reporter.refusing_logs("configure_optimizers"):
                build.setup_optimization(run)
        if checkpoint is not None:
            participants.restore(run, checkpoint, ckpt_file)
        if self._profiling:
            profiling.start_profiling(run, self.profiler, self.log_dir or str(self.default_root_dir))
        handler = SignalHandler(run, interrupt=stage == "fit")
        failed = True
        try:
            result = loops.run_stage(run, data, self.enable_autolog_hparams)
            failed = False
            return result
        except BaseException as exc:
            loops.on_exception(run, exc)
            raise
        finally:
            handler.restore()
            loops.teardown(run, hooks=not failed)  # Lightning runs no teardown hook after on_exception
            if self._profiling:
                profiling.finish_profiling(self.profiler, run)

    def _attach(self, model: Any, datamodule: Any) -> Module:
        model, self._dynamo_ctx = compiled.module_to_run(
            model, self.module, self._dynamo_ctx, self.strategy.name
        )
        if datamodule is not None and not isinstance(datamodule, DataModule):
            raise ConfigError(f"datamodule must be an ember.DataModule; got {type(datamodule).__name__}")
        self.module, self.datamodule = model, datamodule
        model.attach(self)  # the Trainer's one way into the module (Module.run_link)
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
    def save_checkpoint(
        self, filepath: str | os.PathLike[str], weights_only: bool | None = None, storage_options: Any = None
    ) -> None:
        """Write a checkpoint atomically (on global rank zero; every rank must call it).
        `weights_only=True`: the model's weights only. `storage_options` is for a custom CheckpointIO
        plugin in Lightning, whose default refuses it as ember does (write to an ``s3://`` path for remote
        storage)."""
        participants.save(self._run, filepath, bool(weights_only), storage_options)

    # ---- for callbacks ------------------------------------------------------------------------
    def reload_dataloaders(self) -> None:
        """Fetch the running stage's data again now from the module's or datamodule's ``*_dataloader()`` (data
        passed to validate/test/predict is kept): what a batch size finder does after it changed the size, as
        Lightning's resets its loops' loaders. During a fit the current epoch goes on with the new training
        data when this is called from ``on_train_epoch_start`` (or earlier); nothing happens outside a run.

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
        data_fetch.fetch_eval_data_again(run)
