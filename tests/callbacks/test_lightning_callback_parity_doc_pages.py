"""Lightning 2.6's callback doc pages against the real Lightning, scenario by scenario (issue 13).

test_lightning_callback_parity.py goes through each built-in callback's options; this file goes through the
doc pages a user reads: the Callback API (every hook, its arguments and order, `state_key`, state in the
checkpoint, `configure_callbacks`, `on_exception`) and the documented examples of the built-ins users reach
for. Each scenario is one function of `L` (`lightning.pytorch` or `ember`) returning what a user observes; the
test runs it on both libraries and asserts the observations are equal.
The twin model and helpers are test_lightning_callback_parity.py's.
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
from tests.trainer.test_lightning_parity import _ember_spelling  # documented renames (none today)

pl = pytest.importorskip("lightning.pytorch")


# --------------------------------------------------------------------------- the Callback API: hooks


#: every hook of Lightning 2.6's Callback, as its API page lists them
HOOKS = (
    "setup",
    "teardown",
    "on_fit_start",
    "on_fit_end",
    "on_sanity_check_start",
    "on_sanity_check_end",
    "on_train_batch_start",
    "on_train_batch_end",
    "on_train_epoch_start",
    "on_train_epoch_end",
    "on_validation_epoch_start",
    "on_validation_epoch_end",
    "on_test_epoch_start",
    "on_test_epoch_end",
    "on_predict_epoch_start",
    "on_predict_epoch_end",
    "on_validation_batch_start",
    "on_validation_batch_end",
    "on_test_batch_start",
    "on_test_batch_end",
    "on_predict_batch_start",
    "on_predict_batch_end",
    "on_train_start",
    "on_train_end",
    "on_validation_start",
    "on_validation_end",
    "on_test_start",
    "on_test_end",
    "on_predict_start",
    "on_predict_end",
    "on_exception",
    "on_save_checkpoint",
    "on_load_checkpoint",
    "on_before_backward",
    "on_after_backward",
    "on_before_optimizer_step",
    "on_before_zero_grad",
    "state_dict",
    "load_state_dict",
)


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
                return {"calls": len(self.calls)} if name == "state_dict" else None
            described = (
                [_describe(a) for a in args[2:]]
                if name not in ("on_save_checkpoint", "on_load_checkpoint")
                else []
            )
            self.calls.append(
                (name, described, {k: getattr(v, "value", v) for k, v in sorted(kwargs.items())})
            )
            return None

        return hook

    body = {name: record(name) for name in HOOKS}
    body["__init__"] = lambda self: setattr(self, "calls", [])
    return type("Recorder", (L.Callback,), body)()


def _fit_from(L, root, path, callbacks, module=None, **kwargs):
    """Resume a fit of the twin from the checkpoint at `path`."""
    options = {
        **QUIET,
        "max_epochs": 3,
        "default_root_dir": str(root),
        "accelerator": "cpu",
        "devices": 1,
        "callbacks": callbacks,
        **kwargs,
    }
    trainer = L.Trainer(**options)
    trainer.fit(module if module is not None else _net(L)(), _loader(), _loader(seed=1), ckpt_path=str(path))
    return trainer


def _test_step(self, batch, batch_idx):
    self.log("test_loss", self.loss(batch))


def _hooks_fit(L, root):
    """Every hook of a fit with a sanity check, validation and the default checkpointing, in order."""
    recorder = _hook_recorder(L)
    _fit(
        L,
        root,
        [recorder],
        max_epochs=2,
        limit_train_batches=2,
        limit_val_batches=1,
        num_sanity_val_steps=1,
        enable_checkpointing=True,
    )
    return {"calls": recorder.calls}


def _hooks_evaluate(L, root):
    """validate, test and predict: the stage each setup/teardown names, every batch hook's arguments."""
    recorder = _hook_recorder(L)
    trainer = L.Trainer(
        **{
            **QUIET,
            "default_root_dir": str(root),
            "accelerator": "cpu",
            "callbacks": [recorder],
            "limit_val_batches": 2,
            "limit_test_batches": 2,
            "limit_predict_batches": 2,
        }
    )
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
    trainer = L.Trainer(
        **{
            **QUIET,
            "default_root_dir": str(root),
            "accelerator": "cpu",
            "callbacks": [recorder],
            "limit_val_batches": 1,
        }
    )
    trainer.validate(_net(L, validation_step=validation_step)(), [_loader(), _loader(seed=1)])
    return {"calls": [c for c in recorder.calls if "batch" in c[0]]}


def _hooks_manual_optimization(L, root):
    """Manual optimization: on_train_batch_end's outputs,
    the backward/optimizer hooks the user's calls run."""

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
    return {
        "calls": [
            c
            for c in recorder.calls
            if "batch" in c[0] or "backward" in c[0] or "optimizer" in c[0] or "zero_grad" in c[0]
        ]
    }


