"""ember's Trainer against Lightning 2.6.6 (issue 13): the "multiple dataloaders" page (a dict or list of
training loaders read through ``CombinedLoader(mode="max_size_cycle")``, its four modes, the epoch length,
``limit_train_batches``, validate/test/predict given a dict or a CombinedLoader), and the names of
``lightning.pytorch.utilities`` that ember ports.

Each scenario is a function of `L` (`lightning.pytorch` or `ember`) returning what a user observes; the test
runs both and asserts they are equal (`compare_with_lightning`, test_lightning_parity.py's harness).
A mid-epoch resume with several loaders is ember's own promise (bitwise), tested against an uninterrupted run.
"""

from __future__ import annotations

import importlib
import pickle

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

import ember
from tests.trainer.test_lightning_parity import _raises, _trainer, compare_with_lightning

pl = pytest.importorskip("lightning.pytorch")


def _numbered(rows: int, start: float = 0.0, batch_size: int = 2, shuffle: bool = False) -> DataLoader:
    """A loader of `rows` 2-feature rows numbered from `start` (so each batch says where it came from)."""
    x = torch.arange(rows * 2, dtype=torch.float32).reshape(rows, 2) + start
    return DataLoader(TensorDataset(x), batch_size=batch_size, shuffle=shuffle)


def _first_values(batch):
    """A (nested) batch as its first numbers: which rows of which loader it holds."""
    if batch is None:
        return None
    if isinstance(batch, dict):
        return {k: _first_values(v) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)) and batch and isinstance(batch[0], torch.Tensor):
        return batch[0][:, 0].tolist()
    if isinstance(batch, (list, tuple)):
        return [_first_values(v) for v in batch]
    return batch


def _leaves(batch):
    if isinstance(batch, dict):
        return [t for v in batch.values() for t in _leaves(v)]
    if isinstance(batch, (list, tuple)) and batch and isinstance(batch[0], torch.Tensor):
        return [batch[0]]
    if isinstance(batch, (list, tuple)):
        return [t for v in batch for t in _leaves(v)]
    return []


def _recording_module(L, seen: list):
    """Records (batch_idx, the batch's numbers) of every training step; the loss reads every loader's
    batch."""

    class Net(L.LightningModule):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.layer = torch.nn.Linear(2, 1)

        def training_step(self, batch, batch_idx):
            seen.append((batch_idx, _first_values(batch)))
            return sum(self.layer(x).mean() for x in _leaves(batch))

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.01)

    return Net


def _fit_on(data_of, **trainer_kwargs):
    """A scenario: fit one epoch on `data_of(L)`; what each training step got, the epoch's length, what
    trainer.train_dataloader is."""

    def scenario(L, root):
        seen: list = []
        trainer = _trainer(L, root, **trainer_kwargs)
        trainer.fit(_recording_module(L, seen)(), data_of(L))
        kind = type(trainer.train_dataloader).__name__
        return {
            "seen": seen,
            "batches": trainer.num_training_batches,
            "train_dataloader": kind,
            "step": trainer.global_step,
        }

    return scenario


def _dict_of_two(L):
    return {"a": _numbered(6), "b": _numbered(4, start=100)}


def _combined(mode):
    return lambda L: L.utilities.CombinedLoader({"a": _numbered(6), "b": _numbered(4, start=100)}, mode=mode)


# --------------------------------------------------------------------------- training on several loaders


def _sequential_refused_in_fit(L, root):
    trainer = _trainer(L, root)
    return _raises(lambda: trainer.fit(_recording_module(L, [])(), _combined("sequential")(L)))


def _train_dataloader_hook_returns_dict(L, root):
    """The loaders come from the Module's train_dataloader(): the same combining."""
    seen: list = []

    class Net(_recording_module(L, seen)):
        def train_dataloader(self):
            return {"x": _numbered(4), "y": [_numbered(2, start=50), _numbered(6, start=70)]}

    trainer = _trainer(L, root, max_epochs=2)
    trainer.fit(Net())
    return {"seen": seen, "batches": trainer.num_training_batches}


