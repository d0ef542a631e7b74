"""ember's Trainer against Lightning 2.6.6 (issue 13): checkpoints, trainer state, counters.

Same harness as test_lightning_parity.py: each scenario is one function of `L` (`lightning.pytorch` or
`ember`) that runs the same code and returns what a user observes; the test asserts both observe the same.
A scenario that makes Lightning raise observes that it raised (ember must refuse too).
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import pytest
import torch

from tests.trainer.test_lightning_parity import (
    _base,
    _fitted_with_best,
    _loader,
    _manual_init,
    _plain,
    _raises,
    _trainer,
    compare_with_lightning,
)

pl = pytest.importorskip("lightning.pytorch")


def _names(callbacks) -> list[str]:
    return [type(cb).__name__ for cb in callbacks]


def _checkpoint(path) -> dict:
    return torch.load(path, map_location="cpu", weights_only=False)


# --------------------------------------------------------------------------- checkpoint callbacks, Timer


def _checkpoint_callbacks(L, root):
    given = [
        L.callbacks.OnExceptionCheckpoint(dirpath=str(root / "exc")),
        L.Callback(),
        L.callbacks.ModelCheckpoint(dirpath=str(root / "ck")),
    ]
    trainer = _trainer(L, root, callbacks=given, enable_checkpointing=True)
    only_exception = _trainer(
        L, root, callbacks=[L.callbacks.OnExceptionCheckpoint(dirpath=str(root))], enable_checkpointing=True
    )
    return {
        "callbacks": _names(trainer.callbacks),
        "checkpoint_callbacks": _names(trainer.checkpoint_callbacks),
        "checkpoint_callback": type(trainer.checkpoint_callback).__name__,
        "only_exception": _names(only_exception.callbacks),
    }


def _max_time(L, root):
    trainer = _trainer(L, root, max_time={"days": 1}, callbacks=[L.Callback()])
    trainer.fit(_base(L)(), _loader())
    trainer.save_checkpoint(root / "saved.ckpt")
    with_timer = _trainer(
        L, root, max_time={"days": 1}, callbacks=[L.callbacks.Timer(duration="00:01:00:00")]
    )
    timer = trainer.callbacks[-1]
    return {
        "callbacks": _names(trainer.callbacks),
        "saved": sorted(_checkpoint(root / "saved.ckpt")["callbacks"]),
        "with_timer": _names(with_timer.callbacks),
        "remaining": round(timer.time_remaining() / 3600),
        "given": round(with_timer.callbacks[0].time_remaining() / 60),
    }


# --------------------------------------------------------------------------- save_checkpoint(weights_only)


class _Recorder:
    """Which checkpoint hooks ran, shared by the module and the callback of one scenario."""

    def __init__(self):
        self.calls = []


def _saving(L, record):
    class Saving(L.Callback):
        def state_dict(self):
            record.calls.append("callback.state_dict")
            return {"n": 1}

        def on_save_checkpoint(self, trainer, module, checkpoint):
            record.calls.append("callback.on_save_checkpoint")
            checkpoint["callback_key"] = 1

    def on_save(self, checkpoint):
        record.calls.append("module.on_save_checkpoint")
        checkpoint["my_key"] = {"a": 1}

    return Saving(), on_save


def _save_weights_only(weights_only: bool):
    def scenario(L, root):
        record = _Recorder()
        callback, on_save = _saving(L, record)
        trainer = _trainer(L, root, callbacks=[callback])
        trainer.fit(_base(L, on_save_checkpoint=on_save)(), _loader())
        record.calls.clear()
        trainer.save_checkpoint(root / "w.ckpt", weights_only=weights_only)
        saved = _checkpoint(root / "w.ckpt")
        keys = [
            "callbacks",
            "optimizer_states",
            "lr_schedulers",
            "state_dict",
            "epoch",
            "global_step",
            "loops",
            "my_key",
            "callback_key",
        ]
        return {
            "calls": record.calls,
            "present": [k for k in keys if k in saved],
            "my_key": saved.get("my_key"),
            "step": saved["global_step"],
            "epoch": saved["epoch"],
        }

    return scenario


# --------------------------------------------------------------------------- outputs of on_train_batch_end


def _batch_end_outputs(returns: str, **options):
    def scenario(L, root):
        seen = []

        def step(self, batch, batch_idx):
            loss = self.loss(batch)
            if returns == "dict":
                return {"loss": loss, "extra": torch.tensor(float(batch_idx))}
            return None if returns == "none" and batch_idx == 1 else loss

        def batch_end(self, outputs, batch, batch_idx):
            if isinstance(outputs, dict):
                seen.append(
                    {k: [_plain(v), getattr(v, "requires_grad", None)] for k, v in sorted(outputs.items())}
                )
            else:
                seen.append([type(outputs).__name__, _plain(outputs)])

        trainer = _trainer(L, root, **options)
        trainer.fit(_base(L, training_step=step, on_train_batch_end=batch_end)(), _loader())
        return seen

    return scenario


def _manual_batch_end_outputs(L, root):
    seen = []

    init = _manual_init(L)

    def step(self, batch, batch_idx):
        opt = self.optimizers()
        loss = self.loss(batch)
        opt.zero_grad()
        self.manual_backward(loss)
        opt.step()
        return [loss, {"loss": loss, "n": batch_idx}, None][batch_idx % 3]

    def batch_end(self, outputs, batch, batch_idx):
        seen.append(
            {k: [_plain(v), getattr(v, "requires_grad", None)] for k, v in sorted(outputs.items())}
            if isinstance(outputs, dict)
            else [type(outputs).__name__]
        )

    trainer = _trainer(L, root)
    trainer.fit(_base(L, __init__=init, training_step=step, on_train_batch_end=batch_end)(), _loader())
    return seen


# --------------------------------------------------------------------------- resuming: "last", custom keys


def _resume_custom_last(L, root):
    def make(max_epochs):
        ckpt = L.callbacks.ModelCheckpoint(dirpath=str(root / "ck"), save_last=True)
        ckpt.CHECKPOINT_NAME_LAST = "final"
        return ckpt, _trainer(L, root, max_epochs=max_epochs, callbacks=[ckpt], enable_checkpointing=True)

    ckpt, trainer = make(1)
    trainer.fit(_base(L)(), _loader())
    files = sorted(os.listdir(root / "ck"))
    _, again = make(2)
    model = _base(L)()
    again.fit(model, _loader(), ckpt_path="last")
    return {
        "files": files,
        "last": os.path.basename(ckpt.last_model_path),
        "resumed_from": os.path.basename(again.ckpt_path),
        "step": again.global_step,
        "weight": _plain(model.layer.weight),
    }


def _lightning_file_with_custom_key(root) -> Path:
    """A checkpoint Lightning wrote, with a key the module's on_save_checkpoint added."""

    def on_save(self, checkpoint):
        checkpoint["my_key"] = {"seen": 7}

    path = root / "lightning.ckpt"
    trainer = _trainer(pl, root / "pl", callbacks=[])
    trainer.fit(_base(pl, on_save_checkpoint=on_save)(), _loader())
    trainer.save_checkpoint(path)
    return path