def _hooks_accumulation(L, root):
    """accumulate_grad_batches=2: optimizer hooks on every second batch, backward hooks on every batch."""
    recorder = _hook_recorder(L)
    _fit(
        L,
        root,
        [recorder],
        max_epochs=1,
        limit_train_batches=4,
        limit_val_batches=0,
        accumulate_grad_batches=2,
    )
    return {
        "calls": [c for c in recorder.calls if c[0].startswith(("on_before", "on_after", "on_train_batch"))]
    }


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
    """Both Counters are saved under their keys and both
    restored when the fit resumes from that checkpoint."""
    Counter = _counter_class(L)
    path = root / "saved.ckpt"
    trainer = L.Trainer(
        **{
            **QUIET,
            "default_root_dir": str(root),
            "accelerator": "cpu",
            "max_epochs": 2,
            "callbacks": [Counter("epochs"), Counter("batches")],
        }
    )
    trainer.fit(_net(L)(), _loader(), _loader(seed=1))
    trainer.save_checkpoint(path)
    saved = torch.load(path, weights_only=False)["callbacks"]
    resumed = [Counter("epochs"), Counter("batches", verbose=False)]
    trainer = L.Trainer(
        **{
            **QUIET,
            "default_root_dir": str(root),
            "accelerator": "cpu",
            "max_epochs": 3,
            "callbacks": resumed,
        }
    )
    trainer.fit(_net(L)(), _loader(), _loader(seed=1), ckpt_path=str(path))
    # (Lightning appends its default ModelCheckpoint to the list given as `callbacks`: `resumed` is sliced)
    return {
        "saved": {k: v for k, v in saved.items() if k.startswith("Counter")},
        "resumed": [c.state for c in resumed[:2]],
        **_counters(trainer),
    }


def _generated_state_key(L, root):
    """`_generate_state_key(**kwargs)`, which Lightning's own callbacks use, and the built-ins' keys."""

    class Keyed(L.Callback):
        def __init__(self, name):
            self.name = name

        @property
        def state_key(self):
            return self._generate_state_key(name=self.name)

    return {
        "keyed": Keyed("a").state_key,
        "plain": L.Callback().state_key,
        "early_stopping": L.callbacks.EarlyStopping(monitor="val_loss", mode="max").state_key,
        "checkpoint": L.callbacks.ModelCheckpoint(monitor="val_loss", every_n_epochs=2).state_key,
        "timer": L.callbacks.Timer().state_key,
        "lr_monitor": L.callbacks.LearningRateMonitor().state_key,
    }


def _checkpoint_hooks(L, root):
    """on_save_checkpoint adds to the checkpoint; on_load_checkpoint reads it back when resuming; the
    built-ins' state lands in "callbacks" under their state_key."""

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
    return {
        "stamp": saved["stamp"],
        "loaded": stamp.loaded,
        "early_stopping_saved": _plain(saved["callbacks"][early_key]),
        "callback_keys": sorted(k for k in saved["callbacks"] if not k.startswith("ModelCheckpoint")),
        "restored_best": _plain(resumed_stopper.best_score),
        "wait": resumed_stopper.wait_count,
    }


def _hooks_resume(L, root):
    """Resuming a fit: the checkpoint hooks' order against setup and on_fit_start (on_load_checkpoint, then
    load_state_dict, as the Callback API page says), up to the first training batch."""
    first = _hook_recorder(L)
    trainer = _fit(L, root, [first], max_epochs=1, limit_val_batches=1)
    path = root / "saved.ckpt"
    trainer.save_checkpoint(path)
    resumed = _hook_recorder(L)
    _fit_from(L, root, path, [resumed], max_epochs=2, limit_val_batches=1)
    head = []
    for call in resumed.calls:
        if call[0] == "on_train_batch_start":
            break
        head.append(call)
    return {"head": head, "saved_key": sorted(torch.load(path, weights_only=False)["callbacks"])}


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
    """The module's configure_callbacks replaces the trainer's callbacks of the same type, adds the others,
    and checkpoint callbacks go last (the docs' Callback order)."""

    def configure_callbacks(self):
        return [
            L.callbacks.EarlyStopping(monitor="val_loss", patience=7),
            L.callbacks.ModelCheckpoint(monitor="val_loss"),
            L.callbacks.LearningRateMonitor(),
        ]

    trainer_callbacks = [
        L.callbacks.EarlyStopping(monitor="train_loss", patience=1),
        L.callbacks.ModelCheckpoint(dirpath=root / "ckpt"),
        L.callbacks.Timer(),
    ]
    module = _net(L, configure_callbacks=configure_callbacks)()
    logger = L.loggers.CSVLogger(str(root), name="logs")
    trainer = _fit(L, root, trainer_callbacks, module=module, max_epochs=1, logger=logger)
    stopper = next(c for c in trainer.callbacks if isinstance(c, L.callbacks.EarlyStopping))
    return {
        "names": _callback_names(trainer),
        "early_stopping": (stopper.monitor, stopper.patience),
        "checkpoint_callback_monitor": trainer.checkpoint_callback.monitor,
        "checkpoint_callbacks": len(trainer.checkpoint_callbacks),
    }


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
    trainer = _fit(
        L,
        root,
        [Named("a", ran), checkpoint, Named("b", ran), Named("c", ran)],
        max_epochs=1,
        enable_checkpointing=True,
    )
    return {
        "ran": ran,
        "names": _callback_names(trainer),
        "last_is_checkpoint": trainer.callbacks[-1] is checkpoint,
    }


