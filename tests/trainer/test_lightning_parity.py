"""ember's Trainer against Lightning 2.6.6, behaviour by behaviour (issue 13).

Each scenario is one function of `L` — the `lightning.pytorch` namespace or `ember` — that builds a small
module from the same code, runs it and returns what a user observes (logged metric names and values, the
lists `validate()`/`test()` return, epoch and step counters, when validation ran, files written). The test
runs every scenario on both libraries and asserts the observations are equal.
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

import pytest
import torch

import ember

pl = pytest.importorskip("lightning.pytorch")

QUIET = {
    "enable_progress_bar": False,
    "enable_model_summary": False,
    "enable_checkpointing": False,
    "logger": False,
}


def _data(n: int = 32, seed: int = 0) -> torch.utils.data.TensorDataset:
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 4, generator=generator)
    return torch.utils.data.TensorDataset(x, (x.sum(1, keepdim=True) > 0).float())


def _loader(n: int = 32, batch_size: int = 8, seed: int = 0) -> torch.utils.data.DataLoader:
    return torch.utils.data.DataLoader(_data(n, seed), batch_size=batch_size)


def _plain(value):
    """A metric value as a comparable Python number (5 decimals), containers element by element."""
    if isinstance(value, torch.Tensor):
        value = value.detach().float()
        return (
            round(value.item(), 5) if value.numel() == 1 else [round(v, 5) for v in value.flatten().tolist()]
        )
    if isinstance(value, float):
        return round(value, 5)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in sorted(value.items())}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _metrics(trainer) -> dict:
    return {
        "callback": _plain(dict(trainer.callback_metrics)),
        "logged": _plain(dict(trainer.logged_metrics)),
        "bar": _plain(dict(trainer.progress_bar_metrics)),
    }


def _base(L, **methods):
    """A LightningModule subclass of `L` with one linear layer, SGD, and `methods` as its own."""

    def __init__(self):
        L.LightningModule.__init__(self)
        torch.manual_seed(0)
        self.layer = torch.nn.Linear(4, 1)

    def loss(self, batch):
        x, y = batch
        return torch.nn.functional.binary_cross_entropy_with_logits(self.layer(x), y)

    def training_step(self, batch, batch_idx):
        return self.loss(batch)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    body = {
        "__init__": __init__,
        "loss": loss,
        "training_step": training_step,
        "configure_optimizers": configure_optimizers,
        **methods,
    }
    return type("Net", (L.LightningModule,), body)


def _trainer(L, root, **kwargs):
    options = {**QUIET, "max_epochs": 1, "default_root_dir": str(root), "accelerator": "cpu", **kwargs}
    return L.Trainer(**options)


# --------------------------------------------------------------------------- self.log semantics


def _log_in(hook: str, **log_kwargs):
    """A scenario logging `m` (the batch loss) from `hook` with `log_kwargs`; observes the three metric
    dicts."""

    def scenario(L, root):
        def step(self, batch, batch_idx):
            loss = self.loss(batch)
            self.log("m", loss, **log_kwargs)
            return loss

        def val_step(self, batch, batch_idx):
            self.log("m", self.loss(batch) + batch_idx, **log_kwargs)

        methods = (
            {"training_step": step}
            if hook == "training_step"
            else {"validation_step": val_step, "test_step": val_step}
        )
        model = _base(L, **methods)()
        trainer = _trainer(L, root, max_epochs=2, num_sanity_val_steps=0)
        out = None
        if hook == "training_step":
            trainer.fit(model, _loader())
        elif hook == "validation_step":
            trainer.fit(model, _loader(), _loader(seed=1))
        else:
            out = trainer.test(model, _loader(seed=1), verbose=False)
        return {**_metrics(trainer), "returned": _plain(out)}

    return scenario


def _log_hook_defaults(L, root):
    """self.log from each hook with on_step/on_epoch left to their per-hook defaults."""

    def logs(name):
        def hook(self, *args, **kwargs):
            self.log(name, torch.tensor(float(self.trainer.global_step)))

        return hook

    hooks = [
        "on_train_start",
        "on_train_epoch_start",
        "on_train_batch_start",
        "on_train_batch_end",
        "on_train_epoch_end",
        "on_validation_start",
        "on_validation_epoch_start",
        "on_validation_batch_end",
        "on_validation_epoch_end",
        "on_before_backward",
        "on_after_backward",
        "on_before_optimizer_step",
        "on_before_zero_grad",
    ]
    model = _base(L, validation_step=lambda self, b, i: None, **{h: logs(h) for h in hooks})()
    trainer = _trainer(L, root, max_epochs=2, num_sanity_val_steps=0)
    trainer.fit(model, _loader(), _loader(seed=1))
    return _metrics(trainer)


def _log_dict(L, root):
    def step(self, batch, batch_idx):
        loss = self.loss(batch)
        self.log_dict({"a": loss, "b": loss * 2}, prog_bar=True, on_step=True, on_epoch=True)
        self.log_dict({"c": loss}, logger=False)
        return loss

    trainer = _trainer(L, root, max_epochs=1)
    trainer.fit(_base(L, training_step=step)(), _loader())
    return _metrics(trainer)


def _log_reduce_fx(L, root):
    def val_step(self, batch, batch_idx):
        loss = self.loss(batch) + batch_idx
        self.log("mx", loss, reduce_fx="max")
        self.log("mn", loss, reduce_fx=torch.min)
        self.log("sm", loss, reduce_fx="sum")
        self.log("avg", loss, reduce_fx="mean", sync_dist=True)

    trainer = _trainer(L, root)
    out = trainer.validate(_base(L, validation_step=val_step)(), _loader(seed=1), verbose=False)
    return {**_metrics(trainer), "returned": _plain(out)}


def _log_batch_size(L, root):
    """Epoch means weighted by batch size (inferred, and given)."""

    def val_step(self, batch, batch_idx):
        self.log("inferred", batch[0].sum())
        self.log("given", batch[0].sum(), batch_size=1 + batch_idx)

    trainer = _trainer(L, root)
    out = trainer.validate(
        _base(L, validation_step=val_step)(), _loader(n=30, batch_size=8, seed=1), verbose=False
    )
    return {**_metrics(trainer), "returned": _plain(out)}


def _log_torchmetrics(L, root):
    torchmetrics = pytest.importorskip("torchmetrics")

    def init(self):
        type(self).__bases__[0].__init__(self)
        torch.manual_seed(0)
        self.layer = torch.nn.Linear(4, 1)
        self.acc = torchmetrics.classification.BinaryAccuracy()
        self.val_acc = torchmetrics.classification.BinaryAccuracy()

    def step(self, batch, batch_idx):
        x, y = batch
        self.acc(self.layer(x).sigmoid(), y.int())
        self.log("train_acc", self.acc, on_step=True, on_epoch=True)
        return self.loss(batch)

    def val_step(self, batch, batch_idx):
        x, y = batch
        self.val_acc.update(self.layer(x).sigmoid(), y.int())
        self.log("val_acc", self.val_acc)

    cls = _base(L, training_step=step, validation_step=val_step)
    cls.__init__ = lambda self: (L.LightningModule.__init__(self), _init_metrics(self, torchmetrics))[0]
    trainer = _trainer(L, root, max_epochs=2, num_sanity_val_steps=0)
    trainer.fit(cls(), _loader(), _loader(seed=1))
    return _metrics(trainer)


def _init_metrics(module, torchmetrics):
    torch.manual_seed(0)
    module.layer = torch.nn.Linear(4, 1)
    module.acc = torchmetrics.classification.BinaryAccuracy()
    module.val_acc = torchmetrics.classification.BinaryAccuracy()


def _log_flags(L, root):
    """prog_bar, logger=False, on_step only / on_epoch only from training_step."""

    def step(self, batch, batch_idx):
        loss = self.loss(batch)
        self.log("bar_only", loss, prog_bar=True, logger=False)
        self.log("both", loss, prog_bar=True, on_step=True, on_epoch=True)
        self.log("epoch_only", loss, on_step=False, on_epoch=True)
        self.log("int_value", batch_idx)
        self.log("float_value", 0.5 * batch_idx, on_epoch=True)
        return loss

    trainer = _trainer(L, root, max_epochs=2)
    trainer.fit(_base(L, training_step=step)(), _loader())
    return _metrics(trainer)


# -------------------------------------------------------------------------- validate / test / predict returns


def _eval_multi_loader(stage: str):
    def scenario(L, root):
        def step(self, batch, batch_idx, dataloader_idx=0):
            self.log("loss", self.loss(batch) + dataloader_idx)
            self.log(f"only_{dataloader_idx}", self.loss(batch), add_dataloader_idx=False)

        model = _base(L, validation_step=step, test_step=step)()
        trainer = _trainer(L, root)
        run = trainer.validate if stage == "validate" else trainer.test
        out = run(model, [_loader(seed=1), _loader(n=16, seed=2)], verbose=False)
        return {**_metrics(trainer), "returned": _plain(out)}

    return scenario


def _predict(loaders: int, return_predictions=None):
    def scenario(L, root):
        def predict_step(self, batch, batch_idx, dataloader_idx=0):
            return self.layer(batch[0])

        model = _base(L, predict_step=predict_step)()
        trainer = _trainer(L, root)
        data = _loader(n=20) if loaders == 1 else [_loader(n=20), _loader(n=12, seed=3)]
        kwargs = {} if return_predictions is None else {"return_predictions": return_predictions}
        out = trainer.predict(model, data, **kwargs)

        def shape(o):
            if o is None:
                return None
            return (
                [list(t.shape) for t in o]
                if isinstance(o[0], torch.Tensor)
                else [[list(t.shape) for t in d] for d in o]
            )

        return {"shapes": shape(out), "values": _plain(out) if out is not None else None}

    return scenario


# --------------------------------------------------------------------------- counters and schedule


def _counters(**kwargs):
    def scenario(L, root):
        seen = []

        def val_start(self):
            seen.append(
                ("val", self.trainer.current_epoch, self.trainer.global_step, self.trainer.sanity_checking)
            )

        model = _base(
            L, validation_step=lambda self, b, i: self.log("v", self.loss(b)), on_validation_start=val_start
        )()
        options = dict(kwargs)
        callbacks = []
        if options.pop("early_stop", False):
            callbacks.append(L.callbacks.EarlyStopping("v", patience=0, min_delta=10.0))
        trainer = _trainer(L, root, callbacks=callbacks, **options)
        trainer.fit(model, _loader(n=40), _loader(n=16, seed=1))
        return {
            "epoch": trainer.current_epoch,
            "step": trainer.global_step,
            "validations": seen,
            "stopped": trainer.should_stop,
            "weight": _plain(model.layer.weight),
        }

    return scenario


# -------------------------------------------------------------------------- hparams, datamodule, logger files


def _hparams(L, root):
    class Net(_base(L)):
        def __init__(self, lr=0.1, hidden=3, skip=None, *, flag=True):
            super().__init__()
            self.save_hyperparameters(ignore=["skip"])

    model = Net(lr=0.5, skip=torch.nn.Linear(1, 1))
    trainer = _trainer(L, root, logger=L.loggers.CSVLogger(str(root), name="run"))
    trainer.fit(model, _loader(n=8))
    hparams_file = Path(trainer.log_dir) / "hparams.yaml"
    return {
        "hparams": dict(model.hparams),
        "yaml": hparams_file.read_text(),
        "log_dir": os.path.relpath(trainer.log_dir, root),
        "init_args": sorted(getattr(model, "_hparams_initial", {}) or {}),
    }


def _hparams_dict_arg(L, root):
    class Net(_base(L)):
        def __init__(self, config):
            super().__init__()
            self.save_hyperparameters(config)

    model = Net({"a": 1, "b": "x"})
    return {"hparams": dict(model.hparams), "type": type(model.hparams).__name__, "a": model.hparams.a}


def _datamodule(L, root):
    calls = []

    def record(name):
        def hook(self, *args, **kwargs):
            given = [*args, *kwargs.values()]  # the stage: Lightning's is a str enum
            calls.append(f"{name}:{getattr(given[0], 'value', given[0])}" if given else name)

        return hook

    class DM(L.LightningDataModule):
        def __init__(self, size=16):
            super().__init__()
            self.save_hyperparameters()

        def train_dataloader(self):
            calls.append("train_dataloader")
            return _loader(n=self.hparams.size)

        def val_dataloader(self):
            calls.append("val_dataloader")
            return _loader(n=8, seed=1)

        def test_dataloader(self):
            calls.append("test_dataloader")
            return _loader(n=8, seed=2)

    for name in ("prepare_data", "setup", "teardown", "on_exception"):
        setattr(DM, name, record(name))
    dm = DM()
    model = _base(
        L,
        validation_step=lambda self, b, i: self.log("v", self.loss(b)),
        test_step=lambda self, b, i: self.log("t", self.loss(b)),
    )()
    trainer = _trainer(L, root, num_sanity_val_steps=0)
    trainer.fit(model, datamodule=dm)
    same = trainer.datamodule is dm
    trainer.test(model, datamodule=dm, verbose=False)
    return {"calls": calls, "same": same, "hparams": dict(dm.hparams), "after": trainer.datamodule is dm}


def _csv_logger(L, root):
    def step(self, batch, batch_idx):
        loss = self.loss(batch)
        self.log("train_loss", loss, on_step=True, on_epoch=True)
        return loss

    model = _base(
        L, training_step=step, validation_step=lambda self, b, i: self.log("val_loss", self.loss(b))
    )()
    logger = L.loggers.CSVLogger(str(root), name="exp", version=3)
    trainer = _trainer(L, root, logger=logger, max_epochs=2, log_every_n_steps=2, num_sanity_val_steps=0)
    trainer.fit(model, _loader(), _loader(seed=1))
    with open(Path(logger.log_dir) / "metrics.csv", newline="") as f:
        rows = list(csv.reader(f))
    return {
        "header": rows[0],
        "rows": [[str(round(float(v), 5)) if v else v for v in r] for r in rows[1:]],
        "log_dir": os.path.relpath(logger.log_dir, root),
        "trainer_log_dir": os.path.relpath(trainer.log_dir, root),
        "files": sorted(os.listdir(logger.log_dir)),
    }


def _log_dir_without_logger(L, root):
    trainer = _trainer(L, root)
    return {
        "log_dir": os.path.relpath(trainer.log_dir, root),
        "root": os.path.relpath(trainer.default_root_dir, root),
    }


# ------------------------------------------------------------------------- test(ckpt_path="best"), manual opt


def _fitted_with_best(L, root):
    """A 3-epoch fit whose best checkpoint (by "v") is epoch 1's: (trainer, its ModelCheckpoint)."""

    def val_step(self, batch, batch_idx):
        self.log("v", self.loss(batch) + (self.current_epoch - 1) ** 2)

    model = _base(L, validation_step=val_step, test_step=lambda self, b, i: self.log("t", self.loss(b)))()
    checkpoint = L.callbacks.ModelCheckpoint(dirpath=str(root / "ckpt"), monitor="v", filename="{epoch}")
    trainer = _trainer(
        L, root, max_epochs=3, callbacks=[checkpoint], enable_checkpointing=True, num_sanity_val_steps=0
    )
    trainer.fit(model, _loader(), _loader(seed=1))
    return trainer, checkpoint


