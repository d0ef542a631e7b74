"""ember's Trainer against Lightning 2.6.6 (issue 13): when the data hooks run, what
`trainer.logged_metrics` holds and which rows the loggers get, the twice-logged check in the backward and
optimizer hooks, then Lightning's documented Trainer flags, `self.log` arguments, loggers and callbacks.

Each scenario is a function of `L` (`lightning.pytorch` or `ember`) returning what a user observes; the test
runs both and asserts they are equal (`compare_with_lightning`, test_lightning_parity.py's harness).
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
import torch

from tests.trainer.test_lightning_parity import (
    _base,
    _loader,
    _metrics,
    _plain,
    _raises,
    _trainer,
    compare_with_lightning,
)
from tests.trainer.test_lightning_parity_log_rules import recorded_fit

pl = pytest.importorskip("lightning.pytorch")


def _recorder(calls: list[str]):
    def record(name):
        def hook(self, *args, **kwargs):
            calls.append(name)

        return hook

    return record


# --------------------------------------------------------------------------- when the data hooks run


def _data_order(with_datamodule: bool = False, **trainer_kwargs):
    """The start hooks and the `*_dataloader` calls, in order: Lightning fetches the validation data for the
    sanity check (after on_sanity_check_start), the training data after it, and the validation data before
    on_train_start when the sanity check did not fetch it."""

    def scenario(L, root):
        names = [
            "setup",
            "configure_model",
            "on_fit_start",
            "on_train_start",
            "on_validation_start",
            "on_train_epoch_start",
            "on_train_end",
        ]
        callback_hooks = (
            "setup",
            "on_fit_start",
            "on_sanity_check_start",
            "on_sanity_check_end",
            "on_train_start",
        )
        return recorded_fit(L, root, names, callback_hooks, with_datamodule, **trainer_kwargs)

    return scenario


def _data_reads_fit_start_state(L, root):
    """A dataloader method reading what on_fit_start set (the batch size): Lightning calls it after
    on_fit_start."""

    def on_fit_start(self):
        self.batch_size = 4

    methods = {
        "on_fit_start": on_fit_start,
        "train_dataloader": lambda self: _loader(n=16, batch_size=self.batch_size),
        "val_dataloader": lambda self: _loader(n=8, batch_size=self.batch_size, seed=1),
        "validation_step": lambda self, b, i: None,
    }
    model = _base(L, **methods)()
    trainer = _trainer(L, root)
    trainer.fit(model)
    return {
        "batches": trainer.num_training_batches,
        "val": trainer.num_val_batches,
        "step": trainer.global_step,
    }


def _data_for_estimated_steps(L, root):
    """configure_optimizers reading `estimated_stepping_batches` fetches the training data there
    (Lightning)."""
    calls: list[str] = []
    record = _recorder(calls)

    def configure_optimizers(self):
        calls.append(f"configure_optimizers:{self.trainer.estimated_stepping_batches}")
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self):
        calls.append("train_dataloader")
        return _loader(n=16)

    model = _base(
        L,
        configure_optimizers=configure_optimizers,
        train_dataloader=train_dataloader,
        on_fit_start=record("on_fit_start"),
        on_train_start=record("on_train_start"),
    )()
    _trainer(L, root, max_epochs=2).fit(model)
    return calls


def _data_reload(L, root):
    """reload_dataloaders_every_n_epochs: when each hook runs again."""
    calls: list[str] = []
    record = _recorder(calls)

    def loader(name, **kwargs):
        def hook(self):
            calls.append(f"{name}@{self.trainer.current_epoch}")
            return _loader(**kwargs)

        return hook

    model = _base(
        L,
        train_dataloader=loader("train", n=16),
        val_dataloader=loader("val", n=8, seed=1),
        validation_step=lambda self, b, i: None,
        on_train_epoch_start=record("epoch_start"),
    )()
    _trainer(L, root, max_epochs=4, reload_dataloaders_every_n_epochs=2).fit(model)
    return calls


def _eval_data_order(stage: str):
    """validate/test/predict: the data hook runs after configure_model, before the stage's start hook."""

    def scenario(L, root):
        calls: list[str] = []
        record = _recorder(calls)
        hook = {"validate": "val", "test": "test", "predict": "predict"}[stage]
        step = {"validate": "validation_step", "test": "test_step", "predict": "predict_step"}[stage]
        prefix = {"validate": "validation", "test": "test", "predict": "predict"}[stage]

        def loader(self):
            calls.append(f"{hook}_dataloader")
            return _loader(n=8, seed=1)

        methods = {
            n: record(n) for n in ("setup", "configure_model", f"on_{prefix}_start", f"on_{prefix}_end")
        }
        methods.update({f"{hook}_dataloader": loader, step: lambda self, b, i: None})
        model = _base(L, **methods)()
        getattr(_trainer(L, root), stage)(model)
        return calls

    return scenario