def _datamodule_returns_list(L, root):
    seen: list = []

    class Data(L.LightningDataModule):
        def train_dataloader(self):
            return [_numbered(4), _numbered(8, start=30)]

    trainer = _trainer(L, root)
    trainer.fit(_recording_module(L, seen)(), datamodule=Data())
    return {"seen": seen, "batches": trainer.num_training_batches}


# --------------------------------------------------------------------------- evaluation on several loaders


def _eval_module(L, seen: list):
    class Net(_recording_module(L, [])):
        def validation_step(self, batch, batch_idx, dataloader_idx=0):
            seen.append(("val", batch_idx, dataloader_idx, _first_values(batch)))
            self.log("v", sum(x.sum() for x in _leaves(batch)))

        def test_step(self, batch, batch_idx, dataloader_idx=0):
            seen.append(("test", batch_idx, dataloader_idx, _first_values(batch)))
            self.log("t", sum(x.sum() for x in _leaves(batch)))

        def predict_step(self, batch, batch_idx, dataloader_idx=0):
            return _first_values(batch)

    return Net


def _evaluate_on(data_of, **trainer_kwargs):
    """validate, test and predict given `data_of(L)`: the steps' arguments, the results, the predictions."""

    def scenario(L, root):
        seen: list = []
        model = _eval_module(L, seen)()
        trainer = _trainer(L, root, **trainer_kwargs)
        validated = trainer.validate(model, data_of(L), verbose=False)
        tested = trainer.test(model, data_of(L), verbose=False)
        try:
            predicted = trainer.predict(model, data_of(L))
        except Exception:  # noqa: BLE001 - compared by where it is refused (predict: sequential mode only)
            predicted = "raised"
        return {
            "seen": seen,
            "validated": [{k: round(float(v), 4) for k, v in r.items()} for r in validated],
            "tested": [{k: round(float(v), 4) for k, v in r.items()} for r in tested],
            "predicted": predicted,
        }

    return scenario


def _dataloader_attributes(data_of):
    """trainer.val_dataloaders / test_dataloaders / predict_dataloaders: the collection as given (its
    shape)."""

    def scenario(L, root):
        def shape(value):
            if isinstance(value, dict):
                return {k: shape(v) for k, v in value.items()}
            if isinstance(value, (list, tuple)):
                return [shape(v) for v in value]
            return type(value).__name__

        model, trainer = _eval_module(L, [])(), _trainer(L, root)
        trainer.validate(model, data_of(L), verbose=False)
        out = {"val": shape(trainer.val_dataloaders)}
        trainer.test(model, data_of(L), verbose=False)
        out["test"] = shape(trainer.test_dataloaders)
        return out

    return scenario


def _fit_validates_dict(L, root):
    """fit's validation data as a dict: each loader its own dataloader_idx."""
    seen: list = []
    trainer = _trainer(L, root, num_sanity_val_steps=0)
    trainer.fit(
        _eval_module(L, seen)(), _numbered(4), {"p": _numbered(2, start=10), "q": _numbered(4, start=20)}
    )
    return {"seen": seen, "metrics": sorted(trainer.callback_metrics)}


# --------------------------------------------------------------------------- CombinedLoader on its own


def _combined_loader_alone(L, root):
    """The class itself, from Lightning's module path: each mode's triples and length, with and without
    limits."""
    module = importlib.import_module(f"{L.__name__}.utilities.combined_loader")
    out = {}
    for mode in ("min_size", "max_size_cycle", "max_size", "sequential"):
        for limits in (None, 2, [1, 3]):
            combined = module.CombinedLoader({"a": _numbered(6), "b": [_numbered(4, start=100)]}, mode)
            combined.limits = limits
            iter(combined)
            triples = [(_first_values(b), i, d) for b, i, d in combined]
            out[f"{mode}/{limits}"] = {"len": len(combined), "triples": triples}
    combined = module.CombinedLoader([_numbered(2), _numbered(4)], "min_size")
    out["flattened"] = len(combined.flattened)
    out["sampler"] = [type(s).__name__ for s in combined.sampler]
    out["bad mode"] = _raises(lambda: module.CombinedLoader([], "longest"))
    return out


# -------------------------------------------------------------------------- lightning.pytorch.utilities names


