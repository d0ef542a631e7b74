"""GradientAccumulationScheduler as Lightning 2.6's: the
same optimizer steps per epoch and weights on one run."""

from __future__ import annotations

import pytest
import torch
from _twin import Body, fit, lightning, make_module

import ember
from ember.callbacks import GradientAccumulationScheduler
from ember.errors import EmberError


class StepsPerEpoch:
    """Mixed into each library's Callback: global_step at every train epoch end."""

    def __init__(self) -> None:
        self.steps: list[int] = []
        self.factors: list[int] = []

    def on_train_epoch_end(self, trainer, module) -> None:
        self.steps.append(trainer.global_step)
        self.factors.append(trainer.accumulate_grad_batches)


def test_same_steps_per_epoch_and_weights_as_lightning(tmp_path):
    pl = lightning()
    seen = {}
    for library, base, cls in (
        ("lightning", pl.Callback, pl.callbacks.GradientAccumulationScheduler),
        ("ember", ember.Callback, GradientAccumulationScheduler),
    ):
        counter = type("Counter", (StepsPerEpoch, base), {})()
        module = make_module(library)
        fit(library, tmp_path / library, [cls(scheduling={1: 2, 2: 3}), counter], module=module, max_epochs=4)
        seen[library] = (counter.steps, counter.factors, module.state_dict())
    (their_steps, their_factors, theirs), (our_steps, our_factors, ours) = seen["lightning"], seen["ember"]
    assert (
        our_steps == their_steps == [8, 12, 15, 18]
    )  # 8 batches: 8, then 4 windows of 2, then 3 of 3 (last: 2)
    assert our_factors == their_factors == [1, 2, 3, 3]
    for name, value in theirs.items():  # same arithmetic, same order: equal up to float rounding
        torch.testing.assert_close(ours[name], value, rtol=1e-5, atol=1e-6, msg=name)


class Manual(Body):
    def __init__(self) -> None:
        super().__init__()

    def training_step(self, batch, batch_idx):
        opt = self.optimizers()
        loss = super().training_step(batch, batch_idx)
        opt.zero_grad()
        self.manual_backward(loss)
        opt.step()


def test_refused_as_lightning(tmp_path):
    pl = lightning()
    scheduling = {1: 2}
    # with Trainer(accumulate_grad_batches=2): ValueError in both
    with pytest.raises(ValueError, match="accumulate_grad_batches"):
        fit(
            "lightning",
            tmp_path / "l",
            [pl.callbacks.GradientAccumulationScheduler(dict(scheduling))],
            accumulate_grad_batches=2,
        )
    with pytest.raises(
        EmberError, match=r"Trainer\(accumulate_grad_batches=2\) and GradientAccumulationScheduler"
    ) as info:
        fit(
            "ember",
            tmp_path / "e",
            [GradientAccumulationScheduler(dict(scheduling))],
            accumulate_grad_batches=2,
        )
    assert isinstance(info.value, ValueError) and "\n" not in str(info.value)
    # manual optimization: RuntimeError in both
    for library, cls in (
        ("lightning", pl.callbacks.GradientAccumulationScheduler),
        ("ember", GradientAccumulationScheduler),
    ):
        module = make_module(library, Manual, automatic_optimization=False)
        with pytest.raises(RuntimeError, match="manual optimization"):
            fit(library, tmp_path / f"m-{library}", [cls(dict(scheduling))], module=module)
    for bad in ({}, {-1: 2}, {0: 0}):
        with pytest.raises(EmberError, match="GradientAccumulationScheduler"):
            GradientAccumulationScheduler(bad)
