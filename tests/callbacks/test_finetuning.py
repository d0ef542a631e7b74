"""BaseFinetuning / BackboneFinetuning: Lightning's freeze-then-unfreeze schedule, its lr rule, and resume."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from _models import digits_loaders
from torch import nn

import ember
from ember.callbacks import BackboneFinetuning, BaseFinetuning, Callback, ModelCheckpoint
from ember.errors import ConfigError


class Transfer(ember.Module):
    def __init__(self) -> None:
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(64, 32), nn.BatchNorm1d(32), nn.ReLU())
        self.head = nn.Linear(32, 10)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return F.cross_entropy(self.head(self.backbone(x)), y)

    def configure_optimizers(self):
        return torch.optim.SGD(filter(lambda p: p.requires_grad, self.parameters()), lr=0.1, momentum=0.9)


class RecordLrs(Callback):
    def __init__(self) -> None:
        self.lrs: list[list[float]] = []

    def on_train_epoch_end(self, trainer, module):
        self.lrs.append([group["lr"] for group in trainer.optimizers[0].param_groups])


def _trainer(tmp_path, *callbacks, max_epochs=5, **kwargs):
    return ember.Trainer(
        max_epochs=max_epochs,
        limit_train_batches=5,
        callbacks=list(callbacks),
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=tmp_path,
        **{"enable_checkpointing": False, **kwargs},
    )


def test_backbone_trains_from_the_unfreeze_epoch_at_lightnings_lr_schedule(tmp_path):
    torch.manual_seed(0)
    model = Transfer()
    linear_before = model.backbone[0].weight.detach().clone()
    bn_before = model.backbone[1].weight.detach().clone()
    lrs = RecordLrs()

    class Watch(Callback):
        def on_train_epoch_end(self, trainer, module):
            if trainer.current_epoch == 1:  # still frozen after epochs 0 and 1
                assert torch.equal(module.backbone[0].weight, linear_before)
                assert not torch.equal(module.backbone[1].weight, bn_before)  # train_bn: BatchNorm trains

    finetune = BackboneFinetuning(unfreeze_backbone_at_epoch=2, lambda_func=lambda epoch: 1.5)
    _trainer(tmp_path, finetune, Watch(), lrs).fit(model, digits_loaders()[0])
    assert not torch.equal(model.backbone[0].weight, linear_before)
    # epoch 2: 0.1 * backbone_initial_ratio_lr; then * lambda(epoch
    # + 1) until it reaches the head's lr (should_align)
    expected_backbone = [0.1 * 0.1, 0.1 * 0.1 * 1.5, 0.1 * 0.1 * 1.5 * 1.5]
    assert [round(lr, 12) for lr in (group[0] for group in lrs.lrs)] == [0.1] * 5
    assert [len(group) for group in lrs.lrs] == [1, 1, 2, 2, 2]
    assert [round(group[1], 12) for group in lrs.lrs[2:]] == [round(lr, 12) for lr in expected_backbone]


def test_should_align_caps_the_backbone_lr_at_the_models(tmp_path):
    lrs = RecordLrs()
    finetune = BackboneFinetuning(
        unfreeze_backbone_at_epoch=0, backbone_initial_lr=0.04, lambda_func=lambda e: 2.0
    )
    _trainer(tmp_path, finetune, lrs, max_epochs=4).fit(Transfer(), digits_loaders()[0])
    assert [round(group[1], 12) for group in lrs.lrs] == [0.04, 0.08, 0.1, 0.1]


def test_a_module_without_a_backbone_is_refused(tmp_path):
    class NoBackbone(Transfer):
        def __init__(self) -> None:
            super().__init__()
            self.features = self.backbone
            del self.backbone

        def training_step(self, batch, batch_idx):
            x, y = batch
            return F.cross_entropy(self.head(self.features(x)), y)

    with pytest.raises(ConfigError, match="nn.Module attribute 'backbone'"):
        _trainer(tmp_path, BackboneFinetuning()).fit(NoBackbone(), digits_loaders()[0])


def test_a_custom_base_finetuning_subclass_runs_its_two_methods(tmp_path):
    calls = []

    class HeadLater(BaseFinetuning):
        def freeze_before_training(self, pl_module):
            calls.append("freeze")
            self.freeze(pl_module.head)

        def finetune_function(self, pl_module, epoch, optimizer):
            calls.append(epoch)
            if epoch == 1:
                self.unfreeze_and_add_param_group(pl_module.head, optimizer, initial_denom_lr=4.0)

    lrs = RecordLrs()
    _trainer(tmp_path, HeadLater(), lrs, max_epochs=3).fit(Transfer(), digits_loaders()[0])
    assert calls == ["freeze", 0, 1, 2]
    assert lrs.lrs[1] == [0.1, 0.1 / 4.0]


def test_resume_after_the_unfreeze_rebuilds_the_param_groups_and_is_exact(tmp_path):
    train = digits_loaders(shuffle=False)[0]

    def run(max_epochs, *callbacks, ckpt_path=None, **kwargs):
        torch.manual_seed(0)
        model = Transfer()
        trainer = _trainer(
            tmp_path,
            BackboneFinetuning(unfreeze_backbone_at_epoch=1),
            *callbacks,
            max_epochs=max_epochs,
            **kwargs,
        )
        trainer.fit(model, train, ckpt_path=ckpt_path)
        return model, trainer

    straight, _ = run(4)
    run(2, ModelCheckpoint(dirpath=tmp_path / "ckpt", save_last=True), enable_checkpointing=True)
    resumed, trainer = run(4, ckpt_path=tmp_path / "ckpt" / "last.ckpt")
    assert len(trainer.optimizers[0].param_groups) == 2
    for key, value in straight.state_dict().items():
        assert torch.equal(value, resumed.state_dict()[key]), key
