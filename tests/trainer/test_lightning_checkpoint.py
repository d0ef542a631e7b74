"""Reading Lightning 2.x checkpoints written by the real Lightning: where each one resumes."""

from __future__ import annotations

import doctest

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

import ember.lightning_checkpoint
from ember.errors import CheckpointError
from ember.lightning_checkpoint import is_lightning_checkpoint, lightning_keys, resume_note, resume_point

pl = pytest.importorskip("lightning.pytorch")


class Tiny(pl.LightningModule):
    def __init__(self, lr: float = 0.1) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.layer = torch.nn.Linear(4, 2)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.cross_entropy(self.layer(x), y)

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=self.hparams.lr, momentum=0.9)
        return [optimizer], [torch.optim.lr_scheduler.StepLR(optimizer, 1, 0.5)]


@pytest.fixture(scope="module")
def lightning_files(tmp_path_factory):
    """Checkpoints the real Lightning Trainer wrote: every epoch end, and every 3 steps (mid-epoch)."""
    folder = tmp_path_factory.mktemp("lightning")
    torch.manual_seed(0)
    data = DataLoader(TensorDataset(torch.randn(40, 4), torch.randint(0, 2, (40,))), batch_size=8)  # 5 batches
    epoch_end = pl.callbacks.ModelCheckpoint(dirpath=folder / "epochs", save_top_k=-1)
    steps = pl.callbacks.ModelCheckpoint(dirpath=folder / "steps", every_n_train_steps=3, save_top_k=-1)
    trainer = pl.Trainer(max_epochs=2, logger=False, enable_progress_bar=False, enable_model_summary=False,
                         callbacks=[epoch_end, steps])
    trainer.fit(Tiny(), data)
    return folder


def test_epoch_end_files_resume_at_the_next_epoch(lightning_files):
    for epoch in (0, 1):
        checkpoint = torch.load(lightning_files / "epochs" / f"epoch={epoch}-step={5 * (epoch + 1)}.ckpt",
                                weights_only=True)
        assert is_lightning_checkpoint(checkpoint)
        point = resume_point(checkpoint)
        assert (point.epoch, point.global_step, point.batches_done) == (epoch + 1, 5 * (epoch + 1), 0)
        assert not point.mid_epoch


def test_mid_epoch_files_resume_after_the_batch_they_were_written_in(lightning_files):
    checkpoint = torch.load(lightning_files / "steps" / "epoch=1-step=9.ckpt", weights_only=True)
    point = resume_point(checkpoint, "step9.ckpt")
    assert (point.epoch, point.global_step, point.batches_done) == (1, 9, 4)
    assert "epoch 1, batch 4 (step 9)" in resume_note(point, "step9.ckpt")
    assert "no RNG states nor data position" in resume_note(point, "step9.ckpt")


def test_a_file_with_the_version_key_but_no_loops_is_one_line():
    with pytest.raises(CheckpointError, match="x.ckpt looks like a Lightning checkpoint.*'loops'"):
        resume_point({"pytorch-lightning_version": "2.6.6", "state_dict": {}}, "x.ckpt")


def test_the_keys_written_for_lightning_open_in_load_from_checkpoint(tmp_path):
    model = Tiny(lr=0.25)
    checkpoint = {"ember_version": "test", "state_dict": model.state_dict(), "hyper_parameters": {"lr": 0.25}}
    checkpoint.update(lightning_keys(checkpoint))
    assert not is_lightning_checkpoint(checkpoint)
    torch.save(checkpoint, tmp_path / "ember.ckpt")
    loaded = Tiny.load_from_checkpoint(tmp_path / "ember.ckpt", weights_only=True)
    assert loaded.hparams.lr == 0.25
    assert torch.equal(loaded.layer.weight, model.layer.weight)


def test_docstring_examples():
    result = doctest.testmod(ember.lightning_checkpoint)
    assert result.attempted > 0 and result.failed == 0
