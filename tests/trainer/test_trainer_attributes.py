"""Trainer attributes Lightning users read: state, interrupted, the data of the run and its batch counts,
estimated_stepping_batches, world_size, the checkpoint/early-stopping callbacks, log_dir; and what
`trainer.callback_metrics` holds when the callbacks' `on_train_epoch_end` runs."""

from __future__ import annotations

import pytest
import torch
from _models import DigitsMLP, digits_loaders

import ember
from ember.trainer.states import RunningStage, TrainerFn, TrainerStatus

QUIET = {"enable_progress_bar": False, "enable_model_summary": False}


class Record(ember.Callback):
    def __init__(self) -> None:
        self.states: list[tuple] = []
        self.metrics_at_epoch_end: dict[str, float] = {}

    def on_sanity_check_start(self, trainer, module):
        self.states.append(
            (trainer.state.fn, trainer.state.stage, trainer.validating, trainer.sanity_checking)
        )

    def on_train_batch_start(self, trainer, module, batch, batch_idx):
        if batch_idx == 0:
            self.states.append(
                (trainer.state.fn, trainer.state.stage, trainer.training, trainer.state.status)
            )

    def on_validation_start(self, trainer, module):
        if not trainer.sanity_checking:
            self.states.append((trainer.state.fn, trainer.state.stage, trainer.validating))

    def on_train_epoch_end(self, trainer, module):
        self.metrics_at_epoch_end = {k: float(v) for k, v in trainer.callback_metrics.items()}


class WithMetric(DigitsMLP):
    def __init__(self) -> None:
        super().__init__()
        import torchmetrics

        self.train_acc = torchmetrics.Accuracy(task="multiclass", num_classes=10)

    def training_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        self.train_acc(logits, y)
        self.log("train_acc", self.train_acc, on_step=False, on_epoch=True)
        self.log("loss_mean", torch.nn.functional.cross_entropy(logits, y), on_step=True, on_epoch=True)
        return torch.nn.functional.cross_entropy(logits, y)


def test_state_and_data_attributes_through_fit_and_test(tmp_path):
    pytest.importorskip("torchmetrics")
    train, val = digits_loaders()
    record = Record()
    trainer = ember.Trainer(
        max_epochs=1,
        limit_train_batches=10,
        limit_val_batches=1,
        callbacks=[record],
        default_root_dir=tmp_path,
        **QUIET,
    )
    assert trainer.state.status == TrainerStatus.INITIALIZING and trainer.state.fn is None
    assert trainer.train_dataloader is None and trainer.val_dataloaders is None
    assert trainer.num_training_batches == float("inf") and trainer.world_size == 1
    trainer.fit(WithMetric(), train, val)
    assert record.states == [
        ("fit", "sanity_check", False, True),
        ("fit", "train", True, "running"),
        (TrainerFn.FITTING, RunningStage.VALIDATING, True),
    ]
    assert (trainer.state.status, trainer.state.fn, trainer.state.stage) == ("finished", "fit", None)
    assert not trainer.interrupted
    assert trainer.train_dataloader is train and trainer.val_dataloaders is val
    assert trainer.num_training_batches == 10 and trainer.num_val_batches == [1]
    assert trainer.estimated_stepping_batches == 10
    assert (
        trainer.checkpoint_callback is trainer.checkpoint_callbacks[0]
        and trainer.early_stopping_callback is None
    )
    assert trainer.log_dir == str(tmp_path / "lightning_logs" / "version_0")
    # the Metric and the tensor logged on_epoch are there when the callbacks' on_train_epoch_end runs
    assert 0.0 < record.metrics_at_epoch_end["train_acc"] <= 1.0
    assert {"loss_mean", "loss_mean_epoch", "loss_mean_step"} <= set(record.metrics_at_epoch_end)
    assert record.metrics_at_epoch_end["train_acc"] == pytest.approx(
        float(trainer.callback_metrics["train_acc"])
    )

    trainer.test(dataloaders=val, verbose=False)
    assert (
        trainer.state.fn == "test" and trainer.test_dataloaders is val and trainer.num_test_batches == [3]
    )  # 297 rows by 128


def test_interrupted_after_a_failure(tmp_path):
    class Boom(DigitsMLP):
        def training_step(self, batch, batch_idx):
            raise RuntimeError("boom")

    trainer = ember.Trainer(
        max_epochs=1, logger=False, enable_checkpointing=False, default_root_dir=tmp_path, **QUIET
    )
    with pytest.raises(RuntimeError, match="boom"):
        trainer.fit(Boom(), digits_loaders()[0])
    assert trainer.interrupted and trainer.state.status == "interrupted" and trainer.state.stage is None
