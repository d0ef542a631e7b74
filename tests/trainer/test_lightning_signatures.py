"""What real Lightning code passes: the signatures of the Trainer's entry points and of LightningModule.log /
log_dict / save_hyperparameters are Lightning 2.6's (same names, same positional order), and each argument is
honoured or refused in one line (weights_only, storage_options, frame, validate/test's positional order).
"""

from __future__ import annotations

import inspect

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import ember
from ember.errors import CheckpointError, ConfigError

pl = pytest.importorskip("lightning.pytorch")

QUIET = {"enable_progress_bar": False, "enable_model_summary": False, "accelerator": "cpu"}

METHODS = [
    ("Trainer", "__init__"),
    ("Trainer", "fit"),
    ("Trainer", "validate"),
    ("Trainer", "test"),
    ("Trainer", "predict"),
    ("Trainer", "save_checkpoint"),
    ("LightningModule", "log"),
    ("LightningModule", "log_dict"),
    ("LightningModule", "save_hyperparameters"),
]
#: Lightning's Trainer options that ember refuses in one line when given (the rest it honours)
REFUSED_OPTIONS = {"sync_batchnorm": True}


def _split(fn) -> tuple[list[str], set[str]]:
    """(the names that can be passed by position, in order; the keyword-only names)."""
    params = [p for p in inspect.signature(fn).parameters.values() if p.name != "self"]
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    keyword = {p.name for p in params if p.kind is p.KEYWORD_ONLY}
    return positional, keyword


@pytest.mark.parametrize("owner, method", METHODS, ids=[f"{o}.{m}" for o, m in METHODS])
def test_the_signature_is_lightnings(owner, method):
    theirs = getattr(getattr(pl, owner), method)
    ours = getattr(getattr(ember, owner), method)
    their_positional, their_keyword = _split(theirs)
    our_positional, our_keyword = _split(ours)
    assert our_positional[: len(their_positional)] == their_positional  # same names in Lightning's order
    missing = their_keyword - our_keyword
    if owner == "Trainer" and method == "__init__":  # an option ember lacks is refused when given (below)
        assert missing <= set(REFUSED_OPTIONS), missing
    else:
        assert not missing
    if method == "__init__":
        return
    extra = our_positional[len(their_positional) :]
    assert not extra, f"ember has positional arguments Lightning lacks: {extra}"


@pytest.mark.parametrize("option", sorted(REFUSED_OPTIONS))
def test_a_lightning_option_ember_lacks_is_refused_in_one_line(option):
    if option in inspect.signature(ember.Trainer.__init__).parameters:
        pytest.skip(f"{option} is honoured now")
    with pytest.raises(ConfigError) as error:
        ember.Trainer(**{option: REFUSED_OPTIONS[option]})
    assert option in str(error.value) and "\n" not in str(error.value)


class Tiny(ember.LightningModule):
    def __init__(self, width: int = 4):
        super().__init__()
        self.layer = nn.Linear(width, 1)

    def training_step(self, batch, batch_idx):
        loss = self.layer(batch[0]).pow(2).mean()
        self.log("loss", loss, False, True, None, None, "mean", False, False, None, True, 4)  # by position
        return loss

    def validation_step(self, batch, batch_idx):
        self.log_dict({"val_loss": self.layer(batch[0]).pow(2).mean()}, True, True, False, True)

    def test_step(self, batch, batch_idx):
        self.log("test_loss", self.layer(batch[0]).pow(2).mean())

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


class Keeps(ember.LightningModule):
    """Saves its hyperparameters through a helper, naming the __init__'s frame (Lightning's frame=)."""

    def __init__(self, width: int = 4, depth: int = 2):
        super().__init__()
        self._save(inspect.currentframe())

    def _save(self, frame):
        self.save_hyperparameters(frame=frame)


def _data() -> DataLoader:
    return DataLoader(
        TensorDataset(torch.randn(16, 4, generator=torch.Generator().manual_seed(0))), batch_size=4
    )


