"""Lightning 2.6's callback doc pages against the real Lightning, scenario by scenario (issue 13, round 2).

Round 1 (test_lightning_callback_parity.py) goes through each built-in callback's options; this round goes through
the doc pages a user reads: the Callback API (every hook, its arguments and order, `state_key`, state in the
checkpoint, `configure_callbacks`, `on_exception`) and the documented examples of the built-ins users reach for.
Each scenario is one function of `L` (`lightning.pytorch` or `ember`) returning what a user observes; the test
runs it on both libraries and asserts the observations are equal. The twin model and helpers are round 1's.
"""

from __future__ import annotations

import contextlib
import io
from datetime import timedelta
from pathlib import Path

import pytest
import torch

import ember
from tests.callbacks.test_lightning_callback_parity import (
    QUIET,
    _capture_info,
    _counters,
    _csv_cells,
    _fit,
    _kind,
    _loader,
    _net,
    _plain,
    _raised,
    _weights,
)
from tests.trainer.test_lightning_parity import _ember_spelling  # lightning_logs -> ember_logs

pl = pytest.importorskip("lightning.pytorch")


# --------------------------------------------------------------------------- the Callback API: hooks


#: every hook of Lightning 2.6's Callback, as its API page lists them
HOOKS = ("setup", "teardown", "on_fit_start", "on_fit_end", "on_sanity_check_start", "on_sanity_check_end",
         "on_train_batch_start", "on_train_batch_end", "on_train_epoch_start", "on_train_epoch_end",
         "on_validation_epoch_start", "on_validation_epoch_end", "on_test_epoch_start", "on_test_epoch_end",
         "on_predict_epoch_start", "on_predict_epoch_end", "on_validation_batch_start", "on_validation_batch_end",
         "on_test_batch_start", "on_test_batch_end", "on_predict_batch_start", "on_predict_batch_end",
         "on_train_start", "on_train_end", "on_validation_start", "on_validation_end", "on_test_start",
         "on_test_end", "on_predict_start", "on_predict_end", "on_exception", "on_save_checkpoint",
         "on_load_checkpoint", "on_before_backward", "on_after_backward", "on_before_optimizer_step",
         "on_before_zero_grad", "state_dict", "load_state_dict")


def _describe(value):
    """An argument as plain data: tensors by shape, dicts by keys, optimizers and others by type name."""
    if isinstance(value, torch.Tensor):
        return f"tensor{list(value.shape)}"
    if isinstance(value, dict):
        return sorted(map(str, value))
    if isinstance(value, (list, tuple)):
        return [_describe(v) for v in value]
    if value is None or isinstance(value, (int, str, float)):
        return value
    if isinstance(value, BaseException):
        return f"{type(value).__name__}: {value}"
    return type(value).__name__


def _hook_recorder(L, checkpoint_keys=False):
    """A callback recording each hook it sees: (name, its arguments after trainer and module, described).
    The checkpoint dict's keys differ (ember's holds more), so the checkpoint hooks record only their name."""

    def record(name):
        def hook(self, *args, **kwargs):
            if name in ("state_dict", "load_state_dict"):
                self.calls.append((name,))
                return {} if name == "state_dict" else None
            described = [_describe(a) for a in args[2:]] if name not in ("on_save_checkpoint",
                                                                         "on_load_checkpoint") else []
            self.calls.append((name, described, {k: getattr(v, "value", v) for k, v in sorted(kwargs.items())}))
            return None

        return hook

    body = {name: record(name) for name in HOOKS}
    body["__init__"] = lambda self: setattr(self, "calls", [])
    return type("Recorder", (L.Callback,), body)()


def _fit_from(L, root, path, callbacks, module=None, **kwargs):
    """Resume a fit of the twin from the checkpoint at `path`."""
    options = {**QUIET, "max_epochs": 3, "default_root_dir": str(root), "accelerator": "cpu", "devices": 1,
               "callbacks": callbacks, **kwargs}
    trainer = L.Trainer(**options)
    trainer.fit(module if module is not None else _net(L)(), _loader(), _loader(seed=1), ckpt_path=str(path))
    return trainer


def _test_step(self, batch, batch_idx):
    self.log("test_loss", self.loss(batch))


def _hooks_fit(L, root):
    """Every hook of a fit with a sanity check, validation and the default checkpointing, in order."""
    recorder = _hook_recorder(L)
    _fit(L, root, [recorder], max_epochs=2, limit_train_batches=2, limit_val_batches=1, num_sanity_val_steps=1,
         enable_checkpointing=True)
    return {"calls": recorder.calls}


