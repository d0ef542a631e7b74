"""Resume state as participants: one registry lists everything a checkpoint saves and restores.

Each participant is an object with `state_dict()` / `load_state_dict(state)` stored under one
top-level key of the checkpoint; a checkpoint is their collection plus a few descriptive entries
(`METADATA`: versions, the module's class and hyperparameters, epoch and step for people reading
the file). A new piece of state adds itself to `registry` and is then saved, restored and covered
by the participants round-trip test (tests/trainer/test_participants.py) with nothing else to do.

Keys are those ember has always written (`state_dict` holds the module's weights: `ember predict`
and `Module.load_from_checkpoint` read it), so older checkpoints keep loading. A key missing from
an older file leaves its participant as it is.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, Protocol

import torch

from ember.checkpoint import FORMAT_VERSION, save_checkpoint, to_safe
from ember.errors import CheckpointError, ConfigError
from ember.lightning_checkpoint import LIGHTNING_KEYS, VERSION_KEY, lightning_keys
from ember.loggers.base import Logger
from ember.runtime import reshard
from ember.runtime.seed import capture_rng_state
from ember.trainer.dataloaders import length_of
from ember.trainer.resume import class_name, optimizer_mismatch
from ember.version import __version__

if TYPE_CHECKING:
    from ember.trainer.run import Run

#: Descriptive entries, not restored (the hyperparameters are compared, see resume.check_hyperparameters).
METADATA = (
    "format_version",
    "ember_version",
    "torch_version",
    "module_class",
    "epoch",
    "global_step",
    "hyper_parameters",
    "optimizer_types",
    *LIGHTNING_KEYS,
)
#: What `save_checkpoint(..., weights_only=True)` keeps (Lightning's: no callbacks, optimizers nor
#: schedulers), with whatever the module's `on_save_checkpoint` adds.
WEIGHTS_ONLY = (
    "format_version",
    "ember_version",
    "module_class",
    "state_dict",
    "hyper_parameters",
    "epoch",
    "global_step",
    VERSION_KEY,
    "hparams_name",
    "loops",
    "datamodule",
    "datamodule_hyper_parameters",
)


class Participant(Protocol):
    def state_dict(self) -> Any: ...
    def load_state_dict(self, state: Any) -> None: ...


class ModuleWeights:
    """The module's weights, gathered by a sharding strategy (FSDP) and scattered back on load."""

    def __init__(self, run: Run) -> None:
        self.run = run

    def state_dict(self) -> dict[str, Any]:
        return self.run.strategy.module_state_dict(self.run.module)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        module = self.run.module
        if getattr(module, "strict_loading", True):
            self.run.strategy.load_module_state_dict(module, state)  # FSDP scatters into the shards
        elif self.run.strategy.name in ("fsdp", "model_parallel"):
            raise ConfigError(
                f"strict_loading=False cannot resume a strategy={self.run.strategy.name!r} run (its weights "
                "are scattered by name); make the module's weights match the checkpoint's and keep "
                "strict_loading"
            )
        else:
            module.load_state_dict(
                state, strict=False
            )  # the module's strict_loading=False (Lightning's attribute)


class Optimizers:
    """Every optimizer's state (a sharding strategy gathers the full state); checked before loading."""

    def __init__(self, run: Run) -> None:
        self.run = run

    def state_dict(self) -> list[Any]:
        return [self.run.strategy.optimizer_state_dict(opt) for opt in self.run.optimizers]

    def load_state_dict(
        self, states: list[Any], saved_types: list[str | None] | None = None, where: Any = ""
    ) -> None:
        optimizers, module = self.run.optimizers, self.run.module
        if len(states) != len(optimizers):
            raise CheckpointError(
                f"{where} has {len(states)} optimizer states but the model configures {len(optimizers)}"
            )
        load = self.run.strategy.load_optimizer_state_dict
        for opt, state, saved_type in zip(
            optimizers, states, saved_types or [None] * len(states), strict=True
        ):
            problem = optimizer_mismatch(opt, state, saved_type)
            if problem:
                raise CheckpointError(
                    f"{where} cannot resume {type(module).__name__}'s optimizer: {problem}; resume with the "
                    "optimizer the run was started with, or start a new run from the weights only "
                    "(Module.load_from_checkpoint, then fit without ckpt_path)"
                )
            load(opt, state)