def test_log_and_log_dict_take_lightnings_positional_order(tmp_path):
    trainer = ember.Trainer(max_epochs=1, default_root_dir=tmp_path, **QUIET)
    trainer.fit(Tiny(), _data(), _data())
    assert {"loss", "val_loss"} <= set(trainer.callback_metrics)
    assert (
        "val_loss" in trainer.progress_bar_metrics
    )  # prog_bar=True, the 2nd positional argument of log_dict


def test_validate_and_test_take_lightnings_positional_order(tmp_path):
    model = Tiny()
    trainer = ember.Trainer(max_epochs=1, default_root_dir=tmp_path, **QUIET)
    trainer.fit(model, _data(), _data())
    # (model, dataloaders, ckpt_path, verbose, datamodule, weights_only): verbose=False, 4th, prints nothing
    results = trainer.test(model, _data(), None, False, None, None)
    assert set(results[0]) == {"test_loss"}
    assert trainer.validate(model, _data(), None, False)[0]["val_loss"] >= 0


def test_weights_only_is_honoured_on_every_stage(tmp_path):
    model = Tiny()
    trainer = ember.Trainer(max_epochs=1, default_root_dir=tmp_path, **QUIET)
    trainer.fit(model, _data(), weights_only=True)
    path = tmp_path / "trusted.ckpt"
    trainer.save_checkpoint(path, None, None)  # Lightning's three positional arguments
    checkpoint = torch.load(path, weights_only=True)
    checkpoint["note"] = ember.demos.BoringModel  # a class: safe loading refuses it, as torch's does
    torch.save(checkpoint, path)
    again = ember.Trainer(max_epochs=2, default_root_dir=tmp_path, **QUIET)
    with pytest.raises(CheckpointError, match="safe loading refuses"):
        again.fit(Tiny(), _data(), ckpt_path=path)
    with pytest.raises(CheckpointError, match="safe loading refuses"):
        again.fit(Tiny(), _data(), ckpt_path=path, weights_only=True)
    # weights_only=False: the user's word that the file is trusted; it is read in full and the run resumes
    again.fit(Tiny(), _data(), ckpt_path=path, weights_only=False)
    assert (again.current_epoch, again.global_step) == (2, 8)  # epoch 0 from the file, epoch 1 run here
    again = ember.Trainer(max_epochs=2, default_root_dir=tmp_path, **QUIET)
    for stage in (again.validate, again.test, again.predict):
        with pytest.raises(CheckpointError, match="safe loading refuses"):
            stage(Tiny(), _data(), ckpt_path=path, weights_only=None)
    with pytest.raises(ConfigError, match=r"^weights_only='yes' must be None, True or False$"):
        again.validate(Tiny(), _data(), weights_only="yes")


def test_save_checkpoint_storage_options_is_refused_as_lightnings_default(tmp_path):
    trainer = ember.Trainer(max_steps=1, default_root_dir=tmp_path, **QUIET)
    trainer.fit(Tiny(), _data())
    with pytest.raises(ConfigError) as error:
        trainer.save_checkpoint(tmp_path / "x.ckpt", storage_options={"region": "eu"})
    assert "storage_options" in str(error.value) and "\n" not in str(error.value)
    assert not (tmp_path / "x.ckpt").exists()
    lightning = pl.Trainer(max_steps=1, default_root_dir=tmp_path / "l", logger=False, **QUIET)

    class Their(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.layer = nn.Linear(4, 1)

        def training_step(self, batch, batch_idx):
            return self.layer(batch[0]).pow(2).mean()

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    lightning.fit(Their(), _data())
    with pytest.raises(TypeError, match="storage_options"):  # Lightning's default CheckpointIO refuses it too
        lightning.save_checkpoint(tmp_path / "l.ckpt", storage_options={"region": "eu"})


def test_save_hyperparameters_reads_the_frame_it_is_given():
    assert dict(Keeps(width=8).hparams) == {"width": 8, "depth": 2}
