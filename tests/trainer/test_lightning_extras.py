"""More of Lightning 2.6's surface, each checked against the installed Lightning where it is cheap:
LambdaCallback, DataModule.from_datasets, the Trainer's ckpt_path / enable_validation /
num_sanity_val_batches / evaluating / received_sigterm / early_stopping_callbacks / progress_bar_callback /
distributed_sampler_kwargs / scaler / print / init_module, and `module.trainer` before attaching."""

from __future__ import annotations

import doctest
import importlib

import pytest
import torch
from _models import DigitsMLP, digits_loaders

import ember
from ember.callbacks import EarlyStopping, LambdaCallback, ModelCheckpoint, TQDMProgressBar
from ember.errors import ConfigError, NotAttachedError

pl = pytest.importorskip("lightning.pytorch")

QUIET = {"enable_progress_bar": False, "enable_model_summary": False, "logger": False}


def _small_loaders():
    train, val = digits_loaders(batch_size=64)
    return torch.utils.data.Subset(train.dataset, range(256)), torch.utils.data.Subset(
        val.dataset, range(128)
    )


def _hook_recorder(calls: list[str]) -> dict:
    names = [
        "setup",
        "on_fit_start",
        "on_train_epoch_start",
        "on_train_batch_end",
        "on_validation_epoch_end",
        "on_train_epoch_end",
        "on_fit_end",
        "teardown",
    ]
    return {name: (lambda *args, _name=name, **kwargs: calls.append(_name)) for name in names}


class LightningDigits(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10))

    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.cross_entropy(self.net(x), y)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", torch.nn.functional.cross_entropy(self.net(x), y))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def test_lambda_callback_calls_each_function_at_its_hook_as_lightning_does(tmp_path):
    train, val = _small_loaders()
    ours, theirs = [], []
    ember.Trainer(
        max_epochs=2,
        callbacks=[LambdaCallback(**_hook_recorder(ours))],
        default_root_dir=tmp_path,
        enable_checkpointing=False,
        num_sanity_val_steps=0,
        **QUIET,
    ).fit(
        DigitsMLP(),
        torch.utils.data.DataLoader(train, batch_size=64),
        torch.utils.data.DataLoader(val, batch_size=64),
    )
    pl.Trainer(
        max_epochs=2,
        callbacks=[pl.callbacks.LambdaCallback(**_hook_recorder(theirs))],
        default_root_dir=tmp_path,
        enable_checkpointing=False,
        num_sanity_val_steps=0,
        **QUIET,
    ).fit(
        LightningDigits(),
        torch.utils.data.DataLoader(train, batch_size=64),
        torch.utils.data.DataLoader(val, batch_size=64),
    )
    assert ours == theirs and ours.count("on_train_batch_end") == 8


def test_lambda_callback_refuses_a_name_that_is_no_hook():
    with pytest.raises(ConfigError, match=r"^LambdaCallback\(on_epoch_end=\.\.\.\): no such hook"):
        LambdaCallback(on_epoch_end=print)
    assert LambdaCallback(on_fit_start=None).__dict__ == {}  # None: that hook is not given, as in Lightning


def test_from_datasets_builds_the_loaders_lightning_builds():
    train, val = _small_loaders()
    for cls in (ember.DataModule, pl.LightningDataModule):
        dm = cls.from_datasets(
            train_dataset=train, val_dataset=[val, val], test_dataset={"a": val}, batch_size=32, num_workers=0
        )
        loader = dm.train_dataloader()
        assert isinstance(loader.sampler, torch.utils.data.RandomSampler) and loader.batch_size == 32
        assert loader.pin_memory and len(loader) == 8
        assert [type(v.sampler) for v in dm.val_dataloader()] == [torch.utils.data.SequentialSampler] * 2
        assert list(dm.test_dataloader()) == ["a"]
        assert not hasattr(dm, "predict_dataloader") or cls is pl.LightningDataModule


