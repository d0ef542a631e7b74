"""Reading Lightning 2.x checkpoints written by the real Lightning: where each one resumes."""

from __future__ import annotations

import doctest
import warnings

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

import ember
import ember.lightning_checkpoint
from ember.errors import CheckpointError
from ember.lightning_checkpoint import is_lightning_checkpoint, lightning_keys, resume_note, resume_point

pl = pytest.importorskip("lightning.pytorch")


class Tiny(pl.LightningModule):
    def __init__(self, lr: float = 0.1, interval: str = "epoch") -> None:
        super().__init__()
        self.save_hyperparameters()
        self.layer = torch.nn.Linear(4, 2)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.cross_entropy(self.layer(x), y)

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=self.hparams.lr, momentum=0.9)
        scheduler = torch.optim.lr_scheduler.StepLR(
            optimizer, 1, 0.5 if self.hparams.interval == "epoch" else 0.9
        )
        return [optimizer], [{"scheduler": scheduler, "interval": self.hparams.interval}]


class EmberTiny(ember.Module):
    """Tiny, line for line, under ember."""

    def __init__(self, lr: float = 0.1, interval: str = "epoch") -> None:
        super().__init__()
        self.save_hyperparameters()
        self.layer = torch.nn.Linear(4, 2)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.cross_entropy(self.layer(x), y)

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=self.hparams.lr, momentum=0.9)
        scheduler = torch.optim.lr_scheduler.StepLR(
            optimizer, 1, 0.5 if self.hparams.interval == "epoch" else 0.9
        )
        return [optimizer], [{"scheduler": scheduler, "interval": self.hparams.interval}]


def data() -> DataLoader:
    generator = torch.Generator().manual_seed(0)
    features, labels = (
        torch.randn(40, 4, generator=generator),
        torch.randint(0, 2, (40,), generator=generator),
    )
    return DataLoader(TensorDataset(features, labels), batch_size=8)  # 5 batches, same order every epoch


def quiet(library, **options):
    return library.Trainer(logger=False, enable_progress_bar=False, enable_model_summary=False, **options)


@pytest.fixture(scope="module")
def lightning_files(tmp_path_factory):
    """Checkpoints the real Lightning Trainer wrote: every epoch end, and every 3 steps (mid-epoch); and
    the weights after 2 and 3 epochs."""
    folder = tmp_path_factory.mktemp("lightning")
    torch.manual_seed(0)
    epoch_end = pl.callbacks.ModelCheckpoint(dirpath=folder / "epochs", save_top_k=-1)
    steps = pl.callbacks.ModelCheckpoint(dirpath=folder / "steps", every_n_train_steps=3, save_top_k=-1)
    model = Tiny()
    torch.save(model.state_dict(), folder / "initial.pt")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quiet(pl, max_epochs=2, callbacks=[epoch_end, steps], default_root_dir=folder).fit(model, data())
        torch.save(model.state_dict(), folder / "after2.pt")
        quiet(pl, max_epochs=3, default_root_dir=folder).fit(
            model, data(), ckpt_path=folder / "epochs" / "epoch=1-step=10.ckpt"
        )
    torch.save(model.state_dict(), folder / "after3.pt")
    return folder


def assert_same_weights(module, saved, atol=0.0):
    """atol=0: bitwise. The same float operations in the same order give the same bits in both libraries."""
    for name, tensor in module.state_dict().items():
        assert torch.allclose(tensor, saved[name], rtol=0, atol=atol), name


def test_ember_fit_resumes_a_lightning_epoch_end_checkpoint(lightning_files, capfd):
    model = EmberTiny()
    trainer = quiet(ember, max_epochs=3, default_root_dir=lightning_files / "ember")
    trainer.fit(model, data(), ckpt_path=lightning_files / "epochs" / "epoch=1-step=10.ckpt")
    assert (trainer.global_step, trainer.current_epoch) == (15, 3)
    assert_same_weights(model, torch.load(lightning_files / "after3.pt"))
    assert (
        model.trainer.optimizers[0].param_groups[0]["lr"] == 0.1 * 0.5**3
    )  # the scheduler went on from 2 steps
    note = [line for line in capfd.readouterr().err.splitlines() if "Lightning checkpoint" in line]
    assert (
        len(note) == 1
        and "the start of epoch 2 (step 10)" in note[0]
        and "no RNG states nor data position" in note[0]
    )


def test_ember_fit_resumes_a_lightning_mid_epoch_checkpoint_after_its_batch(lightning_files):
    model = EmberTiny()
    trainer = quiet(ember, max_epochs=2, default_root_dir=lightning_files / "ember_mid")
    trainer.fit(model, data(), ckpt_path=lightning_files / "steps" / "epoch=1-step=9.ckpt")
    assert trainer.global_step == 10
    assert_same_weights(
        model, torch.load(lightning_files / "after2.pt")
    )  # the same order: the same batch 5 left


def test_module_load_from_checkpoint_reads_a_lightning_file(lightning_files):
    loaded = EmberTiny.load_from_checkpoint(lightning_files / "epochs" / "epoch=1-step=10.ckpt")
    assert loaded.hparams.lr == 0.1
    assert_same_weights(loaded, torch.load(lightning_files / "after2.pt"))