def _resume_lightning_custom_key(L, root):
    path = _lightning_file_with_custom_key(root)
    seen = {}

    def on_load(self, checkpoint):
        seen["my_key"] = checkpoint.get("my_key")
        seen["weight_loaded_before"] = torch.equal(
            self.layer.weight, checkpoint["state_dict"]["layer.weight"]
        )

    model = _base(L, on_load_checkpoint=on_load)()
    trainer = _trainer(L, root, max_epochs=2)
    trainer.fit(model, _loader(), ckpt_path=str(path))
    return {**seen, "step": trainer.global_step, "weight": _plain(model.layer.weight)}


def _on_load_renames_keys(L, root):
    """on_load_checkpoint runs before the weights are loaded: it may rename a saved key (Lightning's docs)."""
    trainer = _trainer(L, root)
    trainer.fit(_base(L)(), _loader())
    trainer.save_checkpoint(root / "a.ckpt")

    def init(self):
        L.LightningModule.__init__(self)
        torch.manual_seed(1)
        self.renamed = torch.nn.Linear(4, 1)

    def loss(self, batch):
        return torch.nn.functional.binary_cross_entropy_with_logits(self.renamed(batch[0]), batch[1])

    def on_load(self, checkpoint):
        state = checkpoint["state_dict"]
        for key in list(state):
            state[key.replace("layer.", "renamed.")] = state.pop(key)

    model = _base(
        L,
        __init__=init,
        loss=loss,
        on_load_checkpoint=on_load,
        test_step=lambda self, b, i: self.log("t", self.loss(b)),
    )()
    out = _trainer(L, root).test(model, _loader(seed=1), ckpt_path=str(root / "a.ckpt"), verbose=False)
    return {"test": _plain(out), "weight": _plain(model.renamed.weight)}


