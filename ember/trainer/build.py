"""Building a run, one named step each: strategy, callbacks, run folder and loggers, data and the
`setup` hooks, the model on its device, the optimizers. `Trainer._run_with_flags` calls them in order.
"""

from __future__ import annotations

import datetime
import os
import warnings
from pathlib import Path
from typing import Any

from ember.callbacks.batch_size_finder import BatchSizeFinder
from ember.callbacks.callback import Callback
from ember.callbacks.checkpoint import Checkpoint
from ember.callbacks.early_stopping import EarlyStopping
from ember.callbacks.lr_finder import LearningRateFinder
from ember.callbacks.model_checkpoint import ModelCheckpoint
from ember.callbacks.model_summary import ModelSummary
from ember.callbacks.progress_bar import TimedProgressBar
from ember.callbacks.progress_bar_base import ProgressBar
from ember.callbacks.rich_model_summary import RichModelSummary
from ember.callbacks.rich_progress_bar import RichProgressBar
from ember.callbacks.timer import Timer
from ember.errors import ConfigError
from ember.fs import RemotePath, make_folders, storage_path
from ember.loggers.base import Logger, next_version
from ember.module import Module
from ember.runtime import devices as device_utils
from ember.runtime.strategies import SingleDeviceStrategy
from ember.trainer import data_fetch
from ember.trainer.batches import BatchPreparation
from ember.trainer.hooks import HookDispatcher
from ember.trainer.optimization import (
    AutomaticOptimization,
    ManualOptimization,
    StepCountingOptimizer,
    parse_optimizers,
)
from ember.trainer.participants import restore_loggers
from ember.trainer.resume import LOG_FOLDER, version_of_checkpoint
from ember.trainer.run import Run


def select_strategy(strategy: Any, device_type: str, device_ids: list[int]) -> Any:
    from ember.runtime.distributed import DDPStrategy, FSDPStrategy  # torch.distributed only when asked for

    if not isinstance(strategy, str):
        strategy.configure(
            device_type, device_ids
        )  # e.g. DDPStrategy(max_failures=1): devices from the Trainer
        return strategy  # a strategy object the user built
    several = len(device_ids) > 1 or int(os.environ.get("WORLD_SIZE", "1")) > 1
    if strategy == "auto":
        strategy = "ddp" if several else "single_device"
    if strategy == "single_device":
        if several:
            raise ConfigError(
                f"strategy='single_device' but devices={device_ids}; use strategy='ddp' or devices=1"
            )
        return SingleDeviceStrategy(device_utils.root_device(device_type, device_ids[0]))
    if strategy == "ddp_spawn":
        raise ConfigError(
            "strategy='ddp_spawn' is not supported (ember does not hand the trained model back from "
            "spawned processes); use strategy='ddp', which starts one process per device"
        )
    if strategy in DDP_ALIASES:
        return DDPStrategy(**DDP_ALIASES[strategy]).configure(device_type, device_ids)
    if strategy == "fsdp":
        return FSDPStrategy().configure(device_type, device_ids)
    raise ConfigError(
        f"strategy={strategy!r} is not supported; use 'auto', 'single_device', 'ddp', "
        "'ddp_find_unused_parameters_true' or 'fsdp'"
    )


def apply_plugins(plugins: Any, strategy: Any) -> None:
    """Lightning's `plugins=`: ember takes one cluster environment (e.g. ember.train.lightning's
    RayLightningEnvironment) for a multi-process strategy; any other plugin is refused by name."""
    given = [] if plugins is None else list(plugins) if isinstance(plugins, (list, tuple)) else [plugins]
    environments = [p for p in given if _is_cluster_environment(p)]
    others = [p for p in given if not _is_cluster_environment(p)]
    if others:
        raise ConfigError(
            f"Trainer(plugins=[{type(others[0]).__name__}]): ember takes only a cluster environment "
            "plugin (ember.train.lightning.RayLightningEnvironment); set precision with "
            "Trainer(precision=...) and the strategy with Trainer(strategy=...)"
        )
    if len(environments) > 1:
        raise ConfigError(f"Trainer(plugins=...) has {len(environments)} cluster environments; pass one")
    if environments:
        if not hasattr(strategy, "set_cluster_environment"):
            raise ConfigError(
                f"Trainer(plugins=[{type(environments[0]).__name__}()]) needs a multi-process strategy; "
                "use strategy=RayDDPStrategy() (ember.train.lightning) or strategy='ddp'"
            )
        strategy.set_cluster_environment(environments[0])


