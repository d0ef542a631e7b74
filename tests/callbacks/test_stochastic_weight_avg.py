"""StochasticWeightAveraging as Lightning 2.6's: the same
final weights and batch-norm statistics on one run."""

from __future__ import annotations

import pytest
import torch
from _twin import Body, digits_loaders, fit, lightning, make_module

import ember
from ember.callbacks import StochasticWeightAveraging
from ember.errors import EmberError

SWA = {"swa_lrs": 0.05, "swa_epoch_start": 2, "annealing_epochs": 2}


class LearningRates:
    """Mixed into each library's Callback: the learning rate at every train epoch start."""

    def __init__(self) -> None:
        self.lrs: list[float] = []

    def on_train_epoch_start(self, trainer, module) -> None:
        self.lrs.append(round(trainer.optimizers[0].param_groups[0]["lr"], 8))


def _both(tmp_path, **swa):
    pl = lightning()
    seen = {}
    for library, base, cls in (
        ("lightning", pl.Callback, pl.callbacks.StochasticWeightAveraging),
        ("ember", ember.Callback, StochasticWeightAveraging),
    ):
        lrs = type("LRs", (LearningRates, base), {})()
        module = make_module(library)
        callback = cls(**swa)
        trainer = fit(library, tmp_path / library, [callback, lrs], module=module, max_epochs=4)
        seen[library] = (module.state_dict(), lrs.lrs, int(callback.n_averaged), trainer)
    return seen["lightning"], seen["ember"]


@pytest.mark.parametrize("strategy", ["cos", "linear"])
def test_same_weights_and_batch_norm_statistics_as_lightning(tmp_path, strategy):
    """Averaged parameters copied in, BN statistics recomputed for them in an extra epoch with no backward and
    one optimizer step (Lightning's): the same rates, counters
    and, bitwise, the same weights and statistics."""
    theirs, ours = _both(tmp_path, annealing_strategy=strategy, **SWA)
    assert ours[1] == theirs[1]  # SWALR drives the same rates, the batch-norm epoch's included
    assert ours[2] == theirs[2] == 3  # epochs 1, 2, 3 started with the weights that were averaged
    for name, value in theirs[0].items():
        assert torch.equal(ours[0][name], value), name
    plain = make_module("ember")
    fit("ember", tmp_path / "plain", [], module=plain, max_epochs=4)
    assert not torch.allclose(plain.state_dict()["net.0.weight"], ours[0]["net.0.weight"])  # SWA changed them
    # the batch-norm epoch adds one to each counter, and max_epochs is the fit's again afterwards
    for trainer in (ours[3], theirs[3]):
        assert (trainer.current_epoch, trainer.global_step, trainer.max_epochs) == (5, 33, 4)


def test_resumed_swa_ends_with_the_straight_run_weights(tmp_path):
    """Its state (average, count, SWALR) is in the checkpoint:
    a fit resumed inside the SWA phase ends bitwise equal."""
    straight = make_module("ember")
    fit("ember", tmp_path / "s", [StochasticWeightAveraging(**SWA)], module=straight, max_epochs=4)
    ckpt = ember.ModelCheckpoint(dirpath=tmp_path / "c", save_top_k=-1)
    fit("ember", tmp_path / "r", [StochasticWeightAveraging(**SWA), ckpt], max_epochs=3)
    resumed = make_module("ember")
    trainer = ember.Trainer(
        max_epochs=4,
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        default_root_dir=tmp_path / "r",
        callbacks=[StochasticWeightAveraging(**SWA)],
    )
    trainer.fit(resumed, *digits_loaders(), ckpt_path=sorted((tmp_path / "c").glob("epoch=2*.ckpt"))[0])
    for name, value in straight.state_dict().items():
        assert torch.equal(resumed.state_dict()[name], value), name


def test_refusals(tmp_path):
    for bad in (
        {"swa_lrs": -1.0},
        {"swa_lrs": 1},
        {"swa_lrs": 0.1, "swa_epoch_start": 0},
        {"swa_lrs": 0.1, "swa_epoch_start": 1.5},
        {"swa_lrs": 0.1, "annealing_strategy": "step"},
    ):
        with pytest.raises(EmberError, match="StochasticWeightAveraging"):
            StochasticWeightAveraging(**bad)

    class TwoOptimizers(Body):
        def configure_optimizers(self):
            return [
                torch.optim.SGD(self.net[0].parameters(), lr=0.1),
                torch.optim.SGD(self.net[3].parameters(), lr=0.1),
            ]

        def training_step(self, batch, batch_idx):
            return None

    module = make_module("ember", TwoOptimizers, automatic_optimization=False)
    with pytest.raises(EmberError, match="one optimizer"):
        fit("ember", tmp_path, [StochasticWeightAveraging(swa_lrs=0.1)], module=module)


def test_a_batch_norm_epoch_of_unknown_length_is_refused(tmp_path):
    """Lightning asserts the batch-norm epoch's length is known; ember says so in one line."""

    class Stream(torch.utils.data.IterableDataset):  # no __len__: the epoch's length is unknown
        def __iter__(self):
            yield from digits_loaders()[0].dataset

    module = make_module("ember")
    trainer = ember.Trainer(
        max_epochs=2,
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=tmp_path,
        callbacks=[StochasticWeightAveraging(swa_lrs=0.05)],
    )
    with pytest.raises(ember.errors.ConfigError, match="known length"):
        trainer.fit(module, torch.utils.data.DataLoader(Stream(), batch_size=32))
    assert trainer.current_epoch == 2  # the two epochs ran; the extra one was refused at its start