class Schedulers:
    def __init__(self, run: Run) -> None:
        self.run = run

    def state_dict(self) -> list[Any]:
        return [c.scheduler.state_dict() for c in self.run.schedulers]

    def load_state_dict(self, states: list[Any]) -> None:
        for config, state in zip(self.run.schedulers, states, strict=False):
            config.scheduler.load_state_dict(state)


class RNGStreams:
    """torch (CPU and CUDA), numpy and Python's random streams. Loading hands them to the resume plan:
    they are put back when the loop reaches the checkpoint's point, not before."""

    def __init__(self, run: Run) -> None:
        self.run = run

    def state_dict(self) -> dict[str, Any]:
        return capture_rng_state()

    def load_state_dict(self, state: dict[str, Any] | None) -> None:
        self.run.resume.rng = state


class EpochStartRNG:
    """The RNG streams at the start of the checkpoint's epoch: a DataLoader's shuffle and worker seeds
    are drawn from them, so a mid-epoch resume rebuilds the same epoch and fast-forwards it."""

    def __init__(self, run: Run) -> None:
        self.run = run

    def state_dict(self) -> dict[str, Any] | None:
        data = self.run.data.train_data
        return data.epoch_start_rng if data is not None else None

    def load_state_dict(self, state: dict[str, Any] | None) -> None:
        self.run.resume.epoch_start_rng = state


class TrainDataPosition:
    """A stateful training iterable's own position (ember.data iterators, StatefulDataLoader)."""

    def __init__(self, run: Run) -> None:
        self.loader = run.data.train_data.loader if run.data.train_data is not None else None

    def state_dict(self) -> Any:
        return self.loader.state_dict()  # type: ignore[union-attr]

    def load_state_dict(self, state: Any) -> None:
        self.loader.load_state_dict(state)  # type: ignore[union-attr]


class DataLayout:
    """How the training data was split among ranks; a mid-epoch resume on another number of ranks deals
    the epoch's remaining samples to the new ranks (ember/runtime/reshard.py) instead of fast-forwarding."""

    def __init__(self, run: Run) -> None:
        self.run = run

    def state_dict(self) -> dict[str, Any]:
        resharded = self.run.resume.resharded_epoch
        if resharded is not None and resharded[0] == self.run.progress.epoch:  # the rest of a re-split epoch
            return resharded[1]
        replicas = self.run.strategy.distributed_sampler_kwargs[
            "num_replicas"
        ]  # data ranks (not tensor-parallel ones)
        return reshard.data_layout(self.run.data.train_data.loader, replicas)  # type: ignore[union-attr]

    def load_state_dict(self, layout: dict[str, Any]) -> None:
        run, progress = self.run, self.run.progress
        if not progress.mid_epoch:
            return
        loader = run.data.train_data.loader  # type: ignore[union-attr]
        shard = run.strategy.distributed_sampler_kwargs
        rest = reshard.resharded_rest(
            loader,
            layout,
            progress.batch_idx,
            shard["num_replicas"],
            shard["rank"],
            run.resume.epoch_start_rng,
        )
        if rest is not None:
            old_idx, progress.batch_idx = (
                progress.batch_idx,
                reshard.resumed_batch_index(length_of(loader), rest),
            )
            progress.val_done_at = progress.batch_idx if progress.val_done_at == old_idx else -1
            # resharded_rest sets `layout` on the loader it builds (a DataLoader allows new attributes)
            rest_layout = rest.layout  # type: ignore[attr-defined]
            run.resume.resharded, run.resume.resharded_epoch = rest, (progress.epoch, rest_layout)


class Callbacks:
    """Each callback's state under its `state_key`; `on_load_checkpoint` follows each one's load."""

    def __init__(self, run: Run) -> None:
        self.run = run

    def state_dict(self) -> dict[str, Any]:
        states = ((cb.state_key, cb.state_dict()) for cb in self.run.callbacks)
        return {key: state for key, state in states if state}  # Lightning leaves out an empty state

    def load_state_dict(self, saved: dict[str, Any], checkpoint: dict[str, Any] | None = None) -> None:
        run = self.run
        missing = sorted(set(saved) - {cb.state_key for cb in run.callbacks})
        if missing:  # Lightning's warning: those states are not restored (never silently)
            warnings.warn(
                f"the checkpoint holds the state of callbacks this Trainer does not have, which is not "
                f"restored: {missing}; pass the same callbacks to the Trainer to restore it",
                stacklevel=2,
            )
        if checkpoint is not None:  # Lightning: every callback's on_load_checkpoint, then the states
            for cb in run.callbacks:
                cb.on_load_checkpoint(run.trainer, run.module, checkpoint)
        for cb in run.callbacks:
            if cb.state_key in saved:
                cb.load_state_dict(saved[cb.state_key])


