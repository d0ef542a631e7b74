"""LearningRateMonitor logs what Lightning 2.6's logs: same names (lr-Adam, lr-Adam/pg1, a scheduler dict's
`name`), same values at the same steps, momentum and weight decay, for every logging_interval."""

from __future__ import annotations

import warnings

import pytest
import torch
from _twin import Body, fit, lightning, make_module

from ember.callbacks import LearningRateMonitor


class Groups(Body):
    """Adam over two parameter groups (the second named "head"), a named epoch StepLR."""

    def configure_optimizers(self):
        optimizer = torch.optim.Adam(
            [
                {"params": self.net[0].parameters()},
                {"params": self.net[3].parameters(), "lr": 0.01, "name": "head"},
            ],
            lr=0.02,
            weight_decay=1e-4,
        )
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "name": "backbone"}}


class StepScheduled(Body):
    """SGD with momentum and an unnamed per-step scheduler."""

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-3)
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1 / (1 + step))
        return [optimizer], [{"scheduler": scheduler, "interval": "step"}]


class TwoGroupsNoScheduler(Body):
    def configure_optimizers(self):
        return torch.optim.Adam(
            [{"params": self.net[0].parameters()}, {"params": self.net[3].parameters()}], lr=0.03
        )


def _both(tmp_path, body, **kwargs):
    pl = lightning()
    seen = {}
    for library, cls in (("lightning", pl.callbacks.LearningRateMonitor), ("ember", LearningRateMonitor)):
        monitor = cls(**kwargs)
        trainer = fit(
            library,
            tmp_path / library,
            [monitor],
            module=make_module(library, body),
            max_epochs=3,
            logger=True,
            log_every_n_steps=3,
        )
        lr_keys = {
            k: round(float(v), 8) for k, v in trainer.callback_metrics.items() if "lr" in k or "backbone" in k
        }
        seen[library] = {
            "lrs": {k: [round(float(v), 8) for v in vs] for k, vs in monitor.lrs.items()},
            "metrics": lr_keys,
        }
    return seen["lightning"], seen["ember"]


@pytest.mark.parametrize("body", [Groups, StepScheduled, TwoGroupsNoScheduler], ids=lambda b: b.__name__)
@pytest.mark.parametrize("interval", [None, "step", "epoch"])
def test_same_names_and_values_as_lightning(tmp_path, body, interval):
    theirs, ours = _both(tmp_path, body, logging_interval=interval, log_momentum=True, log_weight_decay=True)
    assert ours == theirs
    assert any(ours["lrs"].values())  # something was logged


def test_epoch_interval_logs_under_the_scheduler_name(tmp_path):
    theirs, ours = _both(tmp_path, Groups, logging_interval="epoch")
    assert set(ours["lrs"]) == {"backbone/pg1", "backbone/head"} == set(theirs["lrs"])
    assert ours["lrs"]["backbone/pg1"] == [0.02, 0.01, 0.005]


class PlainAdagrad(Body):
    def configure_optimizers(self):
        return torch.optim.Adagrad(self.parameters(), lr=0.05)


@pytest.mark.parametrize("body", [PlainAdagrad, StepScheduled], ids=lambda b: b.__name__)
def test_momentum_warning_as_lightning(tmp_path, body):
    """log_momentum=True warns (RuntimeWarning) when an
    optimizer has no momentum, as Lightning; 0 is logged."""
    pl = lightning()
    warned = {}
    for library, cls in (("lightning", pl.callbacks.LearningRateMonitor), ("ember", LearningRateMonitor)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            monitor = cls(log_momentum=True)
            trainer = fit(
                library,
                tmp_path / library,
                [monitor],
                module=make_module(library, body),
                max_epochs=1,
                logger=True,
                log_every_n_steps=1,
            )
        warned[library] = any(
            issubclass(w.category, RuntimeWarning) and "momentum" in str(w.message) for w in caught
        )
        momentum = {k: float(v) for k, v in trainer.callback_metrics.items() if k.endswith("-momentum")}
        warned[f"{library} values"] = momentum
    assert warned["ember"] == warned["lightning"] == (body is PlainAdagrad)
    assert warned["ember values"] == warned["lightning values"]