def _is_cluster_environment(plugin: Any) -> bool:
    return all(
        callable(getattr(plugin, name, None))
        for name in ("world_size", "global_rank", "local_rank", "node_rank")
    )


#: Lightning's DDP spellings ember has: the DistributedDataParallel options each one means.
DDP_ALIASES: dict[str, dict[str, Any]] = {
    "ddp": {},
    "ddp_find_unused_parameters_true": {"find_unused_parameters": True},
    "ddp_find_unused_parameters_false": {"find_unused_parameters": False},
}


def apply_benchmark(benchmark: bool | None, deterministic: bool) -> bool:
    """`Trainer(benchmark=...)`: sets torch.backends.cudnn.benchmark at construction, as Lightning does
    (None keeps the session's value, or False under deterministic=True)."""
    import torch

    if benchmark is None and deterministic:
        benchmark = False
    if benchmark is not None:
        torch.backends.cudnn.benchmark = bool(benchmark)
    return torch.backends.cudnn.benchmark


def build_callbacks(
    callbacks: Any,
    checkpointing: bool,
    progress_bar: bool,
    model_summary: bool = False,
    max_time: float | None = None,
    restarts: bool = False,
) -> list[Callback]:
    """The user's callbacks plus Lightning's defaults, in Lightning's order: a ModelCheckpoint (unless a
    checkpoint callback is given), a Timer for `max_time`, a progress bar and a model summary (each unless
    turned off or already given); then the tuner callbacks first and the checkpoint callbacks last.

    The default ModelCheckpoint is Lightning's (one `epoch=E-step=S.ckpt`, no last.ckpt); with `restarts`
    (ember's `max_failures=`, or torchrun's `--max-restarts`) it also keeps last.ckpt current, which a
    restarted worker resumes from."""
    given = [callbacks] if isinstance(callbacks, Callback) else list(callbacks or [])
    for cb in given:
        if not isinstance(cb, Callback):
            raise ConfigError(f"callbacks must be ember.Callback instances; got {type(cb).__name__}")
    if checkpointing and not any(isinstance(cb, Checkpoint) for cb in given):
        default = ModelCheckpoint(save_last=True) if restarts else ModelCheckpoint()
        default.keep_last_current = restarts  # a restarted worker resumes from the newest epoch
        given.append(default)
    # Lightning refuses any checkpoint callback here (an OnExceptionCheckpoint too)
    refused = [type(cb).__name__ for cb in given if isinstance(cb, Checkpoint)]
    if not checkpointing and refused:
        raise ConfigError(
            f"enable_checkpointing=False but a {refused[0]} was passed in callbacks (Lightning refuses "
            "this too); drop enable_checkpointing=False or the callback"
        )
    if max_time is not None and not any(isinstance(cb, Timer) for cb in given):
        # Lightning's max_time is this Timer: it sets should_stop (min_epochs/min_steps still hold) and its
        # elapsed time is saved in checkpoints, so a resumed run stops at the same total
        given.append(Timer(duration=datetime.timedelta(seconds=max_time), interval="step"))
    bars = [cb for cb in given if isinstance(cb, ProgressBar)]
    if len(bars) > 1:
        raise ConfigError(
            f"callbacks has {len(bars)} progress bars ({', '.join(type(b).__name__ for b in bars)}); "
            "pass one (Lightning supports one too)"
        )
    if bars and not progress_bar:
        raise ConfigError(
            f"enable_progress_bar=False but a {type(bars[0]).__name__} was passed in callbacks; "
            "drop one of them"
        )
    if progress_bar and not bars:
        given.append(TimedProgressBar())
    if model_summary and not any(isinstance(cb, ModelSummary) for cb in given):
        # Lightning's default summary; the rich table where the user chose the rich bar (rich is installed
        # then)
        given.append(
            RichModelSummary() if any(isinstance(cb, RichProgressBar) for cb in given) else ModelSummary()
        )
    return reorder_callbacks(given)