# --------------------------------------------------------------------------- trainer.state in each hook


def _state_in_hooks(L, root):
    seen = []

    def record(name):
        def hook(self, *args, **kwargs):
            state = self.trainer.state
            stage_arg = [str(getattr(a, "value", a)) for a in [*args, *kwargs.values()] if isinstance(a, str)]
            seen.append(
                [
                    name,
                    *stage_arg,
                    str(getattr(state.fn, "value", state.fn)),
                    str(getattr(state.stage, "value", state.stage)),
                    str(getattr(state.status, "value", state.status)),
                    self.trainer.training,
                    self.trainer.validating,
                    self.trainer.sanity_checking,
                ]
            )

        return hook

    hooks = [
        "setup",
        "teardown",
        "on_fit_start",
        "on_fit_end",
        "on_train_start",
        "on_train_end",
        "on_validation_start",
        "on_test_start",
        "on_predict_start",
        "configure_optimizers_seen",
    ]
    methods = {h: record(h) for h in hooks[:-1]}
    model = _base(
        L,
        validation_step=lambda self, b, i: None,
        test_step=lambda self, b, i: None,
        predict_step=lambda self, b, i: b[0],
        **methods,
    )()
    trainer = _trainer(L, root, num_sanity_val_steps=1)
    before = [str(trainer.state.status.value), trainer.state.fn, trainer.state.stage]
    trainer.fit(model, _loader(), _loader(seed=1))
    after_fit = [str(trainer.state.status.value), str(trainer.state.fn.value), trainer.state.stage]
    trainer.validate(model, _loader(seed=1), verbose=False)
    trainer.test(model, _loader(seed=1), verbose=False)
    trainer.predict(model, _loader(seed=1))
    return {"seen": seen, "before": before, "after_fit": after_fit, "finished": trainer.state.finished}


# --------------------------------------------------------------------------- counters seen by hooks


def _counters_in_hooks(**options):
    def scenario(L, root):
        seen = []

        def record(name):
            def hook(self, *args):
                seen.append([name, self.trainer.current_epoch, self.trainer.global_step])

            return hook

        hooks = [
            "on_train_epoch_start",
            "on_train_epoch_end",
            "on_validation_epoch_end",
            "on_train_end",
            "on_fit_end",
        ]
        model = _base(L, validation_step=lambda self, b, i: None, **{h: record(h) for h in hooks})()
        trainer = _trainer(L, root, max_epochs=2, num_sanity_val_steps=0, **options)
        trainer.fit(model, _loader(), _loader(seed=1))
        return {"seen": seen, "epoch": trainer.current_epoch, "step": trainer.global_step}

    return scenario