# --------------------------------------------------------------------------- EarlyStopping


def _early_stopping_resume(L, root):
    """EarlyStopping's state (wait_count, best_score, stopped_epoch, patience) is saved under its state_key
    and a resumed fit goes on counting from it."""
    scores = [0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    first = L.callbacks.EarlyStopping(monitor="score", patience=3)
    trainer = _fit(L, root, [first], module=_net(L, scores)(), max_epochs=3)
    path = root / "saved.ckpt"
    trainer.save_checkpoint(path)
    saved = torch.load(path, weights_only=False)["callbacks"]
    second = L.callbacks.EarlyStopping(monitor="score", patience=3)
    trainer = _fit_from(L, root, path, [second], module=_net(L, scores)(), max_epochs=6)
    return {
        "key": first.state_key,
        "saved": _plain(saved[first.state_key]),
        "stopped_epoch": second.stopped_epoch,
        "wait_count": second.wait_count,
        "best": _plain(second.best_score),
        **_counters(trainer),
    }


def _early_stopping_attributes(L, root):
    """What a user reads off the callback: its options as
    stored (min_delta signed by mode), before any fit."""
    made = [
        L.callbacks.EarlyStopping(
            monitor="a",
            min_delta=0.1,
            patience=2,
            mode=mode,
            strict=False,
            check_finite=False,
            stopping_threshold=0.0,
            divergence_threshold=9.0,
        )
        for mode in ("min", "max")
    ]
    return [
        {
            "monitor": c.monitor,
            "min_delta": _plain(c.min_delta),
            "patience": c.patience,
            "mode": c.mode,
            "strict": c.strict,
            "check_finite": c.check_finite,
            "verbose": c.verbose,
            "stopping_threshold": c.stopping_threshold,
            "divergence_threshold": c.divergence_threshold,
            "wait_count": c.wait_count,
            "stopped_epoch": c.stopped_epoch,
            "best": _plain(c.best_score),
            "state": _plain(c.state_dict()),
            "key": c.state_key,
        }
        for c in made
    ]


def _early_stopping_custom_check(L, root):
    """The docs' customisation: a subclass that checks at the end of training only (on_train_end), not after
    each validation, through `_run_early_stopping_check`."""

    class MyEarlyStopping(L.callbacks.EarlyStopping):
        def on_validation_end(self, trainer, pl_module):
            pass

        def on_train_end(self, trainer, pl_module):
            self._run_early_stopping_check(trainer)

    callback = MyEarlyStopping(monitor="score", patience=0)
    trainer = _fit(L, root, [callback], module=_net(L, [0.5, 0.6, 0.7, 0.8])(), max_epochs=4)
    return {
        "stopped_epoch": callback.stopped_epoch,
        "wait": callback.wait_count,
        "best": _plain(callback.best_score),
        **_counters(trainer),
    }


def _early_stopping_two_instances(L, root):
    """Two EarlyStoppings on different metrics keep separate state; the first to trigger stops the fit."""
    on_score = L.callbacks.EarlyStopping(monitor="score", patience=1)
    on_val = L.callbacks.EarlyStopping(monitor="val_loss", patience=5)
    trainer = _fit(L, root, [on_score, on_val], module=_net(L, [0.5, 0.4, 0.6, 0.7, 0.8])(), max_epochs=5)
    path = root / "saved.ckpt"
    trainer.save_checkpoint(path)
    saved = torch.load(path, weights_only=False)["callbacks"]
    return {
        "keys": sorted(k for k in saved if k.startswith("EarlyStopping")),
        "stopped": [on_score.stopped_epoch, on_val.stopped_epoch],
        **_counters(trainer),
    }


# --------------------------------------------------------------------------- LearningRateMonitor


def _lr_names(optimizers, manual=False, **kwargs):
    """LearningRateMonitor's names and values for the optimizers/param groups of `optimizers`."""

    def scenario(L, root):
        monitor = L.callbacks.LearningRateMonitor(**kwargs)
        logger = L.loggers.CSVLogger(str(root), name="logs")
        methods = {"configure_optimizers": optimizers}
        if manual:
            methods["training_step"] = _manual_steps
        module = _net(L, **methods)()
        module.automatic_optimization = not manual
        trainer = _fit(L, root, [monitor], module=module, logger=logger, log_every_n_steps=2, max_epochs=2)
        return {
            "lrs": _plain(monitor.lrs),
            "csv": _csv_cells(
                Path(trainer.logger.log_dir) / "metrics.csv", ("lr", "momentum", "weight", "head")
            ),
        }

    return scenario


def _manual_steps(self, batch, batch_idx):
    """Manual optimization stepping every optimizer, and each step-interval scheduler by hand."""
    for optimizer in self.optimizers():
        optimizer.zero_grad()
        self.manual_backward(self.loss(batch))
        optimizer.step()
    schedulers = self.lr_schedulers()
    for scheduler in schedulers if isinstance(schedulers, list) else [schedulers] if schedulers else []:
        scheduler.step()


def _two_unnamed_groups(self):
    optimizer = torch.optim.SGD(
        [{"params": [self.layer.weight]}, {"params": [self.layer.bias], "lr": 0.2}], lr=0.1, momentum=0.9
    )
    return [optimizer], [torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)]


