"""ember's Trainer against Lightning 2.6.6 (issue 13): the checkpointing, logging and debugging doc
pages, one scenario per documented behaviour — what a checkpoint file holds, the checkpoint hooks,
`load_from_checkpoint` options, `ModelCheckpoint`'s documented attributes, resuming from "last"; the
`self.log` options, a custom `Logger` written as the docs show, multiple loggers; `fast_dev_run`, the
`limit_*_batches` flags, the simple profiler's files, `detect_anomaly` and `self.print`.

Each scenario is a function of `L` (`lightning.pytorch` or `ember`) returning what a user observes; the test
runs both and asserts they are equal (`compare_with_lightning`, test_lightning_parity.py's harness).
"""

from __future__ import annotations

import contextlib
import importlib
import io
import logging
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

pl = pytest.importorskip("lightning.pytorch")


def _load(path) -> dict:
    return torch.load(path, map_location="cpu", weights_only=False)


def _files(folder: Path) -> list[str]:
    """Every file under `folder`, relative to it, sorted."""
    if not folder.exists():
        return []
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def _val_loss_module(L, values=(0.9, 0.5, 0.7, 0.3, 0.6), **methods):
    """A module whose validation logs `val_loss` = values[epoch] (a known sequence for ModelCheckpoint)."""

    def val_step(self, b, i):
        self.log("val_loss", torch.tensor(values[self.current_epoch]))

    return _base(L, validation_step=val_step, **methods)


@contextlib.contextmanager
def _terminal():
    """What a run writes to the terminal: stdout, stderr and Lightning's console logger, all into one buffer.
    (Lightning's logger prints through its own stream handler, or the root logger's under pytest: a handler of
    ours takes its records, the others are silenced meanwhile.)"""
    buffer = io.StringIO()
    lightning_logger = logging.getLogger("lightning.pytorch")
    handlers = [h for h in lightning_logger.handlers if isinstance(h, logging.StreamHandler)]
    streams = [h.setStream(io.StringIO()) for h in handlers]
    ours = logging.StreamHandler(buffer)
    level, propagate = lightning_logger.level, lightning_logger.propagate
    lightning_logger.addHandler(ours)
    lightning_logger.setLevel(logging.INFO)
    lightning_logger.propagate = False
    try:
        with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
            yield buffer
    finally:
        lightning_logger.removeHandler(ours)
        lightning_logger.setLevel(level)
        lightning_logger.propagate = propagate
        for handler, stream in zip(handlers, streams, strict=True):
            handler.setStream(stream)


def _hparams_module(L):
    class HNet(_base(L)):
        def __init__(self, lr=0.1, hidden=4):
            super().__init__()
            self.save_hyperparameters()

    return HNet


# --------------------------------------------------------------------------- what a checkpoint holds


def _checkpoint_contents(L, root):
    """Checkpointing (basic): the keys of a saved file, its hyper_parameters, state_dict names, callback
    keys."""
    checkpoint = L.callbacks.ModelCheckpoint(dirpath=str(root / "ck"), monitor="val_loss")
    stopper = L.callbacks.EarlyStopping(monitor="val_loss", patience=3)
    HNet = _hparams_module(L)

    class Net(HNet):
        def validation_step(self, b, i):
            self.log("val_loss", self.loss(b))

    trainer = _trainer(L, root, max_epochs=2, enable_checkpointing=True, callbacks=[checkpoint, stopper])
    trainer.fit(Net(lr=0.2), _loader(n=16), _loader(n=8, seed=1))
    saved = _load(checkpoint.best_model_path)
    keys = [
        "epoch",
        "global_step",
        "state_dict",
        "optimizer_states",
        "lr_schedulers",
        "callbacks",
        "loops",
        "hyper_parameters",
        "hparams_name",
        "datamodule_hyper_parameters",
    ]
    # ember's ModelCheckpoint state also holds `last_global_step_saved` (so a resumed run does not save the
    # same step twice); Lightning's keys must all be there
    lightning_state = {
        "EarlyStopping": [
            "best_score",
            "patience",
            "stopped_epoch",
            "stopping_reason",
            "stopping_reason_message",
            "wait_count",
        ],
        "ModelCheckpoint": [
            "best_k_models",
            "best_model_path",
            "best_model_score",
            "current_score",
            "dirpath",
            "kth_best_model_path",
            "kth_value",
            "last_model_path",
            "monitor",
        ],
    }
    callback_state = {
        k.split("{")[0]: [name for name in lightning_state[k.split("{")[0]] if name in v]
        for k, v in saved["callbacks"].items()
    }
    return {
        "present": [k for k in keys if k in saved],
        "hparams": dict(saved["hyper_parameters"]),
        "state_dict": sorted(saved["state_dict"]),
        "callbacks": callback_state,
        "epoch": saved["epoch"],
        "step": saved["global_step"],
        "optimizer": sorted(saved["optimizer_states"][0]),
    }


def _weights_only_contents(L, root):
    """save_checkpoint(path, weights_only=True): the weights and counters, no optimizer or callback states."""
    trainer = _trainer(L, root, callbacks=[L.callbacks.EarlyStopping(monitor="t")])
    model = _base(L, training_step=lambda self, b, i: (self.log("t", self.loss(b)), self.loss(b))[1])()
    trainer.fit(model, _loader(n=16))
    trainer.save_checkpoint(root / "w.ckpt", weights_only=True)
    saved = _load(root / "w.ckpt")
    keys = ["epoch", "global_step", "state_dict", "optimizer_states", "lr_schedulers", "callbacks", "loops"]
    loaded = type(model).load_from_checkpoint(str(root / "w.ckpt"))
    return {"present": [k for k in keys if k in saved], "weights": _plain(loaded.layer.weight)}