# ------------------------------------------------------------------------- twice-logged names inside the step


_STEP_HOOKS = {
    "on_before_backward": lambda log: lambda self, loss: log(self),
    "on_after_backward": lambda log: lambda self: log(self),
    "on_before_optimizer_step": lambda log: lambda self, optimizer: log(self),
    "on_before_zero_grad": lambda log: lambda self, optimizer: log(self),
}


def _logged_in_step_hook(hook: str, from_callback: bool = False, manual: bool = False):
    """`m` logged in training_step, then again from `hook` (the module's or a callback's) with other
    arguments: Lightning keys a value by the hook it is logged from, so this is allowed; observes the
    metrics too."""

    def scenario(L, root):
        def log(self_or_module):
            module = self_or_module
            module.log("m", 3.0, on_step=False, on_epoch=True, reduce_fx="max")

        def step(self, b, i):
            loss = self.loss(b)
            self.log("m", loss, prog_bar=True)
            if manual:
                opt = self.optimizers()
                opt.zero_grad()
                self.manual_backward(loss)
                opt.step()
            return loss

        methods = {"training_step": step}
        callbacks = []
        if from_callback:

            def cb_hook(cb, trainer, module, *args):
                log(module)

            callbacks.append(type("Logs", (L.Callback,), {hook: cb_hook})())
        else:
            methods[hook] = _STEP_HOOKS[hook](log)
        model = _base(L, **methods)()
        if manual:
            model.automatic_optimization = False
        trainer = _trainer(L, root, limit_train_batches=3, callbacks=callbacks)
        outcome = _raises(lambda: trainer.fit(model, _loader()))
        return {"outcome": outcome, **(_metrics(trainer) if outcome == "ok" else {})}

    return scenario


# --------------------------------------------------------------------------- logged_metrics and logger rows


def _csv(logger) -> list[list[str]]:
    path = Path(logger.log_dir) / "metrics.csv"
    if not path.exists():
        return []
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    return [rows[0]] + [[str(round(float(v), 5)) if v else v for v in row] for row in rows[1:]]


def _logged_metrics_when(logger_kind: str = "csv", **trainer_kwargs):
    """`trainer.logged_metrics` as a callback sees it after each training batch and after each epoch, and the
    rows the CSV logger wrote (an epoch shorter than log_every_n_steps writes only the epoch rows)."""

    def scenario(L, root):
        seen = []

        def step(self, b, i):
            loss = self.loss(b)
            self.log("loss", loss)
            self.log("hidden", loss, logger=False)
            self.log("both", loss, on_epoch=True)
            self.log("mean", loss, on_step=False, on_epoch=True)
            return loss

        class Watch(L.Callback):
            def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
                seen.append(("batch", batch_idx, sorted(_plain(dict(trainer.logged_metrics)).items())))

            def on_train_epoch_end(self, trainer, module):
                seen.append(
                    ("epoch", trainer.current_epoch, sorted(_plain(dict(trainer.logged_metrics)).items()))
                )

        model = _base(L, training_step=step, validation_step=lambda self, b, i: self.log("v", self.loss(b)))()
        logger = L.loggers.CSVLogger(str(root), name="csv") if logger_kind == "csv" else False
        trainer = _trainer(
            L,
            root,
            logger=logger,
            callbacks=[Watch()],
            num_sanity_val_steps=0,
            **{"max_epochs": 2, **trainer_kwargs},
        )
        trainer.fit(model, _loader(n=40), _loader(n=16, seed=1))
        return {
            "seen": seen,
            "after": _plain(dict(trainer.logged_metrics)),
            "csv": _csv(logger) if logger else None,
        }

    return scenario


