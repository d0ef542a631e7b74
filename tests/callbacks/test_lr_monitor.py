"""LearningRateMonitor: Lightning's names (scheduler name,
duplicates, groups), intervals, momentum, weight decay."""

from __future__ import annotations

import csv

import pytest
import torch
import torch.nn.functional as F
from _models import digits_loaders
from torch import nn

import ember
from ember.callbacks import LearningRateMonitor
from ember.errors import ConfigError


class Two(ember.Module):
    """Two optimizers of one class, plus a scheduler dict with a name, a step scheduler and a group name."""

    def __init__(self, configure) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(64, 10), nn.Linear(64, 10)
        self.automatic_optimization = False
        self.configure = configure

    def training_step(self, batch, batch_idx):
        x, y = batch
        optimizers = self.optimizers()
        for opt in optimizers if isinstance(optimizers, list) else [optimizers]:
            opt.zero_grad()
            self.manual_backward(F.cross_entropy(self.a(x) + self.b(x), y))
            opt.step()
        schedulers = self.lr_schedulers()
        for scheduler in schedulers if isinstance(schedulers, list) else [schedulers]:
            if scheduler is not None:
                scheduler.step()

    def configure_optimizers(self):
        return self.configure(self)


def _fit(tmp_path, module, monitor, **kwargs):
    kwargs.setdefault(
        "logger", ember.loggers.CSVLogger(tmp_path)
    )  # the default is TensorBoard's, as Lightning's
    trainer = ember.Trainer(
        max_epochs=2,
        limit_train_batches=4,
        log_every_n_steps=1,
        callbacks=[monitor],
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=tmp_path,
        **kwargs,
    )
    trainer.fit(module, digits_loaders()[0])
    return trainer, list(csv.DictReader((tmp_path / "lightning_logs" / "version_0" / "metrics.csv").open()))


def test_names_follow_lightning_scheduler_name_duplicates_and_groups(tmp_path):
    def configure(m):
        first = torch.optim.SGD(m.a.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
        second = torch.optim.Adam(
            [{"params": m.b.weight, "name": "weights"}, {"params": m.b.bias, "lr": 0.5}], lr=0.01
        )
        third = torch.optim.SGD(m.b.parameters(), lr=0.3)
        named = {"scheduler": torch.optim.lr_scheduler.StepLR(first, 1, gamma=0.5), "name": "backbone-lr"}
        return [first, second, third], [named]

    monitor = LearningRateMonitor(logging_interval="epoch", log_momentum=True, log_weight_decay=True)
    trainer, rows = _fit(tmp_path, Two(configure), monitor)
    columns = set().union(*(row.keys() for row in rows))
    expected = {
        "backbone-lr",
        "backbone-lr-momentum",
        "backbone-lr-weight_decay",
        "lr-Adam/weights",
        "lr-Adam/pg2",
        "lr-Adam/weights-momentum",
        "lr-SGD",
        "lr-SGD-momentum",
    }
    assert expected <= columns
    assert [round(lr, 6) for lr in monitor.lrs["backbone-lr"]] == [0.1, round(0.1 * 0.5**4, 6)]
    assert monitor.lrs["lr-Adam/pg2"] == [0.5, 0.5]
    momentum = [float(r["lr-Adam/weights-momentum"]) for r in rows if r.get("lr-Adam/weights-momentum")]
    assert momentum == [0.9, 0.9]  # Adam reports betas[0]
    assert trainer.callback_metrics["backbone-lr-weight_decay"].item() == pytest.approx(1e-4)


def test_a_second_optimizer_of_the_same_class_is_suffixed(tmp_path):
    def configure(m):
        return [torch.optim.SGD(m.a.parameters(), lr=0.1), torch.optim.SGD(m.b.parameters(), lr=0.2)]

    monitor = LearningRateMonitor(logging_interval="step")
    _fit(tmp_path, Two(configure), monitor)
    assert set(monitor.lrs) == {"lr-SGD", "lr-SGD-1"}
    assert monitor.lrs["lr-SGD-1"] == [0.2] * 8


def test_interval_none_logs_each_scheduler_at_its_own_interval(tmp_path):
    def configure(m):
        first, second = torch.optim.SGD(m.a.parameters(), lr=0.1), torch.optim.Adam(m.b.parameters(), lr=0.1)
        step = {"scheduler": torch.optim.lr_scheduler.StepLR(first, 1, gamma=0.5), "interval": "step"}
        epoch = {"scheduler": torch.optim.lr_scheduler.StepLR(second, 1, gamma=0.5), "interval": "epoch"}
        return [first, second], [step, epoch]

    monitor = LearningRateMonitor()
    _fit(tmp_path, Two(configure), monitor)
    assert len(monitor.lrs["lr-SGD"]) == 8  # every step
    assert len(monitor.lrs["lr-Adam"]) == 2  # every epoch start


def test_without_a_logger_it_is_refused_at_train_start(tmp_path):
    def configure(m):
        return torch.optim.SGD(m.parameters(), lr=0.1)

    with pytest.raises(ConfigError, match="LearningRateMonitor needs a logger"):
        _fit(tmp_path, Two(configure), LearningRateMonitor(), logger=False)
    with pytest.raises(ConfigError, match="logging_interval='batch'"):
        LearningRateMonitor(logging_interval="batch")
