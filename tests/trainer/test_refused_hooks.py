"""Hooks ember does not call are refused at the start of the run, in one line naming the replacement."""

from __future__ import annotations

import doctest

import pytest
import torch
from _models import DigitsMLP, digits_loaders

import ember
import ember.trainer.refused_hooks
from ember.errors import ConfigError


def _fit(module, **kwargs):
    trainer = ember.Trainer(
        max_steps=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        **kwargs,
    )
    trainer.fit(module, digits_loaders()[0])


def test_a_lightning_1_hook_is_refused_with_its_replacement():
    class Old(DigitsMLP):
        def training_epoch_end(self, outputs):
            pass

    with pytest.raises(
        ConfigError, match="Old defines training_epoch_end, which ember does not call; use on_train_epoch_end"
    ):
        _fit(Old())


def test_a_removed_epoch_hook_is_refused_before_any_step_with_its_replacement(tmp_path):
    class Lightning1(DigitsMLP):
        def on_epoch_start(self):
            raise AssertionError("never reached")

    model = Lightning1()
    before = [p.detach().clone() for p in model.parameters()]
    with pytest.raises(ConfigError, match="Lightning1 defines on_epoch_start.*on_train_epoch_start"):
        _fit(model, default_root_dir=tmp_path)
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))
    assert not any(tmp_path.iterdir())  # nothing written


def test_configure_sharded_model_is_refused_naming_configure_model():
    class Sharded(DigitsMLP):
        def configure_sharded_model(self):
            pass

    with pytest.raises(ConfigError, match="Sharded defines configure_sharded_model.*configure_model"):
        _fit(Sharded())


def test_callbacks_with_removed_hooks_are_refused():
    class EpochPrinter(ember.Callback):
        def on_epoch_end(self, trainer, module):
            pass

    with pytest.raises(ConfigError, match="EpochPrinter defines on_epoch_end.*on_train_epoch_end"):
        _fit(DigitsMLP(), callbacks=[EpochPrinter()])


def test_docstring_examples():
    result = doctest.testmod(ember.trainer.refused_hooks, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