# --------------------------------------------------------------------------- Trainer flags (Lightning's docs)


def _flags(**trainer_kwargs):
    """A fit with `trainer_kwargs`: batch counts, steps, epochs, and the global step at every validation."""

    def scenario(L, root):
        at = []
        sanity = []

        def val_step(self, b, i):
            (sanity if self.trainer.sanity_checking else at).append((self.trainer.global_step, i))
            self.log("v", self.loss(b))

        model = _base(L, validation_step=val_step)()
        trainer = _trainer(L, root, **{"max_epochs": 2, **trainer_kwargs})
        outcome = _raises(lambda: trainer.fit(model, _loader(n=80), _loader(n=24, seed=1)))
        return {
            "outcome": outcome,
            "val_at": at,
            "sanity": sanity,
            "step": trainer.global_step,
            "epoch": trainer.current_epoch,
            "batches": trainer.num_training_batches,
            "val_batches": trainer.num_val_batches,
            "sanity_batches": trainer.num_sanity_val_batches,
        }

    return scenario


def _inference_mode(flag: bool):
    def scenario(L, root):
        seen = []

        def val_step(self, b, i):
            seen.append((torch.is_inference_mode_enabled(), torch.is_grad_enabled()))

        trainer = _trainer(L, root, inference_mode=flag)
        model = _base(L, validation_step=val_step, test_step=val_step)()
        trainer.validate(model, _loader(n=8), verbose=False)
        trainer.test(model, _loader(n=8), verbose=False)
        return seen

    return scenario


def _add_dataloader_idx(L, root):
    def val_step(self, b, i, dataloader_idx=0):
        self.log("v", self.loss(b), add_dataloader_idx=False)
        self.log("w", self.loss(b) + dataloader_idx)

    model = _base(L, validation_step=val_step)()
    trainer = _trainer(L, root)
    # Lightning refuses one name from two loaders without the suffix (the same key, another dataloader_idx)
    return _raises(lambda: trainer.validate(model, [_loader(n=16), _loader(n=8, seed=1)], verbose=False))


def _reduce_fx(L, root):
    def step(self, b, i):
        loss = self.loss(b)
        self.log("mx", loss, on_step=False, on_epoch=True, reduce_fx="max")
        self.log("mn", loss, on_step=False, on_epoch=True, reduce_fx=torch.min)
        self.log("sm", loss, on_step=False, on_epoch=True, reduce_fx="sum")
        self.log("bs", loss, on_step=False, on_epoch=True, batch_size=i + 1)
        return loss

    trainer = _trainer(L, root, max_epochs=2)
    trainer.fit(_base(L, training_step=step)(), _loader(n=40))
    return _metrics(trainer)


def _predict_return(return_predictions):
    def scenario(L, root):
        model = _base(L, predict_step=lambda self, b, i: self.layer(b[0]).sum())()
        out = _trainer(L, root).predict(model, _loader(n=16), return_predictions=return_predictions)
        return _plain(out)

    return scenario


def _prediction_writer(interval: str):
    def scenario(L, root):
        calls = []

        class Writer(L.callbacks.BasePredictionWriter):
            def write_on_batch_end(
                self, trainer, module, prediction, batch_indices, batch, batch_idx, dataloader_idx
            ):
                calls.append(("batch", batch_idx, dataloader_idx, _plain(prediction)))

            def write_on_epoch_end(self, trainer, module, predictions, batch_indices):
                calls.append(("epoch", _plain(predictions)))

        model = _base(L, predict_step=lambda self, b, i: self.layer(b[0]).sum())()
        out = _trainer(L, root, callbacks=[Writer(write_interval=interval)]).predict(
            model, _loader(n=16), return_predictions=False
        )
        return {"calls": calls, "out": out}

    return scenario


