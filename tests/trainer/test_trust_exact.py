"""Exact means bitwise: resuming from a checkpoint written at any boundary ends as the uninterrupted run.

Each case trains once without interruption, writing a checkpoint at every boundary of one kind, then
resumes a fresh model from each of those files and compares the final weights with `torch.equal`.
"""

from __future__ import annotations

import csv

import pytest
import torch
import torch.nn.functional as F
from _models import DigitsMLP, assert_bitwise_equal, digits_loaders, seeded, weights

import ember

QUIET = {"enable_progress_bar": False, "enable_model_summary": False}


class AdamMLP(DigitsMLP):
    """Adam plus a scheduler stepped per epoch or per optimizer step."""

    def __init__(self, interval: str = "epoch") -> None:
        super().__init__(lr=0.01)
        self.interval = interval

    def configure_optimizers(self):
        opt = torch.optim.Adam(self.parameters(), lr=self.hparams.lr)
        step_size = 1 if self.interval == "epoch" else 10
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=step_size, gamma=0.5)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": self.interval}}


def fit(root, interval: str, with_val: bool, ckpt_path=None, **checkpointing):
    seeded(0)
    model = AdamMLP(interval)
    train, val = digits_loaders()
    callbacks = (
        [
            ember.ModelCheckpoint(
                dirpath=root / "ckpts", save_top_k=-1, filename="{epoch}-{step}", **checkpointing
            )
        ]
        if checkpointing
        else []
    )
    trainer = ember.Trainer(
        max_epochs=3,
        default_root_dir=root,
        logger=False,
        callbacks=callbacks,
        enable_checkpointing=bool(checkpointing),
        **QUIET,
    )
    trainer.fit(model, train, val if with_val else None, ckpt_path=ckpt_path)
    return weights(model), trainer


BOUNDARIES = {
    # name: (validation?, ModelCheckpoint options), 47 batches an epoch
    "mid-epoch": (True, {"every_n_train_steps": 20}),
    "end of epoch": (False, {"every_n_epochs": 1}),
    "after validation": (True, {"every_n_epochs": 1}),
}


@pytest.mark.parametrize("interval", ["epoch", "step"])
@pytest.mark.parametrize("boundary", list(BOUNDARIES))
def test_resume_at_every_boundary_is_bitwise_identical(tmp_path, interval, boundary):
    with_val, options = BOUNDARIES[boundary]
    expected, trainer = fit(tmp_path / "full", interval, with_val, **options)
    files = sorted((tmp_path / "full" / "ckpts").glob("epoch=*.ckpt"))
    assert len(files) >= 2, files
    lr_end = trainer.optimizers[0].param_groups[0]["lr"]
    for ckpt in files[:-1]:  # the last one is the end of training: nothing left to resume
        resumed, again = fit(tmp_path / ckpt.stem, interval, with_val, ckpt_path=ckpt)
        assert_bitwise_equal(resumed, expected)
        assert again.optimizers[0].param_groups[0]["lr"] == lr_end, ckpt.name


class LogsBatchIndex(ember.Module):
    """The issue's example: logs batch_idx with on_epoch=True over 4 batches an epoch."""

    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(2, 1)

    def training_step(self, batch, batch_idx):
        self.log("idx", float(batch_idx), on_step=False, on_epoch=True)
        return F.mse_loss(self.layer(batch), torch.zeros(len(batch), 1))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def epoch_means(root) -> list[str]:
    with open(next(root.rglob("metrics.csv"))) as f:
        return [row["idx"] for row in csv.DictReader(f) if row.get("idx")]


class Crash(ember.Callback):
    """Dies at the start of the third batch, after last.ckpt was written at step 2 (like a lost machine)."""

    def on_train_batch_start(self, trainer, module, batch, batch_idx):
        if trainer.global_step == 2:
            raise RuntimeError("simulated crash")


def test_epoch_metric_accumulators_survive_a_mid_epoch_resume(tmp_path):
    data = [torch.randn(2, 2, generator=torch.Generator().manual_seed(i)) for i in range(4)]

    def run(root, ckpt_path=None, crash=False):
        saving = ember.ModelCheckpoint(every_n_train_steps=1, save_top_k=0, save_last=True)
        trainer = ember.Trainer(
            max_epochs=2,
            default_root_dir=root,
            callbacks=[saving, *([Crash()] if crash else [])],
            logger=ember.loggers.CSVLogger(root, version=0),
            **QUIET,
        )  # the default is TensorBoard
        trainer.fit(LogsBatchIndex(), data, ckpt_path=ckpt_path)

    run(tmp_path / "full")
    assert epoch_means(tmp_path / "full") == ["1.5", "1.5"]
    with pytest.raises(RuntimeError, match="simulated crash"):
        run(tmp_path / "cut", crash=True)
    run(tmp_path / "cut", ckpt_path="last")
    assert epoch_means(tmp_path / "cut") == ["1.5", "1.5"]  # 2.5 when the accumulators were lost
