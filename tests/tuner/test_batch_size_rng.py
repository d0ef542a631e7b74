"""After Tuner.scale_batch_size the global RNG is where Lightning 2.6 leaves it: the draws that follow the
call are the same under both, whether the data is shuffled, the module validates, its layers draw (dropout) or
its data methods draw (random data made in train_dataloader)."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch.utils.data import DataLoader

import ember
from ember.tuner import Tuner

pl = pytest.importorskip("lightning.pytorch")


def model_class(base, shuffle: bool, validates: bool):
    class Model(base):
        def __init__(self, batch_size: int = 2) -> None:
            super().__init__()
            self.batch_size = batch_size
            self.layer = torch.nn.Sequential(torch.nn.Dropout(0.2), torch.nn.Linear(2, 1))

        def training_step(self, batch, batch_idx):
            return self.layer(batch).pow(2).mean()

        def train_dataloader(self):
            return DataLoader(torch.randn(64, 2), batch_size=self.batch_size, shuffle=shuffle)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    if validates:

        class Validating(Model):
            def validation_step(self, batch, batch_idx):
                self.log("val", self.layer(batch).mean())

            def val_dataloader(self):
                return DataLoader(torch.randn(8, 2), batch_size=4)

        return Validating
    return Model


def draws_after_search(library, base, root, shuffle, validates, **search):
    torch.manual_seed(0)
    model = model_class(base, shuffle, validates)()
    trainer = library.Trainer(
        max_epochs=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=root,
        accelerator="cpu",
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = (
            Tuner(trainer).scale_batch_size(model, steps_per_trial=2, **search)
            if library is ember
            else pl.tuner.Tuner(trainer).scale_batch_size(model, steps_per_trial=2, **search)
        )
    return found, torch.rand(4)


CASES = [
    (True, False, {"max_trials": 3}),
    (False, False, {"max_trials": 3}),
    (True, True, {"max_trials": 3}),
    (True, True, {"mode": "binsearch", "max_trials": 3}),
    (True, True, {}),  # grows to the dataset's length: the trials reach an epoch end and its validation
]


@pytest.mark.parametrize(("shuffle", "validates", "search"), CASES, ids=[str(c) for c in CASES])
def test_the_global_rng_after_scale_batch_size_is_lightnings(tmp_path, shuffle, validates, search):
    theirs = draws_after_search(pl, pl.LightningModule, tmp_path / "lightning", shuffle, validates, **search)
    mine = draws_after_search(ember, ember.Module, tmp_path / "ember", shuffle, validates, **search)
    assert mine[0] == theirs[0]
    assert torch.equal(mine[1], theirs[1])
