"""ModelCheckpoint's own behaviour on real fits: weights-only
files, time-based saves, verbose lines, refusals."""

from __future__ import annotations

from datetime import timedelta

import pytest
import torch
from _twin import digits_loaders, fit, lightning, make_module, names

import ember
from ember.callbacks import Checkpoint, ModelCheckpoint, OnExceptionCheckpoint
from ember.errors import CheckpointError, ConfigError


def test_a_weights_only_file_holds_the_weights_and_fit_refuses_to_resume_from_it(tmp_path):
    callback = ModelCheckpoint(dirpath=tmp_path / "w", save_weights_only=True, save_last=True)
    trainer = fit("ember", tmp_path, [callback], max_epochs=2)
    saved = torch.load(callback.best_model_path, weights_only=True)
    assert "optimizer_states" not in saved and "callbacks" not in saved
    assert all(
        torch.equal(saved["state_dict"][k], v) for k, v in trainer.lightning_module.state_dict().items()
    )
    with pytest.raises(CheckpointError, match="save_weights_only=True") as refused:
        _resume(ember.Trainer, tmp_path / "again", callback.best_model_path)
    assert "\n" not in str(refused.value)
    pl = lightning()
    theirs = pl.callbacks.ModelCheckpoint(dirpath=tmp_path / "l", save_weights_only=True)
    fit("lightning", tmp_path / "l", [theirs], max_epochs=1)
    with pytest.raises(KeyError, match="save_weights_only"):  # Lightning fails on its own such file
        _resume(pl.Trainer, tmp_path / "l2", theirs.best_model_path, library="lightning")


def _resume(trainer_class, root, ckpt_path, library="ember", callbacks=None, max_epochs=3):
    trainer = trainer_class(
        max_epochs=max_epochs,
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        default_root_dir=str(root),
        callbacks=callbacks or [],
        accelerator="cpu",
        devices=1,
    )
    trainer.fit(make_module(library), *digits_loaders(), ckpt_path=ckpt_path)
    return trainer


def test_a_zero_time_interval_saves_after_every_step_as_in_lightning(tmp_path):
    pl = lightning()
    seen = []
    for library, cls in (("lightning", pl.callbacks.ModelCheckpoint), ("ember", ModelCheckpoint)):
        callback = cls(dirpath=tmp_path / library, train_time_interval=timedelta(0), save_top_k=-1)
        fit(library, tmp_path / library, [callback], max_epochs=1)
        seen.append(names(tmp_path / library))
    assert seen[0] == seen[1] and len(seen[1]) == 8  # 256 rows / 32 a batch


def test_train_time_interval_must_be_a_timedelta():
    with pytest.raises(ConfigError, match=r"timedelta\(seconds=30\)"):
        ModelCheckpoint(train_time_interval=30)


def test_link_needs_a_local_folder():
    with pytest.raises(ConfigError, match="only supported for local file paths"):
        ModelCheckpoint(dirpath="memory://bucket/ckpts", save_last="link")


def test_verbose_says_what_was_kept_on_stderr(tmp_path, capsys):
    callback = ModelCheckpoint(dirpath=tmp_path / "v", monitor="val_loss", verbose=True, save_top_k=1)
    fit("ember", tmp_path, [callback], max_epochs=2)
    err = capsys.readouterr().err
    assert "Epoch 0, global step 8: 'val_loss' reached" in err and "as top 1" in err
    assert err.count("saving model to") + err.count("was not in top 1") == 2


def test_save_on_exception_saves_where_the_fit_failed(tmp_path):
    module = make_module("ember")

    def failing_step(batch, batch_idx, original=module.training_step):
        if module.trainer.global_step == 11:
            raise RuntimeError("boom at 11")
        return original(batch, batch_idx)

    module.training_step = failing_step
    callback = ModelCheckpoint(dirpath=tmp_path / "x", save_on_exception=True, save_last=True)
    with pytest.raises(RuntimeError, match="boom at 11"):
        fit("ember", tmp_path, [callback], module=module, max_epochs=3)
    assert "epoch=1-step=11.ckpt" in names(tmp_path / "x")
    assert torch.load(tmp_path / "x" / "last.ckpt", weights_only=True)["global_step"] == 11


def test_checkpoint_is_the_base_of_the_checkpointing_callbacks(tmp_path):
    assert issubclass(ModelCheckpoint, Checkpoint) and issubclass(OnExceptionCheckpoint, Checkpoint)


def test_a_new_run_into_a_used_folder_gets_versioned_names_and_resume_keeps_them(tmp_path):
    first = ModelCheckpoint(dirpath=tmp_path / "c", save_last=True)
    fit("ember", tmp_path, [first], max_epochs=1)
    second = ModelCheckpoint(dirpath=tmp_path / "c", save_last=True)
    fit("ember", tmp_path, [second], max_epochs=1)
    assert names(tmp_path / "c") == [
        "epoch=0-step=8-v1.ckpt",
        "epoch=0-step=8.ckpt",
        "last-v1.ckpt",
        "last.ckpt",
    ]
    resumed = ModelCheckpoint(dirpath=tmp_path / "c", save_last=True)
    _resume(ember.Trainer, tmp_path, second.last_model_path, callbacks=[resumed], max_epochs=2)
    # the resumed run keeps its files' names and drops the file it replaced (not the one it resumed from)
    assert resumed.last_model_path.endswith("last-v1.ckpt") and resumed.best_model_path.endswith(
        "epoch=1-step=16.ckpt"
    )
    assert "epoch=0-step=8-v1.ckpt" not in names(tmp_path / "c")


def test_ckpt_path_last_takes_the_newest_versioned_last_file(tmp_path):
    first = ModelCheckpoint(dirpath=tmp_path / "c", save_last=True)
    fit("ember", tmp_path, [first], max_epochs=1)
    second = ModelCheckpoint(dirpath=tmp_path / "c", save_last=True)
    fit("ember", tmp_path, [second], max_epochs=2)
    assert second.last_model_path.endswith("last-v1.ckpt")
    resumed = ModelCheckpoint(dirpath=tmp_path / "c", save_last=True)
    trainer = _resume(ember.Trainer, tmp_path, "last", callbacks=[resumed], max_epochs=3)
    assert str(trainer.ckpt_path).endswith("last-v1.ckpt") and trainer.global_step == 24