def _batch_counts(**options):
    def scenario(L, root):
        seen = {}

        def train_start(self):
            trainer = self.trainer
            seen["train_start"] = [
                _plain(trainer.num_training_batches),
                _plain(trainer.num_val_batches),
                _plain(trainer.estimated_stepping_batches),
            ]

        def configure(self):
            seen["configure"] = _plain(self.trainer.estimated_stepping_batches)
            return torch.optim.SGD(self.parameters(), lr=0.1)

        model = _base(
            L,
            validation_step=lambda self, b, i, dataloader_idx=0: None,
            on_train_start=train_start,
            configure_optimizers=configure,
        )()
        trainer = _trainer(L, root, num_sanity_val_steps=0, **options)
        seen["before"] = [_plain(trainer.num_training_batches), _plain(trainer.num_val_batches)]
        trainer.fit(model, _loader(n=40), [_loader(n=24, seed=1), _loader(n=16, seed=2)])
        seen["after"] = [
            _plain(trainer.num_training_batches),
            _plain(trainer.num_val_batches),
            trainer.global_step,
        ]
        return seen

    return scenario


# --------------------------------------------------------------------------- self.log refusals


def _log_refused(hook: str, value, **log_kwargs):
    def scenario(L, root):
        def logs(self, *args):
            self.log("m", value() if callable(value) else value, **log_kwargs)

        model = _base(L, **{hook: logs})()
        trainer = _trainer(L, root)
        return _raises(lambda: trainer.fit(model, _loader()))

    return scenario


# -------------------------------------------------------------------------- fit twice, clipping, accumulation


def _fit_twice(L, root):
    calls = []
    model = _base(L, on_train_epoch_start=lambda self: calls.append(self.trainer.current_epoch))()
    trainer = _trainer(L, root, max_epochs=2)
    trainer.fit(model, _loader())
    first = [trainer.current_epoch, trainer.global_step, _plain(model.layer.weight)]
    trainer.fit(model, _loader())
    return {
        "first": first,
        "second": [trainer.current_epoch, trainer.global_step, _plain(model.layer.weight)],
        "epochs_started": calls,
    }


def _clipping(**options):
    def scenario(L, root):
        def configure(self):
            return torch.optim.SGD(self.parameters(), lr=1.0)

        def step(self, batch, batch_idx):
            return (self.layer(batch[0]) * 100).pow(2).mean()

        model = _base(L, training_step=step, configure_optimizers=configure)()
        trainer = _trainer(L, root, max_steps=1, **options)
        trainer.fit(model, _loader())
        return {
            "weight": _plain(model.layer.weight),
            "bias": _plain(model.layer.bias),
            "algorithm": trainer.gradient_clip_algorithm,
            "val": trainer.gradient_clip_val,
        }

    return scenario


def _accumulate_max_steps(L, root):
    seen = []
    model = _base(L, on_before_optimizer_step=lambda self, opt: seen.append(self.trainer.global_step))()
    trainer = _trainer(L, root, max_epochs=5, max_steps=3, accumulate_grad_batches=3)
    trainer.fit(model, _loader(n=40))
    return {
        "steps_seen": seen,
        "epoch": trainer.current_epoch,
        "step": trainer.global_step,
        "weight": _plain(model.layer.weight),
    }


# --------------------------------------------------------------------- folders, hparams, load_from_checkpoint


def _root_dir_layout(L, root):
    def fit_once():
        trainer = L.Trainer(
            max_epochs=1,
            default_root_dir=str(root),
            enable_progress_bar=False,
            enable_model_summary=False,
            accelerator="cpu",
            logger=L.loggers.CSVLogger(str(root)),
        )
        trainer.fit(_base(L)(), _loader())
        return trainer

    first, second = fit_once(), fit_once()
    rel = [os.path.relpath(t.log_dir, root) for t in (first, second)]
    # documented difference: ember's default ModelCheckpoint also writes last.ckpt (save_last=True), so that
    # fit(ckpt_path="last") resumes a default run
    files = {
        os.path.relpath(os.path.join(d, f), root)
        for d, _, fs in os.walk(root)
        for f in fs
        if f != "last.ckpt"
    }
    return {
        "log_dirs": rel,
        "files": sorted(files),
        "best": os.path.relpath(second.checkpoint_callback.best_model_path, root),
    }