def _named_groups(self):
    optimizer = torch.optim.Adam(
        [
            {"params": [self.layer.weight], "name": "weights"},
            {"params": [self.layer.bias], "lr": 0.02, "name": "bias"},
        ],
        lr=0.01,
    )
    return optimizer


def _one_named_group(self):
    return torch.optim.SGD([{"params": self.parameters(), "name": "head"}], lr=0.1, weight_decay=0.01)


def _adam_and_sgd(self):
    adam = torch.optim.Adam([self.layer.weight], lr=0.01, betas=(0.8, 0.99))
    sgd = torch.optim.SGD([self.layer.bias], lr=0.1, momentum=0.5)
    return [adam, sgd], [
        {"scheduler": torch.optim.lr_scheduler.StepLR(adam, 1, 0.5), "name": "head"},
        {"scheduler": torch.optim.lr_scheduler.ExponentialLR(sgd, 0.9), "interval": "step"},
    ]


# --------------------------------------------------------------------------- progress bars


def _bar_switches(L, root):
    """refresh_rate, is_enabled/is_disabled and disable()/enable() of both bars, as a user sets them."""
    seen = {}
    for name, kwargs in (
        ("TQDMProgressBar", {"refresh_rate": 10}),
        ("TQDMProgressBar", {"refresh_rate": 0}),
        ("RichProgressBar", {"refresh_rate": 2}),
        ("RichProgressBar", {"refresh_rate": 0}),
    ):
        bar = getattr(L.callbacks, name)(**kwargs)
        states = [(bar.refresh_rate, bar.is_enabled, bar.is_disabled)]
        bar.disable()
        states.append((bar.refresh_rate, bar.is_enabled, bar.is_disabled))
        bar.enable()
        states.append((bar.refresh_rate, bar.is_enabled, bar.is_disabled))
        seen[f"{name}({kwargs['refresh_rate']})"] = states
    return seen


def _bar_get_metrics(bar_name):
    """The docs' override of get_metrics dropping "v_num", and what the bar would show: logged prog_bar
    metrics and the logger's version."""

    def scenario(L, root):
        shown = []

        class Bar(getattr(L.callbacks, bar_name)):
            def get_metrics(self, trainer, pl_module):
                items = super().get_metrics(trainer, pl_module)
                shown.append(sorted(items))
                items.pop("v_num", None)
                return items

        def training_step(self, batch, batch_idx):
            loss = self.loss(batch)
            self.log("shown", loss, prog_bar=True)
            self.log("hidden", loss)
            return loss

        logger = L.loggers.CSVLogger(str(root), name="logs", version="run_0042")
        bar = Bar()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            trainer = _fit(
                L,
                root,
                [bar],
                module=_net(L, training_step=training_step)(),
                logger=logger,
                enable_progress_bar=True,
                max_epochs=1,
            )
            final = bar.get_metrics(trainer, trainer.lightning_module)
        return {
            "seen_some": bool(shown),
            "keys_seen": sorted({k for keys in shown for k in keys}),
            "final": sorted(final),
            "progress_bar_metrics": sorted(trainer.progress_bar_metrics),
            "callback": type(trainer.progress_bar_callback).__name__,
            "v_num": super(Bar, bar).get_metrics(trainer, trainer.lightning_module).get("v_num"),
        }

    return scenario