def _checkpoint_hooks_round_trip(L, root):
    """on_save_checkpoint adds a key; on_load_checkpoint reads it back, in load_from_checkpoint and on
    resume."""
    seen = []

    def on_save(self, checkpoint):
        checkpoint["something_cool_i_want_to_save"] = {"epoch_seen": self.current_epoch}

    def on_load(self, checkpoint):
        seen.append(checkpoint["something_cool_i_want_to_save"])

    cls = _base(L, on_save_checkpoint=on_save, on_load_checkpoint=on_load)
    trainer = _trainer(L, root)
    trainer.fit(cls(), _loader(n=16))
    trainer.save_checkpoint(root / "c.ckpt")
    cls.load_from_checkpoint(str(root / "c.ckpt"))
    _trainer(L, root, max_epochs=2).fit(cls(), _loader(n=16), ckpt_path=str(root / "c.ckpt"))
    return {"seen": seen, "saved": _load(root / "c.ckpt")["something_cool_i_want_to_save"]}


def _load_with_overrides(L, root):
    """load_from_checkpoint(path, map_location=, **hparam_overrides): the overrides win, the rest come from
    the file."""
    HNet = _hparams_module(L)
    trainer = _trainer(L, root)
    trainer.fit(HNet(lr=0.3, hidden=8), _loader(n=16))
    trainer.save_checkpoint(root / "h.ckpt")
    loaded = HNet.load_from_checkpoint(str(root / "h.ckpt"), map_location=torch.device("cpu"), lr=0.01)
    by_lambda = HNet.load_from_checkpoint(str(root / "h.ckpt"), map_location=lambda storage, loc: storage)
    by_dict = HNet.load_from_checkpoint(str(root / "h.ckpt"), map_location={"cpu": "cpu"})
    return {
        "hparams": dict(loaded.hparams),
        "lr": loaded.hparams.lr,
        "lambda": dict(by_lambda.hparams),
        "dict": _plain(by_dict.layer.weight),
        "training": loaded.training,
    }


def _load_with_hparams_file(L, root):
    """load_from_checkpoint(path, hparams_file=<a logger's hparams.yaml>): the file's values replace the
    checkpoint's; keyword overrides still win; weights_only=True loads the same."""
    HNet = _hparams_module(L)
    trainer = _trainer(L, root, logger=L.loggers.CSVLogger(str(root), name="csv"))
    trainer.fit(HNet(lr=0.3, hidden=8), _loader(n=16))
    trainer.save_checkpoint(root / "h.ckpt")
    (root / "other.yaml").write_text("lr: 0.05\nhidden: 2\n")
    from_file = HNet.load_from_checkpoint(str(root / "h.ckpt"), hparams_file=str(root / "other.yaml"))
    overridden = HNet.load_from_checkpoint(
        str(root / "h.ckpt"), hparams_file=str(root / "other.yaml"), hidden=16
    )
    logged = HNet.load_from_checkpoint(
        str(root / "h.ckpt"), hparams_file=str(Path(trainer.log_dir) / "hparams.yaml"), weights_only=True
    )
    return {
        "from_file": dict(from_file.hparams),
        "overridden": dict(overridden.hparams),
        "logged": dict(logged.hparams),
        "weights": _plain(logged.layer.weight),
    }


def _strict_loading(strict_loading: bool):
    """The module's `strict_loading` attribute decides whether resuming with missing/extra keys fails."""

    def scenario(L, root):
        trainer = _trainer(L, root)
        trainer.fit(_base(L)(), _loader(n=16))
        trainer.save_checkpoint(root / "s.ckpt")

        def init(self):
            L.LightningModule.__init__(self)
            torch.manual_seed(0)
            self.layer = torch.nn.Linear(4, 1)
            self.register_buffer(
                "extra", torch.ones(2)
            )  # a key the checkpoint lacks (the optimizer is the same)
            self.strict_loading = strict_loading

        bigger = _base(L, __init__=init)()
        outcome = _raises(
            lambda: _trainer(L, root, max_epochs=2).fit(bigger, _loader(n=16), ckpt_path=str(root / "s.ckpt"))
        )
        loaded = _raises(lambda: type(bigger).load_from_checkpoint(str(root / "s.ckpt")))
        # (the weights after a refusal differ by design: ember checks the names before loading anything)
        weights = _plain(bigger.layer.weight) if outcome == "ok" else None
        return {
            "outcome": outcome,
            "weights": weights,
            "default": _base(L)().strict_loading,
            "load_from_checkpoint": loaded,
        }

    return scenario


# ---------------------------------------------------------------------- ModelCheckpoint's documented examples