def _hooks_evaluate(L, root):
    """validate, test and predict: the stage each setup/teardown names, every batch hook's arguments."""
    recorder = _hook_recorder(L)
    trainer = L.Trainer(**{**QUIET, "default_root_dir": str(root), "accelerator": "cpu", "callbacks": [recorder],
                           "limit_val_batches": 2, "limit_test_batches": 2, "limit_predict_batches": 2})
    module = _net(L, test_step=_test_step)()
    trainer.validate(module, _loader())
    trainer.test(module, _loader())
    trainer.predict(module, _loader())
    return {"calls": recorder.calls}


def _hooks_two_val_loaders(L, root):
    """With two validation loaders the batch hooks are given dataloader_idx (with one, they are not)."""

    def validation_step(self, batch, batch_idx, dataloader_idx=0):
        self.log("val_loss", self.loss(batch))

    recorder = _hook_recorder(L)
    trainer = L.Trainer(**{**QUIET, "default_root_dir": str(root), "accelerator": "cpu", "callbacks": [recorder],
                           "limit_val_batches": 1})
    trainer.validate(_net(L, validation_step=validation_step)(), [_loader(), _loader(seed=1)])
    return {"calls": [c for c in recorder.calls if "batch" in c[0]]}


def _hooks_manual_optimization(L, root):
    """Manual optimization: on_train_batch_end's outputs, the backward/optimizer hooks the user's calls run."""

    def training_step(self, batch, batch_idx):
        optimizer = self.optimizers()
        optimizer.zero_grad()
        loss = self.loss(batch)
        self.manual_backward(loss)
        optimizer.step()
        return {"loss": loss.detach(), "extra": 1}

    recorder = _hook_recorder(L)
    module = _net(L, training_step=training_step)()
    module.automatic_optimization = False
    _fit(L, root, [recorder], module=module, max_epochs=1, limit_train_batches=2, limit_val_batches=0)
    return {"calls": [c for c in recorder.calls if "batch" in c[0] or "backward" in c[0] or "optimizer" in c[0]
                      or "zero_grad" in c[0]]}


def _hooks_accumulation(L, root):
    """accumulate_grad_batches=2: optimizer hooks on every second batch, backward hooks on every batch."""
    recorder = _hook_recorder(L)
    _fit(L, root, [recorder], max_epochs=1, limit_train_batches=4, limit_val_batches=0, accumulate_grad_batches=2)
    return {"calls": [c for c in recorder.calls if c[0].startswith(("on_before", "on_after", "on_train_batch"))]}


class _Boom(Exception):
    pass


def _on_exception(L, root):
    """An error in training_step: on_exception sees it, teardown runs, the error reaches the caller."""

    def training_step(self, batch, batch_idx):
        if self.global_step == 3:
            raise _Boom("step 3")
        return self.loss(batch)

    recorder = _hook_recorder(L)
    module = _net(L, training_step=training_step)()
    raised = None
    try:
        _fit(L, root, [recorder], module=module, max_epochs=2)
    except _Boom as error:
        raised = str(error)
    tail = [c for c in recorder.calls if c[0] in ("on_exception", "teardown", "on_fit_end", "on_train_end")]
    return {"raised": raised, "tail": tail}


def _on_exception_in_callback(L, root):
    """An error raised by a callback's own hook also reaches every callback's on_exception."""

    class Failing(L.Callback):
        def on_train_epoch_end(self, trainer, pl_module):
            raise _Boom("from a callback")

    recorder = _hook_recorder(L)
    raised = None
    try:
        _fit(L, root, [Failing(), recorder], max_epochs=2)
    except _Boom as error:
        raised = str(error)
    return {"raised": raised, "seen": [c for c in recorder.calls if c[0] in ("on_exception", "teardown")]}


# --------------------------------------------------------------------------- the Callback API: state


def _counter_class(L):
    """The Callback API page's `Counter`: two instances told apart by a `state_key` naming their argument."""

    class Counter(L.Callback):
        def __init__(self, what="epochs", verbose=True):
            self.what = what
            self.verbose = verbose
            self.state = {"epochs": 0, "batches": 0}

        @property
        def state_key(self):
            return f"Counter[what={self.what}]"

        def on_train_epoch_end(self, *args, **kwargs):
            if self.what == "epochs":
                self.state["epochs"] += 1

        def on_train_batch_end(self, *args, **kwargs):
            if self.what == "batches":
                self.state["batches"] += 1

        def load_state_dict(self, state_dict):
            self.state.update(state_dict)

        def state_dict(self):
            return self.state.copy()

    return Counter