def reorder_callbacks(callbacks: list[Callback]) -> list[Callback]:
    """Lightning's order: the tuner callbacks first, the checkpoint callbacks last (they see what the others
    logged), each group in the given order.

    Example:
        >>> from ember.callbacks import Callback, LearningRateFinder, ModelCheckpoint
        >>> ordered = reorder_callbacks([ModelCheckpoint(), Callback(), LearningRateFinder()])
        >>> [type(cb).__name__ for cb in ordered]
        ['LearningRateFinder', 'Callback', 'ModelCheckpoint']
    """

    def group(cb: Callback) -> int:
        return (
            0
            if isinstance(cb, (BatchSizeFinder, LearningRateFinder))
            else 2
            if isinstance(cb, Checkpoint)
            else 1
        )

    return sorted(callbacks, key=group)


def with_module_callbacks(callbacks: list[Callback], module: Module) -> list[Callback]:
    """`configure_callbacks` replaces the Trainer's callbacks of the same types (Lightning's rule)."""
    extra = module.configure_callbacks()
    extra = [extra] if isinstance(extra, Callback) else list(extra or [])
    if not extra:
        return callbacks
    # Lightning: a returned callback replaces the Trainer's callbacks of its class or of a class it subclasses
    given = {type(cb) for cb in callbacks} - {Callback}
    replaced = {kind for kind in given if any(issubclass(type(cb), kind) for cb in extra)}
    return reorder_callbacks([cb for cb in callbacks if type(cb) not in replaced] + extra)


def restarts_possible(strategy: Any) -> bool:
    """Whether a failed worker may be restarted: ember's `DDPStrategy(max_failures=N)`, or torchrun's
    `--max-restarts` (TORCHELASTIC_MAX_RESTARTS), both > 0."""
    restarts = os.environ.get("TORCHELASTIC_MAX_RESTARTS", "0")
    return getattr(strategy, "max_failures", 0) > 0 or (restarts.isdigit() and int(restarts) > 0)


def logger_option_dir(option: Any) -> str | None:
    """The folder of the first logger the user passed (None for logger=True/False)."""
    if option in (True, False, None):
        return None
    first = option if isinstance(option, Logger) else next(iter(option), None)
    return getattr(first, "log_dir", None) if first is not None else None


def logger_run_dir(logger: Logger) -> str | None:
    """`trainer.log_dir` for a user's logger (Lightning's rule): a CSV or TensorBoard logger's `log_dir`,
    any other logger's `save_dir` (None for one that writes no local files).

    >>> from ember.loggers import CSVLogger, Logger
    >>> logger_run_dir(CSVLogger("runs", name="csv", version=1)), logger_run_dir(Logger())
    ('runs/csv/version_1', None)
    """
    from ember.loggers.csv_logger import CSVLogger
    from ember.loggers.tensorboard import TensorBoardLogger

    return logger.log_dir if isinstance(logger, (CSVLogger, TensorBoardLogger)) else logger.save_dir


def given_loggers(option: Any) -> list[Logger]:
    """The loggers a user passed as `Trainer(logger=...)` (one or several); [] for True/False/None."""
    if option in (True, False, None):
        return []
    return [option] if isinstance(option, Logger) else list(option)