def _model_checkpoint(**options):
    """ModelCheckpoint with `options` over 5 epochs of a known val_loss: the files and the documented
    attributes."""

    def scenario(L, root):
        checkpoint = L.callbacks.ModelCheckpoint(dirpath=str(root / "ck"), **options)
        trainer = _trainer(
            L, root, max_epochs=5, enable_checkpointing=True, callbacks=[checkpoint], num_sanity_val_steps=0
        )
        trainer.fit(_val_loss_module(L)(), _loader(n=16), _loader(n=8, seed=1))
        name = lambda p: Path(p).name if p else ""  # noqa: E731
        score = checkpoint.best_model_score
        return {
            "files": _files(root / "ck"),
            "best": name(checkpoint.best_model_path),
            "score": _plain(score) if score is not None else None,
            "top": {name(k): _plain(v) for k, v in checkpoint.best_k_models.items()},
            "kth": name(checkpoint.kth_best_model_path),
            "kth_value": _plain(checkpoint.kth_value),
            "last": name(checkpoint.last_model_path),
            "current": _plain(checkpoint.current_score) if checkpoint.current_score is not None else None,
        }

    return scenario


def _model_checkpoint_weights_only(L, root):
    """ModelCheckpoint(save_weights_only=True): what its files hold; load_from_checkpoint reads them."""
    checkpoint = L.callbacks.ModelCheckpoint(dirpath=str(root / "ck"), save_weights_only=True, save_last=True)
    trainer = _trainer(L, root, max_epochs=2, enable_checkpointing=True, callbacks=[checkpoint])
    model = _base(L)()
    trainer.fit(model, _loader(n=16))
    keys = ["epoch", "global_step", "state_dict", "optimizer_states", "lr_schedulers", "callbacks", "loops"]
    saved = {name: [k for k in keys if k in _load(root / "ck" / name)] for name in _files(root / "ck")}
    loaded = type(model).load_from_checkpoint(checkpoint.best_model_path)
    return {"saved": saved, "weights": _plain(loaded.layer.weight) == _plain(model.layer.weight)}


def _model_checkpoint_version_counter(enable: bool):
    """A file name that exists already gets `-v1`, `-v2` (enable_version_counter=True), or is overwritten."""

    def scenario(L, root):
        for _ in range(2):
            checkpoint = L.callbacks.ModelCheckpoint(
                dirpath=str(root / "ck"), filename="fixed", save_top_k=-1, enable_version_counter=enable
            )
            _trainer(L, root, max_epochs=2, enable_checkpointing=True, callbacks=[checkpoint]).fit(
                _base(L)(), _loader(n=16)
            )
        return {"files": _files(root / "ck"), "best": Path(checkpoint.best_model_path).name}

    return scenario


def _model_checkpoint_class_names(L, root):
    """The docs' class attributes: CHECKPOINT_NAME_LAST (a template too), CHECKPOINT_JOIN_CHAR,
    FILE_EXTENSION."""
    checkpoint = L.callbacks.ModelCheckpoint(
        dirpath=str(root / "ck"), monitor="val_loss", save_last=True, filename="{epoch}{val_loss:.2f}"
    )
    checkpoint.CHECKPOINT_NAME_LAST = "{epoch}-last"
    checkpoint.CHECKPOINT_JOIN_CHAR = "_"
    checkpoint.FILE_EXTENSION = ".pt"
    trainer = _trainer(
        L, root, max_epochs=2, enable_checkpointing=True, callbacks=[checkpoint], num_sanity_val_steps=0
    )
    trainer.fit(_val_loss_module(L)(), _loader(n=16), _loader(n=8, seed=1))
    return {"files": _files(root / "ck"), "last": Path(checkpoint.last_model_path).name}


def _model_checkpoint_default_dir(L, root):
    """With no dirpath: `<logger.log_dir>/checkpoints`, file `epoch=E-step=S.ckpt`."""
    checkpoint = L.callbacks.ModelCheckpoint()
    trainer = _trainer(
        L,
        root,
        max_epochs=2,
        enable_checkpointing=True,
        callbacks=[checkpoint],
        logger=L.loggers.CSVLogger(str(root), name="logs"),
    )
    trainer.fit(_base(L)(), _loader(n=16))
    return {"dir": str(Path(checkpoint.dirpath).relative_to(root)), "files": _files(root / "logs")}


def _model_checkpoint_to_yaml(L, root):
    """to_yaml(): the best_k_models as a YAML file of path: score."""
    checkpoint = L.callbacks.ModelCheckpoint(dirpath=str(root / "ck"), monitor="val_loss", save_top_k=2)
    trainer = _trainer(
        L, root, max_epochs=3, enable_checkpointing=True, callbacks=[checkpoint], num_sanity_val_steps=0
    )
    trainer.fit(_val_loss_module(L)(), _loader(n=16), _loader(n=8, seed=1))
    checkpoint.to_yaml()
    text = (root / "ck" / "best_k_models.yaml").read_text()
    checkpoint.to_yaml(str(root / "mine.yaml"))
    import yaml

    read = {Path(k).name: round(v, 5) for k, v in yaml.safe_load(text).items()}
    return {"read": read, "same": text == (root / "mine.yaml").read_text()}


def _model_checkpoint_refusals(L, root):
    """Invalid documented-argument combinations: which fail at construction."""
    make = lambda **kw: lambda: L.callbacks.ModelCheckpoint(dirpath=str(root), **kw)  # noqa: E731
    return {
        "mode": _raises(make(mode="middle")),
        "top_k_no_monitor": _raises(make(save_top_k=2)),
        "top_k_negative": _raises(make(save_top_k=-2)),
        "two_triggers": _raises(make(every_n_train_steps=2, every_n_epochs=1)),
        "steps_and_time": _raises(
            make(every_n_train_steps=2, train_time_interval=__import__("datetime").timedelta(minutes=1))
        ),
    }


