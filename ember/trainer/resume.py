"""Resuming: every decision about it, in one file.

1. Which file: `ckpt_path` is "last" (this run's own checkpoint folder only, never a search of
   everything below the root), "best", or a path; a plain `torch.save` file is refused with a hint.
2. Whether it fits: module keys and shapes, hyperparameters (an error when ember chose the file, a
   warning when the user named it), optimizer class and parameter groups.
3. Which run folder: a checkpoint inside `lightning_logs/version_N/checkpoints` continues version N.
4. What the loops still do after the participants are restored (`ResumePlan`): finish an epoch
   whose checkpoint was written inside `on_train_epoch_end`; skip the batches already trained;
   run the validation due at the resume point if it had not run; put back the RNG streams — at the
   start of fit when resuming at an epoch boundary, else after the data was fast-forwarded.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from ember.callbacks.model_checkpoint import ModelCheckpoint
from ember.callbacks.on_exception_checkpoint import OnExceptionCheckpoint
from ember.checkpoint import (
    LAST_NAME,
    describe_plain_file,
    describe_state_dict_mismatch,
    find_last_checkpoint,
    load_checkpoint,
    to_safe,
)
from ember.errors import CheckpointError
from ember.fs import RemotePath, storage_path
from ember.lightning_checkpoint import from_lightning, is_lightning_checkpoint, resume_note, resume_point
from ember.runtime.seed import restore_rng_state
from ember.trainer.dataloaders import EpochIterator
from ember.trainer.progress import Progress

if TYPE_CHECKING:
    from ember.callbacks.callback import Callback
    from ember.runtime.strategies import Strategy
    from ember.trainer.run import Run

LOG_FOLDER = "lightning_logs"


@dataclasses.dataclass
class ResumePlan:
    """What a restored checkpoint asks of the loops; empty (all no-ops) for a fresh run.

    Example:
        >>> plan = ResumePlan()
        >>> plan.epoch_left_open(Progress(epoch_finished=True, epoch_closed=False))
        True
    """

    rng: dict[str, Any] | None = None  # the RNG streams when the checkpoint was written
    epoch_start_rng: dict[str, Any] | None = None  # at the start of its epoch: replays a DataLoader's shuffle
    training_state: tuple[dict[str, Any], Any] | None = (
        None  # (checkpoint, where): optimizers after on_fit_start
    )
    resharded: Any = None  # this rank's share of the epoch's rest, after a resume on another world size
    resharded_epoch: tuple[int, dict[str, Any]] | None = (
        None  # (epoch, its layout) while that rest is trained
    )
    data_states: dict[str, Any] = dataclasses.field(
        default_factory=dict
    )  # the data's, loaded when it is fetched

    @staticmethod
    def epoch_left_open(progress: Progress) -> bool:
        """Written inside `on_train_epoch_end`: the epoch's metrics and epoch schedulers are still to do."""
        return progress.epoch_finished and not progress.epoch_closed

    def restore_rng_at_fit_start(self, progress: Progress) -> None:
        """Resuming at an epoch boundary: the streams continue from here (mid-epoch: after the data)."""
        if self.rng is not None and not progress.mid_epoch:
            restore_rng_state(self.rng)
            self.rng = self.epoch_start_rng = None

    def start_epoch(self, data: EpochIterator, progress: Progress) -> Iterator[Any]:
        """This epoch's batches, after those trained before the checkpoint."""
        if self.resharded is not None:  # see participants.DataLayout
            rest, self.resharded = self.resharded, None
            return iter(rest)
        return data.start(progress.batch_idx, self.epoch_start_rng)

    def restore_rng_mid_epoch(self, progress: Progress) -> None:
        """After `on_train_epoch_start` of a mid-epoch resume: continue the checkpoint's streams."""
        if progress.batch_idx and self.rng is not None:
            restore_rng_state(self.rng)
        self.rng = self.epoch_start_rng = None

    @staticmethod
    def validation_pending(progress: Progress, due_at_resume_point: bool) -> bool:
        """The checkpoint was written between a batch and the validation due after it."""
        return bool(progress.batch_idx) and due_at_resume_point and progress.val_done_at != progress.batch_idx


