"""Where the step and the schedulers happen, against the real Lightning 2.6 on the same digits run: a
training_step returning None, scheduler stepping points (epoch, step with a frequency, ReduceLROnPlateau)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parents[1] / "callbacks"))  # the twin runs (tests/callbacks/_twin.py)
from _twin import Body, fit, lightning, make_module  # noqa: E402

import ember  # noqa: E402


class Skipping(Body):
    """Returns None for every third batch (Lightning: no backward for it, the optimizer still steps)."""

    def training_step(self, batch, batch_idx):
        loss = super().training_step(batch, batch_idx)
        return None if batch_idx % 3 == 1 else loss

    def configure_optimizers(self):
        opt = torch.optim.SGD(self.parameters(), lr=0.1, momentum=0.9)
        return [opt], [{"scheduler": torch.optim.lr_scheduler.StepLR(opt, 2, 0.9), "interval": "step"}]

    def on_before_optimizer_step(self, optimizer):
        self.counts["optimizer_steps"] += 1

    def on_before_backward(self, loss):
        self.counts["backwards"] += 1


@pytest.mark.parametrize("accumulate", [1, 2])
def test_training_step_returning_none_skips_the_backward_as_lightning(tmp_path, accumulate):
    seen = {}
    for library in ("lightning", "ember"):
        module = make_module(library, Skipping, counts={"optimizer_steps": 0, "backwards": 0})
        trainer = fit(
            library, tmp_path / library, [], module=module, max_epochs=2, accumulate_grad_batches=accumulate
        )
        seen[library] = (
            trainer.global_step,
            module.counts,
            trainer.optimizers[0].param_groups[0]["lr"],
            module.state_dict(),
        )
    theirs, ours = seen["lightning"], seen["ember"]
    assert ours[:3] == theirs[:3]
    assert ours[1]["backwards"] == 10 < 16  # 6 of the 16 batches returned None
    for name, value in theirs[3].items():
        torch.testing.assert_close(ours[3][name], value, rtol=1e-5, atol=1e-6, msg=name)


class Scheduled(Body):
    """One scheduler of `kind`: an epoch StepLR, a step LambdaLR every 3 batches (Lightning counts the epoch's
    batches, 8 a epoch here), or a ReduceLROnPlateau on val_loss at either interval."""

    kind = "epoch"

    def configure_optimizers(self):
        opt = torch.optim.SGD(self.parameters(), lr=0.1, momentum=0.9)
        if self.kind == "epoch":
            return [opt], [torch.optim.lr_scheduler.StepLR(opt, 1, 0.5)]
        if self.kind == "step":
            scheduler = torch.optim.lr_scheduler.LambdaLR(opt, lambda n: 0.9**n)
            return [opt], [{"scheduler": scheduler, "interval": "step", "frequency": 3}]
        plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=0, threshold=0.5)
        return {
            "optimizer": opt,
            "lr_scheduler": {
                "scheduler": plateau,
                "monitor": "val_loss",
                "interval": self.kind.removeprefix("plateau-"),
                "strict": False,
            },
        }  # per step: no val_loss before the first


class Where:
    """Mixed into each library's Callback: the learning rate at each point of the run."""

    def __init__(self) -> None:
        self.lrs: list[tuple[str, int, float]] = []

    def _note(self, trainer, point):
        self.lrs.append((point, trainer.global_step, round(trainer.optimizers[0].param_groups[0]["lr"], 8)))

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
        self._note(trainer, "batch_end")

    def on_validation_end(self, trainer, module):
        self._note(trainer, "validation_end")

    def on_train_epoch_end(self, trainer, module):
        self._note(trainer, "epoch_end")

    def on_train_epoch_start(self, trainer, module):
        self._note(trainer, "epoch_start")


@pytest.mark.parametrize("kind", ["epoch", "step", "plateau-epoch", "plateau-step"])
def test_schedulers_step_where_lightning_steps_them(tmp_path, kind):
    pl = lightning()
    seen = {}
    for library, base in (("lightning", pl.Callback), ("ember", ember.Callback)):
        where = type("Where", (Where, base), {})()
        options = {"val_check_interval": 4} if kind == "plateau-step" else {}
        fit(
            library,
            tmp_path / library,
            [where],
            module=make_module(library, Scheduled, kind=kind),
            max_epochs=3,
            **options,
        )
        seen[library] = where.lrs
    assert seen["ember"] == seen["lightning"]
    assert len({lr for _, _, lr in seen["ember"]}) > 1  # the rate did change