def _test_best(L, root):
    trainer, checkpoint = _fitted_with_best(L, root)
    out = trainer.test(ckpt_path="best", dataloaders=_loader(seed=2), verbose=False)
    return {
        "returned": _plain(out),
        "best": os.path.basename(checkpoint.best_model_path),
        "ckpt_path": os.path.basename(trainer.ckpt_path),
    }


def _manual_init(L):
    """``__init__`` of a one-layer module (seeded) with manual optimization, for `_base`-style classes."""

    def init(self):
        L.LightningModule.__init__(self)
        torch.manual_seed(0)
        self.layer = torch.nn.Linear(4, 1)
        self.automatic_optimization = False

    return init


def _manual(L, root):
    init = _manual_init(L)

    def step(self, batch, batch_idx):
        opt = self.optimizers()
        sched = self.lr_schedulers()
        loss = self.loss(batch)
        opt.zero_grad()
        self.manual_backward(loss)
        opt.step()
        sched.step()
        self.log("loss", loss, prog_bar=True)
        self.log("lr", sched.get_last_lr()[0])

    def configure(self):
        opt = torch.optim.SGD(self.parameters(), lr=0.1)
        return [opt], [torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)]

    model = _base(L, __init__=init, training_step=step, configure_optimizers=configure)()
    trainer = _trainer(L, root, max_epochs=2)
    trainer.fit(model, _loader())
    return {**_metrics(trainer), "step": trainer.global_step, "weight": _plain(model.layer.weight)}


