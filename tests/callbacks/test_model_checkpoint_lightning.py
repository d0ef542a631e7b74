"""ModelCheckpoint against the real Lightning 2.6.6: the same names, files, kept scores, state and errors.

Names are compared template by template; files by fitting the same twin model (tests/callbacks/_twin.py)
with the same callbacks in both libraries and listing each callback's folder.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import pytest
import torch
from _twin import Body, fit, lightning, make_module, names

from ember.callbacks import ModelCheckpoint
from ember.errors import ConfigError

METRICS = {
    "epoch": torch.tensor(3),
    "step": torch.tensor(120),
    "val_loss": torch.tensor(0.123456),
    "val/acc": torch.tensor(0.8125),
    "train.loss": torch.tensor(1.5e-4),
    "epoch_test": torch.tensor(7.0),
    "big": torch.tensor(12345.678),
}
TEMPLATES = [
    None,
    "{epoch}",
    "{epoch:03d}",
    "{epoch}-{val_loss:.2f}",
    "{epoch}-{val_loss}",
    "{step}",
    "sample-mnist-{epoch:02d}-{val_loss:.2f}",
    "{missing:d}",
    "{missing}",
    "{epoch_test}-{epoch}",
    "{val/acc:.3f}",
    "{train.loss:.1e}",
    "x_{epoch}__{step}",
    "{epoch}{step}",
    "const",
    "{epoch}-{epoch}",
    "epoch={epoch}-validation_loss={val_loss:.2f}",
    "{big:,.1f}",
    "{val_loss:>10.3f}",
]


def _pair(**kwargs):
    pl = lightning()
    return ModelCheckpoint(**kwargs), pl.callbacks.ModelCheckpoint(**kwargs)


@pytest.mark.parametrize("auto_insert", [True, False])
@pytest.mark.parametrize("template", TEMPLATES)
def test_names_are_lightnings(template, auto_insert, tmp_path):
    for dirpath in (None, str(tmp_path / "ckpts")):
        ours, theirs = _pair(dirpath=dirpath, filename=template, auto_insert_metric_name=auto_insert)
        for args in (
            {},
            {"ver": 2},
            {"prefix": "pre"},
            {"filename": "{epoch}-last"},
            {"filename": "last", "ver": 1},
        ):
            assert ours.format_checkpoint_name(dict(METRICS), **args) == theirs.format_checkpoint_name(
                dict(METRICS), **args
            ), (template, args)


def test_name_constants_are_overridable_on_a_subclass_and_an_instance():
    pl = lightning()

    def constants(cls):
        return type(
            "Custom",
            (cls,),
            {
                "CHECKPOINT_JOIN_CHAR": "_",
                "CHECKPOINT_EQUALS_CHAR": "~",
                "FILE_EXTENSION": ".pt",
                "STARTING_VERSION": 5,
            },
        )

    ours = constants(ModelCheckpoint)(filename="{epoch}-{val_loss:.2f}")
    theirs = constants(pl.callbacks.ModelCheckpoint)(filename="{epoch}-{val_loss:.2f}")
    assert ours.format_checkpoint_name(dict(METRICS), ver=5) == theirs.format_checkpoint_name(
        dict(METRICS), ver=5
    )
    assert ours.format_checkpoint_name(dict(METRICS)) == "epoch~3-val_loss~0.12.pt"
    ours, theirs = ModelCheckpoint(), pl.callbacks.ModelCheckpoint()
    ours.CHECKPOINT_NAME_LAST = theirs.CHECKPOINT_NAME_LAST = "{epoch}-last"
    assert (
        ours.format_checkpoint_name(dict(METRICS), ours.CHECKPOINT_NAME_LAST)
        == "epoch=3-last.ckpt"
        == theirs.format_checkpoint_name(dict(METRICS), theirs.CHECKPOINT_NAME_LAST)
    )
    assert (
        ModelCheckpoint().format_checkpoint_name(dict(METRICS)) == "epoch=3-step=120.ckpt"
    )  # the default name


BAD_ARGUMENTS = [
    {"save_top_k": -2},
    {"every_n_train_steps": -1},
    {"every_n_epochs": -1},
    {"mode": "avg"},
    {"every_n_train_steps": 5, "every_n_epochs": 2},
    {"every_n_epochs": 1, "train_time_interval": timedelta(seconds=1)},
    {"every_n_train_steps": 1, "train_time_interval": timedelta(seconds=1)},
    {"save_top_k": 2},
    {"save_top_k": 3, "monitor": None},
]


@pytest.mark.parametrize("arguments", BAD_ARGUMENTS, ids=str)
def test_invalid_arguments_are_refused_in_one_line_where_lightning_refuses_them(arguments):
    pl = lightning()
    with pytest.raises(pl.utilities.exceptions.MisconfigurationException):
        pl.callbacks.ModelCheckpoint(**arguments)
    with pytest.raises(ConfigError) as refused:
        ModelCheckpoint(**arguments)
    assert "\n" not in str(refused.value)


GOOD_ARGUMENTS = [
    {},
    {"save_top_k": 2, "monitor": "val_loss"},
    {"save_top_k": -1},
    {"save_top_k": 0},
    {"every_n_train_steps": 0, "every_n_epochs": 3},
    {"train_time_interval": timedelta(minutes=5)},
    {"every_n_train_steps": 7},
    {"save_last": "link"},
    {"save_weights_only": True, "verbose": True},
]


@pytest.mark.parametrize("arguments", GOOD_ARGUMENTS, ids=str)
def test_valid_arguments_give_lightnings_attributes_and_state_key(arguments):
    ours, theirs = _pair(**arguments)
    assert ours.state_key == theirs.state_key
    for name in (
        "monitor",
        "mode",
        "save_top_k",
        "save_last",
        "save_weights_only",
        "every_n_epochs",
        "verbose",
        "best_model_path",
        "last_model_path",
        "kth_best_model_path",
        "best_k_models",
        "best_model_score",
        "current_score",
        "dirpath",
        "filename",
        "auto_insert_metric_name",
    ):
        assert getattr(ours, name) == getattr(theirs, name), name
    assert torch.equal(ours.kth_value, theirs.kth_value)


def _callbacks(cls, root: Path) -> list:
    """Every trigger and keep rule at once; each state key is distinct, as Lightning requires."""
    return [
        cls(dirpath=root / "epochs", every_n_epochs=2, save_last=True),
        cls(
            dirpath=root / "top2",
            monitor="val_loss",
            save_top_k=2,
            filename="{epoch}-{val_loss:.3f}",
            save_last=True,
        ),
        cls(dirpath=root / "steps", every_n_train_steps=5, save_top_k=-1),
        cls(
            dirpath=root / "acc",
            monitor="val/acc",
            mode="max",
            save_top_k=2,
            every_n_epochs=2,
            auto_insert_metric_name=False,
            filename="e{epoch}-acc{val/acc:.3f}",
        ),
        cls(
            dirpath=root / "same",
            filename="const",
            save_top_k=-1,
            monitor="step",
            mode="max",
            every_n_train_steps=6,
        ),
        cls(dirpath=root / "over", filename="const", every_n_train_steps=6, enable_version_counter=False),
        cls(dirpath=root / "link", save_last="link", every_n_train_steps=10),
    ]


def _kept(callback, root: Path) -> dict:
    """What a callback kept, with paths relative to `root` and scores as floats."""

    def rel(path: str) -> str:
        return os.path.relpath(path, root) if path else ""

    return {
        "best": rel(callback.best_model_path),
        "last": rel(callback.last_model_path),
        "kth": rel(callback.kth_best_model_path),
        "best_k": {rel(p): round(float(s), 6) for p, s in callback.best_k_models.items()},
        "best_score": None
        if callback.best_model_score is None
        else round(float(callback.best_model_score), 6),
        "current": None if callback.current_score is None else round(float(callback.current_score), 6),
        "kth_value": round(float(callback.kth_value), 6),
    }


def test_the_same_fit_writes_the_same_files_and_keeps_the_same_scores(tmp_path):
    pl = lightning()
    runs = {}
    for library, cls in (("lightning", pl.callbacks.ModelCheckpoint), ("ember", ModelCheckpoint)):
        root = tmp_path / library
        callbacks = _callbacks(cls, root)
        fit(library, root, callbacks, max_epochs=4)
        runs[library] = {Path(cb.dirpath).name: (names(cb.dirpath), _kept(cb, root)) for cb in callbacks}
    for folder in runs["lightning"]:
        assert runs["ember"][folder] == runs["lightning"][folder], folder
    assert runs["ember"]["same"][0] == [
        "const-v1.ckpt",
        "const-v2.ckpt",
        "const-v3.ckpt",
        "const-v4.ckpt",
        "const.ckpt",
    ]
    assert runs["ember"]["over"][0] == ["const.ckpt"]
    link = tmp_path / "ember" / "link" / "last.ckpt"
    assert link.is_symlink() and os.readlink(link) == "epoch=3-step=30.ckpt"


def test_weights_only_files_hold_what_lightnings_hold(tmp_path):
    pl = lightning()
    keys = {}
    for library, cls in (("lightning", pl.callbacks.ModelCheckpoint), ("ember", ModelCheckpoint)):
        callback = cls(dirpath=tmp_path / library, save_weights_only=True)
        fit(library, tmp_path / library, [callback], max_epochs=1)
        keys[library] = set(torch.load(callback.best_model_path, weights_only=False))
    assert {"optimizer_states", "lr_schedulers", "callbacks"}.isdisjoint(keys["ember"] | keys["lightning"])
    assert {"state_dict", "epoch", "global_step"} <= keys["ember"] & keys["lightning"]


def test_lightnings_state_loads_into_ember_and_embers_into_lightning(tmp_path):
    pl = lightning()
    theirs = pl.callbacks.ModelCheckpoint(dirpath=tmp_path / "x", monitor="val_loss", save_top_k=2)
    fit("lightning", tmp_path / "lightning", [theirs], max_epochs=3)
    ours = ModelCheckpoint(dirpath=tmp_path / "x", monitor="val_loss", save_top_k=2)
    ours.load_state_dict(theirs.state_dict())
    expected = {**_kept(theirs, tmp_path), "current": None}  # Lightning does not reload current_score
    assert _kept(ours, tmp_path) == expected and len(ours.best_k_models) == 2
    assert set(theirs.state_dict()) <= set(ours.state_dict())
    again = pl.callbacks.ModelCheckpoint(dirpath=tmp_path / "x", monitor="val_loss", save_top_k=2)
    again.load_state_dict(ours.state_dict())
    assert _kept(again, tmp_path) == expected


def test_to_yaml_writes_what_lightning_writes(tmp_path):
    pl = lightning()
    texts = []
    for library, cls in (("lightning", pl.callbacks.ModelCheckpoint), ("ember", ModelCheckpoint)):
        callback = cls(dirpath=tmp_path / library, monitor="val_loss", save_top_k=2, filename="{epoch}")
        fit(library, tmp_path / library, [callback], max_epochs=3)
        callback.to_yaml()
        callback.to_yaml(tmp_path / f"{library}.yaml")
        texts.append((tmp_path / library / "best_k_models.yaml").read_text().replace(f"/{library}/", "/"))
        assert (tmp_path / f"{library}.yaml").read_text() == (
            tmp_path / library / "best_k_models.yaml"
        ).read_text()
    assert texts[0] == texts[1] and texts[0].count(".ckpt") == 2


class NoValidationLog(Body):
    def validation_step(self, batch, batch_idx):
        pass


@pytest.mark.parametrize("validation", [False, True])
def test_a_monitor_never_logged_warns_before_validation_ran_and_fails_after(validation, tmp_path):
    """Lightning raises only once validation has run; before, it warns (and saves nothing)."""
    pl = lightning()
    for library, cls in (("lightning", pl.callbacks.ModelCheckpoint), ("ember", ModelCheckpoint)):
        callback = cls(dirpath=tmp_path / library, monitor="nope")
        module = make_module(library, Body if validation else NoValidationLog)
        args = {} if validation else {"limit_val_batches": 0}
        if validation:
            refusal = ConfigError if library == "ember" else pl.utilities.exceptions.MisconfigurationException
            with pytest.raises(refusal, match="nope"):
                fit(library, tmp_path / library, [callback], module=module, max_epochs=1, **args)
        else:
            with pytest.warns(UserWarning, match="could not find the monitored key"):
                fit(library, tmp_path / library, [callback], module=module, max_epochs=1, **args)
            assert names(tmp_path / library) == []


def test_a_used_folder_is_warned_about_as_in_lightning(tmp_path):
    pl = lightning()
    for library, cls in (("lightning", pl.callbacks.ModelCheckpoint), ("ember", ModelCheckpoint)):
        (tmp_path / library).mkdir()
        (tmp_path / library / "old.ckpt").write_bytes(b"")
        with pytest.warns(UserWarning, match="exists and is not empty"):
            fit(library, tmp_path / library, [cls(dirpath=tmp_path / library)], max_epochs=1)


@pytest.mark.parametrize(
    "trainer_args",
    [{"check_val_every_n_epoch": 2}, {"val_check_interval": 0.5}, {"limit_val_batches": 0}],
    ids=str,
)
def test_epoch_saves_follow_lightnings_validation_schedule(trainer_args, tmp_path):
    """Validation every other epoch or twice an epoch: Lightning saves only after validation; no validation:
    at the end of each training epoch. The same files, the same kept scores."""
    pl = lightning()
    runs = []
    for library, cls in (("lightning", pl.callbacks.ModelCheckpoint), ("ember", ModelCheckpoint)):
        root = tmp_path / library
        callbacks = [
            cls(dirpath=root / "all", save_top_k=-1),
            cls(
                dirpath=root / "last",
                every_n_epochs=2,
                save_last=True,
                filename="{epoch}-{step}-{train_loss:.3f}",
            ),
        ]
        fit(library, root, callbacks, max_epochs=4, **trainer_args)
        runs.append([(names(cb.dirpath), _kept(cb, root)) for cb in callbacks])
    assert runs[0] == runs[1]