def _hparams_load(L, root):
    """save_hyperparameters(ignore=..., logger=False), then load_from_checkpoint with an override and
    strict."""

    class HNet(_base(L)):
        def __init__(self, lr=0.1, width=4, skip="x"):
            super().__init__()
            self.save_hyperparameters(ignore=["skip"], logger=False)
            self.layer = torch.nn.Linear(width, 1)

    cls = HNet
    model = cls(lr=0.5)
    trainer = _trainer(L, root)
    trainer.fit(model, _loader(n=16))
    path = str(root / "m.ckpt")
    trainer.save_checkpoint(path)
    loaded = cls.load_from_checkpoint(path, map_location="cpu", lr=0.01)
    return {
        "hparams": dict(model.hparams),
        "loaded": dict(loaded.hparams),
        "equal": torch.equal(loaded.layer.weight, model.layer.weight),
        "bad_strict": _raises(lambda: cls.load_from_checkpoint(path, width=5)),
        "loose": _raises(lambda: cls.load_from_checkpoint(path, strict=False)),
    }


def _csv_logger_api(L, root):
    logger = L.loggers.CSVLogger(
        str(root), name="exp", version="v1", prefix="pre", flush_logs_every_n_steps=2
    )
    model = _base(L, validation_step=lambda self, b, i: self.log("v", self.loss(b)))()
    trainer = _trainer(L, root, logger=logger, log_every_n_steps=1)
    trainer.fit(model, _loader(n=32), _loader(n=8, seed=1))
    logger.log_hyperparams({"a": 1})
    files = sorted(p.name for p in Path(logger.log_dir).iterdir() if p.is_file())
    rel = lambda p: str(Path(p).relative_to(root)) if p else p  # noqa: E731
    return {
        "name": logger.name,
        "version": logger.version,
        "log_dir": rel(logger.log_dir),
        "save_dir": rel(logger.save_dir),
        "root_dir": rel(logger.root_dir),
        "files": files,
        "csv": _csv(logger),
    }


def _validate_best(L, root):
    def val_step(self, b, i):
        self.log("v", self.loss(b) + self.current_epoch)

    checkpoint = L.callbacks.ModelCheckpoint(dirpath=str(root / "ck"), monitor="v", mode="min")
    model = _base(L, validation_step=val_step)()
    trainer = _trainer(L, root, max_epochs=3, enable_checkpointing=True, callbacks=[checkpoint])
    trainer.fit(model, _loader(n=16), _loader(n=8, seed=1))
    out = trainer.validate(ckpt_path="best", dataloaders=_loader(n=8, seed=1), verbose=False)
    return {
        "best": Path(checkpoint.best_model_path).name,
        "ckpt": Path(trainer.ckpt_path).name,
        "out": _plain(out),
    }


def _early_stopping(**kwargs):
    def scenario(L, root):
        def val_step(self, b, i):
            self.log("v", torch.tensor([1.0, 0.9, 0.95, 0.94, 0.93, 0.96, 0.97, 0.99][self.current_epoch]))

        stopper = L.callbacks.EarlyStopping(**{"monitor": "v", **kwargs})
        trainer = _trainer(L, root, max_epochs=8, callbacks=[stopper])
        trainer.fit(_base(L, validation_step=val_step)(), _loader(n=16), _loader(n=8, seed=1))
        return {
            "epoch": trainer.current_epoch,
            "stopped": stopper.stopped_epoch,
            "wait": stopper.wait_count,
            "best": _plain(stopper.best_score),
        }

    return scenario


def _checkpoint_every_n_steps(**kwargs):
    def scenario(L, root):
        checkpoint = L.callbacks.ModelCheckpoint(dirpath=str(root / "ck"), **kwargs)
        trainer = _trainer(L, root, max_epochs=2, enable_checkpointing=True, callbacks=[checkpoint])
        trainer.fit(_base(L)(), _loader(n=40))
        folder = root / "ck"
        return {
            "files": sorted(p.name for p in folder.iterdir()),
            "links": sorted(p.name for p in folder.iterdir() if p.is_symlink()),
            "last": Path(checkpoint.last_model_path).name,
        }

    return scenario