def _utilities(L, root):
    u = L.utilities
    with torch.device("meta"):
        model, x = (
            torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 1)),
            torch.randn(5, 4),
        )
    net = torch.nn.Module()
    net.a, net.b, net.c = torch.nn.Linear(2, 2), torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)
    net.c.weight = net.a.weight
    shared = u.find_shared_parameters(net)
    copy = pickle.loads(pickle.dumps(net))  # ties survive a pickle; set_shared_parameters re-ties by name
    copy.c.weight = torch.nn.Parameter(copy.c.weight.detach().clone())
    u.set_shared_parameters(copy, shared)
    moved = u.move_data_to_device({"x": [torch.ones(2)], "n": 3}, torch.device("cpu"))
    return {
        "forward flops": u.measure_flops(model, lambda: model(x)),
        "training flops": u.measure_flops(model, lambda: model(x), lambda y: y.sum()),
        "shared": shared,
        "retied": copy.c.weight is copy.a.weight,
        "picklable": [u.is_picklable(v) for v in (1, [2], lambda: 3, torch.ones(1))],
        "clip": [
            u.GradClipAlgorithmType.supported_types(),
            u.GradClipAlgorithmType.supported_type("norm"),
            u.GradClipAlgorithmType("value") == "value",
        ],
        "workers": u.suggested_max_num_workers(1) >= 1,
        "moved": [type(moved).__name__, moved["n"], moved["x"][0].tolist()],
    }


# --------------------------------------------------------------------- LightningModule page: hooks pseudocode

#: Every hook of the LightningModule page (ModelHooks, DataHooks, CheckpointHooks, the steps).
_MODULE_HOOKS = [
    "prepare_data",
    "setup",
    "configure_model",
    "configure_optimizers",
    "on_fit_start",
    "on_train_start",
    "on_train_epoch_start",
    "on_train_batch_start",
    "on_before_batch_transfer",
    "transfer_batch_to_device",
    "on_after_batch_transfer",
    "training_step",
    "on_before_backward",
    "backward",
    "on_after_backward",
    "on_before_optimizer_step",
    "configure_gradient_clipping",
    "optimizer_step",
    "on_before_zero_grad",
    "optimizer_zero_grad",
    "on_train_batch_end",
    "on_validation_model_eval",
    "on_validation_start",
    "on_validation_epoch_start",
    "on_validation_batch_start",
    "validation_step",
    "on_validation_batch_end",
    "on_validation_epoch_end",
    "on_validation_end",
    "on_validation_model_train",
    "on_validation_model_zero_grad",
    "on_train_epoch_end",
    "on_save_checkpoint",
    "on_load_checkpoint",
    "on_train_end",
    "on_fit_end",
    "teardown",
    "train_dataloader",
    "val_dataloader",
    "test_dataloader",
    "predict_dataloader",
    "on_test_model_eval",
    "on_test_start",
    "on_test_epoch_start",
    "on_test_batch_start",
    "test_step",
    "on_test_batch_end",
    "on_test_epoch_end",
    "on_test_end",
    "on_test_model_train",
    "on_predict_model_eval",
    "on_predict_start",
    "on_predict_epoch_start",
    "on_predict_batch_start",
    "predict_step",
    "on_predict_batch_end",
    "on_predict_epoch_end",
    "on_predict_end",
    "lr_scheduler_step",
]