def _default_bar(L, root):
    """The default is a ProgressBar (Lightning's a RichProgressBar where rich is installed, else a
    TQDMProgressBar; ember's its own TimedProgressBar); enable_progress_bar=False leaves none; a bar given
    with enable_progress_bar=False is refused."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        default = L.Trainer(logger=False, enable_checkpointing=False, default_root_dir=str(root))
        off = L.Trainer(
            logger=False, enable_checkpointing=False, enable_progress_bar=False, default_root_dir=str(root)
        )
    refused = _kind(
        _raised(
            lambda: L.Trainer(
                logger=False, enable_progress_bar=False, callbacks=[L.callbacks.TQDMProgressBar()]
            )
        )
    )
    return {
        "default": isinstance(default.progress_bar_callback, L.callbacks.ProgressBar),
        "off": off.progress_bar_callback,
        "refused": refused,
    }


# --------------------------------------------------------------------------- ModelSummary


def _summary_net(L):
    def __init__(self):
        L.LightningModule.__init__(self)
        torch.manual_seed(0)
        self.encoder = torch.nn.Sequential(
            torch.nn.Linear(4, 8),
            torch.nn.ReLU(),
            torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.BatchNorm1d(8)),
        )
        self.layer = torch.nn.Linear(8, 1)
        self.example_input_array = torch.zeros(2, 4)

    def forward(self, x):
        return self.layer(self.encoder(x))

    return _net(L, __init__=__init__, forward=forward)


def _summary_lines(text: str) -> list[str]:
    """The table's lines (from the header on), trailing
    spaces dropped; Lightning's later INFO lines left out."""
    lines = [line.rstrip() for line in text.splitlines()]
    start = next((i for i, line in enumerate(lines) if "| Name" in line), None)
    return (
        [] if start is None else [line for line in lines[start:] if line.strip() and not line.startswith("`")]
    )


def _model_summary(max_depth, frozen=False):
    """ModelSummary's table (names, types, parameter counts, modes, in/out sizes, totals) at fit start."""

    def scenario(L, root):
        module = _summary_net(L)()
        if frozen:
            module.encoder[0].requires_grad_(False)
        with _capture_info(L) as stream:
            _fit(
                L,
                root,
                [L.callbacks.ModelSummary(max_depth=max_depth)],
                module=module,
                max_epochs=1,
                limit_train_batches=1,
                limit_val_batches=0,
            )
        return {"table": _summary_lines(stream.getvalue())}

    return scenario