def _hparams_named(L, root):
    class Net(_base(L)):
        def __init__(self, a=1, b="x", c=3.0):
            super().__init__()
            self.save_hyperparameters("a", "b")

    model = Net(a=2)
    trainer = _trainer(L, root)
    trainer.fit(model, _loader())
    trainer.save_checkpoint(root / "h.ckpt")
    loaded = Net.load_from_checkpoint(root / "h.ckpt", b="y")
    return {
        "hparams": dict(model.hparams),
        "loaded": dict(loaded.hparams),
        "saved": _checkpoint(root / "h.ckpt")["hyper_parameters"],
    }


def _load_from_checkpoint_options(L, root):
    class Net(_base(L)):
        def __init__(self, width=1):
            super().__init__()
            self.save_hyperparameters()
            self.head = torch.nn.Linear(4, width)

    trainer = _trainer(L, root)
    trainer.fit(Net(), _loader())
    trainer.save_checkpoint(root / "n.ckpt")
    loaded = Net.load_from_checkpoint(str(root / "n.ckpt"), map_location="cpu")
    wider = lambda: Net.load_from_checkpoint(str(root / "n.ckpt"), width=2)  # noqa: E731
    loose = Net.load_from_checkpoint(str(root / "n.ckpt"), map_location=torch.device("cpu"), strict=False)

    class Bigger(Net):
        def __init__(self, width=1):
            super().__init__(width)
            self.extra = torch.nn.Linear(1, 1)

    return {
        "loaded": _plain(loaded.layer.weight),
        "training": loaded.training,
        "device": str(loaded.device),
        "wider": _raises(wider),
        "loose_hparams": dict(loose.hparams),
        "strict_extra": _raises(lambda: Bigger.load_from_checkpoint(str(root / "n.ckpt"))),
        "loose_extra": _raises(lambda: Bigger.load_from_checkpoint(str(root / "n.ckpt"), strict=False)),
    }


# --------------------------------------------------------------------------- test/validate after fit


def _test_without_model(L, root):
    trainer, checkpoint = _fitted_with_best(L, root)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tested = trainer.test(dataloaders=_loader(seed=2), verbose=False)
    used = os.path.basename(trainer.ckpt_path) if trainer.ckpt_path else None
    current = trainer.validate(trainer.lightning_module, _loader(seed=2), ckpt_path=None, verbose=False)
    return {
        "tested": _plain(tested),
        "used": used,
        "warned": bool(caught),
        "validated_now": _plain(current),
        "ckpt_after_validate": trainer.ckpt_path,
    }


SCENARIOS = {
    "checkpoint_callbacks": _checkpoint_callbacks,
    "max_time_timer": _max_time,
    "save_checkpoint_full": _save_weights_only(False),
    "save_checkpoint_weights_only": _save_weights_only(True),
    "batch_end_outputs_tensor": _batch_end_outputs("tensor"),
    "batch_end_outputs_accumulate": _batch_end_outputs("tensor", accumulate_grad_batches=2),
    "batch_end_outputs_dict_accumulate": _batch_end_outputs("dict", accumulate_grad_batches=3),
    "batch_end_outputs_none": _batch_end_outputs("none"),
    "batch_end_outputs_manual": _manual_batch_end_outputs,
    "resume_custom_last_name": _resume_custom_last,
    "resume_lightning_custom_key": _resume_lightning_custom_key,
    "on_load_renames_keys": _on_load_renames_keys,
    "state_in_hooks": _state_in_hooks,
    "counters_in_hooks": _counters_in_hooks(),
    "counters_in_hooks_val_interval": _counters_in_hooks(val_check_interval=2),
    "batch_counts_default": _batch_counts(max_epochs=3),
    "batch_counts_limits": _batch_counts(
        max_epochs=3, limit_train_batches=3, limit_val_batches=0.5, accumulate_grad_batches=2
    ),
    "batch_counts_max_steps": _batch_counts(max_steps=4, limit_val_batches=2),
    "log_on_step_in_epoch_end": _log_refused("on_train_epoch_end", lambda: torch.tensor(1.0), on_step=True),
    "log_vector": _log_refused("on_train_epoch_end", lambda: torch.ones(3)),
    "log_string": _log_refused("on_train_epoch_end", "text"),
    "log_on_step_in_fit_start": _log_refused("on_fit_start", lambda: torch.tensor(1.0)),
    "fit_twice": _fit_twice,
    "clip_value": _clipping(gradient_clip_val=0.01, gradient_clip_algorithm="value"),
    "clip_norm": _clipping(gradient_clip_val=0.5),
    "accumulate_max_steps": _accumulate_max_steps,
    "root_dir_layout": _root_dir_layout,
    "hparams_named": _hparams_named,
    "load_from_checkpoint_options": _load_from_checkpoint_options,
    "test_without_model": _test_without_model,
}


