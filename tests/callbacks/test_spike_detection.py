"""SpikeDetection as Lightning 2.6's: the same batch found, the same skip file written, on the same run."""

from __future__ import annotations

import json
import math

import pytest
import torch
from _twin import Body, fit, lightning, make_module

import ember
from ember.callbacks import SpikeDetection, TrainingSpikeException
from ember.errors import ConfigError


class Spiking(Body):
    """The loss of epoch 1's batch 5 is multiplied by `factor` (10: a spike; NaN: not finite)."""

    factor = 10.0

    def training_step(self, batch, batch_idx):
        loss = super().training_step(batch, batch_idx)
        if self.current_epoch == 1 and batch_idx == 5:
            return loss * self.factor
        return loss


def _both(tmp_path, factor, **detector):
    pl = lightning()
    seen = {}
    for library, cls in (("lightning", pl.callbacks.SpikeDetection), ("ember", SpikeDetection)):
        callback = cls(exclude_batches_path=str(tmp_path / library), **detector)
        with pytest.raises(Exception, match="Training spike detected in batch 5") as raised:
            fit(library, tmp_path / library, [callback], module=make_module(library, Spiking, factor=factor))
        assert type(raised.value).__name__ == "TrainingSpikeException"
        seen[library] = json.loads((tmp_path / library / "skip_batches.json").read_text())
    return seen["lightning"], seen["ember"]


@pytest.mark.parametrize("factor", [10.0, math.nan])
def test_same_spike_and_skip_file_as_lightning(tmp_path, factor):
    theirs, ours = _both(tmp_path, factor, window=4, rtol=1.0)
    assert ours == theirs == [4, 5]


def test_atol_and_no_spike_when_thresholds_are_not_reached(tmp_path):
    theirs, ours = _both(tmp_path, 10.0, atol=2.0, rtol=None)
    assert ours == theirs == [4, 5]
    module = make_module("ember", Spiking, factor=1.5)  # 50% above: under rtol=2 (200%)
    trainer = fit("ember", tmp_path / "calm", [SpikeDetection()], module=module)
    assert trainer.current_epoch == 3  # the fit ran to its end
    assert not (tmp_path / "calm" / "skip_batches.json").exists()


def test_default_path_in_the_root_dir_and_state_resumes(tmp_path):
    detector = SpikeDetection(window=4, rtol=1.0)
    with pytest.raises(TrainingSpikeException):
        fit("ember", tmp_path, [detector], module=make_module("ember", Spiking))
    assert json.loads((tmp_path / "skip_batches.json").read_text()) == [4, 5]
    # what a checkpoint keeps brings the running mean back
    checkpoint = ember.ModelCheckpoint(dirpath=tmp_path / "c")
    first = SpikeDetection(window=4)
    fit("ember", tmp_path / "r", [first, checkpoint], max_epochs=1)
    saved = ember.checkpoint.load_checkpoint(checkpoint.last_model_path or checkpoint.best_model_path)
    again = SpikeDetection(window=4)
    again.load_state_dict(saved["callbacks"]["SpikeDetection"])
    assert list(again.window) == list(first.window) and len(again.window) == 4
    assert again.running_mean == pytest.approx(first.running_mean) and again.last_val == first.last_val


def test_refusals():
    with pytest.raises(ConfigError, match="mode"):
        SpikeDetection(mode="lowest")
    with pytest.raises(ConfigError, match="window"):
        SpikeDetection(window=0)
    detector = SpikeDetection()
    with pytest.raises(ConfigError, match="returned list"):
        detector.on_train_batch_end(None, None, [torch.tensor(1.0)], None, 0)