def _state_key_two_instances(L, root):
    """Both Counters are saved under their keys and both restored when the fit resumes from that checkpoint."""
    Counter = _counter_class(L)
    path = root / "saved.ckpt"
    trainer = L.Trainer(**{**QUIET, "default_root_dir": str(root), "accelerator": "cpu", "max_epochs": 2,
                           "callbacks": [Counter("epochs"), Counter("batches")]})
    trainer.fit(_net(L)(), _loader(), _loader(seed=1))
    trainer.save_checkpoint(path)
    saved = torch.load(path, weights_only=False)["callbacks"]
    resumed = [Counter("epochs"), Counter("batches", verbose=False)]
    trainer = L.Trainer(**{**QUIET, "default_root_dir": str(root), "accelerator": "cpu", "max_epochs": 3,
                           "callbacks": resumed})
    trainer.fit(_net(L)(), _loader(), _loader(seed=1), ckpt_path=str(path))
    # (Lightning appends its default ModelCheckpoint to the list given as `callbacks`: `resumed` is sliced)
    return {"saved": {k: v for k, v in saved.items() if k.startswith("Counter")},
            "resumed": [c.state for c in resumed[:2]], **_counters(trainer)}


def _generated_state_key(L, root):
    """`_generate_state_key(**kwargs)`, which Lightning's own callbacks use, and the built-ins' keys."""

    class Keyed(L.Callback):
        def __init__(self, name):
            self.name = name

        @property
        def state_key(self):
            return self._generate_state_key(name=self.name)

    return {"keyed": Keyed("a").state_key, "plain": L.Callback().state_key,
            "early_stopping": L.callbacks.EarlyStopping(monitor="val_loss", mode="max").state_key,
            "checkpoint": L.callbacks.ModelCheckpoint(monitor="val_loss", every_n_epochs=2).state_key,
            "timer": L.callbacks.Timer().state_key,
            "lr_monitor": L.callbacks.LearningRateMonitor().state_key}


def _checkpoint_hooks(L, root):
    """on_save_checkpoint adds to the checkpoint; on_load_checkpoint reads it back when resuming; the built-ins'
    state lands in "callbacks" under their state_key."""

    class Stamp(L.Callback):
        def __init__(self):
            self.loaded = None

        def on_save_checkpoint(self, trainer, pl_module, checkpoint):
            checkpoint["stamp"] = {"epoch": trainer.current_epoch, "step": trainer.global_step}

        def on_load_checkpoint(self, trainer, pl_module, checkpoint):
            self.loaded = checkpoint["stamp"]

    stopper = L.callbacks.EarlyStopping(monitor="val_loss", patience=5)
    trainer = _fit(L, root, [Stamp(), stopper], max_epochs=2)
    path = root / "saved.ckpt"
    trainer.save_checkpoint(path)
    saved = torch.load(path, weights_only=False)
    stamp = Stamp()
    resumed_stopper = L.callbacks.EarlyStopping(monitor="val_loss", patience=5)
    _fit_from(L, root, path, [stamp, resumed_stopper], max_epochs=3)
    early_key = stopper.state_key
    return {"stamp": saved["stamp"], "loaded": stamp.loaded,
            "early_stopping_saved": _plain(saved["callbacks"][early_key]),
            "callback_keys": sorted(k for k in saved["callbacks"] if not k.startswith("ModelCheckpoint")),
            "restored_best": _plain(resumed_stopper.best_score), "wait": resumed_stopper.wait_count}


def _setup_teardown_stage(L, root):
    """setup/teardown name the stage; a callback's setup can add a module attribute the fit then uses."""

    class Stages(L.Callback):
        def __init__(self):
            self.seen = []

        def setup(self, trainer, pl_module, stage):
            self.seen.append(("setup", stage, trainer.state.fn))

        def teardown(self, trainer, pl_module, stage):
            self.seen.append(("teardown", stage, trainer.state.fn))

    stages = Stages()
    module = _net(L, test_step=_test_step)()
    trainer = _fit(L, root, [stages], module=module, max_epochs=1)
    trainer.validate(module, _loader())
    trainer.test(module, _loader())
    trainer.predict(module, _loader())
    # (Lightning's stage is its TrainerFn, a str enum equal to "fit", ...; ember's the plain string)
    return {"seen": [(a, b == c, getattr(b, "value", b)) for a, b, c in stages.seen]}