def _rich_model_summary(L, root):
    """RichModelSummary(max_depth=2): each row's name, type
    and parameter count, and the totals under the table."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        _fit(
            L,
            root,
            [L.callbacks.RichModelSummary(max_depth=2)],
            module=_summary_net(L)(),
            max_epochs=1,
            limit_train_batches=1,
            limit_val_batches=0,
        )
    rows, totals = [], []
    for line in out.getvalue().splitlines():
        cells = [c.strip() for c in line.replace("┃", "│").split("│") if c.strip()]
        if len(cells) >= 4 and cells[0].isdigit():
            rows.append(cells[1:4])
        elif "params" in line or "Modules in" in line:
            totals.append(" ".join(line.split()))
    return {"rows": rows, "totals": totals}


# --------------------------------------------------------------------------- Timer


def _timer_resume(L, root):
    """Timer's state (time elapsed per stage) is saved; a resumed fit's Timer counts training time from it."""
    timer = L.callbacks.Timer(duration=timedelta(hours=1), verbose=False)
    trainer = _fit(L, root, [timer], max_epochs=1)
    path = root / "saved.ckpt"
    trainer.save_checkpoint(path)
    saved = torch.load(path, weights_only=False)["callbacks"][timer.state_key]
    resumed = L.callbacks.Timer(duration=timedelta(hours=1), verbose=False)
    _fit_from(L, root, path, [resumed], max_epochs=2)
    before = saved["time_elapsed"]["train"]
    return {
        "key": timer.state_key,
        "saved_keys": sorted(saved),
        "stages": sorted(saved["time_elapsed"]),
        "counts_on": resumed.time_elapsed("train") > before,
        "remaining": resumed.time_remaining("train") < 3600 - before,
    }


def _timer_stops_at_duration(interval):
    """A Timer whose duration has passed stops the fit at the next step or epoch boundary."""

    def scenario(L, root):
        timer = L.callbacks.Timer(duration=timedelta(microseconds=1), interval=interval, verbose=False)
        trainer = _fit(L, root, [timer], max_epochs=3)
        return {"remaining": timer.time_remaining() <= 0, **_counters(trainer)}

    return scenario


def _timer_durations(L, root):
    """The documented duration spellings, as the seconds left before any fit."""
    durations = ("00:12:00:00", {"days": 1, "hours": 2}, timedelta(minutes=5), "01:00:00:30")
    made = [L.callbacks.Timer(duration=d) for d in durations]
    return {
        "before_fit": [(t.time_remaining(), t.start_time(), t.end_time(), t.time_elapsed()) for t in made],
        "durations": [t._duration for t in made],
    }


# --------------------------------------------------------------------------- BasePredictionWriter


def _writer_shuffled(L, root):
    """batch_indices name the rows the sampler drew, with a shuffling predict loader too (ember refuses that
    loader at predict start: `_writer_shuffled_refused`)."""
    seen = []

    class Writer(L.callbacks.BasePredictionWriter):
        def write_on_batch_end(
            self, trainer, pl_module, prediction, batch_indices, batch, batch_idx, dataloader_idx
        ):
            seen.append((batch_idx, batch_indices, _plain(batch[0][:, 0])))

    loader = torch.utils.data.DataLoader(
        _loader(n=20).dataset, batch_size=8, shuffle=True, generator=torch.Generator().manual_seed(3)
    )
    trainer = L.Trainer(
        **{**QUIET, "default_root_dir": str(root), "accelerator": "cpu", "callbacks": [Writer()]}
    )
    trainer.predict(_net(L)(), loader, return_predictions=False)
    return {"seen": seen}


def _writer_shuffled_refused(root):
    """ember's one line for a shuffling predict loader under
    a BasePredictionWriter; an unshuffled one runs."""

    class Writer(ember.callbacks.BasePredictionWriter):
        def write_on_batch_end(
            self, trainer, pl_module, prediction, batch_indices, batch, batch_idx, dataloader_idx
        ):
            pass

    shuffled = torch.utils.data.DataLoader(_loader(n=20).dataset, batch_size=8, shuffle=True)
    trainer = ember.Trainer(
        **{**QUIET, "default_root_dir": str(root), "accelerator": "cpu", "callbacks": [Writer()]}
    )
    with pytest.raises(ember.errors.ConfigError, match="shuffle=False"):
        trainer.predict(_net(ember)(), shuffled, return_predictions=False)
    assert trainer.predict(_net(ember)(), _loader(n=20), return_predictions=False) is None


def _writer_files(interval):
    """The docs' CustomWriter saving predictions (and batch
    indices) per batch or per epoch with torch.save."""

    def scenario(L, root):
        out = root / "predictions"
        out.mkdir(parents=True)

        class CustomWriter(L.callbacks.BasePredictionWriter):
            def __init__(self, output_dir, write_interval):
                super().__init__(write_interval)
                self.output_dir = output_dir

            def write_on_batch_end(
                self, trainer, pl_module, prediction, batch_indices, batch, batch_idx, dataloader_idx
            ):
                torch.save(prediction, out / f"{dataloader_idx}_{batch_idx}.pt")

            def write_on_epoch_end(self, trainer, pl_module, predictions, batch_indices):
                torch.save(predictions, out / f"predictions_{trainer.global_rank}.pt")
                torch.save(batch_indices, out / f"batch_indices_{trainer.global_rank}.pt")

        trainer = L.Trainer(
            **{
                **QUIET,
                "default_root_dir": str(root),
                "accelerator": "cpu",
                "callbacks": [CustomWriter(out, interval)],
            }
        )
        returned = trainer.predict(_net(L)(), _loader(n=20), return_predictions=False)
        files = {p.name: _plain(torch.load(p, weights_only=False)) for p in sorted(out.iterdir())}
        return {"returned": returned, "files": files}

    return scenario


# --------------------------------------------------------------------------- finetuning


def _feature_net(L):
    def __init__(self):
        L.LightningModule.__init__(self)
        torch.manual_seed(0)
        self.feature_extractor = torch.nn.Sequential(
            torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4), torch.nn.ReLU(), torch.nn.Linear(4, 4)
        )
        self.layer = torch.nn.Linear(4, 1)

    def forward(self, x):
        return self.layer(self.feature_extractor(x))

    def configure_optimizers(self):
        return torch.optim.SGD(filter(lambda p: p.requires_grad, self.parameters()), lr=0.05, momentum=0.9)

    def on_train_epoch_end(self):
        self.seen.append(
            [(round(g["lr"], 8), len(g["params"])) for g in self.trainer.optimizers[0].param_groups]
        )

    cls = _net(
        L,
        __init__=__init__,
        forward=forward,
        configure_optimizers=configure_optimizers,
        on_train_epoch_end=on_train_epoch_end,
    )
    return cls


def _freeze_unfreeze_class(L, train_bn=True, **unfreeze_kwargs):
    """The docs' FeatureExtractorFreezeUnfreeze."""

    class FeatureExtractorFreezeUnfreeze(L.callbacks.BaseFinetuning):
        def __init__(self, unfreeze_at_epoch=10):
            super().__init__()
            self._unfreeze_at_epoch = unfreeze_at_epoch

        def freeze_before_training(self, pl_module):
            self.freeze(pl_module.feature_extractor, train_bn=train_bn)

        def finetune_function(self, pl_module, current_epoch, optimizer):
            if current_epoch == self._unfreeze_at_epoch:
                self.unfreeze_and_add_param_group(
                    modules=pl_module.feature_extractor, optimizer=optimizer, train_bn=True, **unfreeze_kwargs
                )

    return FeatureExtractorFreezeUnfreeze


def _finetuning(train_bn=True, **unfreeze_kwargs):
    def scenario(L, root):
        callback = _freeze_unfreeze_class(L, train_bn, **unfreeze_kwargs)(unfreeze_at_epoch=1)
        module = _feature_net(L)()
        module.seen = []
        _fit(L, root, [callback], module=module, max_epochs=3)
        return {
            "groups": module.seen,
            "weights": _weights(module),
            "requires_grad": {n: p.requires_grad for n, p in module.named_parameters()},
            "state": _plain(callback.state_dict()),
        }

    return scenario