# ---- 1. which file --------------------------------------------------------------------------
def resolve_ckpt_path(
    ckpt_path: Any,
    own_folders: Sequence[str | Path | RemotePath],
    root: Path | RemotePath,
    best: str,
    is_global_zero: bool,
    last_name: str = LAST_NAME[:-5],
    exception_files: tuple[str, ...] = (),
) -> Path | RemotePath | None:
    """The file `ckpt_path` names. "last": the ModelCheckpoint's `last_name` file (CHECKPOINT_NAME_LAST) in
    this run's own folder, or an OnExceptionCheckpoint's file (`exception_files`), whichever is newer
    (Lightning's rule)."""
    if ckpt_path == "last":
        found = next(
            (f for f in (find_last_checkpoint(folder, last_name) for folder in own_folders) if f), None
        )
        candidates = [p for p in (found, *(Path(f) for f in exception_files)) if p is not None and p.exists()]
        if candidates:
            return (
                max(candidates, key=lambda p: p.stat().st_mtime_ns) if len(candidates) > 1 else candidates[0]
            )
        if is_global_zero:
            where = ", ".join(str(f) for f in own_folders) or str(root / LOG_FOLDER)
            print(
                f"ember: ckpt_path='last' but there is no {last_name}.ckpt in {where}; starting from scratch"
                f"{classic_files_note(root)}",
                file=sys.stderr,
            )
        return None
    if ckpt_path == "best":
        if not best:
            raise CheckpointError(
                "ckpt_path='best' but no best checkpoint was saved yet; train with a ModelCheckpoint first"
            )
        return storage_path(best)
    return storage_path(ckpt_path)


#: What the classic training script saves (torch.save of the state_dicts), which --resume does not read.
CLASSIC_FILES = ("model.pth", "optimiser.pth", "optimizer.pth")


def classic_files_note(root: Path | RemotePath) -> str:
    """For the 'starting from scratch' line: the classic script's model.pth/optimiser.pth in the working
    folder or `root` are named, with how to start from the weights (they are plain state_dicts, not ember
    checkpoints)."""
    # the classic script writes to a local folder; `Path(root)` of a RemotePath (a URL root) raised here
    folders = dict.fromkeys([Path.cwd(), *([Path(root)] if isinstance(root, Path) else [])])
    found = [folder / name for folder in folders for name in CLASSIC_FILES if (folder / name).is_file()]
    if not found:
        return ""
    model = next((str(f) for f in found if f.name == "model.pth"), None)
    how = (
        (
            "to start from its weights, load them in your Module's __init__ with "
            "self.load_state_dict(torch.load("
            f"{model!r}, weights_only=True)) and fit without --resume; the optimizer starts afresh"
        )
        if model
        else "ember cannot resume from an optimizer state alone"
    )
    return (
        f"; {', '.join(str(f) for f in found)} are the classic script's plain state_dicts, not ember "
        "checkpoints "
        f"(--resume reads only last.ckpt): {how}"
    )


def own_checkpoint_folders(
    given: Sequence[str], logger_dir: str | None, root: Path | RemotePath, logger_off: bool = False
) -> Sequence[str | Path | RemotePath]:
    """Where this run's `last.ckpt` can be: the ModelCheckpoint's own dirpath when one was given;
    else the checkpoints folder of this run's logger; with ``logger=False``, default_root_dir/checkpoints
    (where Lightning's ModelCheckpoint writes without a logger); else that of the version folder under
    default_root_dir/lightning_logs that was written most recently. Never a search of everything below
    the root, which would pick up another experiment's checkpoint."""
    if given:
        return given
    if logger_dir:
        return [storage_path(logger_dir) / "checkpoints"]
    if logger_off:
        return [root / "checkpoints"]
    logs = root / LOG_FOLDER
    versions = [
        p / "checkpoints" for p in logs.glob("version_*") if (p / "checkpoints" / LAST_NAME).is_file()
    ]
    return sorted(versions, key=lambda p: (p / LAST_NAME).stat().st_mtime_ns, reverse=True)[:1]


def load_for_resume(path: Path | RemotePath, weights_only: bool | None, strategy: Strategy) -> dict[str, Any]:
    """The checkpoint at `path`, loaded safely unless `weights_only=False` (the user's word that it is
    trusted). A strategy that `loads_checkpoint_folders` (ModelParallelStrategy) reads a checkpoint folder's
    tensors into its own shards later, so they are left out here (`load_checkpoint(into_shards=True)`)."""
    checkpoint = load_checkpoint(
        path, weights_only=weights_only, into_shards=strategy.loads_checkpoint_folders
    )
    if isinstance(checkpoint, dict) and is_lightning_checkpoint(checkpoint):
        return _from_lightning(checkpoint, path)
    plain = describe_plain_file(checkpoint)
    if plain is not None:
        raise CheckpointError(
            f"{path} is {plain}, not an ember checkpoint, so there is nothing to resume; "
            f"{_how_to_start_from(plain, path)}"
        )
    return checkpoint