# --------------------------------------------------------------------------- resuming


def _resume_from(which: str):
    """fit(ckpt_path="last" / "best" / a path): the epochs and steps that continue, and the final weights."""

    def scenario(L, root):
        def make_trainer(epochs):
            checkpoint = L.callbacks.ModelCheckpoint(
                dirpath=str(root / "ck"), monitor="val_loss", save_last=True
            )
            return _trainer(
                L,
                root,
                max_epochs=epochs,
                enable_checkpointing=True,
                callbacks=[checkpoint],
                num_sanity_val_steps=0,
            )

        cls = _val_loss_module(L, values=(0.9, 0.3, 0.7, 0.6, 0.5, 0.4))
        make_trainer(3).fit(cls(), _loader(n=16), _loader(n=8, seed=1))
        epochs = []
        resumed = make_trainer(5)
        model = _base(
            L,
            validation_step=cls.validation_step,
            on_train_epoch_start=lambda self: epochs.append(self.current_epoch),
        )()
        ckpt = which if which in ("last", "best") else str(root / "ck" / "last.ckpt")
        outcome = _raises(lambda: resumed.fit(model, _loader(n=16), _loader(n=8, seed=1), ckpt_path=ckpt))
        return {
            "outcome": outcome,
            "epochs": epochs,
            "step": resumed.global_step,
            "ckpt": Path(resumed.ckpt_path).name if resumed.ckpt_path else None,
            "weights": _plain(model.layer.weight),
        }

    return scenario


def _resume_last_missing(L, root):
    """fit(ckpt_path="last") with no last checkpoint yet: Lightning warns and trains from the start (docs:
    "set and forget before the first fit run")."""
    checkpoint = L.callbacks.ModelCheckpoint(dirpath=str(root / "ck"), save_last=True)
    trainer = _trainer(L, root, max_epochs=2, enable_checkpointing=True, callbacks=[checkpoint])
    model = _base(L)()
    outcome = _raises(lambda: trainer.fit(model, _loader(n=16), ckpt_path="last"))
    return {
        "outcome": outcome,
        "step": trainer.global_step,
        "ckpt": trainer.ckpt_path,
        "files": _files(root / "ck"),
    }


# --------------------------------------------------------------------------- self.log options


def _log_options(L, root):
    """The options table: prog_bar, logger, enable_graph, sync_dist, rank_zero_only, batch_size."""
    graphs = {}

    def step(self, b, i):
        loss = self.loss(b)
        self.log("plain", loss)
        self.log("bar", loss, prog_bar=True)
        self.log("nolog", loss, logger=False)
        self.log("graph", loss, enable_graph=True, on_step=True, on_epoch=False)
        self.log("sync", loss, sync_dist=True, on_epoch=True)
        self.log("zero", loss, rank_zero_only=True, on_epoch=True)
        self.log("bs", loss, batch_size=2 + i, on_step=False, on_epoch=True)
        return loss

    def val_step(self, b, i):
        self.log("v_graph", self.loss(b), enable_graph=True)
        self.log("v_bar_step", self.loss(b), prog_bar=True, on_step=True)

    def batch_end(self, outputs, b, i):
        graphs["graph"] = self.trainer.callback_metrics["graph"].requires_grad

    model = _base(L, training_step=step, validation_step=val_step, on_train_batch_end=batch_end)()
    trainer = _trainer(L, root, max_epochs=2, num_sanity_val_steps=0)
    trainer.fit(model, _loader(n=24), _loader(n=8, seed=1))
    return {**_metrics(trainer), "graphs": graphs}


def _log_dict_validation(L, root):
    """self.log_dict in validation_step, with on_step=True and a prog_bar (docs' values dict)."""

    def val_step(self, b, i):
        loss = self.loss(b)
        values = {"loss": loss, "acc": 1 - loss, "metric_n": loss * i}
        self.log_dict(values, on_step=True, prog_bar=True)

    trainer = _trainer(L, root, max_epochs=1, num_sanity_val_steps=0)
    trainer.fit(_base(L, validation_step=val_step)(), _loader(n=16), _loader(n=24, seed=1))
    out = trainer.validate(_base(L, validation_step=val_step)(), _loader(n=24, seed=1), verbose=False)
    return {**_metrics(trainer), "returned": _plain(out)}


def _log_metric_collection(L, root):
    """log_dict of a torchmetrics MetricCollection and log of a Metric object (docs: logging torchmetrics)."""
    torchmetrics = pytest.importorskip("torchmetrics")

    def init(self):
        L.LightningModule.__init__(self)
        torch.manual_seed(0)
        self.layer = torch.nn.Linear(4, 1)
        self.metrics = torchmetrics.MetricCollection(
            {
                "acc": torchmetrics.classification.BinaryAccuracy(),
                "prec": torchmetrics.classification.BinaryPrecision(),
            }
        )
        self.mse = torchmetrics.MeanSquaredError()

    def step(self, b, i):
        x, y = b
        self.metrics(self.layer(x).sigmoid(), y.int())
        self.log_dict(self.metrics, on_step=True, on_epoch=True)
        self.mse(self.layer(x).sigmoid(), y)
        self.log("mse", self.mse, on_epoch=True, prog_bar=True)
        return self.loss(b)

    trainer = _trainer(L, root, max_epochs=2)
    trainer.fit(_base(L, __init__=init, training_step=step)(), _loader(n=24))
    return _metrics(trainer)