def _finetuning_resume(L, root):
    """A resumed fit past the unfreeze epoch gets the unfrozen parameter group back in its optimizer.
    (Lightning 2.6.6 leaves those parameters frozen — requires_grad False, as freeze_before_training set them
    at setup — so its resumed fit no longer trains them; ember makes them trainable again, so the resumed fit
    equals the uninterrupted one bitwise: tests/callbacks/test_finetuning.py.
    Only the groups and state are compared.)"""
    callback = _freeze_unfreeze_class(L)(unfreeze_at_epoch=1)
    module = _feature_net(L)()
    module.seen = []
    trainer = _fit(L, root, [callback], module=module, max_epochs=2)
    path = root / "saved.ckpt"
    trainer.save_checkpoint(path)
    resumed = _freeze_unfreeze_class(L)(unfreeze_at_epoch=1)
    module = _feature_net(L)()
    module.seen = []
    _fit_from(L, root, path, [resumed], module=module, max_epochs=4)
    return {"groups": module.seen, "state": _plain(resumed.state_dict())}


def _finetuning_helpers(L, root):
    """BaseFinetuning's static helpers on a module with a BatchNorm: flatten_modules, freeze(train_bn),
    filter_params, make_trainable, filter_on_optimizer."""
    Base = L.callbacks.BaseFinetuning
    module = _feature_net(L)()
    seen = {"flat": [type(m).__name__ for m in Base.flatten_modules(module)]}
    Base.freeze(module.feature_extractor, train_bn=True)
    seen["train_bn"] = {n: p.requires_grad for n, p in module.named_parameters()}
    Base.freeze(module.feature_extractor, train_bn=False)
    seen["no_train_bn"] = {n: p.requires_grad for n, p in module.named_parameters()}
    seen["filtered"] = [list(p.shape) for p in Base.filter_params(module, train_bn=False, requires_grad=True)]
    Base.make_trainable(module.feature_extractor)
    seen["trainable"] = {n: p.requires_grad for n, p in module.named_parameters()}
    optimizer = torch.optim.SGD([module.layer.weight], lr=0.1)
    seen["not_in_optimizer"] = len(Base.filter_on_optimizer(optimizer, module.parameters()))
    Base.unfreeze_and_add_param_group(module.feature_extractor, optimizer, lr=0.5, initial_denom_lr=2.0)
    seen["groups"] = [(g["lr"], len(g["params"])) for g in optimizer.param_groups]
    return seen


def _lambda_callback_hooks(L, root):
    """LambdaCallback with setup/teardown/on_exception/on_save_checkpoint given as functions, as the docs."""
    seen = []

    def on_exception(trainer, pl_module, exception):
        seen.append(("on_exception", str(exception)))

    callback = L.callbacks.LambdaCallback(
        setup=lambda trainer, pl_module, stage: seen.append(("setup", getattr(stage, "value", stage))),
        teardown=lambda trainer, pl_module, stage: seen.append(("teardown", getattr(stage, "value", stage))),
        on_save_checkpoint=lambda trainer, pl_module, checkpoint: seen.append(("save", trainer.global_step)),
        on_train_epoch_end=lambda trainer, pl_module: seen.append(("epoch_end", trainer.current_epoch)),
        on_exception=on_exception,
    )
    trainer = _fit(L, root, [callback], max_epochs=2)
    trainer.save_checkpoint(root / "saved.ckpt")

    def training_step(self, batch, batch_idx):
        raise _Boom("stop")

    with contextlib.suppress(_Boom):
        _fit(L, root, [callback], module=_net(L, training_step=training_step)(), max_epochs=1)
    return {"seen": seen}


# --------------------------------------------------------------------------- ModelPruning


def _compute_amount(epoch):
    """The docs' schedule of how much to prune at each epoch (0 prunes nothing)."""
    return {0: 0.25, 2: 0.5}.get(epoch, 0)


def _pruning_scheduled(L, root):
    """ModelPruning with `amount` a function of the epoch, as the docs' compute_amount."""
    callback = L.callbacks.ModelPruning("l1_unstructured", amount=_compute_amount, verbose=0)
    module = _net(L)()
    zeros = []

    class Count(L.Callback):
        def on_train_epoch_end(self, trainer, pl_module):
            zeros.append(int((pl_module.layer.weight == 0).sum()))

    _fit(L, root, [callback, Count()], module=module, max_epochs=3)
    return {"zeros": zeros, "weights": _weights(module)}


# ---------------------------------------------------------------------------
# DeviceStatsMonitor, SpikeDetection


def _device_stats(L, root):
    """DeviceStatsMonitor(cpu_stats=True) on the CPU: the columns it logs, in how many rows. (The steps differ
    by one on purpose: ember logs a batch's statistics at the step its training metrics go to, Lightning one
    lower; tests/callbacks/test_device_stats_monitor.py holds that.)"""
    logger = L.loggers.CSVLogger(str(root), name="logs")
    trainer = _fit(
        L,
        root,
        [L.callbacks.DeviceStatsMonitor(cpu_stats=True)],
        logger=logger,
        log_every_n_steps=2,
        max_epochs=1,
        limit_val_batches=1,
    )
    cells = _csv_cells(Path(trainer.logger.log_dir) / "metrics.csv", ("DeviceStatsMonitor",))
    return {"rows": [sorted(c) for _, c in cells]}


