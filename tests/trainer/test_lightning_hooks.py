"""Every public hook of Lightning 2.6's LightningModule, LightningDataModule and Callback — taken from the
installed Lightning, so a hook a future Lightning adds is covered too — is either called by ember or refused:
a class that overrides it fails at the start of the run with one line naming it. Never silently ignored."""

from __future__ import annotations

import inspect

import pytest
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

import ember
from ember.errors import EmberError
from ember.trainer.refused_hooks import DATAMODULE_HOOKS, MODULE_HOOKS, REMOVED_HOOKS

pl = pytest.importorskip("lightning.pytorch")
from lightning.pytorch.core.hooks import CheckpointHooks, DataHooks, ModelHooks  # noqa: E402

# Public LightningModule methods that are not hooks ember could call: API the user calls, or torch's.
_NOT_HOOKS = {
    "configure_optimizers",
    "training_step",
    "validation_step",
    "test_step",
    "predict_step",
    "forward",
    "log",
    "log_dict",
    "print",
    "freeze",
    "unfreeze",
    "to_onnx",
    "to_torchscript",
    "to_tensorrt",
    "all_gather",
    "manual_backward",
    "optimizers",
    "lr_schedulers",
    "toggle_optimizer",
    "untoggle_optimizer",
    "toggled_optimizer",
    "clip_gradients",
    "save_hyperparameters",
    "load_from_checkpoint",
    "remove_ignored_hparams",
}


def _public_functions(*classes: type) -> set[str]:
    return {
        name
        for cls in classes
        for name, _ in inspect.getmembers(cls, inspect.isfunction)
        if not name.startswith("_")
    }


def _module_hooks() -> list[str]:
    torch_names = _public_functions(torch.nn.Module)
    names = (
        _public_functions(ModelHooks, DataHooks, CheckpointHooks, pl.LightningModule)
        - torch_names
        - _NOT_HOOKS
    )
    return sorted(names)


def _datamodule_hooks() -> list[str]:
    return sorted(
        _public_functions(pl.LightningDataModule)
        - {"save_hyperparameters", "load_from_checkpoint", "remove_ignored_hparams", "from_datasets"}
    )


def _callback_hooks() -> list[str]:
    return sorted(_public_functions(pl.Callback))


def _data() -> TensorDataset:
    generator = torch.Generator().manual_seed(0)
    return TensorDataset(
        torch.randn(32, 8, generator=generator), torch.randint(0, 3, (32,), generator=generator)
    )


class Probe(ember.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(8, 3)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return F.cross_entropy(self.layer(x), y)

    def validation_step(self, batch, batch_idx):
        self.log("val_loss", F.cross_entropy(self.layer(batch[0]), batch[1]))

    def test_step(self, batch, batch_idx):
        self.log("test_loss", F.cross_entropy(self.layer(batch[0]), batch[1]))

    def predict_step(self, batch, batch_idx, dataloader_idx=0):
        return self.layer(batch[0])

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=0.1)
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}


class ProbeData(ember.DataModule):
    def train_dataloader(self):
        return DataLoader(_data(), batch_size=8)

    def val_dataloader(self):
        return DataLoader(_data(), batch_size=8)

    def test_dataloader(self):
        return DataLoader(_data(), batch_size=8)

    def predict_dataloader(self):
        return DataLoader(_data(), batch_size=8)


def _recorder(name: str, base: type, calls: list[str]):
    def hook(self, *args, **kwargs):
        calls.append(name)
        inherited = getattr(base, name, None)
        if inherited is not None:
            return inherited(self, *args, **kwargs)
        if name.endswith("_dataloader"):
            return DataLoader(_data(), batch_size=8)
        if name in ("transfer_batch_to_device", "on_before_batch_transfer", "on_after_batch_transfer"):
            return args[0] if args else kwargs.get("batch")
        return None

    return hook


