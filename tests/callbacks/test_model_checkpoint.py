"""ModelCheckpoint behaves as Lightning 2.6's: the same files, best/last paths and scores on the same run.

Each case fits the same tiny model on the same digits batches with ember and with the real Lightning
(dev-only dependency) and compares what each ModelCheckpoint wrote and remembers.
"""

from __future__ import annotations

import datetime
import os
from pathlib import Path

import pytest
import torch
from _twin import fit, lightning, make_module

import ember
from ember.callbacks import ModelCheckpoint
from ember.errors import EmberError


def _files(folder: Path) -> list[str]:
    """Every file under `folder`, relative, with `->` marking a symbolic link (Lightning's save_last='link')."""
    out = []
    for path in sorted(Path(folder).rglob("*")):
        if path.is_symlink():
            out.append(f"{path.relative_to(folder)} -> {os.readlink(path)}")
        elif path.is_file():
            out.append(str(path.relative_to(folder)))
    return out


def _seen(callback, root: Path) -> dict:
    rel = lambda p: str(Path(p).relative_to(root)) if p else ""  # noqa: E731
    return {
        "files": _files(root),
        "best": rel(callback.best_model_path),
        "score": None if callback.best_model_score is None else round(float(callback.best_model_score), 5),
        "best_k": {rel(k): round(float(v), 5) for k, v in callback.best_k_models.items()},
        "last": rel(callback.last_model_path),
    }


def _both(tmp_path: Path, max_epochs: int = 3, **kwargs) -> tuple[dict, dict]:
    pl = lightning()
    seen = {}
    for library, cls in (("lightning", pl.callbacks.ModelCheckpoint), ("ember", ModelCheckpoint)):
        root = tmp_path / library
        callback = cls(dirpath=str(root), **kwargs)
        fit(library, tmp_path / f"{library}-run", [callback], max_epochs=max_epochs)
        seen[library] = _seen(callback, root)
    return seen["lightning"], seen["ember"]