class Loggers:
    """Each logger's state (MLflow: its run id), restored first: the run folder depends on it."""

    def __init__(self, loggers: list[Logger]) -> None:
        self.loggers = loggers

    def state_dict(self) -> list[Any]:
        return [logger.state_dict() for logger in self.loggers]

    def load_state_dict(self, states: list[Any]) -> None:
        for logger, state in zip(self.loggers, states, strict=False):
            logger.load_state_dict(state)


AFTER_FIT_START = ("optimizer_states", "lr_schedulers")
#: Where a checkpoint holds the DataModule's hyperparameters (Lightning's name).
DATAMODULE_HPARAMS_KEY = "datamodule_hyper_parameters"


def registry(run: Run) -> dict[str, Participant]:
    """Every participant of `run`, by checkpoint key, in the order they are restored.

    The module's weights first, then what steps with them, then where the run is, then what reads
    the run (callbacks), then the data. Loggers are restored earlier still (`restore_loggers`).
    """
    parts: dict[str, Participant] = {
        "state_dict": ModuleWeights(run),
        "optimizer_states": Optimizers(run),
        "lr_schedulers": Schedulers(run),
        "precision": run.precision,
        "progress": run.progress,
    }
    if run.optimization is not None:
        parts["optimization"] = run.optimization
    parts.update(
        {
            "metrics": run.reporter,
            "callbacks": Callbacks(run),
            "rng": RNGStreams(run),
            "epoch_start_rng": EpochStartRNG(run),
        }
    )
    if run.data.train_data is not None:
        parts["data_layout"] = DataLayout(run)  # after progress and epoch_start_rng: it reads both
    if run.data.train_data is not None and run.data.train_data.stateful:
        parts["train_data"] = TrainDataPosition(run)
    if run.datamodule is not None:
        parts["datamodule"] = run.datamodule
    parts["loggers"] = Loggers(run.loggers)
    return parts


def collect(run: Run, weights_only: bool = False) -> dict[str, Any]:
    """The checkpoint of `run`: every participant's state, then the `on_save_checkpoint` hooks. `weights_only`
    (Lightning's dump_checkpoint): no callback states nor callbacks' `on_save_checkpoint`, only `WEIGHTS_ONLY`
    and what the module's `on_save_checkpoint` adds."""
    with run.reporter.refusing_logs(
        "on_save_checkpoint"
    ):  # and in state_dict: Lightning refuses self.log there
        return _collect(run, weights_only)


def _collect(run: Run, weights_only: bool) -> dict[str, Any]:
    module, progress = run.module, run.progress
    state: dict[str, Any] = {
        "format_version": FORMAT_VERSION,
        "ember_version": __version__,
        "torch_version": str(torch.__version__),
        "module_class": class_name(module),
        "epoch": progress.epoch,
        "global_step": progress.global_step,
        "optimizer_types": [class_name(opt) for opt in run.optimizers],
        "hyper_parameters": to_safe(dict(module.hparams)),
    }
    if (
        run.datamodule is not None and run.datamodule.hparams
    ):  # Lightning's key: DataModule.load_from_checkpoint
        state[DATAMODULE_HPARAMS_KEY] = to_safe(dict(run.datamodule.hparams))
    for key, participant in registry(run).items():
        if (
            not weights_only or key in WEIGHTS_ONLY or key == "progress"
        ):  # progress: Lightning's "loops" below
            state[key] = participant.state_dict()
    state.update(lightning_keys(state))  # so Lightning's load_from_checkpoint and fit(ckpt_path=...) read it
    if weights_only:
        state = {key: value for key, value in state.items() if key in WEIGHTS_ONLY}
    else:
        for cb in run.callbacks:  # Lightning's order: the callbacks, then the module
            cb.on_save_checkpoint(run.trainer, module, state)
    module.on_save_checkpoint(state)
    return state