def _log_every_n_steps(every: int):
    """log_every_n_steps: at which steps the logger receives training metrics (CSV rows)."""

    def scenario(L, root):
        def step(self, b, i):
            loss = self.loss(b)
            self.log("loss", loss)
            return loss

        logger = L.loggers.CSVLogger(str(root), name="csv")
        trainer = _trainer(L, root, max_epochs=2, logger=logger, log_every_n_steps=every)
        trainer.fit(_base(L, training_step=step)(), _loader(n=56))
        text = (Path(logger.log_dir) / "metrics.csv").read_text().splitlines()
        return text

    return scenario


# --------------------------------------------------------------------------- loggers


def _custom_logger_class(L, calls):
    # the docs import it from lightning.pytorch.utilities; ember keeps it beside Logger
    rank_zero_only = pl.utilities.rank_zero_only if L is pl else L.loggers.logger.rank_zero_only

    class MyLogger(L.loggers.logger.Logger):
        @property
        def name(self):
            return "MyLogger"

        @property
        def version(self):
            return "0.1"

        @rank_zero_only
        def log_hyperparams(self, params):
            calls.append(("log_hyperparams", sorted(dict(params))))

        @rank_zero_only
        def log_metrics(self, metrics, step):
            calls.append(("log_metrics", sorted(metrics), step))

        @rank_zero_only
        def save(self):
            super().save()
            calls.append(("save",))

        @rank_zero_only
        def finalize(self, status):
            calls.append(("finalize", status))

    return MyLogger


def _logging_net(L):
    """A module with saved hyperparameters that logs one value in each of its training, validation and test
    steps."""

    class Net(_hparams_module(L)):
        def training_step(self, b, i):
            loss = self.loss(b)
            self.log("loss", loss)
            return loss

        def validation_step(self, b, i):
            self.log("val", self.loss(b))

        def test_step(self, b, i):
            self.log("t", self.loss(b))

    return Net


def _custom_logger(L, root):
    """A Logger written as the docs show: which calls it receives during fit and test, and where
    checkpoints go."""
    calls = []
    MyLogger = _custom_logger_class(L, calls)
    Net = _logging_net(L)
    logger = MyLogger()
    # (an explicit ModelCheckpoint: ember's default one also keeps last.ckpt, for fit(ckpt_path="last"))
    trainer = _trainer(
        L,
        root,
        max_epochs=2,
        logger=logger,
        log_every_n_steps=1,
        enable_checkpointing=True,
        num_sanity_val_steps=0,
        callbacks=[L.callbacks.ModelCheckpoint()],
    )
    trainer.fit(Net(), _loader(n=16), _loader(n=8, seed=1))
    trainer.test(Net(), _loader(n=8, seed=1), verbose=False)
    plain = _base(L, predict_step=lambda self, b, i: self.layer(b[0]))()
    trainer.predict(plain, _loader(n=8, seed=1))  # no saved hyperparameters: log_hyperparams({})
    return {
        "calls": calls,
        "log_dir": trainer.log_dir,
        "logger_dirs": [logger.save_dir, logger.log_dir, logger.root_dir],
        "checkpoints": _files(root / "MyLogger"),
        "loggers": [type(x).__name__ for x in trainer.loggers],
    }


def _custom_logger_hparams_off(L, root):
    """save_hyperparameters(logger=False): the logger gets no log_hyperparams, still save() and finalize()."""
    calls = []
    MyLogger = _custom_logger_class(L, calls)

    class Net(_base(L)):
        def __init__(self, lr=0.1):
            super().__init__()
            self.save_hyperparameters(logger=False)

    trainer = _trainer(L, root, logger=MyLogger(), log_every_n_steps=1)
    trainer.fit(Net(), _loader(n=16))
    return {"calls": calls, "hparams": dict(Net().hparams)}


def _custom_logger_autolog_off(L, root):
    """Trainer(enable_autolog_hparams=False): no log_hyperparams, log_graph or save() at a stage's start, even
    with saved hyperparameters; metrics still reach the logger, and finalize() still ends each stage."""
    calls = []
    MyLogger = _custom_logger_class(L, calls)
    Net = _logging_net(L)
    trainer = _trainer(
        L, root, max_epochs=1, logger=MyLogger(), log_every_n_steps=1, enable_autolog_hparams=False
    )
    trainer.fit(Net(), _loader(n=16))
    trainer.validate(Net(), _loader(n=8, seed=1), verbose=False)
    return {"calls": calls, "flag": trainer.enable_autolog_hparams}


def _grad_norm_logged(L, root):
    """The docs' gradient tracking (Debugging, intermediate): `grad_norm` from the utilities, logged with
    `log_dict` in `on_before_optimizer_step`; the keys and values the loggers receive, and the total norm."""
    calls = []
    MyLogger = _custom_logger_class(L, calls)
    grad_norm = L.utilities.grad_norm

    class Net(_base(L)):
        def on_before_optimizer_step(self, optimizer):
            self.log_dict(grad_norm(self.layer, norm_type=2))

    trainer = _trainer(L, root, max_epochs=1, logger=MyLogger(), log_every_n_steps=1)
    trainer.fit(Net(), _loader(n=16))
    torch.manual_seed(0)
    layer = torch.nn.Linear(3, 2)
    layer(torch.randn(4, 3)).pow(2).sum().backward()
    direct = {k: round(float(v), 5) for k, v in grad_norm(layer, norm_type="inf").items()}
    rows = [(name, sorted(keys), step) for name, keys, step in (c for c in calls if c[0] == "log_metrics")]
    return {
        "rows": rows,
        "direct": direct,
        "metrics": {k: round(float(v), 5) for k, v in trainer.callback_metrics.items()},
    }