def _run_everything(tmp_path, module, datamodule, callbacks) -> None:
    """fit (with sanity check, validation, a checkpoint, a scheduler), a resumed fit, validate, test, predict,
    and a fit that raises (for on_exception)."""
    options = dict(
        limit_train_batches=2,
        limit_val_batches=1,
        limit_test_batches=1,
        limit_predict_batches=1,
        num_sanity_val_steps=1,
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=tmp_path,
    )
    checkpoint = ember.callbacks.ModelCheckpoint(dirpath=tmp_path / "ckpt", save_last=True)
    trainer = ember.Trainer(max_epochs=1, callbacks=[*callbacks, checkpoint], **options)
    trainer.fit(module, datamodule=datamodule)
    trainer = ember.Trainer(max_epochs=2, callbacks=list(callbacks), **options)
    trainer.fit(module, datamodule=datamodule, ckpt_path=tmp_path / "ckpt" / "last.ckpt")
    trainer.validate(module, datamodule=datamodule)
    trainer.test(module, datamodule=datamodule)
    trainer.predict(module, datamodule=datamodule)

    class Failing(type(module)):
        def training_step(self, batch, batch_idx):
            raise RuntimeError("planned failure")

    failing = Failing()
    with pytest.raises(RuntimeError, match="planned failure"):
        ember.Trainer(max_epochs=1, callbacks=list(callbacks), **options).fit(failing, datamodule=datamodule)


def _check(tmp_path, name, make, refused_names) -> None:
    """A hook in `refused_names` must be refused in one line naming it; every other hook must be called."""
    calls: list[str] = []
    module, datamodule, callbacks = make(calls)
    try:
        _run_everything(tmp_path, module, datamodule, callbacks)
    except EmberError as refused:
        assert name in refused_names, f"{name} is implemented but was refused: {refused}"
        assert name in str(refused) and "\n" not in str(refused).strip(), f"{name}: refused without naming it"
        return
    assert name not in refused_names, f"{name} is listed as refused but the run went through"
    assert name in calls, f"{name} is overridden but ember neither called it nor refused it"


class ProbeWithLoaders(Probe):
    """The Module serves its own data (Lightning lets a LightningModule define the *_dataloader hooks)."""

    train_dataloader = ProbeData.train_dataloader
    val_dataloader = ProbeData.val_dataloader
    test_dataloader = ProbeData.test_dataloader
    predict_dataloader = ProbeData.predict_dataloader


@pytest.mark.slow
@pytest.mark.parametrize("name", _module_hooks())
def test_every_lightning_module_hook_is_called_or_refused(tmp_path, name):
    def make(calls):
        base = ProbeWithLoaders if name.endswith("_dataloader") else Probe
        cls = type("ProbeOverriding", (base,), {name: _recorder(name, base, calls)})
        return cls(), None if base is ProbeWithLoaders else ProbeData(), []

    _check(tmp_path, name, make, {**MODULE_HOOKS, **REMOVED_HOOKS})


@pytest.mark.slow
@pytest.mark.parametrize("name", _datamodule_hooks())
def test_every_lightning_datamodule_hook_is_called_or_refused(tmp_path, name):
    def make(calls):
        cls = type("ProbeDataOverriding", (ProbeData,), {name: _recorder(name, ProbeData, calls)})
        return Probe(), cls(), []

    _check(tmp_path, name, make, {**DATAMODULE_HOOKS, **REMOVED_HOOKS})


@pytest.mark.slow
@pytest.mark.parametrize("name", _callback_hooks())
def test_every_lightning_callback_hook_is_called_or_refused(tmp_path, name):
    def make(calls):
        body = {name: _recorder(name, ember.Callback, calls)}
        if (
            name == "load_state_dict"
        ):  # Lightning saves, so restores, a callback's state only when it is not empty
            body["state_dict"] = lambda self: {"probe": 1}
        cls = type("ProbeCallback", (ember.Callback,), body)
        return Probe(), ProbeData(), [cls()]

    _check(tmp_path, name, make, REMOVED_HOOKS)