def _manual_two_optimizers(L, root):
    def init(self):
        L.LightningModule.__init__(self)
        torch.manual_seed(0)
        self.layer = torch.nn.Linear(4, 1)
        self.other = torch.nn.Linear(4, 1)
        self.automatic_optimization = False

    def step(self, batch, batch_idx):
        a, b = self.optimizers()
        for opt, layer in ((a, self.layer), (b, self.other)):
            loss = layer(batch[0]).pow(2).mean()
            opt.zero_grad()
            self.manual_backward(loss)
            opt.step()
        self.log("n_sched", float(self.lr_schedulers() is None))

    def configure(self):
        return torch.optim.SGD(self.layer.parameters(), lr=0.1), torch.optim.Adam(
            self.other.parameters(), lr=0.1
        )

    model = _base(L, __init__=init, training_step=step, configure_optimizers=configure)()
    trainer = _trainer(L, root, max_epochs=1)
    trainer.fit(model, _loader())
    return {**_metrics(trainer), "step": trainer.global_step, "weight": _plain(model.other.weight)}


def _log_epoch_end_hooks(L, root):
    """Values logged in the epoch-end hooks (epoch values by default) and what fit, validate, test return."""

    def val_epoch_end(self):
        self.log("val_end", torch.tensor(float(self.current_epoch)), prog_bar=True)

    def train_epoch_end(self):
        self.log("train_end", torch.tensor(float(self.global_step)))

    model = _base(
        L,
        validation_step=lambda self, b, i: self.log("v", self.loss(b)),
        test_step=lambda self, b, i: self.log("t", self.loss(b)),
        on_validation_epoch_end=val_epoch_end,
        on_test_epoch_end=val_epoch_end,
        on_train_epoch_end=train_epoch_end,
    )()
    trainer = _trainer(L, root, max_epochs=2)
    trainer.fit(model, _loader(), _loader(seed=1))
    after_fit = _metrics(trainer)
    validated = trainer.validate(model, _loader(seed=2), verbose=False)
    tested = trainer.test(model, _loader(seed=3), verbose=False)
    return {
        "fit": after_fit,
        "validate": _plain(validated),
        "test": _plain(tested),
        "after": _metrics(trainer),
    }


