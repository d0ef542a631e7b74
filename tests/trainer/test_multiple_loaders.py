"""Several validation/test loaders, as Lightning 2.6: names get `/dataloader_idx_N`, validate/test return
one dict per loader (with what the epoch-end hooks logged in each), `add_dataloader_idx=False` keeps the
plain name, and the step receives `dataloader_idx`."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

import ember

X = torch.arange(48, dtype=torch.float32).reshape(12, 4) / 48.0
LOADERS = [DataLoader(TensorDataset(X[:8]), batch_size=4), DataLoader(TensorDataset(X[8:]), batch_size=2)]


def make(base: type) -> type:
    class TwoLoaders(base):
        def __init__(self) -> None:
            super().__init__()
            self.layer = torch.nn.Linear(4, 1)
            torch.nn.init.constant_(self.layer.weight, 0.5)
            torch.nn.init.zeros_(self.layer.bias)
            self.seen: list[tuple[int, int]] = []

        def training_step(self, batch, batch_idx):
            return self.layer(batch[0]).pow(2).mean()

        def validation_step(self, batch, batch_idx, dataloader_idx=0):
            self.seen.append((batch_idx, dataloader_idx))
            out = self.layer(batch[0]).mean()
            self.log("val_out", out)
            self.log(f"plain_{dataloader_idx}", out, add_dataloader_idx=False)

        def test_step(self, batch, batch_idx, dataloader_idx=0):
            self.log("test_out", self.layer(batch[0]).mean(), on_step=True, on_epoch=True)

        def on_validation_epoch_end(self):
            self.log("epoch_end_value", 1.0)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    return TwoLoaders


def run(lib, tmp_path):
    model = make(lib.LightningModule if hasattr(lib, "LightningModule") else lib.Module)()
    trainer = lib.Trainer(
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=tmp_path,
    )
    validated = trainer.validate(model, LOADERS, verbose=False)
    tested = trainer.test(model, LOADERS, verbose=False)
    return model, trainer, validated, tested


def test_one_result_per_loader_with_the_suffix(tmp_path):
    model, trainer, validated, tested = run(ember, tmp_path)
    assert model.seen == [(0, 0), (1, 0), (0, 1), (1, 1)]
    assert [sorted(r) for r in validated] == [
        ["epoch_end_value", "plain_0", "val_out/dataloader_idx_0"],
        ["epoch_end_value", "plain_1", "val_out/dataloader_idx_1"],
    ]
    assert validated[0]["val_out/dataloader_idx_0"] == pytest.approx(float(X[:8].sum(1).mean() * 0.5))
    assert validated[1]["val_out/dataloader_idx_1"] == pytest.approx(float(X[8:].sum(1).mean() * 0.5))
    assert sorted(tested[1]) == ["test_out_epoch/dataloader_idx_1"]
    assert "test_out/dataloader_idx_1" in trainer.callback_metrics


def test_same_results_as_lightning(tmp_path):
    lightning = pytest.importorskip("lightning.pytorch")
    ours = run(ember, tmp_path / "ember")
    theirs = run(lightning, tmp_path / "lightning")
    assert ours[0].seen == theirs[0].seen
    for mine, real in zip(ours[2] + ours[3], theirs[2] + theirs[3], strict=True):
        assert sorted(mine) == sorted(real)
        for key, value in real.items():
            assert mine[key] == pytest.approx(float(value), rel=1e-6), key


def test_a_step_without_dataloader_idx_is_refused_with_several_loaders(tmp_path):
    class NoIndex(make(ember.Module)):
        def validation_step(self, batch, batch_idx):
            self.log("v", self.layer(batch[0]).mean())

    trainer = ember.Trainer(
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=tmp_path,
    )
    with pytest.raises(
        ember.errors.ConfigError, match="takes no dataloader_idx; define it as validation_step"
    ):
        trainer.validate(NoIndex(), LOADERS)
    assert trainer.validate(NoIndex(), LOADERS[0], verbose=False)[0]["v"] > 0  # one loader: no index needed
