"""ModelCheckpoint: save checkpoints periodically, keep the best k by a monitored metric, and a last one.

Behaves as Lightning 2.6's: the same triggers, file names (metric-formatted, version counter), top-k
bookkeeping, `save_last` (True or "link") and state. Every write is atomic (trainer.save_checkpoint).
"""

from __future__ import annotations

import datetime
import os
import re
import time
import warnings
from pathlib import Path
from typing import Any

import torch

from ember.callbacks.callback import Callback
from ember.checkpoint import LAST_NAME
from ember.errors import ConfigError
from ember.fs import atomic_symlink, is_url, remove_stale_temporaries, storage_path

#: `{name}` or `{name:spec}` in a filename template; names may hold "/" and "." (Lightning's metric names).
_FIELD = re.compile(r"\{([^{}:]+)(:[^{}]*)?\}")


class ModelCheckpoint(Callback):
    """Write checkpoints every N epochs (default 1), every N training steps or every time interval.

    Without `monitor`, `save_top_k=1` keeps the newest file and `-1` keeps all. With `monitor`, the
    best `save_top_k` by that metric (`mode="min"` or `"max"`) are kept. `save_last=True` also writes
    `last.ckpt` when a checkpoint is saved (`"link"`: a symbolic link to it). Names follow `filename`
    (default `"{epoch}-{step}"` gives `epoch=0-step=8.ckpt`); a name already on disk gets `-v1`,
    `-v2`, ... unless `enable_version_counter=False`.

    Example:
        >>> from ember.callbacks import ModelCheckpoint
        >>> import torch
        >>> ckpt = ModelCheckpoint(dirpath="ckpts", monitor="val_loss", filename="{epoch}-{val_loss:.2f}",
        ...                        save_top_k=2, save_last=True)
        >>> os.path.basename(ckpt.format_checkpoint_name({"epoch": torch.tensor(2), "val_loss": torch.tensor(0.1234)}))
        'epoch=2-val_loss=0.12.ckpt'
        >>> ModelCheckpoint.CHECKPOINT_NAME_LAST, ModelCheckpoint.FILE_EXTENSION
        ('last', '.ckpt')
    """

    CHECKPOINT_JOIN_CHAR = "-"
    CHECKPOINT_EQUALS_CHAR = "="
    CHECKPOINT_NAME_LAST = "last"
    FILE_EXTENSION = ".ckpt"
    STARTING_VERSION = 1

    def __init__(
        self,
        dirpath: str | os.PathLike[str] | None = None,
        filename: str | None = None,
        monitor: str | None = None,
        verbose: bool = False,
        save_last: bool | str | None = None,
        save_top_k: int = 1,
        save_on_exception: bool = False,
        save_weights_only: bool = False,
        mode: str = "min",
        auto_insert_metric_name: bool = True,
        every_n_train_steps: int | None = None,
        train_time_interval: datetime.timedelta | float | None = None,
        every_n_epochs: int | None = None,
        save_on_train_epoch_end: bool | None = None,
        enable_version_counter: bool = True,
    ) -> None:
        _check_arguments(mode, save_top_k, monitor, save_last, every_n_train_steps, every_n_epochs, train_time_interval)
        self.dirpath: str | None = _resolve_dirpath(dirpath)
        self.filename = filename
        self.monitor = monitor
        self.mode = mode
        self.verbose = verbose
        self.save_last = save_last
        self.save_top_k = save_top_k
        self.save_on_exception = save_on_exception
        self.save_weights_only = save_weights_only
        self.auto_insert_metric_name = auto_insert_metric_name
        self._save_on_train_epoch_end = save_on_train_epoch_end
        self._enable_version_counter = enable_version_counter
        if every_n_train_steps is None and every_n_epochs is None and train_time_interval is None:
            every_n_epochs = 1  # Lightning's default trigger: once per epoch (after its validation)
        self._every_n_train_steps: int = every_n_train_steps or 0
        self._every_n_epochs: int = every_n_epochs or 0
        self._train_time_interval = train_time_interval
        self.best_k_models: dict[str, torch.Tensor] = {}
        self.kth_best_model_path = ""
        self.kth_value = torch.tensor(torch.inf if mode == "min" else -torch.inf)
        self.best_model_path = ""
        self.best_model_score: torch.Tensor | None = None
        self.current_score: torch.Tensor | None = None
        self.last_model_path = ""
        self._last_global_step_saved = 0  # nothing to save before the first step
        self._last_checkpoint_saved = ""
        self._last_time_checked: float | None = None
        self._defer_save_until_validation = False
        self._validated = False  # a validation ran in this fit: a missing monitor is then an error

    @property
    def state_key(self) -> str:
        return f"ModelCheckpoint{{'monitor': {self.monitor!r}, 'mode': {self.mode!r}}}"

    @property
    def every_n_epochs(self) -> int:
        return self._every_n_epochs

    @property
    def every_n_train_steps(self) -> int:
        return self._every_n_train_steps

    @property
    def train_time_interval(self) -> datetime.timedelta | float | None:
        return self._train_time_interval

    @property
    def save_on_train_epoch_end(self) -> bool | None:
        return self._save_on_train_epoch_end

    # ---- when to save ------------------------------------------------------------------------
    def setup(self, trainer: Any, module: Any, stage: str) -> None:
        if self.dirpath is None:
            self.dirpath = str(storage_path(trainer.log_dir) / "checkpoints")
        if self.save_last == "link" and is_url(self.dirpath):
            raise ConfigError(f"ModelCheckpoint(save_last='link') needs a local folder, got dirpath={self.dirpath}; "
                              "use save_last=True")
        if trainer.is_global_zero:  # a killed run's half-written files (only ember's, only of dead writers)
            remove_stale_temporaries(self.dirpath)

    def on_train_start(self, trainer: Any, module: Any) -> None:
        self._last_time_checked = time.monotonic()
        self._validated = False

    def on_train_batch_end(self, trainer: Any, module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        step = trainer.global_step
        skip_batch = self._every_n_train_steps < 1 or step % self._every_n_train_steps != 0
        skip_time, now = True, time.monotonic()
        if self._train_time_interval is not None:
            elapsed = now - self._last_time_checked if self._last_time_checked is not None else -1.0
            skip_time = trainer.strategy.broadcast(elapsed < 0 or elapsed < _seconds(self._train_time_interval))
        if skip_batch and skip_time:
            return
        if not skip_time:
            self._last_time_checked = now
        candidates = self._monitor_candidates(trainer)
        if self.monitor is not None and (self.monitor not in candidates or self._validation_follows(trainer, batch_idx)):
            self._defer_save_until_validation = True  # save with the fresh metric at validation end
            return
        if self._skip(trainer):
            return
        self._save_topk_checkpoint(trainer, candidates)
        self._save_last_checkpoint(trainer, candidates)

    def on_train_epoch_end(self, trainer: Any, module: Any) -> None:
        if not self._skip(trainer) and self._saves_on_train_epoch_end(trainer):
            self._save_at_epoch_end(trainer)

    def on_validation_end(self, trainer: Any, module: Any) -> None:
        if trainer.fitting and not trainer.sanity_checking:
            self._validated = True
        if self._skip(trainer) or self._saves_on_train_epoch_end(trainer):
            return
        if self._defer_save_until_validation:
            candidates = self._monitor_candidates(trainer)
            self._save_topk_checkpoint(trainer, candidates)
            self._save_last_checkpoint(trainer, candidates)
            self._defer_save_until_validation = False
            return
        self._save_at_epoch_end(trainer)

    def on_exception(self, trainer: Any, module: Any, exception: BaseException) -> None:
        if (not self.save_on_exception or trainer.fast_dev_run or trainer.sanity_checking
                or self._last_global_step_saved == trainer.global_step):
            return
        candidates = self._monitor_candidates(trainer)
        path = self.format_checkpoint_name(candidates)
        self._save_checkpoint(trainer, path)
        self._save_last_checkpoint(trainer, candidates)
        print(f"ModelCheckpoint: {type(exception).__name__} raised ({exception}); saved {path}")

    def on_train_end(self, trainer: Any, module: Any) -> None:
        if self.save_last and not self._last_checkpoint_saved and not trainer.fast_dev_run:
            self._save_last_checkpoint(trainer, self._monitor_candidates(trainer))

    def _save_at_epoch_end(self, trainer: Any) -> None:
        candidates = self._monitor_candidates(trainer)
        if self._every_n_epochs >= 1 and (trainer.current_epoch + 1) % self._every_n_epochs == 0:
            self._save_topk_checkpoint(trainer, candidates)
        if self._last_global_step_saved == trainer.global_step or (self.save_last == "link" and self._last_checkpoint_saved):
            self._save_last_checkpoint(trainer, candidates)

    def _skip(self, trainer: Any) -> bool:
        return (bool(trainer.fast_dev_run) or not trainer.fitting or trainer.sanity_checking
                or self._last_global_step_saved == trainer.global_step)

    def _saves_on_train_epoch_end(self, trainer: Any) -> bool:
        """Lightning's rule: at train epoch end when there is no validation or it runs exactly once per epoch."""
        if self._save_on_train_epoch_end is not None:
            return self._save_on_train_epoch_end
        if trainer.check_val_every_n_epoch != 1:
            return False
        if not trainer.will_validate_this_epoch:  # with a check every epoch, this means no validation at all
            return True
        return trainer.val_check_interval in (None, 1.0)

    def _validation_follows(self, trainer: Any, batch_idx: int) -> bool:
        """The last batch of an epoch that validates next: its metrics would be stale, so wait for them."""
        last = batch_idx + 1 >= trainer.num_training_batches
        return last and not self._saves_on_train_epoch_end(trainer) and trainer.will_validate_this_epoch

    # ---- saving ------------------------------------------------------------------------------
    def _monitor_candidates(self, trainer: Any) -> dict[str, torch.Tensor]:
        candidates = {k: v.detach().clone() if isinstance(v, torch.Tensor) else torch.tensor(v)
                      for k, v in trainer.callback_metrics.items()}
        epoch, step = candidates.get("epoch"), candidates.get("step")  # a logged "epoch" is a float: make it whole
        candidates["epoch"] = epoch.int() if epoch is not None else torch.tensor(trainer.current_epoch)
        candidates["step"] = step.int() if step is not None else torch.tensor(trainer.global_step)
        return candidates

    def _save_topk_checkpoint(self, trainer: Any, candidates: dict[str, torch.Tensor]) -> None:
        if self.save_top_k == 0:
            return
        trainer.check_finite_loss()  # ember's stop_on_nan: a NaN step is never written as a checkpoint
        if self.monitor is None:
            self._save_newest(trainer, candidates)
            return
        if self.monitor not in candidates:
            text = (f"ModelCheckpoint(monitor={self.monitor!r}) found no such metric among {sorted(candidates)}; "
                    f"log it with self.log({self.monitor!r}, value)")
            if self._validated:
                raise ConfigError(text)
            warnings.warn(text, stacklevel=2)
            return
        current = candidates[self.monitor]
        if self._would_keep(trainer, current):
            self._update_best_and_save(trainer, current, candidates)
        elif self.verbose:
            print(f"Epoch {trainer.current_epoch}, global step {trainer.global_step}: "
                  f"{self.monitor!r} was not in top {self.save_top_k}")

    def _would_keep(self, trainer: Any, current: torch.Tensor) -> bool:
        if self.save_top_k == -1 or len(self.best_k_models) < self.save_top_k:
            return True
        kth = float(self.best_k_models[self.kth_best_model_path])
        better = float(current) < kth if self.mode == "min" else float(current) > kth
        return bool(trainer.strategy.broadcast(better))  # DDP: every rank takes rank zero's decision

    def _update_best_and_save(self, trainer: Any, current: torch.Tensor, candidates: dict[str, torch.Tensor]) -> None:
        k = len(self.best_k_models) + 1 if self.save_top_k == -1 else self.save_top_k
        dropped = None
        if len(self.best_k_models) == k:
            dropped = self.kth_best_model_path
            self.best_k_models.pop(dropped)
        if torch.isnan(current):  # NaN is kept as the worst possible score
            current = torch.tensor(torch.inf if self.mode == "min" else -torch.inf)
        path = self._free_name(trainer, candidates, dropped)
        self.current_score = current
        self.best_k_models[path] = current  # recorded before writing: the file's own state lists it
        if len(self.best_k_models) == k:
            worst = max if self.mode == "min" else min
            self.kth_best_model_path = worst(self.best_k_models, key=lambda p: float(self.best_k_models[p]))
            self.kth_value = self.best_k_models[self.kth_best_model_path]
        best = min if self.mode == "min" else max
        self.best_model_path = best(self.best_k_models, key=lambda p: float(self.best_k_models[p]))
        self.best_model_score = self.best_k_models[self.best_model_path]
        if self.verbose:
            print(f"Epoch {trainer.current_epoch}, global step {trainer.global_step}: {self.monitor!r} reached "
                  f"{float(current):0.5f} (best {float(self.best_model_score):0.5f}), saving model to {path!r} as top {k}")
        self._save_checkpoint(trainer, path)
        if dropped and self._removable(dropped, path):
            self._remove(trainer, dropped)

    def _save_newest(self, trainer: Any, candidates: dict[str, torch.Tensor]) -> None:
        path = self._free_name(trainer, candidates, self.best_model_path)
        previous, self.best_model_path = self.best_model_path, path
        self._save_checkpoint(trainer, path)
        if self.save_top_k == 1 and previous and self._removable(previous, path):
            self._remove(trainer, previous)

    def _save_last_checkpoint(self, trainer: Any, candidates: dict[str, torch.Tensor]) -> None:
        if not self.save_last:
            return
        trainer.check_finite_loss()
        path = self.format_checkpoint_name(candidates, self.CHECKPOINT_NAME_LAST)
        version = self.STARTING_VERSION
        while self._enable_version_counter and self._exists(trainer, path) and path != self.last_model_path:
            path = self.format_checkpoint_name(candidates, self.CHECKPOINT_NAME_LAST, ver=version)
            version += 1
        previous, self.last_model_path = self.last_model_path, path
        if self.save_last == "link" and self._last_checkpoint_saved and self.save_top_k != 0:
            if trainer.is_global_zero and os.path.abspath(self._last_checkpoint_saved) != os.path.abspath(path):
                atomic_symlink(os.path.relpath(self._last_checkpoint_saved, os.path.dirname(path)), path)
            trainer.strategy.barrier("ModelCheckpoint link")
        else:
            self._save_checkpoint(trainer, path)
        if previous and self._removable(previous, path):
            self._remove(trainer, previous)

    def _save_checkpoint(self, trainer: Any, path: str) -> None:
        trainer.save_checkpoint(path, weights_only=self.save_weights_only)
        self._last_global_step_saved = trainer.global_step
        self._last_checkpoint_saved = path
        if trainer.is_global_zero:
            for logger in trainer.loggers:  # Lightning's hook: MLFlowLogger uploads the files (log_model)
                logger.after_save_checkpoint(self)

    def _free_name(self, trainer: Any, candidates: dict[str, torch.Tensor], reusable: str | None) -> str:
        """The formatted name, with `-v1`, `-v2`... while it is taken by another file (the version counter)."""
        path = self.format_checkpoint_name(candidates)
        version = self.STARTING_VERSION
        while self._enable_version_counter and self._exists(trainer, path) and path != reusable:
            path = self.format_checkpoint_name(candidates, ver=version)
            version += 1
        return path

    @staticmethod
    def _exists(trainer: Any, path: str) -> bool:
        return bool(trainer.strategy.broadcast(trainer.is_global_zero and storage_path(path).exists()))

    def _removable(self, previous: str, current: str) -> bool:
        """Only files of this callback's folder, never the one just written."""
        if previous == current:
            return False
        if is_url(previous):
            return True
        assert self.dirpath is not None
        return Path(self.dirpath).absolute() in Path(previous).absolute().parents

    @staticmethod
    def _remove(trainer: Any, path: str) -> None:
        if trainer.is_global_zero:
            target = storage_path(path)
            if target.is_symlink() or target.exists():
                target.unlink()

    def save_now(self, trainer: Any) -> Path:
        """Write `last.ckpt` immediately (used on SIGTERM and by the Trainer's default resume path)."""
        if self.dirpath is None:
            self.dirpath = str(storage_path(trainer.log_dir) / "checkpoints")
        last = storage_path(self.dirpath) / LAST_NAME
        trainer.save_checkpoint(last)
        self.last_model_path = str(last)
        return last

    # ---- names -------------------------------------------------------------------------------
    def format_checkpoint_name(self, metrics: dict[str, Any], filename: str | None = None, ver: int | None = None,
                               prefix: str | None = None) -> str:
        """The path for `metrics` (Lightning's `format_checkpoint_name`): a field missing from them reads 0.

        Example:
            >>> ModelCheckpoint(filename="{epoch:03d}").format_checkpoint_name({"epoch": 5})
            'epoch=005.ckpt'
            >>> ModelCheckpoint(filename="{missing:d}").format_checkpoint_name({})
            'missing=0.ckpt'
        """
        template = filename or self.filename or "{epoch}" + self.CHECKPOINT_JOIN_CHAR + "{step}"

        def fill(match: re.Match[str]) -> str:
            name, spec = match.group(1), (match.group(2) or ":")[1:]
            value = metrics.get(name, 0)
            value = value.item() if isinstance(value, torch.Tensor) else value
            text = format(value, spec)
            return name + self.CHECKPOINT_EQUALS_CHAR + text if self.auto_insert_metric_name else text

        name = _FIELD.sub(fill, template)
        if prefix is not None:
            name = self.CHECKPOINT_JOIN_CHAR.join([prefix, name])
        if ver is not None:
            name = self.CHECKPOINT_JOIN_CHAR.join((name, f"v{ver}"))
        name += self.FILE_EXTENSION
        return os.path.join(self.dirpath, name) if self.dirpath else name

    # ---- state -------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        number = lambda v: None if v is None else float(v)  # noqa: E731 - plain floats: safe to load
        return {
            "monitor": self.monitor,
            "dirpath": self.dirpath,
            "best_model_path": self.best_model_path,
            "best_model_score": number(self.best_model_score),
            "current_score": number(self.current_score),
            "best_k_models": {k: float(v) for k, v in self.best_k_models.items()},
            "kth_best_model_path": self.kth_best_model_path,
            "kth_value": float(self.kth_value),
            "last_model_path": self.last_model_path,
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """As Lightning: everything comes back when the folder is the same; otherwise only `best_model_path`."""
        saved = state_dict.get("dirpath", self.dirpath)
        tensor = lambda v: None if v is None else torch.tensor(v)  # noqa: E731
        if self.dirpath is None or saved is None or _same_folder(self.dirpath, saved):
            self.dirpath = saved if self.dirpath is None else self.dirpath
            self.best_model_score = tensor(state_dict.get("best_model_score"))
            self.kth_best_model_path = state_dict.get("kth_best_model_path", self.kth_best_model_path)
            if state_dict.get("kth_value") is not None:
                self.kth_value = torch.tensor(state_dict["kth_value"])
            self.best_k_models = {k: torch.tensor(v) for k, v in state_dict.get("best_k_models", {}).items()}
            self.last_model_path = state_dict.get("last_model_path", self.last_model_path)
        else:
            warnings.warn(f"ModelCheckpoint: the folder changed from {saved!r} to {self.dirpath!r}; only "
                          "best_model_path is restored", stacklevel=2)
        self.best_model_path = state_dict.get("best_model_path", self.best_model_path)


def _check_arguments(mode: str, save_top_k: int, monitor: str | None, save_last: Any, every_n_train_steps: int | None,
                     every_n_epochs: int | None, train_time_interval: Any) -> None:
    if mode not in ("min", "max"):
        raise ConfigError(f"ModelCheckpoint(mode={mode!r}) must be 'min' or 'max'")
    if save_top_k < -1:
        raise ConfigError(f"ModelCheckpoint(save_top_k={save_top_k}) must be -1 (all), 0 or more")
    if save_last not in (None, True, False, "link"):
        raise ConfigError(f"ModelCheckpoint(save_last={save_last!r}) must be True, False, None or 'link'")
    for name, value in (("every_n_train_steps", every_n_train_steps), ("every_n_epochs", every_n_epochs)):
        if value is not None and value < 0:
            raise ConfigError(f"ModelCheckpoint({name}={value}) must be 0 or more")
    triggers = [bool(every_n_train_steps), bool(every_n_epochs), train_time_interval is not None]
    if sum(triggers) > 1:
        raise ConfigError(f"ModelCheckpoint: every_n_train_steps={every_n_train_steps}, every_n_epochs={every_n_epochs} "
                          f"and train_time_interval={train_time_interval} are mutually exclusive; pass one of them")
    if monitor is None and save_top_k not in (-1, 0, 1):
        raise ConfigError(f"ModelCheckpoint(save_top_k={save_top_k}, monitor=None): without a metric only -1 (all), "
                          "0 or 1 (newest) make sense; pass monitor=")


def _seconds(interval: datetime.timedelta | float) -> float:
    return interval.total_seconds() if isinstance(interval, datetime.timedelta) else float(interval)


def _resolve_dirpath(dirpath: str | os.PathLike[str] | None) -> str | None:
    if dirpath is None:
        return None
    if is_url(dirpath):
        return str(dirpath)
    return os.path.realpath(os.path.expanduser(dirpath))  # as Lightning: the real local folder


def _same_folder(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    if is_url(a) or is_url(b):
        return str(a).rstrip("/") == str(b).rstrip("/")
    return storage_path(a).resolve() == storage_path(b).resolve()