def _csv_validate_only(L, root):
    """A standalone validate() and test() write their epoch values at step 0 (no training step yet)."""
    model = _base(
        L,
        validation_step=lambda self, b, i: self.log("v", self.loss(b)),
        test_step=lambda self, b, i: self.log("t", self.loss(b), on_step=True),
    )()
    logger = L.loggers.CSVLogger(str(root), name="eval")
    trainer = _trainer(L, root, logger=logger)
    trainer.validate(model, _loader(seed=1), verbose=False)
    trainer.test(model, _loader(n=16, seed=2), verbose=False)
    with open(Path(logger.log_dir) / "metrics.csv", newline="") as f:
        rows = list(csv.reader(f))
    return {
        "header": rows[0],
        "rows": [[str(round(float(v), 5)) if v else v for v in r] for r in rows[1:]],
        "logged": _plain(dict(trainer.logged_metrics)),
    }


def _sanity_metrics(L, root):
    """What callbacks see during and after the sanity check (its values are discarded)."""
    seen = {}

    def record(name):
        def hook(self, *args):
            seen[name] = sorted(self.trainer.callback_metrics)

        return hook

    model = _base(
        L,
        validation_step=lambda self, b, i: self.log("v", self.loss(b), prog_bar=True),
        on_validation_epoch_end=record("val_epoch_end"),
        on_train_start=record("train_start"),
    )()
    trainer = _trainer(L, root, max_epochs=1, num_sanity_val_steps=1)
    trainer.fit(model, _loader(n=16), _loader(seed=1))
    return {"seen": seen, **_metrics(trainer)}