#: What validate, test and predict restore from a checkpoint (Lightning's _restore_modules_and_callbacks).
MODULES_AND_CALLBACKS = ("state_dict", "datamodule", "callbacks")


def restore(run: Run, ckpt: dict[str, Any], where: Any) -> None:
    """Load every participant the checkpoint holds (the module's fit was checked, and its `on_load_checkpoint`
    called, before). Validate, test and predict take the weights, the datamodule's and the callbacks' states;
    a fit's optimizers and schedulers are restored after on_fit_start (`restore_after_fit_start`)."""
    with run.reporter.refusing_logs("on_load_checkpoint"):  # and load_state_dict: Lightning refuses self.log
        _restore_before_fit_start(run, ckpt)
    if run.stage == "fit":
        run.resume.training_state = (ckpt, where)  # optimizers and schedulers: after on_fit_start


def _restore_before_fit_start(run: Run, ckpt: dict[str, Any]) -> None:
    for key, participant in registry(run).items():
        if key == "loggers" or (run.stage != "fit" and key not in MODULES_AND_CALLBACKS):
            continue  # loggers: restored before the run folder was chosen
        if key in AFTER_FIT_START:
            continue  # restore_after_fit_start
        if key == "callbacks":  # a checkpoint with callback states: every callback's on_load_checkpoint runs
            if key in ckpt:
                Callbacks(run).load_state_dict(ckpt[key] or {}, ckpt)
        elif key in ckpt:
            participant.load_state_dict(ckpt[key])
    if (
        run.stage == "fit" and run.data.train_data is None
    ):  # loaded once the data is fetched (restore_data_position)
        run.resume.data_states = {key: ckpt[key] for key in DATA_PARTS if key in ckpt}
    if run.stage == "fit":
        run.reporter.last_flush_step = run.reporter.batches_stepped  # the checkpoint's step was flushed


#: The training data's participants: restored when the data is fetched (Lightning loads its loader states
#: then).
DATA_PARTS = ("data_layout", "train_data")


def restore_data_position(run: Run) -> None:
    """A resumed fit's data layout and stateful loader position, once its training data is fetched."""
    states, run.resume.data_states = run.resume.data_states, {}
    if not states:
        return
    parts = registry(run)
    for key in DATA_PARTS:
        if key in states and key in parts:
            parts[key].load_state_dict(states[key])


def restore_after_fit_start(run: Run, ckpt: dict[str, Any], where: Any) -> None:
    """The optimizers' and schedulers' state, loaded after `on_fit_start` as Lightning does: a callback
    may add parameter groups there first (BaseFinetuning rebuilds the groups it added before the save)."""
    for key in AFTER_FIT_START:
        if key not in ckpt:
            continue
        if key == "optimizer_states":
            Optimizers(run).load_state_dict(ckpt[key], ckpt.get("optimizer_types"), where)
        else:
            Schedulers(run).load_state_dict(ckpt[key])


def restore_loggers(loggers: list[Logger], ckpt: dict[str, Any] | None) -> None:
    """Continue the checkpoint's logger runs (MLflow: the same run id) before the run folder is chosen."""
    if ckpt is not None:  # every logger hears that its run resumes (a checkpoint without states: {} each)
        states = list(ckpt.get("loggers") or [])
        Loggers(loggers).load_state_dict(states + [{}] * (len(loggers) - len(states)))


def save(run: Run | None, filepath: Any, weights_only: bool, storage_options: Any = None) -> None:
    """`Trainer.save_checkpoint`: every participant's state (the weights only with `weights_only`), written
    atomically by global rank zero; every rank calls it (a sharded strategy gathers the full states)."""
    if storage_options is not None:
        raise ConfigError(
            "save_checkpoint(storage_options=...) needs a custom CheckpointIO plugin, which ember "
            "does not have (Lightning's default refuses it too); pass an s3:// or other URL as "
            "filepath to choose the storage"
        )
    if run is None:
        raise ConfigError("save_checkpoint needs a model attached; call trainer.fit(model, ...) first")
    state = collect(run, weights_only)
    run.strategy.write_checkpoint(state, filepath, save_checkpoint)
    run.strategy.barrier("save_checkpoint")