def _spike_detection(L, root):
    """A loss 100x the running mean at step 6 raises TrainingSpikeException naming the batch."""

    def training_step(self, batch, batch_idx):
        loss = self.loss(batch)
        return loss * 100 if self.global_step == 6 else loss

    callback = L.callbacks.SpikeDetection(window=3, warmup=2, exclude_batches_path=str(root / "skip"))
    raised = None
    try:
        _fit(
            L,
            root,
            [callback],
            module=_net(L, training_step=training_step)(),
            max_epochs=2,
            limit_val_batches=0,
        )
    except Exception as error:  # noqa: BLE001 - the exception's kind is the observation
        raised = (type(error).__name__, str(error))
    files = (
        {p.name: p.read_text() for p in sorted((root / "skip").glob("*"))} if (root / "skip").exists() else {}
    )
    return {"raised": raised, "files": files}


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
    "hooks_resume": _hooks_resume,
    "setup_teardown_stage": _setup_teardown_stage,
    "configure_callbacks": _configure_callbacks,
    "configure_callbacks_single": _configure_callbacks_single,
    "callback_order": _callback_order,
    # EarlyStopping
    "es_resume": _early_stopping_resume,
    "es_attributes": _early_stopping_attributes,
    "es_custom_check": _early_stopping_custom_check,
    "es_two_instances": _early_stopping_two_instances,
    # LearningRateMonitor
    "lr_two_unnamed_groups": _lr_names(_two_unnamed_groups, log_momentum=True),
    "lr_named_groups": _lr_names(_named_groups, log_momentum=True, log_weight_decay=True),
    "lr_one_named_group": _lr_names(_one_named_group, logging_interval="step", log_weight_decay=True),
    "lr_adam_and_sgd_manual": _lr_names(_adam_and_sgd, manual=True, log_momentum=True),
    "lr_adam_and_sgd_manual_epoch": _lr_names(_adam_and_sgd, manual=True, logging_interval="epoch"),
    "lr_adam_and_sgd_manual_step": _lr_names(_adam_and_sgd, manual=True, logging_interval="step"),
    # progress bars
    "bar_switches": _bar_switches,
    "bar_get_metrics_tqdm": _bar_get_metrics("TQDMProgressBar"),
    "bar_get_metrics_rich": _bar_get_metrics("RichProgressBar"),
    "bar_default": _default_bar,
    # ModelSummary
    "model_summary_depth_1": _model_summary(1),
    "model_summary_depth_2": _model_summary(2),
    "model_summary_all": _model_summary(-1, frozen=True),
    "rich_model_summary": _rich_model_summary,
    # Timer
    "timer_resume": _timer_resume,
    "timer_stops_step": _timer_stops_at_duration("step"),
    "timer_stops_epoch": _timer_stops_at_duration("epoch"),
    "timer_durations": _timer_durations,
    # BasePredictionWriter
    "writer_files_batch": _writer_files("batch"),
    "writer_shuffled": _writer_shuffled,
    "writer_files_epoch": _writer_files("epoch"),
    "writer_files_batch_and_epoch": _writer_files("batch_and_epoch"),
    # finetuning
    "finetuning_docs_example": _finetuning(),
    "finetuning_no_train_bn": _finetuning(train_bn=False),
    "finetuning_lr_and_denom": _finetuning(lr=0.01, initial_denom_lr=4.0),
    "finetuning_resume": _finetuning_resume,
    "finetuning_helpers": _finetuning_helpers,
    # the others
    "pruning_scheduled": _pruning_scheduled,
    "lambda_callback_hooks": _lambda_callback_hooks,
    "device_stats_cpu": _device_stats,
    "spike_detection": _spike_detection,
}


#: differences that remain (each fails until it is made; a strict xfail): most need a Trainer change.
KNOWN_DIVERGENCES: dict[str, str] = {
    "writer_shuffled": "refused instead: ember's batch_indices count rows as they come (the loop does not "
    "see the sampler's indices); a shuffling predict loader under a writer is a ConfigError",
}


def _cases():
    for name in SCENARIOS:
        reason = KNOWN_DIVERGENCES.get(name)
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        yield pytest.param(name, marks=marks, id=name)


def test_a_prediction_writer_refuses_a_shuffling_predict_loader(tmp_path):
    _writer_shuffled_refused(tmp_path)


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", list(_cases()))
def test_ember_callback_docs_observe_what_lightnings_observe(name, tmp_path):
    scenario = SCENARIOS[name]
    theirs = scenario(pl, tmp_path / "lightning")
    ours = scenario(ember, tmp_path / "ember")
    assert ours == _ember_spelling(theirs)