def _limit_eval_batches(L, root):
    model = _base(
        L,
        test_step=lambda self, b, i: self.log("t", self.loss(b) + i),
        predict_step=lambda self, b, i: self.layer(b[0]),
    )()
    tested = _trainer(L, root, limit_test_batches=2).test(model, _loader(seed=1), verbose=False)
    predicted = _trainer(L, root, limit_predict_batches=0.5).predict(model, _loader(n=24))
    return {"test": _plain(tested), "predict": [list(p.shape) for p in predicted]}


SCENARIOS = {
    "log_train_step_default": _log_in("training_step"),
    "log_train_step_epoch": _log_in("training_step", on_step=False, on_epoch=True),
    "log_train_step_both": _log_in("training_step", on_step=True, on_epoch=True, prog_bar=True),
    "log_train_step_both_logger_false": _log_in("training_step", on_step=True, on_epoch=True, logger=False),
    "log_val_step_default": _log_in("validation_step"),
    "log_val_step_on_step": _log_in("validation_step", on_step=True),
    "log_val_step_both": _log_in("validation_step", on_step=True, on_epoch=True, prog_bar=True),
    "log_test_step_default": _log_in("test_step"),
    "log_test_step_both": _log_in("test_step", on_step=True, on_epoch=True),
    "log_test_step_max": _log_in("test_step", reduce_fx="max"),
    "log_hook_defaults": _log_hook_defaults,
    "log_dict": _log_dict,
    "log_reduce_fx": _log_reduce_fx,
    "log_batch_size": _log_batch_size,
    "log_torchmetrics": _log_torchmetrics,
    "log_flags": _log_flags,
    "validate_two_loaders": _eval_multi_loader("validate"),
    "test_two_loaders": _eval_multi_loader("test"),
    "predict_one_loader": _predict(1),
    "predict_two_loaders": _predict(2),
    "predict_no_return": _predict(2, return_predictions=False),
    "counters_max_epochs": _counters(max_epochs=2),
    "counters_max_steps": _counters(max_epochs=-1, max_steps=7),
    "counters_max_steps_mid_epoch": _counters(max_epochs=3, max_steps=3),
    "counters_accumulate": _counters(max_epochs=2, accumulate_grad_batches=2),
    "counters_accumulate_uneven": _counters(max_epochs=2, accumulate_grad_batches=3),
    "counters_early_stop": _counters(max_epochs=5, early_stop=True),
    "val_check_interval_int": _counters(max_epochs=2, val_check_interval=2),
    "val_check_interval_float": _counters(max_epochs=2, val_check_interval=0.5),
    "val_check_interval_int_across_epochs": _counters(
        max_epochs=3, val_check_interval=3, check_val_every_n_epoch=None
    ),
    "check_val_every_n_epoch": _counters(max_epochs=4, check_val_every_n_epoch=2),
    "sanity_steps_default": _counters(max_epochs=1, num_sanity_val_steps=2),
    "sanity_steps_all": _counters(max_epochs=1, num_sanity_val_steps=-1),
    "limit_batches_int": _counters(max_epochs=2, limit_train_batches=2, limit_val_batches=1),
    "limit_batches_float": _counters(max_epochs=2, limit_train_batches=0.5, limit_val_batches=0.5),
    "limit_val_zero": _counters(max_epochs=2, limit_val_batches=0),
    "min_epochs_with_early_stop": _counters(max_epochs=5, min_epochs=3, early_stop=True),
    "fast_dev_run": _counters(fast_dev_run=True),
    "min_steps_with_early_stop": _counters(max_epochs=5, min_steps=12, early_stop=True),
    "max_epochs_unset_max_steps": _counters(max_steps=6),
    "log_epoch_end_hooks": _log_epoch_end_hooks,
    "csv_validate_only": _csv_validate_only,
    "sanity_metrics": _sanity_metrics,
    "limit_eval_batches": _limit_eval_batches,
    "hparams_ignore": _hparams,
    "hparams_dict_arg": _hparams_dict_arg,
    "datamodule_hooks": _datamodule,
    "csv_logger": _csv_logger,
    "log_dir_without_logger": _log_dir_without_logger,
    "test_best_checkpoint": _test_best,
    "manual_optimization": _manual,
    "manual_two_optimizers": _manual_two_optimizers,
}