def _early_stopping_thresholds(**kwargs):
    """EarlyStopping's stopping_threshold, divergence_threshold, check_finite and
    verbose/log_rank_zero_only."""

    def scenario(L, root):
        values = [1.0, 0.8, 0.5, 0.3, float("nan"), 0.2, 5.0, 0.1]

        def val_step(self, b, i):
            self.log("v", torch.tensor(values[self.current_epoch]))

        stopper = L.callbacks.EarlyStopping(
            **{"monitor": "v", "verbose": True, "log_rank_zero_only": True, **kwargs}
        )
        trainer = _trainer(L, root, max_epochs=8, callbacks=[stopper])
        trainer.fit(_base(L, validation_step=val_step)(), _loader(n=16), _loader(n=8, seed=1))
        return {"epoch": trainer.current_epoch, "stopped": stopper.stopped_epoch, "wait": stopper.wait_count}

    return scenario


def _checkpoint_names(**kwargs):
    """ModelCheckpoint's file names: a template with metrics, auto_insert_metric_name, every_n_epochs,
    save_last."""

    def scenario(L, root):
        def val_step(self, b, i):
            self.log("val/loss", self.loss(b) + self.current_epoch)

        checkpoint = L.callbacks.ModelCheckpoint(dirpath=str(root / "ck"), **kwargs)
        trainer = _trainer(L, root, max_epochs=4, enable_checkpointing=True, callbacks=[checkpoint])
        trainer.fit(_base(L, validation_step=val_step)(), _loader(n=16), _loader(n=8, seed=1))
        return {
            "files": sorted(p.name for p in (root / "ck").iterdir()),
            "best": Path(checkpoint.best_model_path).name if checkpoint.best_model_path else "",
            "top": sorted(Path(p).name for p in checkpoint.best_k_models),
            "last": Path(checkpoint.last_model_path).name if checkpoint.last_model_path else "",
        }

    return scenario


def _test_ckpt_last(L, root):
    checkpoint = L.callbacks.ModelCheckpoint(dirpath=str(root / "ck"), save_last=True)
    model = _base(L, test_step=lambda self, b, i: self.log("t", self.loss(b)))()
    trainer = _trainer(L, root, max_epochs=2, enable_checkpointing=True, callbacks=[checkpoint])
    trainer.fit(model, _loader(n=16))
    out = trainer.test(model, _loader(n=8, seed=1), ckpt_path="last", verbose=False)
    return {"ckpt": Path(trainer.ckpt_path).name, "out": _plain(out)}


def _prog_bar(L, root):
    def step(self, b, i):
        loss = self.loss(b)
        self.log_dict({"a": loss, "b": loss * 2}, prog_bar=True, on_step=True, on_epoch=True)
        self.log("c", loss, prog_bar=False)
        return loss

    def val_step(self, b, i):
        self.log("v", self.loss(b), prog_bar=True)

    model = _base(L, training_step=step, validation_step=val_step)()
    trainer = _trainer(L, root, max_epochs=2)
    trainer.fit(model, _loader(n=24), _loader(n=8, seed=1))
    return _metrics(trainer)


def _single_device_flags(**kwargs):
    """use_distributed_sampler / deterministic on one device: the data order and the weights are those
    without."""

    def scenario(L, root):
        before = torch.are_deterministic_algorithms_enabled()  # Lightning's deterministic=True leaves it set
        model = _base(L)()
        try:
            return _fit_weights(L, root, model, kwargs)
        finally:
            torch.use_deterministic_algorithms(before)

    return scenario


def _fit_weights(L, root, model, kwargs):
    trainer = _trainer(L, root, **kwargs)
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(*_loader(n=32).dataset.tensors),
        batch_size=8,
        shuffle=True,
        generator=torch.Generator().manual_seed(3),
    )
    trainer.fit(model, loader)
    return _plain(model.layer.weight)


def _data_attributes_at_start(L, root):
    """What callbacks see of the data in on_fit_start (nothing fetched yet) and on_train_start."""
    seen = {}

    class Watch(L.Callback):
        def look(self, trainer):
            return {
                "validation": trainer.enable_validation,
                "val": trainer.val_dataloaders is not None,
                "train": trainer.train_dataloader is not None,
                "val_batches": trainer.num_val_batches,
                "batches": trainer.num_training_batches,
            }

        def on_fit_start(self, trainer, module):
            seen["fit_start"] = self.look(trainer)

        def on_train_start(self, trainer, module):
            seen["train_start"] = self.look(trainer)

    model = _base(
        L,
        validation_step=lambda self, b, i: None,
        train_dataloader=lambda self: _loader(n=16),
        val_dataloader=lambda self: _loader(n=8, seed=1),
    )()
    _trainer(L, root, callbacks=[Watch()]).fit(model)
    return seen