@pytest.fixture(scope="module")
def ember_files(tmp_path_factory):
    """Checkpoints ember wrote (epoch ends, every 3 steps, weights only), and ember's weights after 2 and 3
    epochs. The scheduler steps every batch: see
    test_an_epoch_scheduler_in_an_ember_epoch_end_file_is_one_step_behind."""
    folder = tmp_path_factory.mktemp("ember")
    model = EmberTiny(lr=0.2, interval="step")
    epoch_end = ember.callbacks.ModelCheckpoint(dirpath=folder / "epochs", save_top_k=-1)
    steps = ember.callbacks.ModelCheckpoint(dirpath=folder / "steps", every_n_train_steps=3, save_top_k=-1)
    trainer = quiet(ember, max_epochs=2, default_root_dir=folder, callbacks=[epoch_end, steps])
    trainer.fit(model, data())
    trainer.save_checkpoint(folder / "weights.ckpt", weights_only=True)
    torch.save(model.state_dict(), folder / "after2.pt")
    quiet(ember, max_epochs=3, default_root_dir=folder).fit(
        model, data(), ckpt_path=folder / "epochs" / "epoch=1-step=10.ckpt"
    )
    torch.save(model.state_dict(), folder / "after3.pt")
    return folder


def test_lightning_load_from_checkpoint_reads_ember_files(ember_files):
    for name in ("epochs/epoch=1-step=10.ckpt", "weights.ckpt"):
        loaded = Tiny.load_from_checkpoint(ember_files / name, weights_only=True)
        assert (loaded.hparams.lr, loaded.hparams.interval) == (0.2, "step")
        assert_same_weights(loaded, torch.load(ember_files / "after2.pt"))


def test_lightning_fit_resumes_an_ember_epoch_end_checkpoint(ember_files, tmp_path):
    model = Tiny(interval="step")
    trainer = quiet(pl, max_epochs=3, default_root_dir=tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer.fit(
            model, data(), ckpt_path=ember_files / "epochs" / "epoch=1-step=10.ckpt", weights_only=True
        )
    assert (trainer.global_step, trainer.current_epoch) == (15, 3)
    assert_same_weights(model, torch.load(ember_files / "after3.pt"))


def test_lightning_fit_resumes_an_ember_mid_epoch_checkpoint(ember_files, tmp_path):
    model = Tiny(interval="step")
    trainer = quiet(pl, max_epochs=2, default_root_dir=tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer.fit(model, data(), ckpt_path=ember_files / "steps" / "epoch=1-step=9.ckpt", weights_only=True)
    assert (trainer.global_step, trainer.current_epoch) == (10, 2)
    # Lightning's own choice for a mid-epoch file and a loader without state: a new iterator, so its last
    # batch is the loader's first rather than ember's fifth (ember fast-forwards): equal counters, other
    # weights.
    assert trainer.optimizers[0].param_groups[0]["lr"] == pytest.approx(0.2 * 0.9**10)


def test_callback_states_cross_over_under_the_same_keys(tmp_path):
    """EarlyStopping's state key is Lightning's, so its state resumes in either library."""
    stop = ember.callbacks.EarlyStopping(monitor="val_loss", patience=7)
    trainer = quiet(ember, max_epochs=1, default_root_dir=tmp_path, callbacks=[stop])
    trainer.fit(ValidatedTiny(), data(), data())
    trainer.save_checkpoint(tmp_path / "ember.ckpt")
    lightning_stop = pl.callbacks.EarlyStopping(monitor="val_loss", patience=3)
    lightning_stop.load_state_dict(
        torch.load(tmp_path / "ember.ckpt", weights_only=False)["callbacks"][lightning_stop.state_key]
    )
    assert (lightning_stop.patience, lightning_stop.best_score) == (7, stop.best_score)


class ValidatedTiny(EmberTiny):
    def validation_step(self, batch, batch_idx):
        self.log("val_loss", self.training_step(batch, batch_idx))


def test_an_epoch_scheduler_in_an_epoch_end_file_has_stepped_as_in_lightning(tmp_path):
    """Lightning steps epoch-interval schedulers after the epoch's last optimizer step, before
    on_train_batch_end: a file written at the epoch end (here by ModelCheckpoint) holds the scheduler
    already stepped."""
    checkpoint = ember.callbacks.ModelCheckpoint(dirpath=tmp_path, save_top_k=-1)
    quiet(ember, max_epochs=1, default_root_dir=tmp_path, callbacks=[checkpoint]).fit(EmberTiny(), data())
    saved = torch.load(tmp_path / "epoch=0-step=5.ckpt", weights_only=False)
    assert saved["lr_schedulers"][0]["last_epoch"] == 1  # Lightning's epoch=0-step=5.ckpt has 1


def test_epoch_end_files_resume_at_the_next_epoch(lightning_files):
    for epoch in (0, 1):
        checkpoint = torch.load(
            lightning_files / "epochs" / f"epoch={epoch}-step={5 * (epoch + 1)}.ckpt", weights_only=True
        )
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