# --------------------------------------------------------------------------- more of the documented API


def _batch_start_minus_one(L, root):
    seen = []

    def batch_start(self, batch, batch_idx):
        seen.append((self.current_epoch, batch_idx))
        return -1 if batch_idx == 2 else None

    def val_start(self):
        seen.append(("val", self.current_epoch, self.global_step))

    model = _base(
        L,
        on_train_batch_start=batch_start,
        validation_step=lambda self, b, i: None,
        on_validation_start=val_start,
        on_train_epoch_end=lambda self: seen.append("epoch_end"),
    )()
    trainer = _trainer(L, root, max_epochs=2, num_sanity_val_steps=0)
    trainer.fit(model, _loader(), _loader(seed=1))
    return {"seen": seen, "step": trainer.global_step, "epoch": trainer.current_epoch}


def _scheduler_dict(interval: str, frequency: int):
    def scenario(L, root):
        lrs = []

        def configure(self):
            opt = torch.optim.SGD(self.parameters(), lr=1.0)
            sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
            return {
                "optimizer": opt,
                "lr_scheduler": {"scheduler": sched, "interval": interval, "frequency": frequency},
            }

        model = _base(
            L,
            configure_optimizers=configure,
            on_train_batch_end=lambda self, o, b, i: lrs.append(self.optimizers().param_groups[0]["lr"]),
        )()
        trainer = _trainer(L, root, max_epochs=3)
        trainer.fit(model, _loader())
        return {"lrs": lrs, "configs": [(c.interval, c.frequency) for c in trainer.lr_scheduler_configs]}

    return scenario


def _plateau(L, root):
    def configure(self):
        opt = torch.optim.SGD(self.parameters(), lr=1.0)
        return {
            "optimizer": opt,
            "lr_scheduler": torch.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0),
            "monitor": "v",
        }

    def val_step(self, batch, batch_idx):
        self.log("v", torch.tensor(1.0))

    model = _base(L, configure_optimizers=configure, validation_step=val_step)()
    trainer = _trainer(L, root, max_epochs=3)
    trainer.fit(model, _loader(), _loader(seed=1))

    def no_monitor(self):
        opt = torch.optim.SGD(self.parameters(), lr=1.0)
        return [opt], [torch.optim.lr_scheduler.ReduceLROnPlateau(opt)]

    refused = _raises(lambda: _trainer(L, root).fit(_base(L, configure_optimizers=no_monitor)(), _loader()))
    return {
        "lr": trainer.optimizers[0].param_groups[0]["lr"],
        "monitor": trainer.lr_scheduler_configs[0].monitor,
        "no_monitor": refused,
    }


def _freeze(L, root):
    model = _base(L)()
    model.freeze()
    frozen = [model.training, [p.requires_grad for p in model.parameters()]]
    model.unfreeze()
    return {
        "frozen": frozen,
        "unfrozen": [model.training, [p.requires_grad for p in model.parameters()]],
        "device": str(model.device),
        "dtype": str(model.dtype),
    }


