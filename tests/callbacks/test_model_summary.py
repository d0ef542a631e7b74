"""ModelSummary: the same table as Lightning 2.6's, printed once when fit starts."""

from __future__ import annotations

import pytest
import torch
from _models import DigitsMLP, digits_loaders

import ember
from ember.callbacks import ModelSummary
from ember.callbacks.model_summary import Summary
from ember.errors import ConfigError


def _layers(self) -> None:
    self.net = torch.nn.Sequential(
        torch.nn.Linear(256, 512),
        torch.nn.BatchNorm1d(512),
        torch.nn.Sequential(torch.nn.ReLU(), torch.nn.Dropout()),
    )
    self.extra = torch.nn.Parameter(torch.zeros(7))
    self.head = torch.nn.Linear(512, 10).eval()


def _forward(self, x):
    return self.head(self.net(x)) + self.extra[:1]


@pytest.mark.parametrize("with_example", [True, False])
@pytest.mark.parametrize("depth", [-1, 0, 1, 2])
def test_the_table_is_lightnings_character_for_character(depth, with_example):
    lightning = pytest.importorskip("lightning.pytorch")
    from lightning.pytorch.utilities.model_summary import ModelSummary as LightningSummary

    class Theirs(lightning.LightningModule):
        def __init__(self):
            super().__init__()
            _layers(self)
            if with_example:
                self.example_input_array = torch.zeros(10, 256)

        forward = _forward

    class Ours(ember.Module):
        def __init__(self):
            super().__init__()
            _layers(self)
            if with_example:
                self.example_input_array = torch.zeros(10, 256)

        forward = _forward

    ours = Ours()
    before = {name: m.training for name, m in ours.named_modules()}
    assert str(Summary(ours, max_depth=depth)) == str(LightningSummary(Theirs(), max_depth=depth))
    assert {name: m.training for name, m in ours.named_modules()} == before  # modes restored after the pass


def test_the_callback_prints_the_table_when_fit_starts(tmp_path, capsys):
    trainer = ember.Trainer(
        max_steps=1,
        callbacks=[ModelSummary(max_depth=2)],
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        default_root_dir=tmp_path,
    )
    trainer.fit(DigitsMLP(), digits_loaders()[0])
    err = capsys.readouterr().err
    assert "| net.0 | Linear     | 2.1 K  | train" in err
    assert "Total estimated model params size (MB)" in err


def test_depth_zero_prints_no_table_and_bad_depths_are_refused(tmp_path, capsys):
    trainer = ember.Trainer(
        max_steps=1,
        callbacks=[ModelSummary(max_depth=0)],
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=tmp_path,
    )
    trainer.fit(DigitsMLP(), digits_loaders()[0])
    assert "Trainable params" not in capsys.readouterr().err
    with pytest.raises(ConfigError, match=r"max_depth=-2"):
        ModelSummary(max_depth=-2)
    with pytest.raises(
        ConfigError, match=r"ModelSummary\(header_style=...\) is an option of RichModelSummary's table"
    ):
        ModelSummary(header_style="bold")