def _custom_logger_steps(**options):
    """The step each row reaches a logger with: training steps, validation and test step values (on_step=True;
    counted on across a fit's validations until the data is reloaded), epoch-end values."""

    def scenario(L, root):
        return _logger_steps(L, root, options)

    return scenario


def _logger_steps(L, root, options):
    calls = []
    MyLogger = _custom_logger_class(L, calls)

    def step(self, b, i):
        loss = self.loss(b)
        self.log("loss", loss, on_step=True, on_epoch=True)
        return loss

    def val_step(self, b, i):
        self.log("v", self.loss(b), on_step=True, on_epoch=True)

    def epoch_end(self):
        self.log("end", torch.tensor(float(self.current_epoch)))

    model = _base(
        L, training_step=step, validation_step=val_step, test_step=val_step, on_train_epoch_end=epoch_end
    )()
    trainer = _trainer(
        L,
        root,
        **{
            "max_epochs": 2,
            "logger": MyLogger(),
            "log_every_n_steps": 1,
            "num_sanity_val_steps": 0,
            **options,
        },
    )
    trainer.fit(model, _loader(n=16), _loader(n=16, seed=1))
    trainer.test(model, _loader(n=16, seed=2), verbose=False)
    return [c for c in calls if c[0] == "log_metrics"]


def _multiple_loggers(L, root):
    """logger=[csv, tensorboard]: trainer.logger is the first, both receive the metrics, log_dir is the
    first's."""
    pytest.importorskip("tensorboard")
    csv_logger = L.loggers.CSVLogger(str(root), name="csv")
    tb_logger = L.loggers.TensorBoardLogger(str(root), name="tb")

    def step(self, b, i):
        loss = self.loss(b)
        self.log("loss", loss)
        return loss

    trainer = _trainer(L, root, logger=[csv_logger, tb_logger], log_every_n_steps=1)
    model = _base(L, training_step=step)()
    trainer.fit(model, _loader(n=16))
    rel = lambda p: str(Path(p).relative_to(root))  # noqa: E731
    return {
        "logger": type(trainer.logger).__name__,
        "loggers": [type(x).__name__ for x in trainer.loggers],
        "log_dir": rel(trainer.log_dir),
        "csv": _files(root / "csv"),
        "tb": sorted({Path(p).parent.name for p in _files(root / "tb")}),
        "module_logger": type(model.logger).__name__,
        "module_loggers": len(model.loggers),
    }


def _logger_experiment(L, root):
    """self.logger.experiment: TensorBoard's SummaryWriter, usable from a hook (docs: add_histogram)."""
    pytest.importorskip("tensorboard")
    seen = []

    def epoch_end(self):
        writer = self.logger.experiment
        writer.add_scalar("custom", 1.0, self.global_step)
        seen.append(type(writer).__name__)

    logger = L.loggers.TensorBoardLogger(str(root), name="tb")
    _trainer(L, root, logger=logger).fit(_base(L, on_train_epoch_end=epoch_end)(), _loader(n=16))
    return seen


def _tensorboard_log_graph(log_graph: bool):
    """TensorBoardLogger(log_graph=...) with example_input_array: whether the event files hold the model's
    graph."""

    def scenario(L, root):
        pytest.importorskip("tensorboard")
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

        def init(self):
            L.LightningModule.__init__(self)
            torch.manual_seed(0)
            self.layer = torch.nn.Linear(4, 1)
            self.example_input_array = torch.zeros(2, 4)

        logger = L.loggers.TensorBoardLogger(str(root), name="tb", log_graph=log_graph)
        model = _base(L, __init__=init, forward=lambda self, x: self.layer(x))()
        _trainer(L, root, logger=logger).fit(model, _loader(n=16))
        events = EventAccumulator(logger.log_dir)
        events.Reload()
        return {"graph": events.Tags()["graph"], "weights": _plain(model.layer.weight)}

    return scenario


def _tensorboard_files(with_hparams: bool):
    """TensorBoardLogger's run folder: an event file and hparams.yaml (`{}` without saved hyperparameters)."""

    def scenario(L, root):
        pytest.importorskip("tensorboard")
        cls = _hparams_module(L) if with_hparams else _base(L)
        logger = L.loggers.TensorBoardLogger(str(root), name="tb")
        trainer = _trainer(L, root, logger=logger)
        trainer.fit(cls(), _loader(n=16))
        folder = Path(logger.log_dir)
        return {
            "files": sorted(p.name.split(".")[0] for p in folder.iterdir()),
            "hparams": (folder / "hparams.yaml").read_text(),
            "log_dir": trainer.log_dir == logger.log_dir,
        }

    return scenario


# --------------------------------------------------------------------------- debugging


