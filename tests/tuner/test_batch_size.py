"""Tuner.scale_batch_size and BatchSizeFinder, beside the real Lightning 2.6 (on CPU: no out-of-memory
error, so the search grows until the dataset's length, max_trials or max_val, as Lightning's does)."""

from __future__ import annotations

import warnings

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import ember
from ember.callbacks.batch_size_finder import is_out_of_memory
from ember.errors import ConfigError
from ember.tuner import BatchSizeFinder, Tuner

pl = pytest.importorskip("lightning.pytorch")

DATA = TensorDataset(torch.randn(100, 8), torch.randint(0, 3, (100,)))


def body(base):
    class Model(base):
        def __init__(self, batch_size: int = 4) -> None:
            super().__init__()
            self.save_hyperparameters()
            self.layer = nn.Linear(8, 3)
            self.seen: list[int] = []

        def training_step(self, batch, batch_idx):
            self.seen.append(len(batch[0]))
            return F.cross_entropy(self.layer(batch[0]), batch[1])

        def validation_step(self, batch, batch_idx):
            self.log("val_loss", F.cross_entropy(self.layer(batch[0]), batch[1]))

        def train_dataloader(self):
            return DataLoader(DATA, batch_size=self.hparams.batch_size)

        def val_dataloader(self):
            return DataLoader(DATA, batch_size=self.hparams.batch_size)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    return Model


EmberModel, LightningModel = body(ember.Module), body(pl.LightningModule)


def quiet(library, root, **options):
    return library.Trainer(
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        enable_checkpointing=False,
        default_root_dir=root,
        **options,
    )


SEARCHES = [
    {},  # power from 2: 2, 4, ..., 64, then 128 (>= the 100 samples: Lightning stops there)
    {"mode": "binsearch"},  # the same growth, then 5% off: 121
    {"max_trials": 3},  # 2, 4, 8: the last trial's size
    {"max_val": 16, "init_val": 3},  # 3, 6, 12, 24: not tried (>= max_val) but returned, as Lightning does
    {"mode": "binsearch", "max_val": 16, "init_val": 3},  # binsearch caps at max_val: 16, less 5%
    {"mode": "binsearch", "margin": 0.0, "max_trials": 4},
]


@pytest.mark.parametrize("options", SEARCHES, ids=[str(o) for o in SEARCHES])
def test_the_size_found_is_lightnings(tmp_path, options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lightning_model = LightningModel()
        expected = pl.tuner.Tuner(quiet(pl, tmp_path)).scale_batch_size(
            lightning_model, steps_per_trial=1, **options
        )
    model = EmberModel()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    found = Tuner(quiet(ember, tmp_path)).scale_batch_size(model, steps_per_trial=1, **options)
    assert found == expected == model.hparams.batch_size == lightning_model.hparams.batch_size
    # The same trials with the same batch sizes, but the first: Lightning's first trial reuses the loader its
    # fit built before the search (at the model's initial size, 4) although it reports init_val; ember's
    # first trial runs at init_val, the size it reports.
    assert model.seen[0] == options.get("init_val", 2) and lightning_model.seen[0] == 4
    assert model.seen[1:] == lightning_model.seen[1:]
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())  # weights put back


class Data(ember.DataModule):
    def __init__(self) -> None:
        super().__init__()
        self.batch_size = 2

    def train_dataloader(self):
        return DataLoader(DATA, batch_size=self.batch_size)


class Plain(ember.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layer = nn.Linear(8, 3)

    def training_step(self, batch, batch_idx):
        return F.cross_entropy(self.layer(batch[0]), batch[1])

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def test_a_datamodules_batch_size_is_tuned(tmp_path):
    data = Data()
    assert Tuner(quiet(ember, tmp_path)).scale_batch_size(Plain(), datamodule=data, max_trials=4) == 16
    assert data.batch_size == 16


def test_the_callback_scales_before_the_fit_reads_its_data(tmp_path):
    model = EmberModel()
    finder = BatchSizeFinder(max_trials=3, steps_per_trial=1)
    trainer = quiet(ember, tmp_path, max_epochs=1, callbacks=[finder], limit_val_batches=0)
    trainer.fit(model)
    assert finder.optimal_batch_size == 8 == model.hparams.batch_size
    assert model.seen[-13:] == [8] * 12 + [4]  # the real epoch: 100 samples in batches of 8


def test_one_line_refusals(tmp_path):
    tuner = Tuner(quiet(ember, tmp_path))
    with pytest.raises(ConfigError, match="cannot use dataloaders passed in"):
        tuner.scale_batch_size(EmberModel(), DataLoader(DATA))
    with pytest.raises(ConfigError, match="'batch_size' is neither an attribute"):
        tuner.scale_batch_size(Plain())
    with pytest.raises(ConfigError, match="'power' or 'binsearch'"):
        tuner.scale_batch_size(EmberModel(), mode="grow")
    with pytest.raises(ConfigError, match="searches inside a running fit"):
        BatchSizeFinder().scale_batch_size(quiet(ember, tmp_path), EmberModel())


def test_out_of_memory_errors_are_recognised():
    assert is_out_of_memory(RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB"))
    assert not is_out_of_memory(RuntimeError("mat1 and mat2 shapes cannot be multiplied"))


def test_docstring_examples():
    import doctest

    import ember.callbacks.tuned_attributes

    result = doctest.testmod(ember.callbacks.tuned_attributes)
    assert result.attempted > 0 and result.failed == 0


def fine_tune_finder(library):
    """Lightning's docs' FineTuneBatchSizeFinder, searching longer (one more trial) at each milestone."""

    class FineTuneBatchSizeFinder(library.callbacks.BatchSizeFinder):
        def __init__(self, milestones, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.milestones = milestones
            self.found = []

        def on_fit_start(self, *args, **kwargs):
            return

        def on_train_epoch_start(self, trainer, pl_module):
            if trainer.current_epoch in self.milestones or trainer.current_epoch == 0:
                self._max_trials += trainer.current_epoch > 0
                self.scale_batch_size(trainer, pl_module)
                self.found.append((trainer.current_epoch, self.optimal_batch_size))

    return FineTuneBatchSizeFinder(milestones=(1,), max_trials=2, steps_per_trial=1)


def test_the_fine_tune_subclass_searches_at_its_milestones_and_the_epoch_trains_at_the_size_found(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = fine_tune_finder(pl)
        quiet(pl, tmp_path / "pl", max_epochs=3, callbacks=[theirs], limit_val_batches=0).fit(
            LightningModel()
        )
    ours = fine_tune_finder(ember)
    model = EmberModel()
    trainer = quiet(ember, tmp_path, max_epochs=3, callbacks=[ours], limit_val_batches=0)
    trainer.fit(model)
    assert ours.found == theirs.found == [(0, 4), (1, 8)]
    # the fit's own batches (after each search's trials): epoch 0 at 4, epochs 1 and 2 at 8. (Lightning 2.6.6
    # trains no batch after a search made after epoch 0: its restored loops end every later epoch at once.)
    real = model.seen[2:27] + model.seen[30:]  # trials: 2 + 3 single steps
    assert real == [4] * 25 + [8] * 12 + [4] + [8] * 12 + [4]
    assert trainer.global_step == 25 + 13 + 13 and model.hparams.batch_size == 8