def setup_run_dir(
    option: Any,
    existing: list[Logger],
    root: Path | RemotePath,
    strategy: Any,
    checkpoint: dict[str, Any] | None,
    ckpt_file: Path | RemotePath | None,
) -> tuple[list[Logger], str | None]:
    """One folder per run: lightning_logs/version_N (resuming continues the checkpoint's), with Lightning's
    default logger in it. Returns the loggers and the folder."""
    if option not in (True, False, None):
        loggers = given_loggers(option)
        restore_loggers(loggers, checkpoint)
        return loggers, logger_run_dir(loggers[0])
    if (
        option is False
    ):  # Lightning: no logger, no versioned folder; checkpoints go to default_root_dir/checkpoints
        return [], str(root)
    logs = root / LOG_FOLDER
    # A Trainer used again (fit, then test) keeps writing where its loggers already write.
    current = existing[0].version if option is True and existing else None
    version = strategy.broadcast(current if isinstance(current, int) else next_version(logs))
    resumed = version_of_checkpoint(ckpt_file, root) if checkpoint is not None else None
    version = resumed if resumed is not None else version
    loggers = existing
    if option is True and not existing and strategy.is_global_zero:
        from ember.loggers.csv_logger import CSVLogger
        from ember.loggers.tensorboard import TensorBoardLogger, tensorboard_available

        # Lightning's default set: ONE logger, TensorBoard's when it is installed, else a CSVLogger
        # (a program's `for logger in self.loggers: logger.experiment.add_image(...)` sees TensorBoard only)
        if tensorboard_available():
            loggers = [TensorBoardLogger(root, LOG_FOLDER, version=version)]
        else:
            warnings.warn(
                "logger=True uses CSVLogger because the `tensorboard` package is not installed "
                "(Lightning's default); pip install tensorboard to log to TensorBoard",
                stacklevel=4,
            )
            loggers = [CSVLogger(root, LOG_FOLDER, version=version)]
        restore_loggers(loggers, checkpoint)  # a resumed run's CSVLogger continues its metrics.csv
    log_dir = str(logs / f"version_{version}")
    if option is True and strategy.is_global_zero:  # trainer.log_dir names a folder that exists
        make_folders(storage_path(log_dir))
    return loggers, log_dir


def setup_data_and_hooks(run: Run, data: dict[str, Any]) -> None:
    """prepare_data (local rank 0), then Lightning's order: the datamodule, the callbacks, the module
    (it may build layers) run `setup`; then the data of this stage, sharded by the strategy."""
    module, dm, strategy, stage = run.module, run.datamodule, run.strategy, run.stage
    if strategy.local_rank == 0:
        if dm is not None:  # Lightning prepares the DataModule's data, then the Module's
            dm.prepare_data()
        module.prepare_data()
    strategy.barrier("prepare_data")
    for logger in (
        run.loggers if strategy.is_global_zero else ()
    ):  # Lightning's: each logger's run exists before
        getattr(
            logger, "experiment", None
        )  # setup (rank 0's), so its version (a wandb run's id) names the checkpoint folder
    if dm is not None:
        dm.setup(stage)
    for cb in run.callbacks:
        cb.setup(run.trainer, module, stage=stage)  # by keyword, as Lightning calls it
    module.setup(stage)

    data_fetch.plan_data(run, data)
    if stage == "fit":
        return
    step = {"validate": "validation_step", "test": "test_step", "predict": "predict_step"}[stage]
    if stage != "predict" and getattr(type(module), step) is getattr(Module, step):
        raise ConfigError(
            f"trainer.{stage} needs {type(module).__name__}.{step}(batch, batch_idx); define it"
        )