def _hooked_module(L, calls: list, train_data=None):
    """A module whose every hook records its name (with its dataloader_idx where given) and then does what the
    library's own does."""

    class Base(L.LightningModule):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.layer = torch.nn.Linear(2, 1)

        def training_step(self, batch, batch_idx):
            return sum(self.layer(x).mean() for x in _leaves(batch))

        def validation_step(self, batch, batch_idx):
            self.log("v", self.layer(batch[0]).mean())

        def test_step(self, batch, batch_idx):
            self.log("t", self.layer(batch[0]).mean())

        def predict_step(self, batch, batch_idx):
            return self.layer(batch[0])

        def configure_optimizers(self):
            optimizer = torch.optim.SGD(self.parameters(), lr=0.1)
            return [optimizer], [torch.optim.lr_scheduler.StepLR(optimizer, 1)]

        def train_dataloader(self):
            return train_data() if train_data else _numbered(8)

        val_dataloader = test_dataloader = predict_dataloader = lambda self: _numbered(4, start=50)

    def record(name):
        def hook(self, *args, **kwargs):
            index = kwargs.get(
                "dataloader_idx",
                args[-1] if name.endswith("batch_transfer") or name == "transfer_batch_to_device" else None,
            )
            calls.append(name if not isinstance(index, int) else f"{name}:{index}")
            return getattr(super(Recorded, self), name)(*args, **kwargs)

        return hook

    Recorded = type("Recorded", (Base,), {name: record(name) for name in _MODULE_HOOKS})
    return Recorded


def _hook_order(stage, train_data=None):
    """The LightningModule page's pseudocode: every hook's call, in order, for one `stage` call (a fit with a
    sanity check, an in-fit validation and a checkpoint; `fit_resumed` resumes that fit's checkpoint)."""

    def scenario(L, root):
        calls: list = []
        options = dict(
            max_epochs=1,
            limit_train_batches=2,
            limit_val_batches=1,
            limit_test_batches=1,
            limit_predict_batches=1,
            num_sanity_val_steps=1,
            enable_checkpointing=True,
        )
        model = _hooked_module(L, calls, train_data)()
        if stage == "fit_resumed":
            _trainer(L, root, **options).fit(model)
            calls.clear()
            _trainer(L, root, **{**options, "max_epochs": 2}).fit(
                model,
                ckpt_path=str(
                    next((root / "checkpoints").glob("*.ckpt"))
                    if (root / "checkpoints").exists()
                    else next(root.rglob("*.ckpt"))
                ),
            )
            return calls
        getattr(_trainer(L, root, **options), stage)(model)
        return calls

    return scenario


# --------------------------------------------------------------- LightningModule page: attributes, optimizers


def _module_attributes(L, root):
    """What `self.trainer`, `self.device`, the ranks, the counters, `self.optimizers()` and
    `self.lr_schedulers()` answer inside training_step."""
    seen: list = []

    class Net(_recording_module(L, [])):
        def training_step(self, batch, batch_idx):
            optimizer, scheduler = self.optimizers(), self.lr_schedulers()
            seen.append(
                {
                    "trainer": self.trainer is trainer,
                    "device": str(self.device),
                    "rank": self.global_rank,
                    "local_rank": self.local_rank,
                    "epoch": self.current_epoch,
                    "step": self.global_step,
                    "automatic": self.automatic_optimization,
                    "optimizer": isinstance(optimizer, torch.optim.Optimizer)
                    or hasattr(optimizer, "optimizer"),
                    "raw": type(self.optimizers(use_pl_optimizer=False)).__name__,
                    "scheduler": type(scheduler).__name__,
                    "lr": scheduler.get_last_lr(),
                }
            )
            return super().training_step(batch, batch_idx)

        def configure_optimizers(self):
            optimizer = torch.optim.SGD(self.parameters(), lr=0.1)
            return {
                "optimizer": optimizer,
                "lr_scheduler": torch.optim.lr_scheduler.StepLR(optimizer, 1, gamma=0.5),
            }

    trainer = _trainer(L, root, max_epochs=2, limit_train_batches=2)
    trainer.fit(Net(), _numbered(4))
    return seen


def _optimizer_forms(returned):
    """A `configure_optimizers` return form: the learning rate seen at every step, and the Trainer's view of
    the schedulers (interval, frequency, name) after fit."""

    def scenario(L, root):
        lrs: list = []

        class Net(_recording_module(L, [])):
            def configure_optimizers(self):
                return returned(self)

            def validation_step(self, batch, batch_idx):
                self.log("val_loss", self.layer(batch[0]).mean() + self.current_epoch)

            def on_train_batch_start(self, batch, batch_idx):
                lrs.append(round(self.trainer.optimizers[0].param_groups[0]["lr"], 6))

        trainer = _trainer(L, root, max_epochs=3, limit_train_batches=3, num_sanity_val_steps=0)
        outcome = _raises(lambda: trainer.fit(Net(), _numbered(6), _numbered(2)))
        configs = [
            (c.interval, c.frequency, c.name, c.monitor, c.strict) for c in trainer.lr_scheduler_configs
        ]
        return {"outcome": outcome, "lrs": lrs, "configs": configs, "optimizers": len(trainer.optimizers)}

    return scenario