def _overfit(L, root):
    seen = []
    model = _base(
        L,
        validation_step=lambda self, b, i: seen.append(("val", _plain(b[0][0]))),
        on_train_batch_start=lambda self, b, i: seen.append(("train", _plain(b[0][0]))),
    )()
    shuffled = torch.utils.data.DataLoader(_loader().dataset, batch_size=8, shuffle=True)
    trainer = _trainer(L, root, max_epochs=2, overfit_batches=2, num_sanity_val_steps=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer.fit(model, shuffled, _loader(seed=1))
    return {"seen": seen, "step": trainer.global_step, "num_training_batches": trainer.num_training_batches}


def _datamodule_from_datasets(L, root):
    dm = L.LightningDataModule.from_datasets(
        train_dataset=_loader().dataset, val_dataset=_loader(seed=1).dataset, batch_size=4
    )
    model = _base(L, validation_step=lambda self, b, i: self.log("v", self.loss(b)))()
    trainer = _trainer(L, root, num_sanity_val_steps=0)
    trainer.fit(model, datamodule=dm)
    return {
        "step": trainer.global_step,
        "v": _plain(trainer.callback_metrics["v"]),
        "batches": [trainer.num_training_batches, trainer.num_val_batches],
    }


def _load_on_instance(L, root):
    trainer = _trainer(L, root)
    model = _base(L)()
    trainer.fit(model, _loader())
    trainer.save_checkpoint(root / "i.ckpt")
    return _raises(lambda: model.load_from_checkpoint(root / "i.ckpt"))


def _hparams_initial(L, root):
    class Net(_base(L)):
        def __init__(self, lr=0.1, depth=2):
            super().__init__()
            self.save_hyperparameters()

    model = Net(lr=0.5)
    model.hparams.lr = 0.7
    return {
        "hparams": dict(model.hparams),
        "initial": dict(model.hparams_initial),
        "type": type(model.hparams_initial).__name__,
    }


def _test_ckpt_last(L, root):
    checkpoint = L.callbacks.ModelCheckpoint(dirpath=str(root / "ck"), save_last=True)
    model = _base(L, test_step=lambda self, b, i: self.log("t", self.loss(b)))()
    trainer = _trainer(L, root, max_epochs=2, callbacks=[checkpoint], enable_checkpointing=True)
    trainer.fit(model, _loader())
    out = trainer.test(model, _loader(seed=1), ckpt_path="last", verbose=False)
    return {"test": _plain(out), "ckpt": os.path.basename(trainer.ckpt_path)}


def _seed_everything(L, root):
    seed = L.seed_everything(7)
    return {"seed": seed, "x": _plain(torch.rand(2)), "env": os.environ.get("PL_GLOBAL_SEED")}


SCENARIOS.update(
    {
        "batch_start_minus_one": _batch_start_minus_one,
        "scheduler_step_interval": _scheduler_dict("step", 3),
        "scheduler_epoch_interval": _scheduler_dict("epoch", 2),
        "plateau_monitor": _plateau,
        "freeze_unfreeze": _freeze,
        "overfit_batches": _overfit,
        "datamodule_from_datasets": _datamodule_from_datasets,
        "load_from_checkpoint_on_instance": _load_on_instance,
        "hparams_initial": _hparams_initial,
        "test_ckpt_last": _test_ckpt_last,
        "seed_everything": _seed_everything,
    }
)


def _default_loggers(L, root):
    trainer = L.Trainer(
        max_epochs=1,
        default_root_dir=str(root),
        enable_progress_bar=False,
        accelerator="cpu",
        enable_model_summary=False,
    )
    model = _base(L, training_step=lambda self, b, i: (self.log("l", self.loss(b)), self.loss(b))[1])()
    trainer.fit(model, _loader())
    # documented difference: ember's default loggers are TensorBoard's and a CSVLogger (metrics.csv) after it
    return {
        "logger": type(trainer.logger).__name__,
        "module_logger": type(model.logger).__name__,
        "version": trainer.logger.version,
        "name": trainer.logger.name,
    }


def _val_data_without_step(L, root):
    seen = []
    model = _base(L, on_validation_start=lambda self: seen.append("val"))()
    trainer = _trainer(L, root, max_epochs=2)
    trainer.fit(model, _loader(), _loader(seed=1))
    return {"seen": seen, "step": trainer.global_step, "num_val_batches": trainer.num_val_batches}


def _validate_without_step(L, root):
    return _raises(lambda: _trainer(L, root).validate(_base(L)(), _loader()))


def _fit_ckpt_best(L, root):
    def val_step(self, batch, batch_idx):
        self.log("v", torch.tensor(float((self.current_epoch - 1) ** 2)))

    checkpoint = L.callbacks.ModelCheckpoint(dirpath=str(root / "ck"), monitor="v", filename="{epoch}")
    trainer = _trainer(
        L, root, max_epochs=3, callbacks=[checkpoint], enable_checkpointing=True, num_sanity_val_steps=0
    )
    trainer.fit(_base(L, validation_step=val_step)(), _loader(), _loader(seed=1))
    again = _trainer(
        L,
        root,
        max_epochs=4,
        callbacks=[L.callbacks.ModelCheckpoint(dirpath=str(root / "ck2"))],
        enable_checkpointing=True,
        num_sanity_val_steps=0,
    )
    model = _base(L)()
    again.fit(model, _loader(), ckpt_path=checkpoint.best_model_path)
    return {
        "best": os.path.basename(checkpoint.best_model_path),
        "score": _plain(checkpoint.best_model_score),
        "step": again.global_step,
        "epoch": again.current_epoch,
        "weight": _plain(model.layer.weight),
    }


SCENARIOS.update(
    {
        "default_loggers": _default_loggers,
        "val_data_without_validation_step": _val_data_without_step,
        "validate_without_validation_step": _validate_without_step,
        "fit_from_best": _fit_ckpt_best,
    }
)


def _reload_dataloaders(every: int):
    def scenario(L, root):
        calls = []

        def train_loader(self):
            calls.append(("train", self.trainer.current_epoch))
            return _loader(n=8 * (len(calls) + 1))

        def val_loader(self):
            calls.append(("val", self.trainer.current_epoch))
            return _loader(n=8 * len(calls), seed=1)

        seen = []

        def epoch_start(self):
            seen.append((self.trainer.num_training_batches, list(self.trainer.num_val_batches)))

        model = _base(
            L,
            train_dataloader=train_loader,
            val_dataloader=val_loader,
            validation_step=lambda self, b, i: self.log("v", self.loss(b)),
            on_train_epoch_start=epoch_start,
        )()
        trainer = _trainer(L, root, max_epochs=4, reload_dataloaders_every_n_epochs=every)
        trainer.fit(model)
        return {
            "calls": calls,
            "seen": seen,
            "step": trainer.global_step,
            "option": trainer.reload_dataloaders_every_n_epochs,
        }

    return scenario


SCENARIOS.update(
    {
        "reload_dataloaders_never": _reload_dataloaders(0),
        "reload_dataloaders_every_epoch": _reload_dataloaders(1),
        "reload_dataloaders_every_2": _reload_dataloaders(2),
    }
)


def _manual_with(option: dict):
    def scenario(L, root):
        init = _manual_init(L)

        def step(self, batch, batch_idx):
            opt = self.optimizers()
            opt.zero_grad()
            self.manual_backward(self.loss(batch))
            opt.step()

        model = _base(L, __init__=init, training_step=step)()
        return _raises(lambda: _trainer(L, root, **option).fit(model, _loader()))

    return scenario


def _no_optimizer(L, root):
    model = _base(L, configure_optimizers=lambda self: None)()
    trainer = _trainer(L, root)
    outcome = _raises(lambda: trainer.fit(model, _loader()))
    return {"outcome": outcome, "step": trainer.global_step, "weight": _plain(model.layer.weight)}


SCENARIOS.update(
    {
        "manual_with_clipping": _manual_with({"gradient_clip_val": 1.0}),
        "manual_with_accumulation": _manual_with({"accumulate_grad_batches": 2}),
        "no_optimizer": _no_optimizer,
    }
)


# after every SCENARIOS.update above: the parameter list is taken when this decorator runs
@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_ember_observes_what_lightning_observes(name, tmp_path):
    compare_with_lightning(SCENARIOS[name], tmp_path)
