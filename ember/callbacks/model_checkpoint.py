"""ModelCheckpoint: save checkpoints periodically, keep the best k by a monitored metric, and `last.ckpt`.

Arguments, attributes, file names, state and where an epoch's checkpoint is written follow Lightning 2.6.6's
``ModelCheckpoint``: with ``save_last=True``, ``last.ckpt`` is written whenever a checkpoint is (so with
``every_n_epochs=2`` it ends the newest even epoch, as Lightning's). With ``save_last=True`` and no monitor,
``last.ckpt`` is a hard link to the file just written where the filesystem allows (no second write).

The checkpoints ember adds itself — the Trainer's default one and the one the ``ember fit`` command line
makes from its ``checkpoint:`` section — also bring ``last.ckpt`` up to date at the end of every training
epoch (``keep_last_current``), so ``fit(ckpt_path="last")`` / ``--resume`` continue from the newest epoch
whatever the save schedule (``every_n_train_steps: 200``, the classic script's ``--save-interval``).
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

import torch

from ember.callbacks.checkpoint import Checkpoint
from ember.callbacks.checkpoint_naming import format_template
from ember.errors import ConfigError
from ember.fs import (
    RemotePath,
    atomic_link,
    atomic_write,
    is_url,
    remove_file,
    remove_stale_temporaries,
    remove_tree,
    storage_path,
    within,
)
from ember.runtime.sharded_checkpoint import is_checkpoint_folder


def default_dirpath(trainer: Any) -> str:
    """Where checkpoints go without `dirpath` (Lightning's rule): `<save_dir>/<name>/<version>/checkpoints` of
    the first logger (its save_dir, else the Trainer's default_root_dir), else
    `<default_root_dir>/checkpoints`."""
    if not trainer.loggers:
        return str(storage_path(trainer.log_dir or trainer.default_root_dir) / "checkpoints")
    logger = trainer.loggers[0]
    version = logger.version if isinstance(logger.version, str) else f"version_{logger.version}"
    return str(
        storage_path(logger.save_dir or trainer.default_root_dir) / str(logger.name) / version / "checkpoints"
    )


class ModelCheckpoint(Checkpoint):
    """Write checkpoints every N epochs (default: every epoch), every N training steps, or every time
    interval; keep the best `save_top_k` by `monitor` (or, without a monitor, the newest one or all), and
    with `save_last` also `last.ckpt`. Every write is atomic.

    The class constants ``CHECKPOINT_JOIN_CHAR``, ``CHECKPOINT_EQUALS_CHAR``, ``CHECKPOINT_NAME_LAST``,
    ``FILE_EXTENSION`` and ``STARTING_VERSION`` may be overridden by a subclass or on an instance.

    Example:
        >>> from ember.callbacks import ModelCheckpoint
        >>> ckpt = ModelCheckpoint(dirpath="runs/ckpts", filename="{epoch}-{val_loss:.2f}",
        ...                        monitor="val_loss", save_top_k=2, save_last=True)
        >>> os.path.basename(ckpt.format_checkpoint_name({"epoch": 3, "val_loss": torch.tensor(0.1234)}))
        'epoch=3-val_loss=0.12.ckpt'
        >>> ckpt.CHECKPOINT_NAME_LAST = "{epoch}-last"
        >>> os.path.basename(ckpt.format_checkpoint_name({"epoch": 3}, ckpt.CHECKPOINT_NAME_LAST))
        'epoch=3-last.ckpt'
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
        save_last: bool | Literal["link"] | None = None,
        save_top_k: int = 1,
        save_on_exception: bool = False,
        save_weights_only: bool = False,
        mode: str = "min",
        auto_insert_metric_name: bool = True,
        every_n_train_steps: int | None = None,
        train_time_interval: timedelta | None = None,
        every_n_epochs: int | None = None,
        save_on_train_epoch_end: bool | None = None,
        enable_version_counter: bool = True,
    ) -> None:
        if mode not in ("min", "max"):
            raise ConfigError(f"ModelCheckpoint(mode={mode!r}): `mode` can be min, max")
        if save_last not in (None, True, False, "link"):
            raise ConfigError(f"ModelCheckpoint(save_last={save_last!r}) must be True, False, None or 'link'")
        if train_time_interval is not None and not isinstance(train_time_interval, timedelta):
            raise ConfigError(
                f"ModelCheckpoint(train_time_interval={train_time_interval!r}) must be a "
                f"datetime.timedelta, e.g. timedelta(seconds={train_time_interval})"
            )
        self.monitor = monitor
        self.verbose = verbose
        self.save_last = save_last
        self.save_top_k = save_top_k
        self.save_on_exception = save_on_exception
        self.save_weights_only = save_weights_only
        self.auto_insert_metric_name = auto_insert_metric_name
        self.mode = mode
        self._save_on_train_epoch_end = save_on_train_epoch_end
        self._enable_version_counter = enable_version_counter
        self.dirpath: str | None = _resolve_dirpath(dirpath)
        self.filename = filename
        if save_last == "link" and self.dirpath is not None and is_url(self.dirpath):
            raise ConfigError(
                f"ModelCheckpoint(save_last='link') is only supported for local file paths, got "
                f"dirpath={self.dirpath!r}; use save_last=True"
            )
        self._every_n_train_steps, self._every_n_epochs = _step_and_epoch_triggers(
            every_n_train_steps, every_n_epochs, train_time_interval
        )
        self._train_time_interval = train_time_interval
        _check_configuration(
            self.save_top_k, self._every_n_train_steps, self._every_n_epochs, train_time_interval, monitor
        )
        # What was kept, as Lightning holds it (scores are tensors).
        self.current_score: torch.Tensor | None = None
        self.best_k_models: dict[str, torch.Tensor] = {}
        self.kth_best_model_path = ""
        self.kth_value = torch.tensor(torch.inf if mode == "min" else -torch.inf)
        self.best_model_score: torch.Tensor | None = None
        self.best_model_path = ""
        self.last_model_path = ""
        self._last_checkpoint_saved = ""  # the file written most recently (save_last="link" points there)
        self._previous_last: str | None = None  # the last file before a top-k save named the next one
        self._last_global_step_saved = 0  # no step taken, nothing to save
        #: also write last.ckpt at every training epoch's end (set on the checkpoints ember adds itself)
        self.keep_last_current = False
        self._last_time_checked: float | None = None
        self._defer_save_until_validation = (
            False  # a step/time save waits for the monitored validation metric
        )
        self._validation_ran = (
            False  # a missing monitor is an error only once validation ran (Lightning's rule)
        )

    @property
    def every_n_epochs(self) -> int:
        """Epochs between checkpoints (0: none at epoch ends).

        Example:
            >>> ModelCheckpoint(every_n_train_steps=10).every_n_epochs
            0
        """
        return self._every_n_epochs

    @property
    def state_key(self) -> str:
        """Lightning's key, so a Lightning checkpoint's state loads here and the other way round.

        Example:
            >>> ModelCheckpoint(monitor="val_loss").state_key  # doctest: +NORMALIZE_WHITESPACE
            "ModelCheckpoint{'monitor': 'val_loss', 'mode': 'min', 'every_n_train_steps': 0, 'every_n_epochs':
            1, 'train_time_interval': None}"
        """
        settings = {
            "monitor": self.monitor,
            "mode": self.mode,
            "every_n_train_steps": self._every_n_train_steps,
            "every_n_epochs": self._every_n_epochs,
            "train_time_interval": self._train_time_interval,
        }
        return f"{type(self).__qualname__}{settings!r}"

    # ---- hooks: when to save -----------------------------------------------------------------
    def setup(self, trainer: Any, module: Any, stage: str) -> None:
        if self.dirpath is None:
            self.dirpath = default_dirpath(trainer)
        self.dirpath = trainer.strategy.broadcast(self.dirpath)
        if self.save_last == "link" and is_url(self.dirpath):
            raise ConfigError(
                f"ModelCheckpoint(save_last='link') is only supported for local file paths, got "
                f"dirpath={self.dirpath!r}; use save_last=True"
            )
        self._validation_ran = False
        if trainer.is_global_zero:  # a killed run's half-written files (only ember's, only of dead writers)
            remove_stale_temporaries(storage_path(self.dirpath))
        if trainer.is_global_zero and stage == "fit" and self.save_top_k != 0 and _has_files(self.dirpath):
            warnings.warn(
                f"Checkpoint directory {self.dirpath} exists and is not empty.", UserWarning, stacklevel=2
            )

    def on_train_start(self, trainer: Any, module: Any) -> None:
        self._last_time_checked = time.monotonic()

    def on_train_batch_end(self, trainer: Any, module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        step = trainer.progress.global_step  # (attribute reads only: this runs every batch)
        steps_due = self._every_n_train_steps >= 1 and step % self._every_n_train_steps == 0
        if not steps_due and self._train_time_interval is None:
            return
        automatic = getattr(module, "automatic_optimization", True)
        time_due = automatic and self._time_due(
            trainer
        )  # Lightning checks the time only in automatic optimization
        if not steps_due and not time_due:
            return
        candidates = self._monitor_candidates(trainer)
        if self.monitor is not None and self.monitor not in candidates:
            self._defer_save_until_validation = True  # e.g. a validation metric not logged yet
            return
        if automatic and self._validation_follows_this_batch(trainer, batch_idx):
            self._defer_save_until_validation = True  # the monitored value is about to be fresh
            return
        if self._skip_saving(trainer):
            return
        self._save_topk_checkpoint(trainer, candidates)
        self._save_last_checkpoint(trainer, candidates)

    def on_train_epoch_end(self, trainer: Any, module: Any) -> None:
        if self._skip_saving(trainer):
            return
        if self._saves_on_epoch_end(trainer):
            self._save_epoch_checkpoint(trainer)
        if self.save_last and self.keep_last_current and trainer.global_step != self._last_global_step_saved:
            # the checkpoints ember adds itself (see the module text); a user's follows Lightning
            self._save_last_checkpoint(trainer, self._monitor_candidates(trainer))

    def on_validation_end(self, trainer: Any, module: Any) -> None:
        if not trainer.fitting or trainer.sanity_checking:
            return
        self._validation_ran = True
        if self._skip_saving(trainer) or self._saves_on_epoch_end(trainer):
            return
        if self._defer_save_until_validation:
            candidates = self._monitor_candidates(trainer)
            self._save_topk_checkpoint(trainer, candidates)
            self._save_last_checkpoint(trainer, candidates)
            self._defer_save_until_validation = False
            return
        self._save_epoch_checkpoint(trainer)

    def on_exception(self, trainer: Any, module: Any, exception: BaseException) -> None:
        """With `save_on_exception=True`: save a checkpoint (and the last one) when fit fails."""
        if (
            not self.save_on_exception
            or trainer.sanity_checking
            or self._last_global_step_saved == trainer.global_step
        ):
            return
        candidates = self._monitor_candidates(trainer)
        filepath = self.format_checkpoint_name(candidates)
        self._save_checkpoint(trainer, filepath)
        self._save_last_checkpoint(trainer, candidates)
        self._info(
            trainer,
            f"An {type(exception).__name__} was raised with message: {exception}, "
            f"saved checkpoint to {filepath}",
        )

    def on_train_end(self, trainer: Any, module: Any) -> None:
        if self.save_last and not self._last_checkpoint_saved:  # nothing saved at all: still leave a last one
            self._save_last_checkpoint(trainer, self._monitor_candidates(trainer))

    def _save_epoch_checkpoint(self, trainer: Any) -> None:
        candidates = self._monitor_candidates(trainer)
        if self._every_n_epochs >= 1 and (trainer.current_epoch + 1) % self._every_n_epochs == 0:
            self._save_topk_checkpoint(trainer, candidates)
        # A last checkpoint only with a saved one (or, as a link, to the newest saved file).
        if self._last_global_step_saved == trainer.global_step or (
            self.save_last == "link" and self._last_checkpoint_saved
        ):
            self._save_last_checkpoint(trainer, candidates)

    def _skip_saving(self, trainer: Any) -> bool:
        return (
            not trainer.fitting
            or trainer.sanity_checking
            or self._last_global_step_saved == trainer.global_step
        )

    def _time_due(self, trainer: Any) -> bool:
        if self._train_time_interval is None:
            return False
        now = time.monotonic()
        last = self._last_time_checked
        due = last is not None and now - last >= self._train_time_interval.total_seconds()
        due = trainer.strategy.broadcast(due)  # ranks' clocks differ: all follow rank zero
        if due:
            self._last_time_checked = now
        return bool(due)

    def _saves_on_epoch_end(self, trainer: Any) -> bool:
        """Lightning's rule for where an epoch's checkpoint is written: at the end of the training epoch
        (after that epoch's validation, and after the Module's own `on_train_epoch_end`, so an epoch-level
        training metric or one logged there can be monitored) unless validation runs several times an epoch or
        not every epoch; then after each validation. `save_on_train_epoch_end` decides when given."""
        if self._save_on_train_epoch_end is not None:
            return self._save_on_train_epoch_end
        if trainer.check_val_every_n_epoch != 1:
            return False
        if sum(trainer.num_val_batches) == 0:
            return True
        return trainer.val_check_interval == 1.0

    def _validation_follows_this_batch(self, trainer: Any, batch_idx: int) -> bool:
        """The epoch's last batch, with validation right after
        it: a monitored save waits for its fresh value."""
        if self.monitor is None or self._saves_on_epoch_end(trainer):
            return False
        return batch_idx + 1 == trainer.num_training_batches and trainer.will_validate_this_epoch

    # ---- saving ------------------------------------------------------------------------------
    def _monitor_candidates(self, trainer: Any) -> dict[str, torch.Tensor]:
        """The logged metrics, with `epoch` and `step` as integer tensors (a logged "epoch" is a float)."""
        candidates = {
            k: (v.detach().clone() if isinstance(v, torch.Tensor) else v)
            for k, v in trainer.callback_metrics.items()
        }
        epoch, step = candidates.get("epoch"), candidates.get("step")
        candidates["epoch"] = (
            epoch.int() if isinstance(epoch, torch.Tensor) else torch.tensor(trainer.current_epoch)
        )
        candidates["step"] = (
            step.int() if isinstance(step, torch.Tensor) else torch.tensor(trainer.global_step)
        )
        return candidates

    def _save_topk_checkpoint(self, trainer: Any, candidates: dict[str, torch.Tensor]) -> None:
        if self.save_top_k == 0:
            return
        if self.monitor is None:
            self._save_none_monitor_checkpoint(trainer, candidates)
            return
        if self.monitor not in candidates:
            # Lightning's words, which users' tests match
            message = (
                f"`ModelCheckpoint(monitor={self.monitor!r})` could not find the monitored key in the "
                f"returned metrics: {list(candidates)}. HINT: Did you call `log({self.monitor!r}, value)` "
                "in the `LightningModule`?"
            )
            if self._validation_ran:
                raise ConfigError(message)
            _warn_once(message)
        self._save_monitor_checkpoint(trainer, candidates)

    def _save_none_monitor_checkpoint(self, trainer: Any, candidates: dict[str, torch.Tensor]) -> None:
        filepath = self._free_name(trainer, candidates, replaceable=self.best_model_path)
        previous, self.best_model_path = (
            self.best_model_path,
            filepath,
        )  # before saving: it is part of the state
        if self.save_last is True:
            # `last` will be a hard link to this very file, so the state inside must already name it (a fit
            # resumed from it then keeps writing `last.ckpt`, not `last-v1.ckpt`).
            self._previous_last, self.last_model_path = (
                self.last_model_path,
                self._last_filepath(trainer, candidates),
            )
        self._save_checkpoint(trainer, filepath)
        if self.save_top_k == 1 and previous and self._should_remove_checkpoint(trainer, previous, filepath):
            self._remove_checkpoint(trainer, previous)

    def _save_monitor_checkpoint(self, trainer: Any, candidates: dict[str, torch.Tensor]) -> None:
        current = candidates.get(self.monitor) if self.monitor is not None else None
        if current is not None:
            # DDP: saving is collective, so every rank must decide alike: all use rank zero's value.
            current = trainer.strategy.broadcast(torch.as_tensor(current).detach().cpu())
        if self.check_monitor_top_k(trainer, current):
            assert current is not None
            self._update_best_and_save(current, trainer, candidates)
        elif self.verbose:
            self._info(
                trainer,
                f"Epoch {int(candidates['epoch']):d}, global step {int(candidates['step']):d}: "
                f"{self.monitor!r} was not in top {self.save_top_k}",
            )

    def check_monitor_top_k(self, trainer: Any, current: torch.Tensor | None = None) -> bool:
        """Whether `current` enters the best `save_top_k` (a NaN only while fewer than k are kept).

        Example:
            >>> ckpt = ModelCheckpoint(monitor="val_loss", save_top_k=1)
            >>> ckpt.check_monitor_top_k(None, torch.tensor(0.5))
            True
        """
        if current is None:
            return False
        if self.save_top_k == -1 or len(self.best_k_models) < self.save_top_k:
            return True
        kth = self.best_k_models[self.kth_best_model_path]
        return bool(current < kth) if self.mode == "min" else bool(current > kth)

    def _update_best_and_save(
        self, current: torch.Tensor, trainer: Any, candidates: dict[str, torch.Tensor]
    ) -> None:
        k = len(self.best_k_models) + 1 if self.save_top_k == -1 else self.save_top_k
        dropped = None
        if len(self.best_k_models) == k and k > 0:
            dropped = self.kth_best_model_path
            self.best_k_models.pop(dropped)
        if torch.isnan(current):  # kept as the worst possible value, never as NaN
            current = torch.tensor(float("inf" if self.mode == "min" else "-inf"), device=current.device)
        filepath = self._free_name(trainer, candidates, replaceable=dropped)
        self.current_score = current
        self.best_k_models[filepath] = current
        worst, best = (max, min) if self.mode == "min" else (min, max)
        if len(self.best_k_models) == k:
            self.kth_best_model_path = worst(self.best_k_models, key=self.best_k_models.__getitem__)
            self.kth_value = self.best_k_models[self.kth_best_model_path]
        self.best_model_path = best(self.best_k_models, key=self.best_k_models.__getitem__)
        self.best_model_score = self.best_k_models[self.best_model_path]
        if self.verbose:
            self._info(
                trainer,
                f"Epoch {int(candidates['epoch']):d}, global step {int(candidates['step']):d}: "
                f"{self.monitor!r} reached {float(current):0.5f} (best {float(self.best_model_score):0.5f}), "
                f"saving model to {filepath!r} as top {k}",
            )
        self._save_checkpoint(trainer, filepath)
        if dropped and self._should_remove_checkpoint(trainer, dropped, filepath):
            self._remove_checkpoint(trainer, dropped)

    def _save_last_checkpoint(self, trainer: Any, candidates: dict[str, torch.Tensor]) -> None:
        if not self.save_last:
            return
        filepath = self._last_filepath(trainer, candidates)
        previous = self.last_model_path if self._previous_last is None else self._previous_last
        self.last_model_path, self._previous_last = filepath, None  # before saving: part of the state
        newest = self._last_checkpoint_saved
        if self.save_last == "link" and newest and self.save_top_k != 0:
            self._symlink(trainer, newest, filepath)
        elif not self._hard_link_to_newest(trainer, filepath):
            self._save_checkpoint(trainer, filepath)
        if previous and self._should_remove_checkpoint(trainer, previous, filepath):
            self._remove_checkpoint(trainer, previous)

    def _last_filepath(self, trainer: Any, candidates: dict[str, torch.Tensor]) -> str:
        filepath = self.format_checkpoint_name(candidates, self.CHECKPOINT_NAME_LAST)
        if self._enable_version_counter:
            version = self.STARTING_VERSION
            while self.file_exists(filepath, trainer) and filepath != self.last_model_path:
                filepath = self.format_checkpoint_name(candidates, self.CHECKPOINT_NAME_LAST, ver=version)
                version += 1
        return filepath

    def _hard_link_to_newest(self, trainer: Any, filepath: str) -> bool:
        """save_last=True without a monitor: the file written at this very step holds the same state, so
        `last` becomes a hard link to it instead of a second write. Only rank zero touches the files; every
        rank learns whether it worked, so all or none go on to save (a collective)."""
        newest = self._last_checkpoint_saved
        if (
            self.monitor is not None
            or self.save_top_k == 0
            or self._last_global_step_saved != trainer.global_step
        ):
            return False
        if not newest or newest == filepath:
            return False
        linked = False
        if trainer.is_global_zero and storage_path(newest).exists():
            try:
                atomic_link(newest, filepath)
                linked = True
            except OSError:
                pass
        linked = bool(trainer.strategy.broadcast(linked))
        if linked:
            self._notify_loggers(trainer)
        return linked

    @staticmethod
    def _symlink(trainer: Any, target: str, linkpath: str) -> None:
        """save_last="link": `linkpath` becomes a relative
        symbolic link to `target` (a copy where links fail)."""
        if trainer.is_global_zero and os.path.abspath(target) != os.path.abspath(linkpath):
            from ember.errors import UnsafePathError
            from ember.fs import copy_file, symlink

            if os.path.isdir(linkpath) and not os.path.islink(
                linkpath
            ):  # a link or file is replaced atomically
                # Lightning rmtree-s a folder there; ember never deletes a folder it did not write
                raise UnsafePathError(
                    f"{linkpath} is a folder, not a checkpoint ember wrote; ember leaves it alone: "
                    "move it away or pick another dirpath"
                )
            try:
                symlink(os.path.relpath(target, os.path.dirname(linkpath)), linkpath)
            except OSError:  # e.g. Windows without the right to make links
                copy_file(target, linkpath)
        trainer.strategy.barrier("ModelCheckpoint.link")

    def _save_checkpoint(self, trainer: Any, filepath: str) -> None:
        trainer.check_finite_loss()
        trainer.save_checkpoint(filepath, self.save_weights_only)
        self._last_global_step_saved = trainer.global_step
        self._last_checkpoint_saved = filepath
        self._notify_loggers(trainer)

    def _notify_loggers(self, trainer: Any) -> None:
        if trainer.is_global_zero:  # Lightning's hook: MLFlowLogger uploads the files (log_model)
            for logger in trainer.loggers:
                logger.after_save_checkpoint(self)

    def _free_name(self, trainer: Any, candidates: dict[str, torch.Tensor], replaceable: str | None) -> str:
        """The formatted name, with -v1, -v2, ... while a file of that name exists (unless it is
        `replaceable`, the file this save replaces, or the version counter is off: then it is overwritten)."""
        filepath = self.format_checkpoint_name(candidates)
        if self._enable_version_counter:
            version = self.STARTING_VERSION
            while self.file_exists(filepath, trainer) and filepath != replaceable:
                filepath = self.format_checkpoint_name(candidates, ver=version)
                version += 1
        return filepath

    def file_exists(self, filepath: str | os.PathLike[str], trainer: Any) -> bool:
        """Whether `filepath` exists, as rank zero sees it (every rank gets the same answer).

        Example:
            >>> import tempfile, ember
            >>> ModelCheckpoint().file_exists(tempfile.mkdtemp() + "/none.ckpt", ember.Trainer(logger=False))
            False
        """
        exists = storage_path(filepath).exists() if trainer.is_global_zero else False
        return bool(trainer.strategy.broadcast(exists))

    def _should_remove_checkpoint(self, trainer: Any, previous: str, current: str) -> bool:
        """Never the file just written, the file this fit resumed from, or a file outside `dirpath` (locally).

        The names come from records a checkpoint restores (``best_k_models``): a name with ``..`` or a link
        leading out of `dirpath`, or one that is not a checkpoint file, is never deleted."""
        if previous == current:
            return False
        if is_url(previous):
            return True
        old = Path(previous).absolute()
        if trainer.ckpt_path is not None and old == Path(trainer.ckpt_path).absolute():
            return False
        assert self.dirpath is not None
        other_folder = os.path.isdir(old) and not is_checkpoint_folder(old)  # checkpoint folders may go
        if ".." in old.parts or not old.name.endswith(self.FILE_EXTENSION) or other_folder:
            return False
        return Path(self.dirpath).absolute() in old.parents and within(self.dirpath, old.parent)

    def _remove_checkpoint(self, trainer: Any, filepath: str) -> None:
        if not trainer.is_global_zero:
            return
        if is_checkpoint_folder(Path(filepath)):  # ModelParallelStrategy(save_distributed_checkpoint=True)
            assert self.dirpath is not None  # a superseded checkpoint was saved under it
            remove_tree(filepath, self.dirpath)
        else:
            remove_file(filepath)

    def _info(self, trainer: Any, message: str) -> None:
        if (
            trainer.is_global_zero
        ):  # Lightning logs it at INFO on rank zero, which its handler prints on stderr
            print(message, file=sys.stderr)

    def save_now(self, trainer: Any) -> str:
        """Write the last checkpoint immediately (on SIGTERM / Ctrl-C); returns its path."""
        if self.dirpath is None:
            self.dirpath = default_dirpath(trainer)
        filepath = self._last_filepath(trainer, self._monitor_candidates(trainer))
        self.last_model_path = filepath  # before saving: part of the state
        trainer.save_checkpoint(filepath)
        return filepath

    # ---- names -------------------------------------------------------------------------------
    def format_checkpoint_name(
        self,
        metrics: dict[str, Any],
        filename: str | None = None,
        ver: int | None = None,
        prefix: str | None = None,
    ) -> str:
        """The checkpoint path for `metrics` (Lightning's rules; see `checkpoint_naming.format_template`).

        Example:
            >>> ckpt = ModelCheckpoint(filename="{epoch:03d}")
            >>> ckpt.format_checkpoint_name({"epoch": 5})
            'epoch=005.ckpt'
            >>> ckpt.format_checkpoint_name({"epoch": 5}, ver=2)
            'epoch=005-v2.ckpt'
        """
        name = format_template(
            filename or self.filename,
            metrics,
            join_char=self.CHECKPOINT_JOIN_CHAR,
            equals_char=self.CHECKPOINT_EQUALS_CHAR,
            auto_insert_metric_name=self.auto_insert_metric_name,
            prefix=prefix,
        )
        if ver is not None:
            name = self.CHECKPOINT_JOIN_CHAR.join((name, f"v{ver}"))
        name = f"{name}{self.FILE_EXTENSION}"
        return _join(self.dirpath, name) if self.dirpath else name

    def to_yaml(self, filepath: str | os.PathLike[str] | None = None) -> None:
        """Write `best_k_models` (path: score) as YAML, by default to `<dirpath>/best_k_models.yaml`.

        Example:
            >>> import tempfile
            >>> ckpt = ModelCheckpoint(dirpath=tempfile.mkdtemp(), monitor="val_loss")
            >>> ckpt.best_k_models = {"a.ckpt": torch.tensor(0.5)}
            >>> ckpt.to_yaml()
            >>> open(os.path.join(ckpt.dirpath, "best_k_models.yaml")).read()
            'a.ckpt: 0.5\\n'
        """
        import yaml

        best_k = {k: v.item() for k, v in self.best_k_models.items()}
        if filepath is None:
            assert self.dirpath
            filepath = _join(self.dirpath, "best_k_models.yaml")
        with atomic_write(filepath, "w") as f:
            yaml.dump(best_k, f)

    # ---- state -------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Lightning's keys (so either library resumes the other's), plus the step last saved.

        Example:
            >>> sorted(ModelCheckpoint().state_dict())[:4]
            ['best_k_models', 'best_model_path', 'best_model_score', 'current_score']
        """
        return {
            "monitor": self.monitor,
            "best_model_score": self.best_model_score,
            "best_model_path": self.best_model_path,
            "current_score": self.current_score,
            "dirpath": self.dirpath,
            "best_k_models": dict(self.best_k_models),
            "kth_best_model_path": self.kth_best_model_path,
            "kth_value": self.kth_value,
            "last_model_path": self.last_model_path,
            "last_global_step_saved": self._last_global_step_saved,
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what was kept; from another folder only
        `best_model_path`, with a warning (as Lightning)."""
        saved_dir = state_dict.get("dirpath", self.dirpath)
        if self.dirpath is None or (saved_dir is not None and _same_folder(self.dirpath, saved_dir)):
            if saved_dir is not None:
                self.dirpath = saved_dir if is_url(saved_dir) else str(saved_dir)
            self.best_model_score = _as_tensor(state_dict.get("best_model_score"))
            self.kth_best_model_path = state_dict.get("kth_best_model_path", self.kth_best_model_path)
            self.kth_value = _as_tensor(state_dict.get("kth_value", self.kth_value))
            kept = state_dict.get("best_k_models", self.best_k_models)
            self.best_k_models = {k: _as_tensor(v) for k, v in kept.items()}
            self.last_model_path = state_dict.get("last_model_path", self.last_model_path)
            self._last_global_step_saved = state_dict.get(
                "last_global_step_saved", self._last_global_step_saved
            )
        else:
            warnings.warn(
                f"The dirpath has changed from {saved_dir!r} to {self.dirpath!r}, therefore "
                "`best_model_score`, `kth_best_model_path`, `kth_value`, `last_model_path` and "
                "`best_k_models` won't be reloaded. Only `best_model_path` will be reloaded.",
                stacklevel=2,
            )
        self.best_model_path = state_dict.get("best_model_path", "")


_warned: set[str] = set()


def _warn_once(message: str) -> None:
    if message not in _warned:  # Lightning's warning cache: once per message and process
        _warned.add(message)
        warnings.warn(message, UserWarning, stacklevel=3)


def _resolve_dirpath(dirpath: str | os.PathLike[str] | None) -> str | None:
    """Lightning's `dirpath`: a local folder as its real, absolute path; a URL as given."""
    if not dirpath:
        return None
    path = storage_path(dirpath)
    if isinstance(path, RemotePath) or is_url(str(path)):
        return str(path)
    return os.path.realpath(os.path.expanduser(path))


def _has_files(folder: str) -> bool:
    """Whether a local `folder` holds anything (Lightning warns then; object stores are not listed)."""
    if is_url(folder) or not os.path.isdir(folder):
        return False
    with os.scandir(folder) as entries:
        return any(True for _ in entries)


def _join(folder: str, name: str) -> str:
    return str(storage_path(folder) / name) if is_url(folder) else os.path.join(folder, name)


def _step_and_epoch_triggers(
    every_n_train_steps: int | None, every_n_epochs: int | None, train_time_interval: timedelta | None
) -> tuple[int, int]:
    """Lightning's defaults: every epoch when no trigger is given, else 0 for the triggers not given."""
    if every_n_train_steps is None and every_n_epochs is None and train_time_interval is None:
        return 0, 1
    return every_n_train_steps or 0, every_n_epochs or 0


def _check_configuration(
    save_top_k: int,
    every_n_train_steps: int,
    every_n_epochs: int,
    train_time_interval: timedelta | None,
    monitor: str | None,
) -> None:
    """Lightning's MisconfigurationExceptions, as ConfigError."""
    if save_top_k < -1:
        raise ConfigError(f"ModelCheckpoint: invalid value for save_top_k={save_top_k}; must be >= -1")
    if every_n_train_steps < 0:
        raise ConfigError(
            f"ModelCheckpoint: invalid value for every_n_train_steps={every_n_train_steps}; must be >= 0"
        )
    if every_n_epochs < 0:
        raise ConfigError(f"ModelCheckpoint: invalid value for every_n_epochs={every_n_epochs}; must be >= 0")
    triggers = (every_n_train_steps >= 1) + (every_n_epochs >= 1) + (train_time_interval is not None)
    if triggers > 1:
        raise ConfigError(
            f"ModelCheckpoint: combination of parameters every_n_train_steps={every_n_train_steps}, "
            f"every_n_epochs={every_n_epochs} and train_time_interval={train_time_interval} should be "
            "mutually exclusive; use one ModelCheckpoint per trigger"
        )
    if monitor is None and save_top_k not in (-1, 0, 1):
        raise ConfigError(
            f"ModelCheckpoint(save_top_k={save_top_k}, monitor=None) is not a valid configuration: no "
            "quantity for top_k to track; pass monitor=... or save_top_k=-1 (keep all)"
        )


def _as_tensor(value: Any) -> Any:
    """Scores are tensors in Lightning; numbers from older ember checkpoints become tensors too."""
    return torch.tensor(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else value


def _same_folder(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    return storage_path(a).resolve() == storage_path(b).resolve()