def test_from_datasets_passes_the_arguments_its_init_names_and_fits():
    class Named(ember.DataModule):
        def __init__(self, batch_size: int, flavour: str = "plain"):
            super().__init__()
            self.batch_size, self.flavour = batch_size, flavour

    train, _ = _small_loaders()
    dm = Named.from_datasets(train, batch_size=128, flavour="salty", ignored=1)
    assert (dm.batch_size, dm.flavour) == (128, "salty")
    trainer = ember.Trainer(max_epochs=1, enable_checkpointing=False, **QUIET)
    trainer.fit(DigitsMLP(), datamodule=dm)
    assert trainer.global_step == 2
    with pytest.raises(
        ConfigError,
        match=r"^DataModule.from_datasets\(val_dataset=\.\.\.\) is a str; pass a torch "
        r"Dataset or a list/dict of them$",
    ):
        ember.DataModule.from_datasets(val_dataset="data/")


class Observe(ember.Callback):
    def __init__(self):
        self.seen: dict[str, object] = {}

    def on_train_start(self, trainer, module):
        self.seen.update(
            enable_validation=trainer.enable_validation,
            evaluating_in_train=trainer.evaluating,
            sanity=trainer.num_sanity_val_batches,
            sigterm=trainer.received_sigterm,
        )

    def on_validation_start(self, trainer, module):
        self.seen["evaluating_in_validation"] = trainer.evaluating


def test_trainer_attributes_read_as_in_lightning(tmp_path):
    train, val = _small_loaders()
    observe = Observe()
    early = EarlyStopping(monitor="val_loss")
    trainer = ember.Trainer(
        max_epochs=1,
        default_root_dir=tmp_path,
        callbacks=[observe, early, TQDMProgressBar()],
        enable_model_summary=False,
        logger=False,
    )
    assert trainer.ckpt_path is None and trainer.scaler is None and trainer.distributed_sampler_kwargs is None
    assert trainer.early_stopping_callbacks == [early] and isinstance(
        trainer.progress_bar_callback, TQDMProgressBar
    )
    trainer.fit(
        DigitsMLP(),
        torch.utils.data.DataLoader(train, batch_size=64),
        torch.utils.data.DataLoader(val, batch_size=64),
    )
    assert observe.seen == {
        "enable_validation": True,
        "evaluating_in_train": False,
        "sanity": [2],
        "sigterm": False,
        "evaluating_in_validation": True,
    }
    best = trainer.checkpoint_callback.best_model_path
    trainer.validate(
        ckpt_path="best", dataloaders=torch.utils.data.DataLoader(val, batch_size=64), verbose=False
    )
    assert trainer.ckpt_path == best  # resolved, as Lightning's
    quiet = ember.Trainer(enable_progress_bar=False, logger=False, limit_val_batches=0)
    assert quiet.progress_bar_callback is None
    assert not quiet.enable_validation


def test_print_is_rank_zero_only(capsys):
    ember.Trainer(logger=False).print("hello", 1)
    assert capsys.readouterr().out == "hello 1\n"


def test_init_module_builds_on_the_device_and_can_skip_initialisation():
    trainer = ember.Trainer(accelerator="cpu", logger=False)
    torch.manual_seed(0)
    with trainer.init_module():
        initialised = torch.nn.Linear(8, 8)
    torch.manual_seed(0)
    with trainer.init_module(empty_init=True):
        empty = torch.nn.Linear(8, 8)
    assert initialised.weight.device.type == "cpu" and empty.weight.shape == (8, 8)
    assert (
        torch.rand(1).item() == (torch.manual_seed(0), torch.rand(1).item())[1]
    )  # no init drew random numbers
    reference = torch.nn.Linear(8, 8)
    with torch.no_grad():
        reference.weight.copy_(initialised.weight)
    empty.load_state_dict(initialised.state_dict())  # the usual next step: weights from a checkpoint
    assert torch.equal(empty.weight, reference.weight)


def test_a_modules_trainer_before_fit_is_a_runtime_error_as_in_lightning():
    with pytest.raises(RuntimeError, match="is not attached to a Trainer") as ember_error:
        DigitsMLP().trainer  # noqa: B018
    assert isinstance(ember_error.value, NotAttachedError)
    with pytest.raises(RuntimeError, match="is not attached to a `Trainer`"):
        LightningDigits().trainer  # noqa: B018


