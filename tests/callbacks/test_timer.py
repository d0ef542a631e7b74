"""Timer: Lightning's time limit callback — stops training
at the duration, per step or per epoch, across resumes."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
import torch
from _models import DigitsMLP, digits_loaders

import ember
from ember.callbacks import ModelCheckpoint, Timer
from ember.errors import ConfigError


class SlowMLP(DigitsMLP):
    def training_step(self, batch, batch_idx):
        time.sleep(0.02)
        return super().training_step(batch, batch_idx)


def _trainer(tmp_path, timer, **kwargs):
    options = dict(
        max_epochs=1000,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=tmp_path,
        limit_train_batches=10,
        limit_val_batches=2,
    )
    options.update(kwargs)
    return ember.Trainer(callbacks=[timer, *options.pop("callbacks", [])], **options)


@pytest.mark.parametrize("duration", ["00:00:00:01", timedelta(seconds=1), {"seconds": 1}])
def test_training_stops_once_the_duration_is_reached(tmp_path, duration):
    timer = Timer(duration=duration, verbose=False)
    train, val = digits_loaders()
    trainer = _trainer(tmp_path, timer)
    trainer.fit(SlowMLP(), train, val)
    assert 1.0 <= timer.time_elapsed("train") < 3.0
    assert timer.time_remaining() <= 0
    assert 0 < trainer.global_step < 1000 * 10
    assert timer.time_elapsed("validate") > 0 and timer.start_time("validate") is not None
    assert timer.end_time("train") >= timer.start_time("train")


def test_interval_epoch_stops_only_at_an_epoch_end(tmp_path):
    timer = Timer(duration={"seconds": 1}, interval="epoch", verbose=False)
    train, _ = digits_loaders()
    trainer = _trainer(tmp_path, timer, limit_train_batches=7)
    trainer.fit(SlowMLP(), train)
    assert trainer.global_step > 0 and trainer.global_step % 7 == 0
    assert timer.time_elapsed() >= 1.0


def test_the_limit_counts_time_spent_before_a_resume(tmp_path):
    train, _ = digits_loaders()
    first = Timer(duration="00:00:00:01", verbose=False)
    ckpt = ModelCheckpoint(dirpath=tmp_path / "ckpt", save_last=True, every_n_train_steps=5)
    _trainer(tmp_path, first, callbacks=[ckpt], enable_checkpointing=True).fit(SlowMLP(), train)
    spent = torch.load(tmp_path / "ckpt" / "last.ckpt", weights_only=True)["callbacks"]
    saved = next(state for key, state in spent.items() if key.startswith("Timer"))
    assert saved["time_elapsed"]["train"] >= 0.5

    resumed = Timer(duration="00:00:00:01", verbose=False)
    trainer = _trainer(tmp_path, resumed, max_epochs=10_000)
    trainer.fit(SlowMLP(), train, ckpt_path=tmp_path / "ckpt" / "last.ckpt")
    # the resumed run had at most the rest of the second (+ one check interval), not a second of its own
    assert resumed.time_elapsed() >= 1.0
    assert resumed.time_elapsed() - saved["time_elapsed"]["train"] < 1.0


def test_bad_arguments_are_one_line_errors():
    with pytest.raises(ConfigError, match=r"Timer\(duration='12:00'\).*DD:HH:MM:SS"):
        Timer(duration="12:00")
    with pytest.raises(ConfigError, match=r"Timer\(interval='batch'\).*'step' or 'epoch'"):
        Timer(duration="00:00:01:00", interval="batch")
    with pytest.raises(ConfigError, match="timedelta's keywords"):
        Timer(duration={"fortnights": 1})


def test_without_a_duration_it_only_measures(tmp_path):
    timer = Timer()
    train, _ = digits_loaders()
    trainer = _trainer(tmp_path, timer, max_epochs=2, limit_train_batches=3)
    trainer.fit(DigitsMLP(), train)
    assert trainer.global_step == 6
    assert timer.time_remaining() is None and timer.time_elapsed() > 0
    trainer.test(DigitsMLP(), train)
    assert timer.time_elapsed("test") > 0