def _sgd(module, lr=1.0):
    return torch.optim.SGD(module.parameters(), lr=lr)


def _step(optimizer, **kwargs):
    return torch.optim.lr_scheduler.StepLR(optimizer, 1, gamma=0.5, **kwargs)


def _scheduler_dict(**config):
    def returned(module):
        optimizer = _sgd(module)
        scheduler = config.pop("scheduler", None) or _step(optimizer)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, **config}}

    return returned


def _plateau_dict(**config):
    def returned(module):
        optimizer = _sgd(module)
        scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, patience=0, factor=0.5)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, **config}}

    return returned


def _predict_collection(L, root):
    """predict_step may return any collection: the predictions are what it returned, batch by batch."""

    class Net(_recording_module(L, [])):
        def predict_step(self, batch, batch_idx):
            return {"first": batch[0][:, 0], "pair": (batch_idx, [batch[0].shape[0]])}

    predicted = _trainer(L, root).predict(Net(), _numbered(5))
    return [{"first": p["first"].tolist(), "pair": p["pair"]} for p in predicted]


# --------------------------------------------------------------------------- LightningDataModule page


def _datamodule_stages(L, root):
    """prepare_data/setup(stage)/teardown(stage) for each Trainer call, the datamodule's state in the
    checkpoint and back through load_state_dict on resume, and its batch-transfer hooks."""
    calls: list = []

    class Data(L.LightningDataModule):
        def __init__(self):
            super().__init__()
            self.counter = 0

        def prepare_data(self):
            calls.append("prepare_data")

        def setup(self, stage):
            calls.append(f"setup:{getattr(stage, 'value', stage)}")  # Lightning's is a str enum

        def teardown(self, stage):
            calls.append(f"teardown:{getattr(stage, 'value', stage)}")  # Lightning's is a str enum

        def train_dataloader(self):
            return _numbered(4)

        val_dataloader = test_dataloader = predict_dataloader = lambda self: _numbered(2, start=10)

        def state_dict(self):
            self.counter += 1
            return {"counter": self.counter}

        def load_state_dict(self, state):
            calls.append(f"load_state_dict:{state}")

        def on_before_batch_transfer(self, batch, dataloader_idx):
            calls.append(f"before_transfer:{dataloader_idx}")
            return batch

        def on_after_batch_transfer(self, batch, dataloader_idx):
            return [batch[0] * 1.0]

    class Net(_recording_module(L, [])):
        def validation_step(self, batch, batch_idx):
            pass

        test_step = validation_step

        def predict_step(self, batch, batch_idx):
            return batch[0][:, 0]

    data = Data()
    options = dict(max_epochs=1, enable_checkpointing=True, num_sanity_val_steps=0)
    trainer = _trainer(L, root, **options)
    trainer.fit(Net(), datamodule=data)
    checkpoint = next(root.rglob("*.ckpt"))
    saved = torch.load(checkpoint, weights_only=False)
    trainer.validate(Net(), datamodule=data, verbose=False)
    trainer.test(Net(), datamodule=data, verbose=False)
    trainer.predict(Net(), datamodule=data)
    _trainer(L, root, **{**options, "max_epochs": 2}).fit(Net(), datamodule=Data(), ckpt_path=str(checkpoint))
    return {"calls": calls, "saved": {k: v for k, v in saved.items() if k == "Data"}}