#: documented differences in what a program observes (none: the run folder is Lightning's `lightning_logs/`).
_RENAMES: list[tuple[str, str]] = []


def _ember_spelling(observed):
    if isinstance(observed, str):
        for theirs, ours in _RENAMES:
            observed = observed.replace(theirs, ours)
        return observed
    if isinstance(observed, dict):
        return {_ember_spelling(k): _ember_spelling(v) for k, v in observed.items()}
    if isinstance(observed, (list, tuple)):
        return type(observed)(_ember_spelling(v) for v in observed)
    return observed


def _raises(fn) -> str:
    """'ok', or 'raised' when `fn()` raises (Lightning's MisconfigurationException, ember's ConfigError...):
    the two libraries' refusals are compared by where they happen."""
    try:
        fn()
    except Exception:  # noqa: BLE001 - which library's error class differs by design
        return "raised"
    return "ok"


def compare_with_lightning(scenario, tmp_path) -> None:
    """Run `scenario` on Lightning and on ember: ember must observe what Lightning does (in ember's spelling).
    The test of every scenario list (test_lightning_parity_*.py)."""
    theirs = scenario(pl, tmp_path / "lightning")
    ours = scenario(ember, tmp_path / "ember")
    assert ours == _ember_spelling(theirs)


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_ember_observes_what_lightning_observes(name, tmp_path):
    compare_with_lightning(SCENARIOS[name], tmp_path)