CASES = {
    "defaults": {},
    "top2_metric_filename_last": dict(monitor="val_loss", save_top_k=2, filename="{epoch}-{val_loss:.2f}", save_last=True),
    "max_mode_metric_with_slash": dict(monitor="val/acc", mode="max", filename="{epoch}-{val/acc:.3f}"),
    "every_2_epochs_all_last": dict(every_n_epochs=2, save_top_k=-1, save_last=True),
    "every_5_steps_all": dict(every_n_train_steps=5, save_top_k=-1),
    "every_5_steps_newest_only": dict(every_n_train_steps=5),
    "top0_last_only": dict(save_top_k=0, save_last=True),
    "no_auto_names": dict(monitor="val_loss", save_top_k=-1, filename="ep{epoch:02d}-loss{val_loss:.3f}",
                          auto_insert_metric_name=False),
    "last_link": dict(monitor="val_loss", save_last="link"),
    "on_train_epoch_end": dict(monitor="train_loss", save_on_train_epoch_end=True, save_top_k=2),
    "missing_key_is_zero": dict(filename="{epoch}-{missing}", save_top_k=-1),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_same_files_and_paths_as_lightning(tmp_path, case):
    theirs, ours = _both(tmp_path, **CASES[case])
    assert ours == theirs


def test_version_counter_and_its_opt_out(tmp_path):
    """A second run into the same folder gets `-v1` names (Lightning's version counter), or overwrites when off."""
    pl = lightning()
    for counter in (True, False):
        seen = {}
        for library, cls in (("lightning", pl.callbacks.ModelCheckpoint), ("ember", ModelCheckpoint)):
            root = tmp_path / f"{library}-{counter}"
            for run in range(2):
                callback = cls(dirpath=str(root), filename="fixed", save_top_k=-1, save_last=True,
                               enable_version_counter=counter)
                fit(library, tmp_path / f"{library}-{counter}-{run}", [callback], max_epochs=2)
            seen[library] = _seen(callback, root)
        assert seen["ember"] == seen["lightning"]
    assert "fixed-v1.ckpt" in seen["ember"]["files"] or counter is False


def test_save_weights_only_writes_no_optimizer_state(tmp_path):
    callback = ModelCheckpoint(dirpath=tmp_path / "ckpt", save_weights_only=True, save_last=True)
    fit("ember", tmp_path, [callback], max_epochs=1)
    for path in (callback.best_model_path, callback.last_model_path):
        state = torch.load(path, weights_only=True)
        assert "state_dict" in state and "optimizer_states" not in state and "callbacks" not in state


def test_class_constants_as_lightning(tmp_path):
    pl = lightning()
    for name in ("CHECKPOINT_NAME_LAST", "FILE_EXTENSION", "CHECKPOINT_JOIN_CHAR", "CHECKPOINT_EQUALS_CHAR",
                 "STARTING_VERSION"):
        assert getattr(ModelCheckpoint, name) == getattr(pl.callbacks.ModelCheckpoint, name)


def test_changed_last_name_is_used(tmp_path):
    """Lightning's documented customisation: `CHECKPOINT_NAME_LAST = "{epoch}-last"`; the previous one is removed."""
    pl = lightning()
    seen = {}
    for library, cls in (("lightning", pl.callbacks.ModelCheckpoint), ("ember", ModelCheckpoint)):
        callback = cls(dirpath=str(tmp_path / library), save_last=True)
        callback.CHECKPOINT_NAME_LAST = "{epoch}-last"
        fit(library, tmp_path / f"{library}-run", [callback], max_epochs=2)
        seen[library] = _seen(callback, tmp_path / library)
    assert seen["ember"] == seen["lightning"]
    assert "epoch=1-last.ckpt" in seen["ember"]["files"]


def test_format_checkpoint_name_as_lightning(tmp_path):
    pl = lightning()
    for filename, auto, metrics in (("{epoch}", True, {"epoch": 0}), ("{epoch:03d}", True, {"epoch": 5}),
                                    ("{epoch}-{val_loss:.2f}", True, {"epoch": 2, "val_loss": 0.123456}),
                                    ("epoch={epoch}-validation_loss={val_loss:.2f}", False,
                                     {"epoch": 2, "val_loss": 0.123456}),
                                    ("{missing:d}", True, {}), ("{epoch_test}-{epoch}", True, {"epoch": 1, "epoch_test": 3})):
        ours = ModelCheckpoint(dirpath=tmp_path, filename=filename, auto_insert_metric_name=auto)
        theirs = pl.callbacks.ModelCheckpoint(dirpath=tmp_path, filename=filename, auto_insert_metric_name=auto)
        tensors = {k: torch.tensor(v) for k, v in metrics.items()}
        assert ours.format_checkpoint_name(dict(tensors)) == theirs.format_checkpoint_name(dict(tensors))


def test_train_time_interval_takes_a_timedelta(tmp_path):
    callback = ModelCheckpoint(dirpath=tmp_path / "c", train_time_interval=datetime.timedelta(seconds=0), save_top_k=-1)
    fit("ember", tmp_path, [callback], max_epochs=1)
    assert len(list((tmp_path / "c").glob("*.ckpt"))) == 8  # a save after every one of the 8 steps


@pytest.mark.parametrize("kwargs, text", [
    (dict(every_n_epochs=1, every_n_train_steps=2), "mutually exclusive"),
    (dict(save_top_k=2), "monitor=None"),
    (dict(save_top_k=-2), "save_top_k"),
    (dict(every_n_train_steps=-1), "every_n_train_steps"),
    (dict(mode="mean"), "mode"),
    (dict(save_last="copy"), "save_last"),
])
def test_invalid_configurations_refused_in_one_line(kwargs, text):
    with pytest.raises(EmberError, match=text) as info:
        ModelCheckpoint(**kwargs)
    assert "\n" not in str(info.value)


def test_resumed_callback_ends_as_an_uninterrupted_run(tmp_path):
    """Its state (best k, kth, last) is in the checkpoint: 2 epochs + resume for the 3rd = 3 epochs straight."""
    from _twin import digits_loaders

    straight = ModelCheckpoint(dirpath=tmp_path / "straight", monitor="val_loss", save_top_k=2, save_last=True)
    fit("ember", tmp_path / "s", [straight], max_epochs=3)
    first = ModelCheckpoint(dirpath=tmp_path / "resumed", monitor="val_loss", save_top_k=2, save_last=True)
    fit("ember", tmp_path / "r", [first], max_epochs=2)
    again = ModelCheckpoint(dirpath=tmp_path / "resumed", monitor="val_loss", save_top_k=2, save_last=True)
    trainer = ember.Trainer(max_epochs=3, logger=False, enable_progress_bar=False, enable_model_summary=False,
                            num_sanity_val_steps=0, default_root_dir=tmp_path / "r", callbacks=[again])
    trainer.fit(make_module("ember"), *digits_loaders(), ckpt_path=first.last_model_path)
    assert _seen(again, tmp_path / "resumed") == _seen(straight, tmp_path / "straight")
    assert len(again.best_k_models) == 2