def _from_datasets(L, root):
    """LightningDataModule.from_datasets: its loaders (batch size, workers) and a fit on it."""
    train, val = (
        TensorDataset(torch.arange(12.0).reshape(6, 2)),
        TensorDataset(torch.arange(8.0).reshape(4, 2)),
    )
    data = L.LightningDataModule.from_datasets(
        train_dataset=train, val_dataset=val, batch_size=4, num_workers=0
    )
    seen: list = []
    trainer = _trainer(L, root, num_sanity_val_steps=0)
    trainer.fit(_recording_module(L, seen)(), datamodule=data)
    loaders = [data.train_dataloader(), data.val_dataloader()]
    return {
        "seen": seen,
        "batch_sizes": [dl.batch_size for dl in loaders],
        "shuffled": [type(dl.sampler).__name__ for dl in loaders],
        "test": _raises(lambda: data.test_dataloader()),
    }


# --------------------------------------------------------------------------- manual optimization page


def _gan(L, root):
    """The docs' GAN: two optimizers, toggle_optimizer/untoggle_optimizer (which parameters require grad
    inside), manual_backward, clip_gradients, a scheduler stepped by hand, optimizer.step(closure=...) and
    gradient accumulation by hand; the weights after fit and the step count."""
    seen: list = []

    class GAN(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.automatic_optimization = False
            torch.manual_seed(0)
            self.generator, self.discriminator = torch.nn.Linear(2, 2), torch.nn.Linear(2, 1)

        def training_step(self, batch, batch_idx):
            g_opt, d_opt = self.optimizers()
            g_sch, _ = self.lr_schedulers()
            x = batch[0] / 10.0
            self.toggle_optimizer(g_opt)
            seen.append([p.requires_grad for p in self.parameters()])
            g_loss = self.discriminator(self.generator(x)).mean()
            self.manual_backward(g_loss)
            if (batch_idx + 1) % 2 == 0:  # accumulate two batches by hand
                self.clip_gradients(g_opt, gradient_clip_val=0.01, gradient_clip_algorithm="norm")
                g_opt.step()
                g_opt.zero_grad()
                g_sch.step()
            self.untoggle_optimizer(g_opt)
            seen.append([p.requires_grad for p in self.parameters()])

            def closure():
                d_opt.zero_grad()
                loss = (self.discriminator(x) - 1).pow(2).mean() + self.discriminator(
                    self.generator(x).detach()
                ).pow(2).mean()
                self.manual_backward(loss)
                self.clip_gradients(d_opt, gradient_clip_val=0.05, gradient_clip_algorithm="value")
                return loss

            self.toggle_optimizer(d_opt)
            d_opt.step(closure=closure)
            self.untoggle_optimizer(d_opt)
            self.log("g_loss", g_loss)

        def configure_optimizers(self):
            g_opt = torch.optim.SGD(self.generator.parameters(), lr=0.5)
            d_opt = torch.optim.Adam(self.discriminator.parameters(), lr=0.01)
            return [g_opt, d_opt], [
                torch.optim.lr_scheduler.StepLR(g_opt, 1, gamma=0.5),
                torch.optim.lr_scheduler.StepLR(d_opt, 1, gamma=0.5),
            ]

    trainer = _trainer(L, root, max_epochs=2)
    model = GAN()
    trainer.fit(model, _numbered(8))
    return {
        "requires_grad": seen[:4],
        "step": trainer.global_step,
        "weights": {k: [round(v, 5) for v in t.flatten().tolist()] for k, t in model.state_dict().items()},
        "lrs": [o.param_groups[0]["lr"] for o in trainer.optimizers],
    }


def _manual_refusals(L, root):
    """Manual optimization with the Trainer's automatic-only options: refused at fit start."""

    class Net(_recording_module(L, [])):
        def __init__(self):
            super().__init__()
            self.automatic_optimization = False

        def training_step(self, batch, batch_idx):
            self.manual_backward(self.layer(batch[0]).mean())

    return {
        option: _raises(lambda o=option: _trainer(L, root, **{o: 2}).fit(Net(), _numbered(4)))
        for option in ("accumulate_grad_batches", "gradient_clip_val")
    }


def _given_loggers_before_fit(L, root):
    """`trainer.logger` / `trainer.loggers` right after construction, with the user's loggers (one, a list)
    and with fast_dev_run (Lightning's DummyLogger stands in)."""
    csv = L.loggers.CSVLogger(str(root), name="a")
    other = L.loggers.CSVLogger(str(root), name="b")
    one, several = L.Trainer(logger=csv), L.Trainer(logger=[csv, other])
    dev = L.Trainer(fast_dev_run=True, default_root_dir=str(root))
    return {
        "one": one.logger is csv and one.loggers == [csv],
        "several": several.loggers == [csv, other],
        "first": several.logger is csv,
        "off": L.Trainer(logger=False).loggers,
        "dev": type(dev.logger).__name__,
    }


SCENARIOS = {
    "dict_of_train_loaders": _fit_on(_dict_of_two),
    "list_of_train_loaders": _fit_on(lambda L: [_numbered(4), _numbered(6, start=100)]),
    "nested_train_loaders": _fit_on(
        lambda L: {"a": [_numbered(4), _numbered(2, start=40)], "b": _numbered(6, start=80)}
    ),
    "combined_max_size_cycle": _fit_on(_combined("max_size_cycle")),
    "combined_min_size": _fit_on(_combined("min_size")),
    "combined_max_size": _fit_on(_combined("max_size")),
    "sequential_refused_in_fit": _sequential_refused_in_fit,
    "limit_train_batches_int": _fit_on(_dict_of_two, limit_train_batches=2),
    "shuffled_two_epochs": _fit_on(
        lambda L: {"a": _numbered(6, shuffle=True), "b": _numbered(4, 100, shuffle=True)}, max_epochs=3
    ),
    "shuffled_limited": _fit_on(
        lambda L: [_numbered(8, shuffle=True), _numbered(4, 100, shuffle=True)],
        max_epochs=3,
        limit_train_batches=3,
    ),
    "shuffled_max_size": _fit_on(
        lambda L: L.utilities.CombinedLoader(
            (_numbered(6, shuffle=True), _numbered(2, 100, shuffle=True)), "max_size"
        ),
        max_epochs=2,
    ),
    "limit_train_batches_float": _fit_on(_dict_of_two, limit_train_batches=0.5),
    "limit_with_min_size": _fit_on(_combined("min_size"), limit_train_batches=1),
    "max_steps_across_epochs": _fit_on(_dict_of_two, max_epochs=3, max_steps=5),
    "train_dataloader_hook_returns_dict": _train_dataloader_hook_returns_dict,
    "datamodule_returns_list": _datamodule_returns_list,
    "evaluate_dict": _evaluate_on(lambda L: {"p": _numbered(2), "q": _numbered(4, start=20)}),
    "evaluate_nested_list": _evaluate_on(lambda L: [_numbered(2), [_numbered(4, start=20)]]),
    "evaluate_sequential_combined": _evaluate_on(
        lambda L: L.utilities.CombinedLoader([_numbered(2), _numbered(4, start=20)], "sequential")
    ),
    "evaluate_max_size_cycle_combined": _evaluate_on(
        lambda L: L.utilities.CombinedLoader(
            {"p": _numbered(2), "q": _numbered(4, start=20)}, "max_size_cycle"
        )
    ),
    "evaluate_dict_limited": _evaluate_on(
        lambda L: {"p": _numbered(4), "q": _numbered(6, start=20)},
        limit_val_batches=1,
        limit_test_batches=0.5,
        limit_predict_batches=2,
    ),
    "fit_validates_dict": _fit_validates_dict,
    "dataloader_attributes_dict": _dataloader_attributes(
        lambda L: {"p": _numbered(2), "q": [_numbered(4, start=20)]}
    ),
    "dataloader_attributes_list": _dataloader_attributes(lambda L: [_numbered(2), _numbered(4, start=20)]),
    "dataloader_attributes_one_in_list": _dataloader_attributes(lambda L: [_numbered(2)]),
    "dataloader_attributes_combined": _dataloader_attributes(
        lambda L: L.utilities.CombinedLoader({"p": _numbered(2), "q": _numbered(4)}, "max_size_cycle")
    ),
    "combined_loader_alone": _combined_loader_alone,
    "utilities": _utilities,
    "hook_order_fit": _hook_order("fit"),
    "hook_order_validate": _hook_order("validate"),
    "hook_order_test": _hook_order("test"),
    "hook_order_predict": _hook_order("predict"),
    "hook_order_fit_resumed": _hook_order("fit_resumed"),
    "module_attributes": _module_attributes,
    "optimizers_list": _optimizer_forms(lambda m: [_sgd(m)]),
    "optimizers_tuple_of_lists": _optimizer_forms(lambda m: (lambda o: ([o], [_step(o)]))(_sgd(m))),
    "optimizers_dict_scheduler": _optimizer_forms(
        lambda m: (lambda o: {"optimizer": o, "lr_scheduler": _step(o)})(_sgd(m))
    ),
    "scheduler_interval_step": _optimizer_forms(_scheduler_dict(interval="step")),
    "scheduler_frequency_2": _optimizer_forms(_scheduler_dict(interval="step", frequency=2, name="my_lr")),
    "scheduler_plateau_monitor": _optimizer_forms(_plateau_dict(monitor="val_loss")),
    "scheduler_plateau_no_monitor": _optimizer_forms(_plateau_dict()),
    "scheduler_plateau_missing_strict": _optimizer_forms(_plateau_dict(monitor="missing")),
    "scheduler_plateau_missing_not_strict": _optimizer_forms(_plateau_dict(monitor="missing", strict=False)),
    "predict_collection": _predict_collection,
    "datamodule_stages": _datamodule_stages,
    "from_datasets": _from_datasets,
    "manual_gan": _gan,
    "manual_refusals": _manual_refusals,
    "given_loggers_before_fit": _given_loggers_before_fit,
    "hook_order_fit_dict_of_loaders": _hook_order(
        "fit", lambda: {"a": _numbered(4), "b": _numbered(6, start=9)}
    ),
}


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_ember_observes_what_lightning_observes(name, tmp_path):
    compare_with_lightning(SCENARIOS[name], tmp_path)


def test_every_lightning_utilities_name_is_in_ember_utilities():
    """`from lightning.pytorch.utilities import X` ports as `from ember.utilities import X` (but Lightning's
    own enum base, its shared-filesystem probe and its PossibleUserWarning switch, which have no meaning in
    ember)."""
    import ember.utilities

    not_ported = {"LightningEnum", "is_shared_filesystem", "disable_possible_user_warnings"}
    assert set(pl.utilities.__all__) - not_ported <= set(ember.utilities.__all__)
    from ember.utilities.combined_loader import CombinedLoader

    assert CombinedLoader is ember.utilities.CombinedLoader


# ---------------------------------------------------------------------- ember's exact resume, several loaders


def _shuffled_fit(root, ckpt_path=None, stop_after=None, every=None):
    """Two epochs on a dict of two shuffled loaders; optionally stopping after `stop_after` steps with a
    checkpoint written every `every` steps, or resuming from `ckpt_path`."""
    seen: list = []
    torch.manual_seed(7)
    data = {"a": _numbered(10, shuffle=True), "b": _numbered(6, start=100, shuffle=True)}
    callbacks = (
        [ember.ModelCheckpoint(dirpath=str(root), every_n_train_steps=every, save_top_k=-1)] if every else []
    )
    trainer = ember.Trainer(
        max_epochs=2,
        max_steps=stop_after or -1,
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        enable_checkpointing=bool(every),
        callbacks=callbacks,
        default_root_dir=str(root),
        accelerator="cpu",
    )
    model = _recording_module(ember, seen)()
    trainer.fit(model, data, ckpt_path=ckpt_path)
    return model, seen


@pytest.mark.filterwarnings("ignore")
def test_mid_epoch_resume_with_several_shuffled_loaders_is_exact(tmp_path):
    whole, whole_seen = _shuffled_fit(tmp_path / "whole")
    _, first_seen = _shuffled_fit(
        tmp_path / "part", stop_after=7, every=7
    )  # epoch 1 is 5 steps: stops in epoch 2
    checkpoint = next((tmp_path / "part").glob("*step=7*.ckpt"))
    resumed, rest_seen = _shuffled_fit(tmp_path / "rest", ckpt_path=str(checkpoint))
    assert first_seen + rest_seen == whole_seen
    for mine, reference in zip(resumed.parameters(), whole.parameters(), strict=True):
        assert torch.equal(mine, reference)
