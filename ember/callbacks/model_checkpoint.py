"""ModelCheckpoint: save checkpoints periodically, keep the best k by a monitored metric, and `last.ckpt`."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any

from ember.callbacks.callback import Callback
from ember.checkpoint import LAST_NAME
from ember.errors import ConfigError
from ember.fs import atomic_link, remove_stale_temporaries, storage_path


class ModelCheckpoint(Callback):
    """Write checkpoints every N steps, every N epochs, or after validation.

    Without `monitor`, the newest `save_top_k` checkpoints are kept. With `monitor`, the best
    `save_top_k` by that metric (`mode="min"` or `"max"`). `save_last=True` also keeps
    `last.ckpt`, which `fit(ckpt_path="last")` resumes from. Every write is atomic.

    Example:
        >>> from ember.callbacks import ModelCheckpoint
        >>> ckpt = ModelCheckpoint(monitor="val_loss", mode="min", save_top_k=2, save_last=True)
    """

    def __init__(
        self,
        dirpath: str | os.PathLike[str] | None = None,
        filename: str | None = None,
        monitor: str | None = None,
        mode: str = "min",
        save_top_k: int = 1,
        save_last: bool | None = None,
        every_n_train_steps: int | None = None,
        every_n_epochs: int | None = None,
        train_time_interval: float | None = None,
        save_on_train_epoch_end: bool | None = None,
        verbose: bool = False,
        auto_insert_metric_name: bool = True,
    ) -> None:
        if mode not in ("min", "max"):
            raise ConfigError(f"ModelCheckpoint(mode={mode!r}) must be 'min' or 'max'")
        if save_top_k < -1:
            raise ConfigError(f"ModelCheckpoint(save_top_k={save_top_k}) must be -1 (all), 0 or more")
        self.dirpath = storage_path(dirpath) if dirpath is not None else None
        self.filename = filename
        self.monitor = monitor
        self.mode = mode
        self.save_top_k = save_top_k
        self.save_last = save_last
        self.every_n_train_steps = every_n_train_steps or 0
        self.every_n_epochs = every_n_epochs if every_n_epochs is not None else (0 if every_n_train_steps else 1)
        self.train_time_interval = train_time_interval
        self.save_on_train_epoch_end = save_on_train_epoch_end
        self.verbose = verbose
        self.auto_insert_metric_name = auto_insert_metric_name
        self.best_k_models: dict[str, float] = {}
        self.best_model_path = ""
        self.best_model_score: float | None = None
        self.last_model_path = ""
        self._last_global_step_saved = -1
        self._last_time_saved = time.monotonic()

    @property
    def state_key(self) -> str:
        return f"ModelCheckpoint{{'monitor': {self.monitor!r}, 'mode': {self.mode!r}}}"

    # ---- when to save ------------------------------------------------------------------------
    def setup(self, trainer: Any, module: Any, stage: str) -> None:
        if self.dirpath is None:
            self.dirpath = storage_path(trainer.log_dir) / "checkpoints"
        if trainer.is_global_zero:  # a killed run's half-written files (only ember's, only of dead writers)
            remove_stale_temporaries(self.dirpath)

    def on_train_batch_end(self, trainer: Any, module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        step = trainer.progress.global_step
        due = self.every_n_train_steps and step % self.every_n_train_steps == 0
        if not due and self.train_time_interval is not None:
            due = time.monotonic() - self._last_time_saved >= self.train_time_interval
        if due and step != self._last_global_step_saved:
            self._save(trainer)

    def on_train_epoch_end(self, trainer: Any, module: Any) -> None:
        if self._saves_on_epoch_end(trainer) and self._epoch_due(trainer):
            self._save(trainer)
        elif self.save_last and trainer.global_step != self._last_global_step_saved:
            # `last.ckpt` always ends an epoch current, whatever the save schedule.
            self._last_global_step_saved = trainer.global_step
            trainer.check_finite_loss()
            self._save_last(trainer, fresh=True)
            self._notify_loggers(trainer)

    def on_validation_end(self, trainer: Any, module: Any) -> None:
        if not trainer.fitting or trainer.sanity_checking or self._saves_on_epoch_end(trainer) or not self._epoch_due(trainer):
            return
        self._save(trainer)

    def _saves_on_epoch_end(self, trainer: Any) -> bool:
        if self.every_n_train_steps or self.train_time_interval:
            return False
        if self.save_on_train_epoch_end is not None:
            return self.save_on_train_epoch_end
        return not trainer.will_validate_this_epoch

    def _epoch_due(self, trainer: Any) -> bool:
        n = self.every_n_epochs
        return bool(n) and (trainer.current_epoch + 1) % n == 0

    # ---- saving ------------------------------------------------------------------------------
    def _save(self, trainer: Any) -> None:
        self._last_global_step_saved = trainer.global_step
        self._last_time_saved = time.monotonic()
        metrics = {k: float(v) for k, v in trainer.callback_metrics.items()}
        trainer.check_finite_loss()
        if self.save_top_k != 0:
            self._save_top_k(trainer, metrics)
        if self.save_last:
            self._save_last(trainer)
        self._notify_loggers(trainer)

    def _notify_loggers(self, trainer: Any) -> None:
        for logger in trainer.loggers:  # Lightning's hook: MLFlowLogger uploads the files (log_model)
            logger.after_save_checkpoint(self)

    def _save_top_k(self, trainer: Any, metrics: dict[str, float]) -> None:
        assert self.dirpath is not None
        path = self.dirpath / (self.format_checkpoint_name(trainer, metrics) + ".ckpt")
        if self.monitor is None:
            self._save_and_keep(trainer, path, float(trainer.global_step), keep_largest=True)
            return
        if self.monitor not in metrics:
            raise ConfigError(
                f"ModelCheckpoint(monitor={self.monitor!r}) but no such metric was logged; "
                f"logged: {sorted(metrics)}; log it with self.log({self.monitor!r}, value)"
            )
        # DDP: every rank must take the same branch (saving is a collective), so all use rank zero's score.
        score = trainer.strategy.broadcast(metrics[self.monitor])
        if not self._would_keep(score):
            return
        self._save_and_keep(trainer, path, score, keep_largest=self.mode == "max")
        if self.verbose:
            print(f"ModelCheckpoint: {self.monitor}={score:.5g}, saved {path}")

    def _save_and_keep(self, trainer: Any, path: Path, score: float, keep_largest: bool) -> None:
        """Record `path` among the kept files *before* writing it, so the checkpoint's own state lists
        the file it is (a resumed run then still deletes it when it drops out of the top k); the
        files that drop out are deleted only once the new one is safely written."""
        before = (dict(self.best_k_models), self.best_model_path, self.best_model_score)
        self.best_k_models[str(path)] = score
        dropped = self._drop_extra(keep_largest)
        if self.monitor is None:
            self.best_model_path = str(path)  # without a metric, "best" is the newest
        else:
            best = (max if self.mode == "max" else min)(self.best_k_models, key=self.best_k_models.__getitem__)
            self.best_model_path, self.best_model_score = best, self.best_k_models[best]
        try:
            trainer.save_checkpoint(path)
        except BaseException:
            self.best_k_models, self.best_model_path, self.best_model_score = before
            raise
        if trainer.is_global_zero:
            for worst in dropped:
                if worst not in (self.last_model_path, str(path)):
                    storage_path(worst).unlink(missing_ok=True)

    def _would_keep(self, score: float) -> bool:
        if score != score:  # NaN never counts as better
            return False
        if self.save_top_k == -1 or len(self.best_k_models) < self.save_top_k:
            return True
        worst = (min if self.mode == "max" else max)(self.best_k_models.values())
        return score > worst if self.mode == "max" else score < worst

    def _drop_extra(self, keep_largest: bool) -> list[str]:
        """Forget the entries beyond `save_top_k`; returns their paths (the caller deletes the files)."""
        dropped: list[str] = []
        if self.save_top_k == -1:
            return dropped
        while len(self.best_k_models) > self.save_top_k:
            pick = min if keep_largest else max
            worst = pick(self.best_k_models, key=self.best_k_models.__getitem__)
            del self.best_k_models[worst]
            dropped.append(worst)
        return dropped

    def _save_last(self, trainer: Any, fresh: bool = False) -> None:
        """Keep `last.ckpt` current: a hard link to the file just written when possible (no second write)."""
        assert self.dirpath is not None
        last = self.dirpath / LAST_NAME
        wrote_top_k = self.monitor is None and self.save_top_k != 0 and not fresh
        linked = False
        if wrote_top_k:
            # Only rank zero touches the files (ranks racing on the temporary link broke DDP runs); every
            # rank then learns whether it worked, so all or none call save_checkpoint (a collective).
            if trainer.is_global_zero and storage_path(self.best_model_path).exists():
                try:
                    atomic_link(self.best_model_path, last)
                    linked = True
                except OSError:
                    pass
            linked = trainer.strategy.broadcast(linked)
        if not linked:
            trainer.save_checkpoint(last)
        self.last_model_path = str(last)

    def save_now(self, trainer: Any) -> Path:
        """Write `last.ckpt` immediately (used on SIGTERM and by the Trainer's default resume path)."""
        if self.dirpath is None:
            self.dirpath = storage_path(trainer.log_dir) / "checkpoints"
        last = self.dirpath / LAST_NAME
        trainer.save_checkpoint(last)
        self.last_model_path = str(last)
        return last

    def format_checkpoint_name(self, trainer: Any, metrics: dict[str, float]) -> str:
        template = self.filename or "{epoch}-{step}"
        values = {"epoch": trainer.current_epoch, "step": trainer.global_step, **metrics}

        def fill(match: re.Match[str]) -> str:
            name, fmt = match.group(1), match.group(2) or ""
            value = values.get(name, float("nan"))
            text = format(value, fmt[1:]) if fmt else str(value)
            return f"{name}={text}" if self.auto_insert_metric_name else text

        return re.sub(r"\{([^{}:]+)(:[^{}]*)?\}", fill, template)

    # ---- state -------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        return {
            "dirpath": str(self.dirpath) if self.dirpath else None,
            "best_model_path": self.best_model_path,
            "best_model_score": self.best_model_score,
            "best_k_models": dict(self.best_k_models),
            "last_model_path": self.last_model_path,
            "last_global_step_saved": self._last_global_step_saved,
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        saved = state_dict.get("dirpath")
        same_dir = self.dirpath is None or (saved is not None and _same_folder(self.dirpath, saved))
        if not same_dir:
            return
        if state_dict.get("dirpath"):
            self.dirpath = storage_path(state_dict["dirpath"])
        self.best_model_path = state_dict.get("best_model_path", "")
        self.best_model_score = state_dict.get("best_model_score")
        self.best_k_models = {k: v for k, v in state_dict.get("best_k_models", {}).items() if storage_path(k).exists()}
        self.last_model_path = state_dict.get("last_model_path", "")
        self._last_global_step_saved = state_dict.get("last_global_step_saved", -1)


def _same_folder(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    return storage_path(a).resolve() == storage_path(b).resolve()
