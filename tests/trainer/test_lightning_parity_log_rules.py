"""ember against the real Lightning 2.6.6 (issue 13): where `self.log` is allowed (Lightning's
`_FxValidator` table, for the module and for callbacks), a name logged twice in one hook with other arguments,
OnExceptionCheckpoint with checkpointing off, the logger step under manual optimization, the order of the
data and start hooks, and the key order of `trainer.callback_metrics`.

Each scenario is a function of `L` (`lightning.pytorch` or `ember`) returning what a user observes; the test
runs it on both and asserts the observations are equal (harness helpers from test_lightning_parity.py).
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
import torch

from tests.trainer.test_lightning_parity import (
    _base,
    _loader,
    _manual_init,
    _plain,
    _raises,
    _trainer,
    compare_with_lightning,
)

pl = pytest.importorskip("lightning.pytorch")


# --------------------------------------------------------------------------- where self.log is allowed

#: hooks a callback (and the module) can override, with the arguments Lightning passes after (trainer, module)
_CALLBACK_HOOKS = [
    "setup",
    "on_fit_start",
    "on_sanity_check_start",
    "on_sanity_check_end",
    "on_train_start",
    "on_train_epoch_start",
    "on_train_batch_start",
    "on_before_backward",
    "on_after_backward",
    "on_before_optimizer_step",
    "on_before_zero_grad",
    "on_train_batch_end",
    "on_validation_start",
    "on_validation_epoch_start",
    "on_validation_batch_start",
    "on_validation_batch_end",
    "on_validation_epoch_end",
    "on_validation_end",
    "on_train_epoch_end",
    "on_train_end",
    "on_fit_end",
    "teardown",
    "on_save_checkpoint",
]
_EVAL_HOOKS = [
    "on_test_start",
    "on_test_epoch_start",
    "on_test_batch_end",
    "on_test_epoch_end",
    "on_test_end",
]


def _callback_logging(hook: str, **log_kwargs):
    """A callback calling `pl_module.log` in `hook` (fit, or test for the test hooks): raised or ok."""

    def scenario(L, root):
        def logs(self, trainer, module, *args):
            module.log("m", 1.0, **log_kwargs)

        callback = type("Logs", (L.Callback,), {hook: logs})()
        model = _base(L, validation_step=lambda self, b, i: None, test_step=lambda self, b, i: None)()
        trainer = _trainer(
            L,
            root,
            callbacks=[callback],
            num_sanity_val_steps=1,
            limit_train_batches=2,
            enable_checkpointing=hook == "on_save_checkpoint",
        )
        if hook.startswith("on_test"):
            return _raises(lambda: trainer.test(model, _loader(seed=1), verbose=False))
        return _raises(lambda: trainer.fit(model, _loader(), _loader(seed=1)))

    return scenario


_MODULE_HOOKS = [
    "on_fit_start",
    "on_train_start",
    "on_train_epoch_start",
    "on_validation_start",
    "on_validation_epoch_start",
    "on_validation_end",
    "on_train_end",
    "on_fit_end",
    "on_validation_model_eval",
    "on_validation_model_train",
    "on_train_batch_start",
    "on_train_batch_end",
    "on_before_zero_grad",
]


def _module_logging(hook: str, **log_kwargs):
    """The module calling `self.log` in its own `hook`: raised or ok."""

    def scenario(L, root):
        def logs(self, *args):
            if hook == "on_validation_model_eval":
                self.eval()
            if hook == "on_validation_model_train":
                self.train()
            self.log("m", 1.0, **log_kwargs)

        model = _base(L, validation_step=lambda self, b, i: None, **{hook: logs})()
        trainer = _trainer(L, root, num_sanity_val_steps=0, limit_train_batches=2)
        return _raises(lambda: trainer.fit(model, _loader(), _loader(seed=1)))

    return scenario


def _transfer_hook_logging(L, root):
    def on_after_batch_transfer(self, batch, dataloader_idx):
        self.log("m", 1.0)
        return batch

    model = _base(L, on_after_batch_transfer=on_after_batch_transfer)()
    return _raises(lambda: _trainer(L, root, limit_train_batches=2).fit(model, _loader()))


# --------------------------------------------------------------------------- one name twice in one hook


def _logged_twice(first: dict, second: dict, second_hook: str = "training_step", batch: int = 0):
    """`m` logged in training_step with `first`, then (at batch `batch`) in `second_hook` with `second`."""

    def scenario(L, root):
        def step(self, b, i):
            loss = self.loss(b)
            self.log("m", loss, **first)
            if second_hook == "training_step" and i == batch:
                self.log("m", loss, **second)
            return loss

        def batch_end(self, outputs, b, i):
            self.log("m", 2.0, **second)

        methods = {"training_step": step}
        if second_hook == "on_train_batch_end":
            methods["on_train_batch_end"] = batch_end
        trainer = _trainer(L, root, limit_train_batches=3)
        return _raises(lambda: trainer.fit(_base(L, **methods)(), _loader()))

    return scenario


def _logged_twice_in_validation(second: dict):
    """`v` logged twice in validation_step, the second time with `second` (and once in
    on_validation_batch_end)."""

    def scenario(L, root):
        def val_step(self, b, i):
            self.log("v", self.loss(b))
            self.log("v", self.loss(b), **second)

        def batch_end(self, outputs, b, i):
            self.log("v", 1.0, on_step=True)  # another hook: its own key in Lightning

        model = _base(L, validation_step=val_step, on_validation_batch_end=batch_end)()
        trainer = _trainer(L, root, num_sanity_val_steps=0)
        return _raises(lambda: trainer.validate(model, _loader(seed=1), verbose=False))

    return scenario


def _logged_nowhere(L, root):
    def step(self, b, i):
        loss = self.loss(b)
        self.log("m", loss, on_step=False, on_epoch=False)
        return loss

    return _raises(
        lambda: _trainer(L, root, limit_train_batches=1).fit(_base(L, training_step=step)(), _loader())
    )


# --------------------------------------------------------------------------- OnExceptionCheckpoint


def _exception_checkpoint_without_checkpointing(L, root):
    callback = L.callbacks.OnExceptionCheckpoint(dirpath=str(root))
    return {
        "off": _raises(lambda: _trainer(L, root, callbacks=[callback], enable_checkpointing=False)),
        "on": _raises(lambda: _trainer(L, root, callbacks=[callback], enable_checkpointing=True)),
    }


# --------------------------------------------------------------------------- logger step, manual optimization


def _csv(trainer) -> list[list[str]]:
    with open(Path(trainer.logger.log_dir) / "metrics.csv", newline="") as f:
        rows = list(csv.reader(f))
    return [rows[0]] + [[str(round(float(v), 5)) if v else v for v in row] for row in rows[1:]]


def _manual_logging(optimizers: int, **options):
    """Manual optimization with 1 or 2 optimizers stepping every batch, `self.log` each step (and per epoch);
    the CSV rows (their step column), the counters."""

    def scenario(L, root):
        init = _manual_init(L)

        def step(self, batch, batch_idx):
            for opt in self.optimizers() if optimizers == 2 else [self.optimizers()]:
                loss = self.loss(batch)
                opt.zero_grad()
                self.manual_backward(loss)
                opt.step()
            self.log("loss", loss)
            self.log("mean_loss", loss, on_step=False, on_epoch=True)

        def configure(self):
            return [torch.optim.SGD(self.parameters(), lr=0.1) for _ in range(optimizers)]

        model = _base(
            L,
            __init__=init,
            training_step=step,
            configure_optimizers=configure,
            validation_step=lambda self, b, i: self.log("v", self.loss(b)),
        )()
        logger = L.loggers.CSVLogger(str(root), name="csv")
        trainer = _trainer(L, root, logger=logger, num_sanity_val_steps=0, **options)
        trainer.fit(model, _loader(n=48), _loader(n=16, seed=1))
        return {"csv": _csv(trainer), "global_step": trainer.global_step, "epoch": trainer.current_epoch}

    return scenario


# ------------------------------------------------------------------------- hook order, callback_metrics order


def recorded_fit(
    L, root, module_hooks: list[str], callback_hooks: tuple[str, ...], with_datamodule: bool, **trainer_kwargs
) -> list[str]:
    """Fit a module whose ``module_hooks``, ``configure_optimizers``, ``*_dataloader`` methods (or a
    DataModule's, with its ``setup``) and a callback's ``callback_hooks`` record their calls; the calls, in
    order."""
    calls: list[str] = []

    def record(name):
        def hook(self, *args, **kwargs):
            calls.append(name)

        return hook

    def loader(name, **kwargs):
        def hook(self):
            calls.append(name)
            return _loader(**kwargs)

        return hook

    methods = {n: record(n) for n in module_hooks}
    methods["configure_optimizers"] = lambda self: (
        calls.append("configure_optimizers"),
        torch.optim.SGD(self.parameters(), lr=0.1),
    )[1]
    methods["validation_step"] = lambda self, b, i: None
    data = {
        "train_dataloader": loader("train_dataloader", n=16),
        "val_dataloader": loader("val_dataloader", n=8, seed=1),
    }
    datamodule = None
    if with_datamodule:
        datamodule = type("DM", (L.LightningDataModule,), {**data, "setup": record("dm.setup")})()
    else:
        methods.update(data)
    model = _base(L, **methods)()
    callback = type("Seen", (L.Callback,), {n: record(f"cb.{n}") for n in callback_hooks})()
    trainer = _trainer(L, root, callbacks=[callback], **{"num_sanity_val_steps": 1, **trainer_kwargs})
    trainer.fit(model, datamodule=datamodule)
    return calls


def _start_order(with_datamodule: bool):
    """The order of setup, configure_model/optimizers, on_fit_start, the sanity check (its hooks are the
    callbacks' alone) and on_train_start; the `*_dataloader` calls are left out here (the `data_order_*`
    scenarios of test_lightning_parity_flags_and_logging.py check when they run)."""

    def scenario(L, root):
        names = [
            "setup",
            "configure_model",
            "on_fit_start",
            "on_sanity_check_start",
            "on_sanity_check_end",
            "on_train_start",
            "on_validation_start",
            "on_train_epoch_start",
        ]
        calls = recorded_fit(L, root, names, ("setup", "on_fit_start", "on_train_start"), with_datamodule)
        return [call for call in calls if not call.endswith("_dataloader")]

    return scenario


def _callback_metrics_order(L, root):
    seen = {}

    def step(self, batch, batch_idx):
        loss = self.loss(batch)
        self.log("z_step_only", loss)
        self.log("b_both", loss, on_step=True, on_epoch=True)
        self.log("a_epoch_only", loss, on_step=False, on_epoch=True)
        return loss

    def val_step(self, batch, batch_idx):
        self.log("y_val", self.loss(batch))
        self.log("c_val", self.loss(batch) * 2)

    def record(name):
        def hook(self, *args):
            seen[name] = list(self.trainer.callback_metrics)

        return hook

    def batch_end(self, outputs, batch, batch_idx):
        seen["batch_end"] = list(self.trainer.callback_metrics)
        if (
            self.current_epoch == 0 and batch_idx == 1
        ):  # a forked value shows under its own name too, per step
            seen["first_epoch_batch"] = _plain(dict(self.trainer.callback_metrics))

    model = _base(
        L,
        training_step=step,
        validation_step=val_step,
        on_train_epoch_end=record("train_epoch_end"),
        on_validation_epoch_end=record("val_epoch_end"),
        on_train_batch_end=batch_end,
    )()
    trainer = _trainer(L, root, max_epochs=2, num_sanity_val_steps=0)
    trainer.fit(model, _loader(), _loader(seed=1))
    return {**seen, "after": list(trainer.callback_metrics), "values": _plain(dict(trainer.callback_metrics))}


SCENARIOS = {
    **{f"callback_log_{hook}": _callback_logging(hook) for hook in _CALLBACK_HOOKS + _EVAL_HOOKS},
    **{
        f"callback_log_on_step_{hook}": _callback_logging(hook, on_step=True)
        for hook in (
            "on_train_epoch_start",
            "on_validation_start",
            "on_validation_epoch_start",
            "on_train_start",
            "on_validation_batch_end",
            "on_test_start",
        )
    },
    **{
        f"callback_log_on_epoch_false_{hook}": _callback_logging(hook, on_epoch=False)
        for hook in ("on_train_epoch_end", "on_train_batch_end")
    },
    **{f"module_log_{hook}": _module_logging(hook) for hook in _MODULE_HOOKS},
    "module_log_on_step_on_train_epoch_start": _module_logging("on_train_epoch_start", on_step=True),
    "module_log_transfer_hook": _transfer_hook_logging,
    "log_twice_same_arguments": _logged_twice({"prog_bar": True}, {"prog_bar": True}),
    "log_twice_on_epoch": _logged_twice({}, {"on_epoch": True}),
    "log_twice_reduce_fx": _logged_twice(
        {"on_epoch": True, "on_step": False}, {"on_epoch": True, "on_step": False, "reduce_fx": "max"}
    ),
    "log_twice_prog_bar_later_batch": _logged_twice({}, {"prog_bar": True}, batch=2),
    "log_twice_reduce_fx_spelling": _logged_twice({"reduce_fx": "mean"}, {"reduce_fx": torch.mean}),
    "log_in_two_hooks": _logged_twice({}, {"on_epoch": True}, second_hook="on_train_batch_end"),
    "log_nowhere": _logged_nowhere,
    "log_twice_validation_same": _logged_twice_in_validation({}),
    "log_twice_validation_prog_bar": _logged_twice_in_validation({"prog_bar": True}),
    "exception_checkpoint_without_checkpointing": _exception_checkpoint_without_checkpointing,
    "manual_logging_one_optimizer": _manual_logging(1, max_epochs=2, log_every_n_steps=2),
    "manual_logging_two_optimizers": _manual_logging(2, max_epochs=2, log_every_n_steps=2),
    "manual_logging_two_optimizers_every_step": _manual_logging(
        2, max_epochs=1, log_every_n_steps=1, val_check_interval=3
    ),
    "callback_metrics_order": _callback_metrics_order,
    "start_order_module_loaders": _start_order(with_datamodule=False),
    "start_order_datamodule": _start_order(with_datamodule=True),
}


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_ember_observes_what_lightning_observes(name, tmp_path):
    compare_with_lightning(SCENARIOS[name], tmp_path)