def _fast_dev_run(value):
    """fast_dev_run=True/int: N batches of train/val/test, no loggers or checkpoints written, counters."""

    def scenario(L, root):
        seen = []

        def val_step(self, b, i):
            seen.append(("val", i, self.trainer.sanity_checking))
            self.log("v", self.loss(b))

        def test_step(self, b, i):
            seen.append(("test", i))

        model = _base(L, validation_step=val_step, test_step=test_step)()
        trainer = L.Trainer(
            fast_dev_run=value,
            default_root_dir=str(root),
            enable_progress_bar=False,
            enable_model_summary=False,
            accelerator="cpu",
            max_epochs=5,
        )
        trainer.fit(model, _loader(n=80), _loader(n=80, seed=1))
        trainer.test(model, _loader(n=80, seed=2), verbose=False)
        return {
            "seen": seen,
            "step": trainer.global_step,
            "epoch": trainer.current_epoch,
            "files": _files(root),
            "loggers": len(trainer.loggers),
            "log_dir": trainer.log_dir == str(root),
            "batches": trainer.num_training_batches,
            "val": trainer.num_val_batches,
            "test": trainer.num_test_batches,
            "checkpoint": trainer.checkpoint_callback is None,
            "metrics": _metrics(trainer),
        }

    return scenario


def _no_logger(fast_dev_run: bool):
    """logger=False (with or without fast_dev_run): what the module and trainer see of loggers."""

    def scenario(L, root):
        seen = {}

        def fit_start(self):
            seen.update(logger=self.logger, loggers=len(self.loggers))

        trainer = _trainer(L, root, fast_dev_run=fast_dev_run)
        trainer.fit(_base(L, on_fit_start=fit_start)(), _loader(n=16))
        return {
            **seen,
            "log_dir": trainer.log_dir == str(root),
            "trainer_logger": trainer.logger,
            "files": _files(root),
        }

    return scenario


def _fast_dev_run_refusal(L, root):
    # (Lightning takes fast_dev_run=0.5 and runs int(0.5) = 0 batches; ember refuses a float in one line)
    return {
        "negative": _raises(lambda: L.Trainer(fast_dev_run=-1)),
        "string": _raises(lambda: L.Trainer(fast_dev_run="yes")),
    }


def _limit_eval_batches(L, root):
    """limit_test_batches / limit_predict_batches as int and fraction."""
    model = _base(
        L,
        test_step=lambda self, b, i: self.log("t", self.loss(b)),
        predict_step=lambda self, b, i: self.layer(b[0]),
    )()
    trainer = _trainer(L, root, limit_test_batches=2, limit_predict_batches=0.5)
    out = trainer.test(model, _loader(n=40, seed=1), verbose=False)
    predicted = trainer.predict(model, _loader(n=40, seed=2))
    return {
        "test": trainer.num_test_batches,
        "out": _plain(out),
        "predict": len(predicted),
        "predict_batches": trainer.num_predict_batches,
    }


def _sanity_steps(count: int):
    def scenario(L, root):
        seen = []

        def val_step(self, b, i):
            seen.append((self.trainer.sanity_checking, i))
            self.log("v", self.loss(b))

        trainer = _trainer(L, root, num_sanity_val_steps=count)
        trainer.fit(_base(L, validation_step=val_step)(), _loader(n=16), _loader(n=40, seed=1))
        return {"seen": seen, "sanity": trainer.num_sanity_val_batches, "metrics": _metrics(trainer)}

    return scenario


def _profiler_files(kind: str):
    """profiler=<kind>(dirpath, filename): one report file per stage; Simple's starts with the stage's
    title."""

    def scenario(L, root):
        return _profiler_report_files(L, root, kind)

    return scenario


def _profiler_report_files(L, root, kind):
    profilers = importlib.import_module(
        f"{L.__name__}.profilers"
    )  # (`import ember` does not load ember.profilers)
    profiler = getattr(profilers, kind)(dirpath=str(root / "prof"), filename="perf")
    trainer = _trainer(L, root, profiler=profiler)
    model = _base(L, test_step=lambda self, b, i: None)()
    trainer.fit(model, _loader(n=16))
    trainer.test(model, _loader(n=8, seed=1), verbose=False)
    files = _files(root / "prof")
    titles = [(root / "prof" / f).read_text().split("\n")[0:3] for f in files]
    return {
        "files": files,
        "titles": [any("Profiler Report" in line for line in t) for t in titles]
        if kind == "SimpleProfiler"
        else len(titles),
        "profiler": type(trainer.profiler).__name__,
    }


def _simple_profiler_string(L, root):
    """profiler="simple": the trainer's profiler type; the report printed at the end of fit names the
    stage."""
    trainer = _trainer(L, root, profiler="simple")
    with _terminal() as out:
        trainer.fit(_base(L)(), _loader(n=16))
    text = out.getvalue()
    return {
        "profiler": type(trainer.profiler).__name__,
        "fit_title": "FIT Profiler Report" in text,
        "has_step": "training_step" in text,
    }


def _detect_anomaly(L, root):
    """detect_anomaly=True: a NaN produced in backward raises; without it training goes on (the NaN is in the
    last step's gradients only, the loss stays finite)."""

    def step(self, b, i):
        loss = self.loss(b)
        if i == 2:  # torch.where's classic NaN gradient: sqrt(-1) is not selected but its backward is NaN
            loss = loss + torch.where(loss > -1, loss * 0, torch.sqrt(loss * 0 - 1.0))
        return loss

    flag = _trainer(L, root, detect_anomaly=True)
    outcome = _raises(lambda: flag.fit(_base(L, training_step=step)(), _loader(n=24)))
    plain = _trainer(L, root, detect_anomaly=False)
    without = _raises(lambda: plain.fit(_base(L, training_step=step)(), _loader(n=24)))
    return {"with": outcome, "without": without, "detect_anomaly_after": torch.is_anomaly_enabled()}