def setup_hooks(run: Run, fast_dev_run: bool) -> None:
    """The one dispatch point of this run's hooks, once its callbacks and module are final. fast_dev_run:
    checkpoint and early-stopping callbacks are kept (trainer.checkpoint_callbacks) but never run, as
    Lightning skips them in that mode."""
    skipped = (ModelCheckpoint, EarlyStopping) if fast_dev_run else ()
    dispatched = [cb for cb in run.callbacks if not isinstance(cb, skipped)]
    run.hooks = HookDispatcher(run.trainer, run.module, dispatched)


def setup_model(run: Run, compile_options: bool | dict[str, Any], sync_batchnorm: bool = False) -> None:
    if (
        sync_batchnorm and run.strategy.name != "single_device"
    ):  # Lightning: under its parallel strategies only
        from ember.runtime.sync_batchnorm import convert_sync_batchnorm

        convert_sync_batchnorm(run.module, run.strategy.root_device.type)
    module = run.precision.convert_module(run.module)
    run.wrapped = run.strategy.setup_module(module)
    device = run.strategy.root_device
    run.batches = BatchPreparation(
        device, None if device.type == "cpu" else device, run.precision.input_converter()
    )
    if compile_options:
        module.compile(**(compile_options if isinstance(compile_options, dict) else {}))


def setup_optimization(run: Run) -> None:
    module = run.module
    optimizers, schedulers = parse_optimizers(module.configure_optimizers(), type(module).__name__)
    if module.automatic_optimization:
        for config in schedulers:  # Lightning refuses it at fit start too: nothing would step it
            if config.needs_metric and config.monitor is None:
                raise ConfigError(
                    f"{type(module).__name__}.configure_optimizers returns a ReduceLROnPlateau without "
                    "a metric to watch; return {'optimizer': ..., 'lr_scheduler': {'scheduler': ..., "
                    "'monitor': 'val_loss'}}"
                )
    run.optimizers, run.schedulers = optimizers, schedulers
    if module.automatic_optimization:
        if len(run.optimizers) > 1:
            raise ConfigError(
                f"{type(module).__name__} returns {len(run.optimizers)} optimizers; automatic optimization "
                "uses one. Set self.automatic_optimization = False and step them in training_step"
            )
        run.optimization = AutomaticOptimization(run, run.optimizers[0], run.schedulers)
        # self.optimizers() / self.lr_schedulers() answer under automatic optimization too, as in Lightning
        link = module.run_link
        link.optimizers = list(run.optimizers)
        link.schedulers = [c.scheduler for c in run.schedulers]
    else:
        options = run.options
        if options.gradient_clip_val:  # Lightning refuses both under manual optimization
            raise ConfigError(
                "Trainer(gradient_clip_val=...) clips automatically, which manual optimization does not do; "
                "call self.clip_gradients(optimizer, ...) in training_step, or drop gradient_clip_val"
            )
        if options.accumulate_grad_batches != 1:
            raise ConfigError(
                "Trainer(accumulate_grad_batches=...) accumulates automatically, which manual optimization "
                "does not do; step the optimizer every N batches in training_step, or drop the option"
            )
        manual = run.optimization = ManualOptimization(run)
        run.reporter.counts_batches = (
            True  # the logger step counts batches (Lightning's _batches_that_stepped)
        )
        link = module.run_link
        link.optimizers = [StepCountingOptimizer(o, run) for o in run.optimizers]
        link.schedulers = [c.scheduler for c in run.schedulers]
        link.manual_backward = manual.manual_backward


def check_run_start(
    num_nodes_problem: str | None,
    model_registry: str | None,
    is_global_zero: bool,
    ckpt_path: Any,
    weights_only: bool | None,
) -> None:
    """What Lightning accepts at construction and ember checks when a run starts (one line each)."""
    if num_nodes_problem is not None:
        raise ConfigError(num_nodes_problem)
    if model_registry is not None and is_global_zero:
        # Lightning uploads only through litmodels' LitModelCheckpoint; without it the name changes nothing
        warnings.warn(
            f"Trainer(model_registry={model_registry!r}): ember uploads no checkpoints to "
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