# --------------------------------------------------------------------------- configure_callbacks and order


def _callback_names(trainer):
    return [type(c).__name__ for c in trainer.callbacks]


def _configure_callbacks(L, root):
    """The module's configure_callbacks replaces the trainer's callbacks of the same type, adds the others, and
    checkpoint callbacks go last (the docs' Callback order)."""

    def configure_callbacks(self):
        return [L.callbacks.EarlyStopping(monitor="val_loss", patience=7),
                L.callbacks.ModelCheckpoint(monitor="val_loss"), L.callbacks.LearningRateMonitor()]

    trainer_callbacks = [L.callbacks.EarlyStopping(monitor="train_loss", patience=1),
                         L.callbacks.ModelCheckpoint(dirpath=root / "ckpt"), L.callbacks.Timer()]
    module = _net(L, configure_callbacks=configure_callbacks)()
    logger = L.loggers.CSVLogger(str(root), name="logs")
    trainer = _fit(L, root, trainer_callbacks, module=module, max_epochs=1, logger=logger)
    stopper = next(c for c in trainer.callbacks if isinstance(c, L.callbacks.EarlyStopping))
    return {"names": _callback_names(trainer), "early_stopping": (stopper.monitor, stopper.patience),
            "checkpoint_callback_monitor": trainer.checkpoint_callback.monitor,
            "checkpoint_callbacks": len(trainer.checkpoint_callbacks)}


def _configure_callbacks_single(L, root):
    """configure_callbacks may return one callback rather than a list."""

    def configure_callbacks(self):
        return L.callbacks.EarlyStopping(monitor="val_loss", patience=0)

    trainer = _fit(L, root, [], module=_net(L, configure_callbacks=configure_callbacks)(), max_epochs=4)
    return {"names": _callback_names(trainer), **_counters(trainer)}


def _callback_order(L, root):
    """Trainer callbacks run in the order given, checkpoint callbacks moved last, ties kept in order."""

    class Named(L.Callback):
        def __init__(self, name, ran):
            self.name, self.ran = name, ran

        def on_train_epoch_end(self, trainer, pl_module):
            self.ran.append(self.name)

    ran = []
    checkpoint = L.callbacks.ModelCheckpoint(dirpath=root / "ckpt")
    trainer = _fit(L, root, [Named("a", ran), checkpoint, Named("b", ran), Named("c", ran)], max_epochs=1,
                   enable_checkpointing=True)
    return {"ran": ran, "names": _callback_names(trainer), "last_is_checkpoint": trainer.callbacks[-1] is checkpoint}


# --------------------------------------------------------------------------- the scenarios


SCENARIOS = {
    # the Callback API page
    "hooks_fit": _hooks_fit,
    "hooks_evaluate": _hooks_evaluate,
    "hooks_two_val_loaders": _hooks_two_val_loaders,
    "hooks_manual_optimization": _hooks_manual_optimization,
    "hooks_accumulation": _hooks_accumulation,
    "on_exception": _on_exception,
    "on_exception_in_callback": _on_exception_in_callback,
    "state_key_two_instances": _state_key_two_instances,
    "generated_state_key": _generated_state_key,
    "checkpoint_hooks": _checkpoint_hooks,
    "setup_teardown_stage": _setup_teardown_stage,
    "configure_callbacks": _configure_callbacks,
    "configure_callbacks_single": _configure_callbacks_single,
    "callback_order": _callback_order,
}


#: differences that remain (each fails until it is made; a strict xfail): most need a Trainer change.
KNOWN_DIVERGENCES: dict[str, str] = {
}


def _cases():
    for name in SCENARIOS:
        reason = KNOWN_DIVERGENCES.get(name)
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        yield pytest.param(name, marks=marks, id=name)


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", _cases())
def test_ember_callback_docs_observe_what_lightnings_observe(name, tmp_path):
    scenario = SCENARIOS[name]
    theirs = scenario(pl, tmp_path / "lightning")
    ours = scenario(ember, tmp_path / "ember")
    assert ours == _ember_spelling(theirs)