@pytest.mark.parametrize(
    "module_name", ["ember.callbacks.lambda_callback", "ember.runtime.init", "ember.datamodule"]
)
def test_docstring_examples(module_name):
    result = doctest.testmod(importlib.import_module(module_name))
    assert result.attempted > 0 and result.failed == 0


def test_a_checkpoint_callback_keeps_working_beside_a_lambda_callback(tmp_path):
    train, _ = _small_loaders()
    epochs = []
    trainer = ember.Trainer(
        max_epochs=2,
        default_root_dir=tmp_path,
        **QUIET,
        callbacks=[
            LambdaCallback(on_train_epoch_end=lambda t, m: epochs.append(t.current_epoch)),
            ModelCheckpoint(dirpath=tmp_path / "ckpt", save_last=True),
        ],
    )
    trainer.fit(DigitsMLP(), torch.utils.data.DataLoader(train, batch_size=64))
    assert epochs == [0, 1] and (tmp_path / "ckpt" / "last.ckpt").is_file()


def test_stage_flags_at_each_fit_hook_match_lightnings():
    names = [
        "on_fit_start",
        "on_sanity_check_start",
        "on_sanity_check_end",
        "on_train_start",
        "on_train_epoch_start",
        "on_validation_start",
        "on_validation_end",
        "on_train_epoch_end",
        "on_train_end",
        "on_fit_end",
    ]

    def recorder(out: list) -> dict:
        def record(name):
            return lambda t, m, *args, **kwargs: out.append(
                (name, t.state.stage.value, t.evaluating, t.training, t.validating, t.sanity_checking)
            )

        return {name: record(name) for name in names}

    train, val = (torch.utils.data.DataLoader(d, batch_size=64) for d in _small_loaders())
    ours, theirs = [], []
    ember.Trainer(
        max_epochs=1, callbacks=[LambdaCallback(**recorder(ours))], enable_checkpointing=False, **QUIET
    ).fit(DigitsMLP(), train, val)
    pl.Trainer(
        max_epochs=1,
        callbacks=[pl.callbacks.LambdaCallback(**recorder(theirs))],
        enable_checkpointing=False,
        **QUIET,
    ).fit(LightningDigits(), train, val)
    assert ours == theirs


class _Stream(torch.utils.data.IterableDataset):
    """Batches without a length: the Trainer learns the epoch's end only by looking ahead."""

    def __init__(self, data):
        self.data = data

    def __iter__(self):
        return iter(self.data)


@pytest.mark.parametrize("data", ["sized", "limited", "unsized"])
def test_is_last_batch_is_true_exactly_on_the_epochs_last_batch_as_lightning(data, tmp_path):
    train, _ = _small_loaders()
    loader = torch.utils.data.DataLoader(train, batch_size=64)  # 4 batches
    if data == "unsized":
        loader = torch.utils.data.DataLoader(_Stream(list(loader)), batch_size=None)
    limit = {"limit_train_batches": 3} if data == "limited" else {}
    flags = {}
    for name, trainer_cls, module, callback in (
        ("ember", ember.Trainer, DigitsMLP(), ember.callbacks.Callback),
        ("lightning", pl.Trainer, LightningDigits(), pl.Callback),
    ):

        class Record(callback):
            def __init__(self):
                self.seen = []

            def on_train_batch_start(self, trainer, module, batch, batch_idx):
                self.seen.append(("start", batch_idx, trainer.is_last_batch))

            def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
                self.seen.append(("end", batch_idx, trainer.is_last_batch))

        record = Record()
        flags[name] = record.seen
        trainer_cls(
            max_epochs=2,
            callbacks=[record],
            default_root_dir=tmp_path / name,
            enable_checkpointing=False,
            **limit,
            **QUIET,
        ).fit(module, loader)
    assert flags["ember"] == flags["lightning"]
    assert (
        [flag for kind, _, flag in flags["ember"] if kind == "end"] == ([False] * 2 + [True]) * 2
        if data == "limited"
        else ([False] * 3 + [True]) * 2
    )