def _hparams_file(L, root):
    """save_hyperparameters() goes to the logger: the CSV logger's hparams.yaml."""

    class HNet(_base(L)):
        def __init__(self, lr=0.1, name="net"):
            super().__init__()
            self.save_hyperparameters()

    logger = L.loggers.CSVLogger(str(root), name="csv")
    _trainer(L, root, logger=logger).fit(HNet(lr=0.3), _loader(n=16))
    return (Path(logger.log_dir) / "hparams.yaml").read_text()


def _tensorboard_api(L, root):
    logger = L.loggers.TensorBoardLogger(str(root), name="tb", version=3, sub_dir="sub")
    rel = lambda p: str(Path(p).relative_to(root))  # noqa: E731
    return {
        "name": logger.name,
        "version": logger.version,
        "log_dir": rel(logger.log_dir),
        "root_dir": rel(logger.root_dir),
    }


def _early_stopping_train_epoch_end(L, root):
    def step(self, b, i):
        loss = self.loss(b)
        self.log(
            "t",
            torch.tensor([1.0, 0.9, 0.95, 0.96, 0.97, 0.5][self.current_epoch]),
            on_step=False,
            on_epoch=True,
        )
        return loss

    stopper = L.callbacks.EarlyStopping(monitor="t", patience=2, check_on_train_epoch_end=True)
    trainer = _trainer(L, root, max_epochs=6, callbacks=[stopper])
    trainer.fit(_base(L, training_step=step)(), _loader(n=16))
    return {"epoch": trainer.current_epoch, "stopped": stopper.stopped_epoch}


def _writer_two_loaders(L, root):
    calls = []

    class Writer(L.callbacks.BasePredictionWriter):
        def write_on_batch_end(
            self, trainer, module, prediction, batch_indices, batch, batch_idx, dataloader_idx
        ):
            calls.append(("batch", batch_idx, dataloader_idx, list(batch_indices) if batch_indices else None))

        def write_on_epoch_end(self, trainer, module, predictions, batch_indices):
            calls.append(("epoch", len(predictions), [len(p) for p in predictions]))

    def predict_step(self, b, i, dataloader_idx=0):
        return self.layer(b[0]).sum()

    model = _base(L, predict_step=predict_step)()
    out = _trainer(L, root, callbacks=[Writer(write_interval="batch_and_epoch")]).predict(
        model, [_loader(n=16), _loader(n=8, seed=1)]
    )
    return {"calls": calls, "out": [len(o) for o in out]}


