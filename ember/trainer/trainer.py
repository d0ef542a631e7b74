"""Trainer: validates options, builds the run, and delegates to the loops.

`Trainer._run` is the whole set-up sequence, in order: attach → environment → checkpoint to
resume → run folder and loggers → data and `setup` hooks → model on device → optimizers →
restore state → `on_fit_start` → sanity check → loop → teardown.
"""

from __future__ import annotations

import datetime
import inspect
import math
import os
import signal
import sys
import threading
import time
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import torch

from ember.callbacks.callback import Callback
from ember.callbacks.model_checkpoint import LAST_NAME, ModelCheckpoint
from ember.callbacks.progress import ProgressBar
from ember.checkpoint import (
    FORMAT_VERSION,
    describe_plain_file,
    describe_state_dict_mismatch,
    find_last_checkpoint,
    load_checkpoint,
    save_checkpoint,
    to_safe,
)
from ember.datamodule import DataModule
from ember.errors import CheckpointError, ConfigError, NonFiniteLossError, TrainingInterrupted, did_you_mean
from ember.loggers.base import Logger, next_version
from ember.module import Module
from ember.runtime import devices as device_utils
from ember.runtime.precision import Precision
from ember.runtime.seed import Determinism, capture_rng_state, restore_rng_state
from ember.runtime.strategy import SingleDeviceStrategy
from ember.trainer import loops
from ember.trainer.data import (
    EpochIterator,
    as_batch_iterable,
    as_loader_list,
    length_of,
    resolve_limit,
)
from ember.trainer.hooks import HookDispatcher
from ember.trainer.metrics import MetricStore, is_finite
from ember.trainer.optimization import (
    AutomaticOptimization,
    ManualOptimization,
    SchedulerConfig,
    StepCountingOptimizer,
    parse_optimizers,
)
from ember.trainer.progress import Progress
from ember.trainer.refused_hooks import refuse_unsupported_hooks

