"""A DataModule's hyperparameters go to the loggers and into the checkpoint under Lightning's key
("datamodule_hyper_parameters"); `DataModule.load_from_checkpoint` rebuilds it with its state."""

from __future__ import annotations

import pytest
import torch
from _models import DigitsMLP, digits_loaders

import ember
from ember.errors import ConfigError


class Digits(ember.DataModule):
    def __init__(self, batch_size: int = 32, note: str = "plain") -> None:
        super().__init__()
        self.save_hyperparameters()
        self.served = 0

    def train_dataloader(self):
        self.served += 1
        return digits_loaders(batch_size=self.hparams.get("batch_size", 32))[0]

    def state_dict(self):
        return {"served": self.served}

    def load_state_dict(self, state):
        self.served = state["served"]


class Recording(ember.loggers.CSVLogger):
    def log_hyperparams(self, params):
        self.seen = dict(params)
        super().log_hyperparams(params)


def test_hparams_logged_saved_and_loaded(tmp_path):
    logger = Recording(tmp_path)
    trainer = ember.Trainer(
        max_steps=2,
        logger=logger,
        default_root_dir=tmp_path,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(DigitsMLP(lr=0.05), datamodule=Digits(batch_size=16, note="x"))
    assert logger.seen == {"lr": 0.05, "hidden": 32, "batch_size": 16, "note": "x"}
    path = tmp_path / "done.ckpt"
    trainer.save_checkpoint(path)
    ckpt = torch.load(path, weights_only=True)
    assert ckpt["datamodule_hyper_parameters"] == {"batch_size": 16, "note": "x"}
    restored = Digits.load_from_checkpoint(path, note="override")
    assert (restored.hparams.batch_size, restored.hparams.note, restored.served) == (16, "override", 1)


def test_the_same_name_with_two_values_is_refused(tmp_path):
    class Clash(Digits):
        def __init__(self, lr: float = 0.5) -> None:
            ember.DataModule.__init__(self)
            self.save_hyperparameters()
            self.served = 0

    trainer = ember.Trainer(
        max_steps=1, default_root_dir=tmp_path, enable_progress_bar=False, enable_model_summary=False
    )
    with pytest.raises(ConfigError, match="'lr' is 0.1 in the Module but 0.5 in the DataModule"):
        trainer.fit(DigitsMLP(lr=0.1), datamodule=Clash())