def _module_print(L, root):
    """self.print: printed once (rank zero), with print's arguments."""

    def epoch_end(self):
        self.print("epoch", self.current_epoch, sep="=", end="!\n")

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        _trainer(L, root, max_epochs=2).fit(_base(L, on_train_epoch_end=epoch_end)(), _loader(n=16))
    return out.getvalue()


def _model_summary_callback(L, root):
    """ModelSummary(max_depth=...) and example_input_array: the printed table's header and rows."""

    def init(self):
        L.LightningModule.__init__(self)
        torch.manual_seed(0)
        self.layer = torch.nn.Linear(4, 1)
        self.block = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU())
        self.example_input_array = torch.zeros(2, 4)

    def forward(self, x):
        return self.layer(x)

    trainer = _trainer(L, root, callbacks=[L.callbacks.ModelSummary(max_depth=2)], enable_model_summary=True)
    with _terminal() as out:
        trainer.fit(_base(L, __init__=init, forward=forward)(), _loader(n=16))
    lines = [line.rstrip() for line in out.getvalue().splitlines() if "|" in line or "params" in line.lower()]
    return lines


SCENARIOS = {
    "checkpoint_contents": _checkpoint_contents,
    "checkpoint_weights_only_contents": _weights_only_contents,
    "checkpoint_hooks_round_trip": _checkpoint_hooks_round_trip,
    "load_from_checkpoint_overrides": _load_with_overrides,
    "load_from_checkpoint_hparams_file": _load_with_hparams_file,
    "strict_loading_true": _strict_loading(True),
    "strict_loading_false": _strict_loading(False),
    "model_checkpoint_min": _model_checkpoint(monitor="val_loss", filename="{epoch:02d}-{val_loss:.2f}"),
    "model_checkpoint_max_top2": _model_checkpoint(monitor="val_loss", mode="max", save_top_k=2),
    "model_checkpoint_top_all": _model_checkpoint(monitor="val_loss", save_top_k=-1, save_last=True),
    "model_checkpoint_top_zero": _model_checkpoint(monitor="val_loss", save_top_k=0, save_last=True),
    "model_checkpoint_no_monitor": _model_checkpoint(),
    "model_checkpoint_filename_template": _model_checkpoint(
        monitor="val_loss", save_top_k=3, filename="sample-{epoch:02d}-{val_loss:.2f}"
    ),
    "model_checkpoint_every_2_epochs": _model_checkpoint(monitor="val_loss", every_n_epochs=2, save_top_k=2),
    "model_checkpoint_default_dir": _model_checkpoint_default_dir,
    "model_checkpoint_save_weights_only": _model_checkpoint_weights_only,
    "model_checkpoint_class_names": _model_checkpoint_class_names,
    "model_checkpoint_version_counter": _model_checkpoint_version_counter(True),
    "model_checkpoint_no_version_counter": _model_checkpoint_version_counter(False),
    "model_checkpoint_to_yaml": _model_checkpoint_to_yaml,
    "model_checkpoint_refusals": _model_checkpoint_refusals,
    "resume_last": _resume_from("last"),
    "resume_best": _resume_from("best"),
    "resume_path": _resume_from("path"),
    "resume_last_missing": _resume_last_missing,
    "log_options_table": _log_options,
    "log_dict_validation": _log_dict_validation,
    "log_metric_collection": _log_metric_collection,
    "log_every_n_steps_1": _log_every_n_steps(1),
    "log_every_n_steps_3": _log_every_n_steps(3),
    "custom_logger": _custom_logger,
    "custom_logger_hparams_off": _custom_logger_hparams_off,
    "custom_logger_steps": _custom_logger_steps(),
    "custom_logger_steps_sanity_reload": _custom_logger_steps(
        num_sanity_val_steps=1, max_epochs=3, reload_dataloaders_every_n_epochs=2
    ),
    "multiple_loggers": _multiple_loggers,
    "logger_experiment": _logger_experiment,
    "tensorboard_log_graph": _tensorboard_log_graph(True),
    "tensorboard_no_log_graph": _tensorboard_log_graph(False),
    "tensorboard_files": _tensorboard_files(True),
    "tensorboard_files_no_hparams": _tensorboard_files(False),
    "fast_dev_run_true": _fast_dev_run(True),
    "fast_dev_run_3": _fast_dev_run(3),
    "fast_dev_run_refusal": _fast_dev_run_refusal,
    "custom_logger_autolog_hparams_off": _custom_logger_autolog_off,
    "grad_norm_logged": _grad_norm_logged,
    "no_logger": _no_logger(False),
    "no_logger_fast_dev_run": _no_logger(True),
    "limit_test_predict_batches": _limit_eval_batches,
    "num_sanity_val_steps_2": _sanity_steps(2),
    "num_sanity_val_steps_all": _sanity_steps(-1),
    "simple_profiler_files": _profiler_files("SimpleProfiler"),
    "advanced_profiler_files": _profiler_files("AdvancedProfiler"),
    "simple_profiler_string": _simple_profiler_string,
    "detect_anomaly": _detect_anomaly,
    "module_print": _module_print,
    "model_summary_example_input": _model_summary_callback,
}


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_ember_observes_what_lightning_observes(name, tmp_path):
    compare_with_lightning(SCENARIOS[name], tmp_path)