LOG_FOLDER = "ember_logs"
# Lightning options that are spelled differently here, for a helpful error.
_RENAMED = {
    "gpus": "accelerator='gpu', devices=N",
    "tpu_cores": "(TPUs are not supported)",
    "progress_bar_refresh_rate": "callbacks=[ProgressBar(refresh_seconds=...)]",
    "resume_from_checkpoint": "trainer.fit(model, ckpt_path=...)",
    "weights_save_path": "ModelCheckpoint(dirpath=...)",
    "checkpoint_callback": "enable_checkpointing",
}


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
        strategy: str | Any = "auto",
        precision: str | int = "32-true",
        max_epochs: int | None = None,
        min_epochs: int | None = None,
        max_steps: int = -1,
        max_time: str | float | datetime.timedelta | dict[str, int] | None = None,
        limit_train_batches: int | float | None = None,
        limit_val_batches: int | float | None = None,
        limit_test_batches: int | float | None = None,
        limit_predict_batches: int | float | None = None,
        val_check_interval: int | float | None = None,
        check_val_every_n_epoch: int | None = 1,
        num_sanity_val_steps: int = 2,
        fast_dev_run: bool | int = False,
        accumulate_grad_batches: int = 1,
        gradient_clip_val: float | None = None,
        gradient_clip_algorithm: str = "norm",
        deterministic: bool = False,
        log_every_n_steps: int = 50,
        default_root_dir: str | os.PathLike[str] | None = None,
        callbacks: Callback | list[Callback] | None = None,
        logger: bool | Logger | Iterable[Logger] = True,
        enable_checkpointing: bool = True,
        enable_progress_bar: bool = True,
        enable_model_summary: bool = True,
        compile: bool | dict[str, Any] = False,
        stop_on_nan: bool = True,
        **unknown: Any,
    ) -> None:
        if unknown:
            raise ConfigError(_unknown_option_message(next(iter(unknown))))
        self._check_options(locals())
        self.device_type = device_utils.resolve_accelerator(accelerator)
        self.device_ids = device_utils.resolve_device_ids(self.device_type, devices)
        self.strategy = self._select_strategy(strategy)
        self.precision_plugin = Precision(precision, self.device_type)
        self.precision = self.precision_plugin.name

        self.fast_dev_run = int(fast_dev_run)
        dev = self.fast_dev_run
        self.max_epochs = 1 if dev else (max_epochs if max_epochs is not None else (1000 if max_steps == -1 else None))
        self.min_epochs = min_epochs
        self.max_steps = dev if dev else max_steps
        self.max_time = _as_seconds(max_time)
        self.limit_train_batches = dev if dev else limit_train_batches
        self.limit_val_batches = dev if dev else limit_val_batches
        self.limit_test_batches = dev if dev else limit_test_batches
        self.limit_predict_batches = dev if dev else limit_predict_batches
        self.val_check_interval = 1.0 if dev else val_check_interval
        self.check_val_every_n_epoch = check_val_every_n_epoch
        self.num_sanity_val_steps = 0 if dev else num_sanity_val_steps
        self.accumulate_grad_batches = accumulate_grad_batches
        self.gradient_clip_val = gradient_clip_val
        self.gradient_clip_algorithm = gradient_clip_algorithm
        self.deterministic = deterministic
        self.log_every_n_steps = max(1, log_every_n_steps)
        self.default_root_dir = Path(default_root_dir if default_root_dir is not None else os.getcwd())
        self.compile_options = compile
        self.stop_on_nan = stop_on_nan
        self.enable_model_summary = enable_model_summary

        self.callbacks = self._build_callbacks(callbacks, enable_checkpointing and not dev, enable_progress_bar)
        self._logger_option = False if dev else logger
        self.loggers: list[Logger] = []

        # Run state
        self.progress = Progress()
        self.should_stop = False
        self.sanity_checking = False
        self.stage: str | None = None
        self.num_training_batches: int | float = math.inf
        self.val_check_batches: int | None = None
        self.optimizers: list[torch.optim.Optimizer] = []
        self.lr_scheduler_configs: list[SchedulerConfig] = []
        self.logged_metrics: dict[str, float] = {}
        self.module: Module | None = None
        self.datamodule: DataModule | None = None
        self.log_dir: str = str(self.default_root_dir)
        self._signal_received: int | None = None
        self._last_loss: torch.Tensor | None = None
        self._last_flush_step = -1
        self._stores: dict[str, MetricStore] = {}
        self._resume_rng: dict[str, Any] | None = None
        self._resume_epoch_start_rng: dict[str, Any] | None = None
        self._val_loaders: list[Any] = []
        self._train_iter: EpochIterator | None = None
        self._fitting = False

    # ---- construction helpers -----------------------------------------------------------------
    @staticmethod
    def _check_options(options: dict[str, Any]) -> None:
        def positive(name: str, allow_none: bool = True) -> None:
            value = options[name]
            if (value is None and allow_none) or (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
                return
            raise ConfigError(f"{name}={value!r} must be a positive integer")

        def at_least(name: str, low: int, meaning: str) -> None:
            value = options[name]
            if value is None or (isinstance(value, int) and not isinstance(value, bool) and value >= low):
                return
            raise ConfigError(f"{name}={value!r} must be an int >= {low}{meaning}")

        positive("accumulate_grad_batches", allow_none=False)
        positive("max_epochs")
        positive("check_val_every_n_epoch")
        at_least("min_epochs", 0, "")
        at_least("num_sanity_val_steps", -1, " (-1 runs all validation batches, 0 none)")
        at_least("log_every_n_steps", 0, "")
        clip = options["gradient_clip_val"]
        if clip is not None and (isinstance(clip, bool) or not isinstance(clip, (int, float)) or not clip >= 0):
            raise ConfigError(
                f"gradient_clip_val={clip!r} must be a number >= 0 (0 or None: no clipping); a negative value "
                "would flip the sign of every gradient"
            )
        root = options["default_root_dir"]
        if root is not None and Path(root).exists() and not Path(root).is_dir():
            raise ConfigError(f"default_root_dir={os.fspath(root)!r} is a file; pass a folder for logs and checkpoints")
        if options["gradient_clip_algorithm"] not in ("norm", "value"):
            raise ConfigError(f"gradient_clip_algorithm={options['gradient_clip_algorithm']!r} must be 'norm' or 'value'")
        if not isinstance(options["max_steps"], int) or options["max_steps"] < -1:
            raise ConfigError(f"max_steps={options['max_steps']!r} must be -1 (no limit) or a non-negative int")
        interval = options["val_check_interval"]
        if isinstance(interval, float) and not 0.0 < interval <= 1.0:
            raise ConfigError(f"val_check_interval={interval} must be in (0, 1] as a fraction, or an int batch count")

    def _select_strategy(self, strategy: Any) -> Any:
        from ember.runtime.distributed import DDPStrategy, FSDPStrategy

        if not isinstance(strategy, str):
            if callable(getattr(strategy, "configure", None)):  # e.g. DDPStrategy(max_failures=1)
                strategy.configure(self.device_type, self.device_ids)
            return strategy  # a strategy object the user built
        several = len(self.device_ids) > 1 or int(os.environ.get("WORLD_SIZE", "1")) > 1
        if strategy == "auto":
            strategy = "ddp" if several else "single_device"
        if strategy == "single_device":
            if several:
                raise ConfigError(f"strategy='single_device' but devices={self.device_ids}; use strategy='ddp' or devices=1")
            return SingleDeviceStrategy(device_utils.root_device(self.device_type, self.device_ids[0]))
        if strategy == "ddp":
            return DDPStrategy().configure(self.device_type, self.device_ids)
        if strategy == "fsdp":
            return FSDPStrategy().configure(self.device_type, self.device_ids)
        raise ConfigError(f"strategy={strategy!r} is not supported; use 'auto', 'single_device', 'ddp' or 'fsdp'")

    def _build_callbacks(self, callbacks: Any, checkpointing: bool, progress_bar: bool) -> list[Callback]:
        given = [callbacks] if isinstance(callbacks, Callback) else list(callbacks or [])
        for cb in given:
            if not isinstance(cb, Callback):
                raise ConfigError(f"callbacks must be ember.Callback instances; got {type(cb).__name__}")
        if checkpointing and not any(isinstance(cb, ModelCheckpoint) for cb in given):
            given.append(ModelCheckpoint(save_last=True))
        if not checkpointing and any(isinstance(cb, ModelCheckpoint) for cb in given) and not self.fast_dev_run:
            raise ConfigError("enable_checkpointing=False but a ModelCheckpoint was passed in callbacks; drop one of them")
        if progress_bar and not any(isinstance(cb, ProgressBar) for cb in given):
            given.append(ProgressBar())
        if not progress_bar:
            given = [cb for cb in given if not isinstance(cb, ProgressBar)]
        # Monitoring callbacks run last so they see what other callbacks logged.
        return sorted(given, key=lambda cb: isinstance(cb, ModelCheckpoint))

    # ---- public properties --------------------------------------------------------------------
    @property
    def current_epoch(self) -> int:
        return self.progress.epoch

    @property
    def global_step(self) -> int:
        return self.progress.global_step

    @property
    def world_size(self) -> int:
        return self.strategy.world_size

    @property
    def global_rank(self) -> int:
        return self.strategy.global_rank

    @property
    def local_rank(self) -> int:
        return self.strategy.local_rank

    @property
    def is_global_zero(self) -> bool:
        return self.strategy.is_global_zero

    @property
    def num_devices(self) -> int:
        return len(self.device_ids)

    @property
    def lightning_module(self) -> Module | None:
        return self.module

    model = lightning_module

    @property
    def logger(self) -> Logger | None:
        return self.loggers[0] if self.loggers else None

    @property
    def checkpoint_callbacks(self) -> list[ModelCheckpoint]:
        return [cb for cb in self.callbacks if isinstance(cb, ModelCheckpoint)]

    @property
    def checkpoint_callback(self) -> ModelCheckpoint | None:
        found = self.checkpoint_callbacks
        return found[0] if found else None

    @property
    def early_stopping_callback(self) -> Any:
        from ember.callbacks.early_stopping import EarlyStopping

        return next((cb for cb in self.callbacks if isinstance(cb, EarlyStopping)), None)

    @property
    def callback_metrics(self) -> dict[str, torch.Tensor]:
        train = self._stores.get("train")
        return train.metrics_for_callbacks() if train is not None else {}

    @property
    def progress_bar_metrics(self) -> dict[str, float]:
        values: dict[str, float] = {}
        for store in self._stores.values():
            values.update(store.progress_bar_values())
        train = self._stores.get("train")
        if self._last_loss is not None and (train is None or not train.progress_bar_values()):
            values = {"loss": float(self._last_loss), **values}  # only when the module shows no training metric
        return values

    @property
    def fitting(self) -> bool:
        """True inside `fit` (validation run by fit included), False in standalone validate/test/predict."""
        return self._fitting

    @property
    def training(self) -> bool:
        return self.stage == "train"

    @property
    def validating(self) -> bool:
        return self.stage == "validate"

    @property
    def testing(self) -> bool:
        return self.stage == "test"

    @property
    def predicting(self) -> bool:
        return self.stage == "predict"

    @property
    def will_validate_this_epoch(self) -> bool:
        every = self.check_val_every_n_epoch
        return (
            bool(self._val_loaders)
            and self._has_validation_step
            and self.limit_val_batches != 0
            and (every is None or (self.progress.epoch + 1) % every == 0)
        )

    @property
    def estimated_stepping_batches(self) -> int | float:
        """How many optimizer steps `fit` will take (for OneCycleLR and friends)."""
        per_epoch = self.num_training_batches
        if self._train_iter is not None and not math.isfinite(per_epoch):
            per_epoch = resolve_limit(self.limit_train_batches, length_of(self._train_iter.loader), "limit_train_batches")
        steps = math.ceil(per_epoch / self.accumulate_grad_batches) * (self.max_epochs or 1) if math.isfinite(per_epoch) else math.inf
        if self.max_steps != -1:
            steps = min(steps, self.max_steps)
        return int(steps) if math.isfinite(steps) else steps

    # ---- entry points -------------------------------------------------------------------------
    def fit(
        self,
        model: Module,
        train_dataloaders: Any = None,
        val_dataloaders: Any = None,
        datamodule: DataModule | None = None,
        ckpt_path: str | os.PathLike[str] | None = None,
    ) -> None:
        """Train `model`; with `ckpt_path` ("last" or a file) resume exactly where that checkpoint was."""
        if isinstance(train_dataloaders, DataModule):
            datamodule, train_dataloaders = train_dataloaders, None
        self._run(model, "fit", datamodule, ckpt_path, train=train_dataloaders, val=val_dataloaders)

    def validate(self, model: Module | None = None, dataloaders: Any = None, ckpt_path: Any = None,
                 datamodule: DataModule | None = None, verbose: bool = True) -> list[dict[str, float]]:
        """Run `validation_step` over the data once; returns the logged epoch metrics."""
        return self._evaluate("validate", model, dataloaders, ckpt_path, datamodule, verbose)

    def test(self, model: Module | None = None, dataloaders: Any = None, ckpt_path: Any = None,
             datamodule: DataModule | None = None, verbose: bool = True) -> list[dict[str, float]]:
        """Run `test_step` over the data once; returns the logged epoch metrics, e.g. `[{"test_acc": 0.91}]`."""
        return self._evaluate("test", model, dataloaders, ckpt_path, datamodule, verbose)

    def predict(self, model: Module | None = None, dataloaders: Any = None, datamodule: DataModule | None = None,
                return_predictions: bool = True, ckpt_path: Any = None) -> list[Any] | None:
        """Run `predict_step` over the data in inference mode; returns the outputs (a list per loader)."""
        if isinstance(dataloaders, DataModule):
            datamodule, dataloaders = dataloaders, None
        results = self._run(model, "predict", datamodule, ckpt_path, data=dataloaders,
                            return_predictions=return_predictions)
        if not return_predictions:
            return None
        return results[0] if len(results) == 1 else results

    def _evaluate(self, stage: str, model: Any, data: Any, ckpt_path: Any, datamodule: Any, verbose: bool) -> list[dict[str, float]]:
        if isinstance(data, DataModule):
            datamodule, data = data, None
        results = self._run(model, stage, datamodule, ckpt_path, data=data)
        if verbose and self.is_global_zero and results:
            for i, metrics in enumerate(results):
                shown = "  ".join(f"{k}={v:.4f}" for k, v in metrics.items())
                print(f"{stage} results{f' (loader {i})' if len(results) > 1 else ''}: {shown}")
        return results

    # ---- the run ------------------------------------------------------------------------------
    def _run(self, model: Any, stage: str, datamodule: Any, ckpt_path: Any, **data: Any) -> Any:
        with Determinism(self.deterministic):  # global torch flags are put back when the run ends
            return self._run_with_flags(model, stage, datamodule, ckpt_path, **data)

    def _run_with_flags(self, model: Any, stage: str, datamodule: Any, ckpt_path: Any, **data: Any) -> Any:
        model = self._attach(model, datamodule)
        refuse_unsupported_hooks(model, Module, self.datamodule, DataModule, self.callbacks, Callback)
        launcher = getattr(self.strategy, "launcher", None)
        if launcher is not None:  # DDP: starts the workers here (never returns), or picks a restart's checkpoint
            ckpt_path = launcher.prepare(stage, ckpt_path)
        self.strategy.setup_environment()
        checkpoint = self._load_checkpoint_for(stage, ckpt_path)
        self._setup_run_dir(checkpoint)
        self._setup_data_and_hooks(stage, data)
        self._setup_model()
        self._hooks = HookDispatcher(self, self.module, self.callbacks)
        if stage == "fit":
            self._setup_optimization()
        if checkpoint is not None:
            self._restore(checkpoint, full=stage == "fit")
        self._install_signal_handler(interrupt=stage == "fit")
        try:
            return self._run_stage(stage, data)
        except BaseException as exc:
            self._hooks.call_exception(exc)
            self._finalize_loggers("failed")
            raise
        finally:
            self._restore_signal_handler()
            self._teardown(stage)

    def _run_stage(self, stage: str, data: dict[str, Any]) -> Any:
        hooks = self._hooks
        if stage == "fit":
            self._fitting = True
            if self.enable_model_summary and self.is_global_zero:
                print(_summary_line(self.module), file=sys.stderr)
            self._log_hyperparams()
            hooks("on_fit_start")
            loops.run_sanity_check(self)
            if self._resume_rng is not None and not self.progress.mid_epoch:
                restore_rng_state(self._resume_rng)  # resuming at an epoch boundary
                self._resume_rng = self._resume_epoch_start_rng = None
            self._start_time = time.monotonic()
            loops.run_fit(self)
            hooks("on_fit_end")
            self._fitting = False
            self._finalize_loggers("success")
            return None
        if stage in ("validate", "test"):
            loaders = self._val_loaders if stage == "validate" else self._test_loaders
            results = loops.run_evaluation(self, stage, loaders, self.limit_val_batches if stage == "validate" else self.limit_test_batches)
            self._finalize_loggers("success")
            return results
        return loops.run_predict(self, self._predict_loaders, data.get("return_predictions", True))

    def _attach(self, model: Any, datamodule: Any) -> Module:
        if model is None:
            if self.module is None:
                raise ConfigError("no model given; pass one, e.g. trainer.test(model, dataloaders)")
            model = self.module
        if not isinstance(model, Module):
            raise ConfigError(
                f"the model is a {type(model).__name__}, not an ember.Module; subclass ember.Module "
                "(a torch.nn.Module with training_step and configure_optimizers)"
            )
        if datamodule is not None and not isinstance(datamodule, DataModule):
            raise ConfigError(f"datamodule must be an ember.DataModule; got {type(datamodule).__name__}")
        self.module, self.datamodule = model, datamodule
        model._trainer = self
        if datamodule is not None:
            datamodule.trainer = self
        extra = model.configure_callbacks()
        extra = [extra] if isinstance(extra, Callback) else list(extra or [])
        if extra:
            kinds = {type(cb) for cb in extra}
            self.callbacks = [cb for cb in self.callbacks if type(cb) not in kinds] + extra
            self.callbacks.sort(key=lambda cb: isinstance(cb, ModelCheckpoint))
        shared: dict[str, Any] = {}
        self._stores = {name: MetricStore() for name in ("train", "validate", "test", "predict")}
        for store in self._stores.values():
            store.callback_values = shared
            store.sync_fn = self.strategy.reduce
        self.should_stop = False
        return model

    # ---- checkpoints: finding and loading ----------------------------------------------------
    def _load_checkpoint_for(self, stage: str, ckpt_path: Any) -> dict[str, Any] | None:
        if ckpt_path is None:
            return None
        path = self._resolve_ckpt_path(ckpt_path)
        if path is None:
            return None
        self._ckpt_file = path
        self._ckpt_chosen_by_ember = ckpt_path == "last"
        checkpoint = load_checkpoint(path)
        plain = describe_plain_file(checkpoint)
        if plain is not None:
            raise CheckpointError(f"{path} is {plain}, not an ember checkpoint, so there is nothing to resume; "
                                  f"{_how_to_start_from(plain, path)}")
        return checkpoint

    def _resolve_ckpt_path(self, ckpt_path: Any) -> Path | None:
        if ckpt_path == "last":
            folders = self._own_checkpoint_folders()
            for folder in folders:
                found = find_last_checkpoint(folder)
                if found is not None:
                    return found
            if self.is_global_zero:
                where = ", ".join(str(f) for f in folders) or str(self.default_root_dir / LOG_FOLDER)
                print(f"ember: ckpt_path='last' but there is no {LAST_NAME} in {where}; starting from scratch",
                      file=sys.stderr)
            return None
        if ckpt_path == "best":
            best = self.checkpoint_callback.best_model_path if self.checkpoint_callback else ""
            if not best:
                raise CheckpointError("ckpt_path='best' but no best checkpoint was saved yet; train with a ModelCheckpoint first")
            return Path(best)
        return Path(ckpt_path)

    def _own_checkpoint_folders(self) -> list[Path]:
        """Where this run's `last.ckpt` can be: the ModelCheckpoint's own dirpath when one was given;
        else the checkpoints folder of this run's logger; else that of the version folder under
        default_root_dir/ember_logs that was written most recently. Never a search of everything below
        the root, which would pick up another experiment's checkpoint."""
        given = [cb.dirpath for cb in self.checkpoint_callbacks if cb.dirpath is not None]
        if given:
            return given
        option = self._logger_option
        if option not in (True, False, None):
            first = option if isinstance(option, Logger) else next(iter(option), None)
            if first is not None and getattr(first, "log_dir", None):
                return [Path(first.log_dir) / "checkpoints"]
        root = self.default_root_dir / LOG_FOLDER
        versions = [p / "checkpoints" for p in root.glob("version_*") if (p / "checkpoints" / LAST_NAME).is_file()]
        return sorted(versions, key=lambda p: (p / LAST_NAME).stat().st_mtime_ns, reverse=True)[:1]

    def _setup_run_dir(self, checkpoint: dict[str, Any] | None) -> None:
        """One folder per run: ember_logs/version_N. Resuming continues the folder of the checkpoint."""
        option = self._logger_option
        if option not in (True, False, None):
            self.loggers = [option] if isinstance(option, Logger) else list(option)
            for logger, state in zip(self.loggers, (checkpoint or {}).get("loggers", []), strict=False):
                logger.load_state_dict(state)  # continue the checkpoint's runs (MLflow: its run id)
            self.log_dir = self.loggers[0].log_dir
            return
        root = self.default_root_dir / LOG_FOLDER
        # A Trainer used again (fit, then test) keeps writing where its loggers already write.
        existing = self.loggers[0].version if option is True and self.loggers else None
        version = self.strategy.broadcast(existing if isinstance(existing, int) else next_version(root))
        ckpt_file = getattr(self, "_ckpt_file", None)
        if checkpoint is not None and ckpt_file is not None and ckpt_file.parent.name == "checkpoints":
            run_dir = ckpt_file.parent.parent
            if run_dir.parent.resolve() == root.resolve() and run_dir.name.startswith("version_"):
                version = int(run_dir.name.split("_", 1)[1])
        if option is True and not self.loggers and self.is_global_zero:
            from ember.loggers.csv_logger import CSVLogger
            from ember.loggers.tensorboard import TensorBoardLogger, tensorboard_available

            self.loggers = [CSVLogger(self.default_root_dir, LOG_FOLDER, version=version)]
            if tensorboard_available():
                self.loggers.insert(0, TensorBoardLogger(self.default_root_dir, LOG_FOLDER, version=version))
        self.log_dir = str(root / f"version_{version}")
        if option is True and self.is_global_zero:  # trainer.log_dir names a folder that exists
            Path(self.log_dir).mkdir(parents=True, exist_ok=True)

    # ---- data, model, optimizers -------------------------------------------------------------
    def _setup_data_and_hooks(self, stage: str, data: dict[str, Any]) -> None:
        module, dm = self.module, self.datamodule
        assert module is not None
        stage_name = stage
        if self.local_rank == 0:  # Lightning prepares the DataModule's data, then the Module's
            if dm is not None:
                dm.prepare_data()
            module.prepare_data()
        self.strategy.barrier("prepare_data")
        # Lightning's order: the data first, then callbacks, then the module (it may build layers).
        if dm is not None:
            dm.setup(stage_name)
        for cb in self.callbacks:
            cb.setup(self, module, stage_name)
        module.setup(stage_name)

        def source(name: str) -> Any:
            for owner in (dm, module):
                fn = getattr(owner, name, None) if owner is not None else None
                if callable(fn):
                    return fn()
            return None

        self._has_validation_step = type(module).validation_step is not Module.validation_step
        if stage == "fit":
            train = data.get("train")
            train = train if train is not None else source("train_dataloader")
            if train is None:
                raise ConfigError(
                    "fit has no training data; pass trainer.fit(model, train_dataloaders=...), a datamodule, "
                    "or define train_dataloader() on the Module"
                )
            train = as_batch_iterable(train, "train_dataloaders")
            self._train_iter = EpochIterator(self.strategy.process_dataloader(train, shuffle=True))
            val = data.get("val")
            val = val if val is not None else (source("val_dataloader") if self._has_validation_step else None)
            self._val_loaders = [self.strategy.process_dataloader(v, shuffle=False) for v in as_loader_list(val, "val_dataloaders")]
            self.num_training_batches = resolve_limit(self.limit_train_batches, length_of(train), "limit_train_batches")
        else:
            step = {"validate": "validation_step", "test": "test_step", "predict": "predict_step"}[stage]
            if stage != "predict" and getattr(type(module), step) is getattr(Module, step):
                raise ConfigError(f"trainer.{stage} needs {type(module).__name__}.{step}(batch, batch_idx); define it")
            given = data.get("data")
            method = {"validate": "val_dataloader", "test": "test_dataloader", "predict": "predict_dataloader"}[stage]
            given = given if given is not None else source(method)
            if given is None:
                raise ConfigError(f"trainer.{stage} has no data; pass dataloaders=... or define {method}() on the Module")
            loaders = [self.strategy.process_dataloader(d, shuffle=False) for d in as_loader_list(given, "dataloaders")]
            if stage == "validate":
                self._val_loaders = loaders
            elif stage == "test":
                self._test_loaders = loaders
            else:
                self._predict_loaders = loaders

    def _setup_model(self) -> None:
        module = self.module
        assert module is not None
        module = self.precision_plugin.convert_module(module)
        self._wrapped = self.strategy.setup_module(module)
        device = self.strategy.root_device
        self._batch_device = None if device.type == "cpu" else device
        if self.compile_options:
            module.compile(**(self.compile_options if isinstance(self.compile_options, dict) else {}))

    def _setup_optimization(self) -> None:
        module = self.module
        assert module is not None
        self.optimizers, self.lr_scheduler_configs = parse_optimizers(module.configure_optimizers(), type(module).__name__)
        if module.automatic_optimization:
            if len(self.optimizers) > 1:
                raise ConfigError(
                    f"{type(module).__name__} returns {len(self.optimizers)} optimizers; automatic optimization "
                    "uses one. Set self.automatic_optimization = False and step them in training_step"
                )
            self._optimization: Any = AutomaticOptimization(self, self.optimizers[0], self.lr_scheduler_configs)
        else:
            module._optimizers_for_manual = [StepCountingOptimizer(o, self) for o in self.optimizers]
            module._schedulers_for_manual = [c.scheduler for c in self.lr_scheduler_configs]
            self._optimization = ManualOptimization(self)

    def _manual_backward(self, loss: torch.Tensor, *args: Any, **kwargs: Any) -> None:
        for fn in self._hooks.get("on_before_backward"):
            fn(loss)
        scaler = self.precision_plugin.scaler
        (scaler.scale(loss) if scaler is not None else loss).backward(*args, **kwargs)
        for fn in self._hooks.get("on_after_backward"):
            fn()

    # ---- checkpoints: what they hold ---------------------------------------------------------
    def _checkpoint_state(self) -> dict[str, Any]:
        module = self.module
        assert module is not None
        from ember import __version__

        state: dict[str, Any] = {
            "format_version": FORMAT_VERSION,
            "ember_version": __version__,
            "torch_version": str(torch.__version__),
            "module_class": f"{type(module).__module__}.{type(module).__qualname__}",
            "epoch": self.progress.epoch,
            "global_step": self.progress.global_step,
            "progress": self.progress.state_dict(),
            "state_dict": self.strategy.module_state_dict(module),
            # a sharding strategy (FSDP) gathers the full optimizer state; others: the optimizer's own
            "optimizer_states": [getattr(self.strategy, "optimizer_state_dict", type(opt).state_dict)(opt)
                                 for opt in self.optimizers],
            "optimizer_types": [_class_name(opt) for opt in self.optimizers],
            "lr_schedulers": [c.scheduler.state_dict() for c in self.lr_scheduler_configs],
            "precision": self.precision_plugin.state_dict(),
            "rng": capture_rng_state(),
            "epoch_start_rng": self._train_iter.epoch_start_rng if self._train_iter else None,
            "callbacks": {cb.state_key: cb.state_dict() for cb in self.callbacks},
            "metrics": {
                "stores": {name: store.state_dict() for name, store in self._stores.items()},
                "callback_values": dict(self._stores["train"].callback_values) if self._stores else {},
            },
            "hyper_parameters": to_safe(dict(module.hparams)),
            "loggers": [logger.state_dict() for logger in self.loggers],
        }
        if self._train_iter is not None and self._train_iter.stateful:
            state["train_data"] = self._train_iter.loader.state_dict()
        if self.datamodule is not None:
            state["datamodule"] = self.datamodule.state_dict()
        module.on_save_checkpoint(state)
        for cb in self.callbacks:
            cb.on_save_checkpoint(self, module, state)
        return state

    def save_checkpoint(self, filepath: str | os.PathLike[str], weights_only: bool = False) -> None:
        """Write a checkpoint atomically (on global rank zero; every rank must call it)."""
        state = self._checkpoint_state()
        if weights_only:
            state = {k: state[k] for k in ("format_version", "ember_version", "module_class", "state_dict", "hyper_parameters", "epoch", "global_step")}
        if self.is_global_zero:
            save_checkpoint(state, filepath)
        self.strategy.barrier("save_checkpoint")

    def _restore(self, ckpt: dict[str, Any], full: bool) -> None:
        module = self.module
        assert module is not None
        where = getattr(self, "_ckpt_file", "the checkpoint")
        problem = describe_state_dict_mismatch(module, ckpt.get("state_dict", {}))
        if problem:
            raise CheckpointError(
                f"{where} was saved from {ckpt.get('module_class', 'another model')} and does not fit "
                f"{type(module).__name__}: {problem}; pass the checkpoint of this model or start without ckpt_path"
            )
        # a sharding strategy (FSDP) scatters the full weights into the shards; others: plain load_state_dict
        load_module = getattr(self.strategy, "load_module_state_dict", None)
        load_module(module, ckpt["state_dict"]) if load_module is not None else module.load_state_dict(ckpt["state_dict"])
        module.on_load_checkpoint(ckpt)
        if not full:
            return
        self._check_hyperparameters(ckpt, where)
        saved_opts = ckpt.get("optimizer_states", [])
        if len(saved_opts) != len(self.optimizers):
            raise CheckpointError(f"{where} has {len(saved_opts)} optimizer states but the model configures {len(self.optimizers)}")
        saved_types = ckpt.get("optimizer_types") or [None] * len(saved_opts)
        for opt, state, saved_type in zip(self.optimizers, saved_opts, saved_types, strict=True):
            problem = _optimizer_mismatch(opt, state, saved_type)
            if problem:
                raise CheckpointError(
                    f"{where} cannot resume {type(module).__name__}'s optimizer: {problem}; resume with the "
                    "optimizer the run was started with, or start a new run from the weights only "
                    "(Module.load_from_checkpoint, then fit without ckpt_path)"
                )
            load_optimizer = getattr(self.strategy, "load_optimizer_state_dict", None)
            load_optimizer(opt, state) if load_optimizer is not None else opt.load_state_dict(state)
        for config, state in zip(self.lr_scheduler_configs, ckpt.get("lr_schedulers", []), strict=False):
            config.scheduler.load_state_dict(state)
        self.precision_plugin.load_state_dict(ckpt.get("precision", {}))
        self.progress.load_state_dict(ckpt["progress"])
        metrics = ckpt.get("metrics") or {}
        for name, state in (metrics.get("stores") or {}).items():
            if name in self._stores:
                self._stores[name].load_state_dict(state)
        self._stores["train"].callback_values.update(metrics.get("callback_values") or {})
        saved_callbacks = ckpt.get("callbacks", {})
        for cb in self.callbacks:
            if cb.state_key in saved_callbacks:
                cb.load_state_dict(saved_callbacks[cb.state_key])
            cb.on_load_checkpoint(self, module, ckpt)
        if self._train_iter is not None and self._train_iter.stateful and "train_data" in ckpt:
            self._train_iter.loader.load_state_dict(ckpt["train_data"])
        if self.datamodule is not None and "datamodule" in ckpt:
            self.datamodule.load_state_dict(ckpt["datamodule"])
        self._resume_rng = ckpt.get("rng")
        self._resume_epoch_start_rng = ckpt.get("epoch_start_rng")
        self._last_flush_step = self.progress.global_step

    def _check_hyperparameters(self, ckpt: dict[str, Any], where: Any) -> None:
        """A resume whose module was built with other hyperparameters than the checkpoint's says so: an
        error when ember chose the file (ckpt_path="last" may have found another experiment's run), a
        warning when the user named the file (a deliberate change, e.g. more epochs)."""
        module = self.module
        assert module is not None
        saved = ckpt.get("hyper_parameters")
        if saved is None:
            return
        differences = _hparams_differences(saved, to_safe(dict(module.hparams)))
        if not differences:
            return
        if getattr(self, "_ckpt_chosen_by_ember", False):
            raise CheckpointError(
                f"ckpt_path='last' found {where}, whose hyperparameters differ from this model's ({differences}), so it "
                "may be another experiment's run; pass that file as ckpt_path to resume it anyway, or give each "
                "experiment its own ModelCheckpoint(dirpath=...) or default_root_dir"
            )
        warnings.warn(
            f"resuming from {where}, whose hyperparameters differ from this model's ({differences}); the "
            "optimizer and scheduler states come from the checkpoint", stacklevel=4,
        )

    # ---- logging ------------------------------------------------------------------------------
    def _enter_stage(self, stage: str, epoch_hooks: bool = False) -> None:
        """Point `Module.log` at this stage's store, with Lightning's on_step/on_epoch defaults."""
        self.stage = stage
        store = self._stores[stage]
        per_step = stage == "train" and not epoch_hooks
        store.reset_stage(stage, on_step=per_step, on_epoch=not per_step)
        assert self.module is not None
        self.module._metric_store = store
        if stage == "train" and not epoch_hooks:
            self.val_check_batches = self._val_check_batches()

    def _val_check_batches(self) -> int | None:
        interval = self.val_check_interval
        if interval is None or (isinstance(interval, float) and interval == 1.0):
            return None
        if isinstance(interval, float):
            if not math.isfinite(self.num_training_batches):
                raise ConfigError(f"val_check_interval={interval} is a fraction but the training data has no length; pass an int")
            return max(1, int(self.num_training_batches * interval))
        return int(interval)

    def log_metrics(self, metrics: dict[str, float], step: int | None = None) -> None:
        """Send metrics to every logger (rank zero). Callbacks use this; modules use `self.log`."""
        if not metrics:
            return
        self.logged_metrics.update(metrics)
        for logger in self.loggers:
            logger.log_metrics(metrics, self.global_step if step is None else step)

    def _flush_step_logs(self) -> None:
        self._last_flush_step = self.progress.global_step
        self.check_finite_loss()
        metrics = self._stores["train"].flush_step()
        if metrics:
            self.log_metrics({**metrics, "epoch": float(self.current_epoch)})
            for logger in self.loggers:
                logger.save()

    def _log_epoch_metrics(self, stage: str, log: bool = True) -> dict[str, float]:
        metrics = self._stores[stage].end_epoch()
        if log and metrics and stage in ("train", "validate", "test"):
            self.log_metrics({**metrics, "epoch": float(self.current_epoch)})
            for logger in self.loggers:
                logger.save()
        return metrics

    def check_finite_loss(self) -> None:
        """Raise (or warn, with stop_on_nan=False) if the latest loss is NaN/inf. Called at flush points only."""
        loss = self._last_loss
        if loss is None or is_finite(loss):
            return
        last = self.checkpoint_callback.last_model_path if self.checkpoint_callback else ""
        message = (
            f"the training loss is {float(loss)} at step {self.global_step} (epoch {self.current_epoch}); "
            f"no checkpoint is written from here{f', the last good one is {last}' if last else ''}; lower the "
            "learning rate or set gradient_clip_val, or pass Trainer(stop_on_nan=False) to continue"
        )
        if self.stop_on_nan:
            raise NonFiniteLossError(message)
        warnings.warn(message, stacklevel=2)

    def _log_hyperparams(self) -> None:
        module = self.module
        if module is None or not module.hparams or not getattr(module, "_log_hyperparams", True):
            return
        for logger in self.loggers:
            logger.log_hyperparams(dict(module.hparams))

    def _finalize_loggers(self, status: str) -> None:
        for logger in self.loggers:
            logger.finalize(status)

    # ---- stopping ----------------------------------------------------------------------------
    def _time_is_up(self) -> bool:
        return self.max_time is not None and time.monotonic() - getattr(self, "_start_time", time.monotonic()) >= self.max_time

    def _should_end_epoch_early(self) -> bool:
        return (
            (self.max_steps != -1 and self.progress.global_step >= self.max_steps)
            or self.should_stop
            or (self.max_time is not None and self._time_is_up())
        )

    def _install_signal_handler(self, interrupt: bool = False) -> None:
        """On SIGTERM (and, inside fit, the first Ctrl-C) only set a flag; the loop checks it between
        batches (no per-step collective), finishes the step, writes one checkpoint and exits. A second
        Ctrl-C stops at once, without a checkpoint."""
        self._signal_received = None
        self._previous_handlers: dict[int, Any] = {}
        if threading.current_thread() is not threading.main_thread():
            return

        def on_signal(signum: int, frame: Any) -> None:
            if signum == signal.SIGINT and self._interrupted:
                self._exit_now()
            if signum == signal.SIGINT:
                self._interrupted = True
                if self.is_global_zero:
                    print("\nember: Ctrl-C: finishing this step and saving a checkpoint (Ctrl-C again stops at once)",
                          file=sys.stderr, flush=True)
            on_signal = getattr(self.strategy, "on_signal", None)  # DDP: ranks agree on the stop step
            if on_signal is not None:
                on_signal(signum)
            else:
                self._signal_received = signum

        self._interrupted = False
        for signum in (signal.SIGTERM, signal.SIGINT) if interrupt else (signal.SIGTERM,):
            self._previous_handlers[signum] = signal.signal(signum, on_signal)

    def _restore_signal_handler(self) -> None:
        for signum, handler in getattr(self, "_previous_handlers", {}).items():
            signal.signal(signum, handler)
        self._previous_handlers = {}

    def _exit_now(self) -> None:
        """The second Ctrl-C: leave now (a checkpoint being written is discarded whole, never half)."""
        ckpt = self.checkpoint_callback
        last = ckpt.last_model_path if ckpt is not None and ckpt.last_model_path else ""
        where = f"the last checkpoint is {last}; resume with fit(..., ckpt_path='last') or `ember fit --resume`" \
            if last else "no checkpoint was written"
        raise _interrupted_exit(f"ember: second Ctrl-C, stopped at once at epoch {self.current_epoch}, step "
                                f"{self.global_step} without saving; {where}")

    def _stop_on_signal(self) -> None:
        """Finish here: write last.ckpt, close loggers, exit non-zero with one line (130 after Ctrl-C)."""
        name = signal.Signals(self._signal_received or signal.SIGTERM).name
        ckpt = self.checkpoint_callback
        path = ckpt.save_now(self) if ckpt is not None else Path(self.log_dir) / "checkpoints" / "last.ckpt"
        if ckpt is None:
            self.save_checkpoint(path)
        self._finalize_loggers("interrupted")
        message = (
            f"ember: {name} received at epoch {self.current_epoch}, step {self.global_step}; checkpoint saved to "
            f"{path}; resume with fit(..., ckpt_path='last') or `ember fit --resume`"
        )
        if self._signal_received == signal.SIGINT:
            raise _interrupted_exit(message)
        raise TrainingInterrupted(message)

    def _teardown(self, stage: str) -> None:
        module = self.module
        stage_name = stage
        if module is not None:
            for cb in self.callbacks:
                cb.teardown(self, module, stage_name)
            module.teardown(stage_name)
        if self.datamodule is not None:
            self.datamodule.teardown(stage_name)
        self.stage = None

    def _eval_batches(self, loader: Any) -> Any:
        return iter(loader)


def _unknown_option_message(name: str) -> str:
    if name in _RENAMED:
        return f"Trainer has no option {name!r}; use {_RENAMED[name]}"
    known = [p for p in inspect.signature(Trainer.__init__).parameters if p not in ("self", "unknown")]
    hint = did_you_mean(name, known, f"known options: {', '.join(known)}")
    return f"Trainer has no option {name!r}; {hint}"


def _as_seconds(value: Any) -> float | None:
    if value is None:
        return None
    seconds: float | None = None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    elif isinstance(value, datetime.timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, dict):
        try:
            seconds = datetime.timedelta(**value).total_seconds()
        except TypeError:
            seconds = None
    elif isinstance(value, str):
        parts = value.split(":")
        if len(parts) == 4 and all(p.strip().isdigit() for p in parts):
            days, hours, minutes, secs = (int(p) for p in parts)
            seconds = float(((days * 24 + hours) * 60 + minutes) * 60 + secs)
    if seconds is not None and seconds >= 0:
        return seconds
    raise ConfigError(f"max_time={value!r}: use seconds, a timedelta, a dict like {{'hours': 1}}, or 'DD:HH:MM:SS'")


def _interrupted_exit(message: str) -> TrainingInterrupted:
    """Ctrl-C ends with exit status 130 (128 + SIGINT), as shells expect; the line is printed here
    because a SystemExit with a number as its code prints nothing."""
    print(message, file=sys.stderr, flush=True)
    exit_ = TrainingInterrupted(message)
    exit_.code = 128 + signal.SIGINT
    return exit_


def _class_name(obj: Any) -> str:
    return f"{type(obj).__module__}.{type(obj).__qualname__}"


def _how_to_start_from(plain: str, path: Any) -> str:
    if "optimizer" in plain:
        return (f"to start from it, load it yourself: optimizer.load_state_dict(torch.load({str(path)!r}, "
                "weights_only=True)) in configure_optimizers, and call fit without ckpt_path")
    return (f"to start from these weights, load them first: model.load_state_dict(torch.load({str(path)!r}, "
            "weights_only=True)), then call fit without ckpt_path")


def _hparams_differences(saved: Any, current: Any) -> str:
    """'lr: 0.1 in the checkpoint, 0.01 now; ...' for the keys that differ (empty when they agree)."""
    if not isinstance(saved, dict) or not isinstance(current, dict):
        return "" if saved == current else "they are of different kinds"
    missing = object()
    parts = []
    for key in list(saved) + [k for k in current if k not in saved]:
        old, new = saved.get(key, missing), current.get(key, missing)
        if _same_value(old, new):
            continue
        shown = [("absent" if v is missing else repr(v))[:40] for v in (old, new)]
        parts.append(f"{key}: {shown[0]} in the checkpoint, {shown[1]} now")
    return "; ".join(parts[:4]) + (f"; and {len(parts) - 4} more" if len(parts) > 4 else "")


def _same_value(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape and bool(torch.equal(a, b))
    try:
        return bool(a == b)
    except Exception:  # comparing exotic values: treat as different rather than fail the resume
        return False


_CLASS_SETTINGS = frozenset({"betas", "momentum", "dampening", "nesterov", "alpha", "centered", "rho", "lr_decay",
                             "etas", "step_sizes", "lambd", "t0", "momentum_decay", "initial_accumulator_value"})


def _optimizer_mismatch(optimizer: torch.optim.Optimizer, state: Any, saved_type: str | None) -> str | None:
    """Why `state` cannot be loaded into `optimizer` (torch would fail later, e.g. `KeyError: 'betas'` at
    the first step), or None."""
    now = _class_name(optimizer)
    if saved_type is not None and saved_type.rsplit(".", 1)[-1] != now.rsplit(".", 1)[-1]:
        return f"the checkpoint holds the state of {saved_type.rsplit('.', 1)[-1]} but configure_optimizers returns {type(optimizer).__name__}"
    groups = state.get("param_groups") if isinstance(state, dict) else None
    if not isinstance(groups, list):
        return "the checkpoint's optimizer state has no param_groups"
    if len(groups) != len(optimizer.param_groups):
        return f"the checkpoint has {len(groups)} parameter groups, configure_optimizers makes {len(optimizer.param_groups)}"
    for i, (old, new) in enumerate(zip(groups, optimizer.param_groups, strict=True)):
        if len(old.get("params", [])) != len(new["params"]):
            return f"parameter group {i} holds {len(old.get('params', []))} parameters in the checkpoint, {len(new['params'])} now"
        # Settings that only some optimizer classes have (torch adds flags like 'foreach' over versions:
        # those a newer torch fills in itself, so they do not count).
        absent = [k for k in new if k in _CLASS_SETTINGS and k not in old]
        if absent and saved_type is None:
            return (f"the saved optimizer has no {absent[0]!r} setting, so it was not {type(optimizer).__name__} "
                    f"(settings saved: {sorted(k for k in old if k != 'params')[:6]})")
    return None


def _summary_line(module: torch.nn.Module) -> str:
    trainable = sum(p.numel() for p in module.parameters() if p.requires_grad)
    frozen = sum(p.numel() for p in module.parameters() if not p.requires_grad)
    size_mb = sum(p.numel() * p.element_size() for p in module.parameters()) / 2**20
    return f"{type(module).__name__}: {_human(trainable)} trainable parameters, {_human(frozen)} frozen, {size_mb:.2f} MB"


def _human(n: int) -> str:
    for unit, scale in (("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return str(n)
