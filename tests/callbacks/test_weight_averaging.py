"""WeightAveraging / EMAWeightAveraging as Lightning 2.6's: the same averaged weights and validation metrics
on the same run, the averaged weights in the checkpoint's
state_dict, and a resumed fit bitwise equal to a straight one."""

from __future__ import annotations

import pytest
import torch
from _twin import Body, digits_loaders, fit, lightning, make_module

import ember
from ember.callbacks import EMAWeightAveraging, WeightAveraging
from ember.checkpoint import load_checkpoint
from ember.errors import EmberError


def _epochs_only(base: type) -> type:
    """A WeightAveraging that updates at epoch ends only (the
    docstring's customisation), built on either library."""

    class EpochAveraging(base):  # type: ignore[misc, valid-type]
        def should_update(self, step_idx=None, epoch_idx=None):
            return epoch_idx is not None

    return EpochAveraging


CASES = {
    "ema": lambda lib: lib.EMAWeightAveraging(decay=0.9),
    "ema_every_3_from_step_5": lambda lib: lib.EMAWeightAveraging(
        decay=0.8, update_every_n_steps=3, update_starting_at_step=5
    ),
    "ema_epochs_no_buffers": lambda lib: lib.EMAWeightAveraging(
        decay=0.5, update_every_n_steps=0, update_starting_at_epoch=1, use_buffers=False
    ),
    "swa_every_step": lambda lib: lib.WeightAveraging(),
    "swa_epochs": lambda lib: _epochs_only(lib.WeightAveraging)(),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_same_weights_and_validation_metrics_as_lightning(tmp_path, case):
    """Final module weights and buffers (the average copied in) and the validation loss (computed on the
    averaged weights) equal Lightning's on the same model and batches."""
    import ember.callbacks as ours

    theirs_lib = lightning().callbacks
    seen = {}
    for library, lib in (("lightning", theirs_lib), ("ember", ours)):
        module = make_module(library)
        trainer = fit(library, tmp_path / library, [CASES[case](lib)], module=module, max_epochs=3)
        seen[library] = (module.state_dict(), float(trainer.callback_metrics["val_loss"]))
    (their_weights, their_loss), (our_weights, our_loss) = seen["lightning"], seen["ember"]
    assert our_weights.keys() == their_weights.keys()
    for name, value in their_weights.items():
        torch.testing.assert_close(our_weights[name], value, rtol=0, atol=1e-6, msg=name)
    assert our_loss == pytest.approx(their_loss, abs=1e-6)
    plain = make_module("ember")
    fit("ember", tmp_path / "plain", [], module=plain, max_epochs=3)
    assert not torch.allclose(
        plain.state_dict()["net.0.weight"], our_weights["net.0.weight"]
    )  # averaging changed them


def test_validation_sees_the_average_and_training_its_own_weights(tmp_path):
    """At a validation epoch the module holds the averaged weights; after it, its own again."""
    seen: dict[str, list[torch.Tensor]] = {"val": [], "train": []}

    class Spy(ember.Callback):
        def on_validation_epoch_start(self, trainer, module):
            seen["val"].append(module.net[0].weight.detach().clone())

        def on_train_epoch_start(self, trainer, module):
            seen["train"].append(module.net[0].weight.detach().clone())

    ema = EMAWeightAveraging(decay=0.9)
    module = make_module("ember")
    fit("ember", tmp_path, [ema, Spy()], module=module, max_epochs=2)
    averaged_at_first_val = seen["val"][0]
    assert not torch.equal(averaged_at_first_val, seen["train"][1])  # epoch 1 trains on its own weights...
    # ...and the average is what was validated: after the fit the module holds the average of both epochs
    assert not torch.equal(averaged_at_first_val, module.net[0].weight)


def test_checkpoint_holds_the_average_and_resume_is_bitwise(tmp_path):
    """The checkpoint's state_dict is the average (Module.load_from_checkpoint gets it), current_model_state
    the module's own; a fit resumed from it ends bitwise equal to the straight fit."""
    straight = make_module("ember")
    fit("ember", tmp_path / "s", [EMAWeightAveraging(decay=0.9)], module=straight, max_epochs=4)

    ckpt = ember.ModelCheckpoint(dirpath=tmp_path / "c", save_top_k=-1)
    first = make_module("ember")
    fit("ember", tmp_path / "r", [EMAWeightAveraging(decay=0.9), ckpt], module=first, max_epochs=2)
    path = sorted((tmp_path / "c").glob("epoch=1*.ckpt"))[0]
    saved = load_checkpoint(path)
    assert set(saved) >= {"current_model_state", "averaging_state"}
    assert int(saved["averaging_state"]["n_averaged"]) == 16  # 8 batches a epoch, one update per step
    for name, value in first.state_dict().items():  # training ended with the average copied in
        assert torch.equal(saved["state_dict"][name], value), name
    assert not torch.equal(saved["current_model_state"]["net.0.weight"], saved["state_dict"]["net.0.weight"])

    resumed = make_module("ember")
    trainer = ember.Trainer(
        max_epochs=4,
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        default_root_dir=tmp_path / "r",
        callbacks=[EMAWeightAveraging(decay=0.9)],
    )
    trainer.fit(resumed, *digits_loaders(), ckpt_path=path)
    for name, value in straight.state_dict().items():
        assert torch.equal(resumed.state_dict()[name], value), name


def test_lightning_reads_ember_checkpoint_averaging_state(tmp_path):
    """Lightning's EMAWeightAveraging resumes from ember's checkpoint: both models restored from its keys."""
    pl = lightning()
    ckpt = ember.ModelCheckpoint(dirpath=tmp_path / "c", save_top_k=-1)
    fit("ember", tmp_path / "e", [EMAWeightAveraging(decay=0.9), ckpt], max_epochs=1)
    path = sorted((tmp_path / "c").glob("*.ckpt"))[0]
    saved = load_checkpoint(path)
    theirs = pl.callbacks.EMAWeightAveraging(decay=0.9)
    restored = {}

    class Spy(pl.Callback):  # what Lightning restored, before it trains on
        def on_train_start(self, trainer, module):
            restored["step"] = theirs._latest_update_step
            restored["average"] = {k: v.clone() for k, v in theirs._average_model.state_dict().items()}
            restored["module"] = {k: v.clone() for k, v in module.state_dict().items()}

    # the file ends epoch 0 (written at its end, as Lightning writes it), so a second epoch is left to train
    trainer = pl.Trainer(
        accelerator="cpu",
        devices=1,
        max_epochs=2,
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        enable_checkpointing=False,
        default_root_dir=tmp_path / "l",
        callbacks=[theirs, Spy()],
    )
    trainer.fit(make_module("lightning"), *digits_loaders(), ckpt_path=str(path))
    assert restored["step"] == 8
    assert int(restored["average"]["n_averaged"]) == int(saved["averaging_state"]["n_averaged"]) == 8
    for name, value in saved["state_dict"].items():
        assert torch.equal(restored["average"]["module." + name], value), name
    for name, value in saved["current_model_state"].items():
        assert torch.equal(restored["module"][name], value), name


class BuiltInConfigureModel(Body):
    """The layers are built in configure_model (idempotent, as both libraries ask)."""

    def build(self) -> None:
        self.net = None

    def configure_model(self) -> None:
        if self.net is None:
            super().build()


def test_layers_built_in_configure_model_are_averaged_as_in_lightning(tmp_path):
    """Both libraries call configure_model in setup (with a warning) so the average has every layer."""
    pl = lightning()
    seen = {}
    for library, cls in (("lightning", pl.callbacks.EMAWeightAveraging), ("ember", EMAWeightAveraging)):
        module = make_module(library, BuiltInConfigureModel)
        with pytest.warns(UserWarning, match="configure_model"):
            fit(library, tmp_path / library, [cls(decay=0.9)], module=module, max_epochs=2)
        seen[library] = module.state_dict()
    assert seen["ember"].keys() == seen["lightning"].keys() and "net.0.weight" in seen["ember"]
    for name, value in seen["lightning"].items():
        torch.testing.assert_close(seen["ember"][name], value, rtol=0, atol=1e-6, msg=name)


def test_refusals():
    with pytest.raises(EmberError, match="WeightAveraging\\(decay=...\\).*avg_fn and multi_avg_fn"):
        WeightAveraging(decay=0.9)
    with pytest.raises(EmberError, match="avg_fn"):
        EMAWeightAveraging(avg_fn=lambda a, b, n: a)
    with pytest.raises(EmberError, match="callable"):
        WeightAveraging(avg_fn=3)