def _from_lightning(checkpoint: dict[str, Any], path: Path | RemotePath) -> dict[str, Any]:
    """A file written by Lightning's Trainer: resumed from what it holds, saying once what it lacks."""
    converted = from_lightning(checkpoint, str(path))
    if os.environ.get("RANK", "0") == "0":  # one line per run, not one per DDP rank
        print(resume_note(resume_point(checkpoint, str(path)), str(path)), file=sys.stderr)
    return converted


def _how_to_start_from(plain: str, path: Any) -> str:
    if "optimizer" in plain:
        return (
            f"to start from it, load it yourself: optimizer.load_state_dict(torch.load({str(path)!r}, "
            "weights_only=True)) in configure_optimizers, and call fit without ckpt_path"
        )
    return (
        f"to start from these weights, load them first: model.load_state_dict(torch.load({str(path)!r}, "
        "weights_only=True)), then call fit without ckpt_path"
    )


# ---- 3. which run folder --------------------------------------------------------------------
def version_of_checkpoint(ckpt_file: Path | RemotePath | None, root: Path | RemotePath) -> int | None:
    """N when the checkpoint is `root/lightning_logs/version_N/checkpoints/<file>`, else None."""
    if ckpt_file is None or ckpt_file.parent.name != "checkpoints":
        return None
    run_dir = ckpt_file.parent.parent
    if run_dir.parent.resolve() == (root / LOG_FOLDER).resolve() and run_dir.name.startswith("version_"):
        return int(run_dir.name.split("_", 1)[1])
    return None


# ---- 2. whether it fits ---------------------------------------------------------------------
def check_hyperparameters(saved: Any, current: Any, where: Any, chosen_by_ember: bool) -> None:
    """A resume whose module was built with other hyperparameters than the checkpoint's says so: an
    error when ember chose the file (ckpt_path="last" may have found another experiment's run), a
    warning when the user named the file (a deliberate change, e.g. more epochs)."""
    if saved is None:
        return
    differences = hparams_differences(saved, current)
    if not differences:
        return
    if chosen_by_ember:
        raise CheckpointError(
            f"ckpt_path='last' found {where}, whose hyperparameters differ from this model's "
            f"({differences}), so it "
            "may be another experiment's run; pass that file as ckpt_path to resume it anyway, or give each "
            "experiment its own ModelCheckpoint(dirpath=...) or default_root_dir"
        )
    warnings.warn(
        f"resuming from {where}, whose hyperparameters differ from this model's ({differences}); the "
        "optimizer and scheduler states come from the checkpoint",
        stacklevel=6,
    )


def hparams_differences(saved: Any, current: Any) -> str:
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
        return (
            isinstance(a, torch.Tensor)
            and isinstance(b, torch.Tensor)
            and a.shape == b.shape
            and bool(torch.equal(a, b))
        )
    try:
        return bool(a == b)
    except Exception:  # comparing exotic values: treat as different rather than fail the resume
        return False


def class_name(obj: Any) -> str:
    return f"{type(obj).__module__}.{type(obj).__qualname__}"


_CLASS_SETTINGS = frozenset(
    {
        "betas",
        "momentum",
        "dampening",
        "nesterov",
        "alpha",
        "centered",
        "rho",
        "lr_decay",
        "etas",
        "step_sizes",
        "lambd",
        "t0",
        "momentum_decay",
        "initial_accumulator_value",
    }
)