SCENARIOS = {
    "hparams_file": _hparams_file,
    "tensorboard_logger_api": _tensorboard_api,
    "early_stopping_train_epoch_end": _early_stopping_train_epoch_end,
    "prediction_writer_two_loaders": _writer_two_loaders,
    "data_attributes_at_start": _data_attributes_at_start,
    "early_stopping_stopping_threshold": _early_stopping_thresholds(stopping_threshold=0.4),
    "early_stopping_divergence_threshold": _early_stopping_thresholds(divergence_threshold=0.9, mode="max"),
    "early_stopping_check_finite": _early_stopping_thresholds(patience=8),
    "early_stopping_no_check_finite": _early_stopping_thresholds(patience=8, check_finite=False),
    "checkpoint_template": _checkpoint_names(
        monitor="val/loss", filename="{epoch}-{val/loss:.2f}", save_top_k=2
    ),
    "checkpoint_template_no_names": _checkpoint_names(
        monitor="val/loss",
        filename="e{epoch:02d}-{val/loss:.3f}",
        auto_insert_metric_name=False,
        save_last=True,
    ),
    "checkpoint_every_2_epochs": _checkpoint_names(every_n_epochs=2, save_top_k=-1),
    "test_ckpt_last": _test_ckpt_last,
    "prog_bar_log_dict": _prog_bar,
    "use_distributed_sampler_false": _single_device_flags(use_distributed_sampler=False),
    "deterministic_true": _single_device_flags(deterministic=True),
    "flags_limit_int": _flags(limit_train_batches=3, limit_val_batches=2),
    "flags_limit_float": _flags(limit_train_batches=0.5, limit_val_batches=0.5),
    "flags_limit_val_zero": _flags(limit_val_batches=0),
    "flags_val_check_int_across_epochs": _flags(
        val_check_interval=3, check_val_every_n_epoch=None, max_epochs=3
    ),
    "flags_val_check_int_too_big": _flags(val_check_interval=30),
    "flags_val_check_float": _flags(val_check_interval=0.5),
    "flags_check_val_every_2": _flags(check_val_every_n_epoch=2, max_epochs=4, limit_train_batches=2),
    "flags_sanity_all": _flags(num_sanity_val_steps=-1),
    "flags_sanity_zero": _flags(num_sanity_val_steps=0),
    "flags_max_steps": _flags(max_steps=7, max_epochs=-1),
    "flags_min_epochs": _flags(max_epochs=1, min_epochs=2),
    "flags_overfit": _flags(overfit_batches=2),
    "inference_mode_true": _inference_mode(True),
    "inference_mode_false": _inference_mode(False),
    "log_add_dataloader_idx_false": _add_dataloader_idx,
    "log_reduce_fx_and_batch_size": _reduce_fx,
    "predict_return_false": _predict_return(False),
    "predict_return_true": _predict_return(True),
    **{f"prediction_writer_{i}": _prediction_writer(i) for i in ("batch", "epoch", "batch_and_epoch")},
    "hparams_ignore_load_override": _hparams_load,
    "csv_logger_api": _csv_logger_api,
    "validate_ckpt_best": _validate_best,
    "early_stopping_patience": _early_stopping(patience=2),
    "early_stopping_min_delta": _early_stopping(patience=1, min_delta=0.05),
    "early_stopping_max": _early_stopping(patience=2, mode="max"),
    "checkpoint_every_n_train_steps": _checkpoint_every_n_steps(every_n_train_steps=2, save_top_k=-1),
    "checkpoint_save_last_link": _checkpoint_every_n_steps(every_n_train_steps=3, save_last="link"),
    "logged_metrics_short_epoch": _logged_metrics_when(),
    "logged_metrics_every_2": _logged_metrics_when(log_every_n_steps=2),
    "logged_metrics_every_3_accumulate": _logged_metrics_when(log_every_n_steps=3, accumulate_grad_batches=2),
    "logged_metrics_no_logger": _logged_metrics_when(logger_kind="none", log_every_n_steps=2),
    **{f"log_twice_{hook}": _logged_in_step_hook(hook) for hook in _STEP_HOOKS},
    **{f"log_twice_callback_{hook}": _logged_in_step_hook(hook, from_callback=True) for hook in _STEP_HOOKS},
    "log_twice_manual_on_before_backward": _logged_in_step_hook("on_before_backward", manual=True),
    "log_twice_manual_on_after_backward": _logged_in_step_hook("on_after_backward", manual=True),
    **{f"data_order_{stage}": _eval_data_order(stage) for stage in ("validate", "test", "predict")},
    "data_order_sanity": _data_order(),
    "data_order_no_sanity": _data_order(num_sanity_val_steps=0),
    "data_order_datamodule": _data_order(with_datamodule=True),
    "data_order_val_later_epoch": _data_order(
        num_sanity_val_steps=0, max_epochs=2, check_val_every_n_epoch=2
    ),
    "data_order_no_val_batches": _data_order(limit_val_batches=0),
    "data_order_no_train_batches": _data_order(limit_train_batches=0),
    "data_order_sanity_all": _data_order(num_sanity_val_steps=-1),
    "data_reads_fit_start_state": _data_reads_fit_start_state,
    "data_for_estimated_steps": _data_for_estimated_steps,
    "data_reload": _data_reload,
}


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_ember_observes_what_lightning_observes(name, tmp_path):
    compare_with_lightning(SCENARIOS[name], tmp_path)