def optimizer_mismatch(optimizer: torch.optim.Optimizer, state: Any, saved_type: str | None) -> str | None:
    """Why `state` cannot be loaded into `optimizer` (torch would fail later, e.g. `KeyError: 'betas'` at
    the first step), or None."""
    now = class_name(optimizer)
    if saved_type is not None and saved_type.rsplit(".", 1)[-1] != now.rsplit(".", 1)[-1]:
        saved = saved_type.rsplit(".", 1)[-1]
        return (
            f"the checkpoint holds the state of {saved} but configure_optimizers returns "
            f"{type(optimizer).__name__}"
        )
    groups = state.get("param_groups") if isinstance(state, dict) else None
    if not isinstance(groups, list):
        return "the checkpoint's optimizer state has no param_groups"
    if len(groups) != len(optimizer.param_groups):
        made = len(optimizer.param_groups)
        return f"the checkpoint has {len(groups)} parameter groups, configure_optimizers makes {made}"
    for i, (old, new) in enumerate(zip(groups, optimizer.param_groups, strict=True)):
        if len(old.get("params", [])) != len(new["params"]):
            held = len(old.get("params", []))
            return f"parameter group {i} holds {held} parameters in the checkpoint, {len(new['params'])} now"
        # Settings that only some optimizer classes have (torch adds flags like 'foreach' over versions:
        # those a newer torch fills in itself, so they do not count).
        absent = [k for k in new if k in _CLASS_SETTINGS and k not in old]
        if absent and saved_type is None:
            return (
                f"the saved optimizer has no {absent[0]!r} setting, so it was not {type(optimizer).__name__} "
                f"(settings saved: {sorted(k for k in old if k != 'params')[:6]})"
            )
    return None


def checkpoint_file(
    ckpt_path: Any,
    callbacks: list[Callback],
    logger_dir: Callable[[], str | None],
    logger_off: bool,
    root: Path | RemotePath,
    is_global_zero: bool,
) -> Path | RemotePath | None:
    """The file `fit/validate/test/predict(ckpt_path=...)` loads: "last", "best", "hpc"... resolved against
    the checkpoint callbacks' folders and the run folder (`resolve_ckpt_path`); None without a ckpt_path.
    `logger_dir` is asked only for "last": reading a logger's folder may start its run (MLflow's run id,
    which a resumed run must take from the checkpoint instead)."""
    if ckpt_path is None:
        return None
    own: Sequence[str | Path | RemotePath] = []
    model_checkpoint = next((cb for cb in callbacks if isinstance(cb, ModelCheckpoint)), None)
    last_name = model_checkpoint.CHECKPOINT_NAME_LAST if model_checkpoint is not None else "last"
    exception_files = tuple(cb.ckpt_path for cb in callbacks if isinstance(cb, OnExceptionCheckpoint))
    if ckpt_path == "last":  # only then: reading a logger's folder may start its run (MLflow)
        given = [cb.dirpath for cb in callbacks if isinstance(cb, ModelCheckpoint) and cb.dirpath is not None]
        own = own_checkpoint_folders(given, logger_dir(), root, logger_off=logger_off)
    from ember.callbacks.checkpoint import Checkpoint

    # Lightning reads the first checkpoint callback (trainer.checkpoint_callback)
    first = next((cb for cb in callbacks if isinstance(cb, Checkpoint)), None)
    best = getattr(first, "best_model_path", "")
    return resolve_ckpt_path(ckpt_path, own, root, best, is_global_zero, last_name, exception_files)


def check_checkpoint(
    run: Run, ckpt: dict[str, Any], where: Path | RemotePath | None, chosen_by_ember: bool
) -> None:
    """The module's `on_load_checkpoint` (Lightning refuses self.log there), then whether the (maybe changed)
    checkpoint fits the module and the stage."""
    module = run.module
    with run.reporter.refusing_logs("on_load_checkpoint"):
        module.on_load_checkpoint(ckpt)  # Lightning: before the weights are loaded, to rename or fix them
    # strict_loading=False (Lightning's attribute): missing and extra keys are let through; shapes must fit
    state = ckpt.get("state_dict", {})
    problem = describe_state_dict_mismatch(module, state) if module.strict_loading else None
    if problem:
        raise CheckpointError(
            f"{where} was saved from {ckpt.get('module_class', 'another model')} and does not fit "
            f"{type(module).__name__}: {problem}; pass the checkpoint of this model or start without "
            "ckpt_path"
        )
    if run.stage == "fit" and "optimizer_states" not in ckpt:  # Lightning's restore fails here too
        raise CheckpointError(
            f"{where} holds only the model's weights (ModelCheckpoint(save_weights_only=True)), not the "
            "optimizer and loop state fit resumes; start from it with Module.load_from_checkpoint(...) "
            "and fit without ckpt_path"
        )
    if run.stage == "fit":
        check_hyperparameters(
            ckpt.get("hyper_parameters"), to_safe(dict(module.hparams)), where, chosen_by_ember
        )
