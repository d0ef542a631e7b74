"""ModelCheckpoint prunes only checkpoint files inside its own dirpath: names a resumed checkpoint's
``best_k_models`` holds (``dirpath/../victim.ckpt``, a link leading out, a user's file) are never deleted."""

from __future__ import annotations

import pytest
import torch

import ember
from ember.demos import BoringModel


class Scored(BoringModel):
    def training_step(self, batch, batch_idx):
        loss = self.step(batch)
        self.log("score", float(self.current_epoch))  # rises: every new checkpoint is the best
        return loss


def fit(root, dirpath, max_epochs, ckpt_path=None):
    torch.manual_seed(0)
    checkpoint = ember.ModelCheckpoint(dirpath=dirpath, monitor="score", mode="max", save_top_k=1)
    ember.Trainer(
        default_root_dir=root,
        max_epochs=max_epochs,
        limit_train_batches=1,
        limit_val_batches=0,
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[checkpoint],
    ).fit(Scored(), ckpt_path=ckpt_path)
    return checkpoint


@pytest.mark.parametrize(
    "planted", ["{dirpath}/../victim.ckpt", "{dirpath}/link/model.ckpt", "{dirpath}/thesis.tex"]
)
def test_a_planted_best_k_models_entry_outside_dirpath_is_never_deleted(tmp_path, planted):
    dirpath = tmp_path / "ckpts"
    saved = fit(tmp_path, dirpath, 1).best_model_path
    user_files = {
        tmp_path / "victim.ckpt": b"the user's checkpoint",
        tmp_path / "elsewhere" / "model.ckpt": b"another of the user's",
        dirpath / "thesis.tex": b"years of work",
    }
    for path, data in user_files.items():
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(data)
    (dirpath / "link").symlink_to(tmp_path / "elsewhere")
    name = planted.format(dirpath=dirpath)
    state = torch.load(saved, weights_only=False)
    key = next(k for k in state["callbacks"] if k.startswith("ModelCheckpoint"))
    # the record a save_top_k=1 run drops on its next better checkpoint
    state["callbacks"][key].update(
        best_k_models={name: torch.tensor(-1.0)},
        kth_best_model_path=name,
        best_model_path=name,
        kth_value=torch.tensor(-1.0),
    )
    state.pop("checksum", None)  # an edited checkpoint, as an attacker or a careless script writes it
    torch.save(state, saved)

    resumed = fit(tmp_path, dirpath, 2, ckpt_path=saved)
    assert resumed.best_model_path.endswith("epoch=1-step=2.ckpt")  # a better checkpoint replaced the record
    for path, data in user_files.items():
        assert path.read_bytes() == data, path


def test_save_last_link_never_deletes_a_folder_named_last_ckpt(tmp_path):
    from ember.errors import UnsafePathError

    dirpath = tmp_path / "ckpts"
    (dirpath / "last.ckpt").mkdir(parents=True)
    (dirpath / "last.ckpt" / "notes.txt").write_text("the user's")
    checkpoint = ember.ModelCheckpoint(dirpath=dirpath, save_last="link", enable_version_counter=False)
    trainer = ember.Trainer(
        default_root_dir=tmp_path,
        max_epochs=1,
        limit_train_batches=1,
        limit_val_batches=0,
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[checkpoint],
    )
    with pytest.raises(
        UnsafePathError,
        match=r"last.ckpt is a folder, not a checkpoint ember wrote; ember leaves "
        r"it alone",
    ):
        trainer.fit(Scored())
    assert (dirpath / "last.ckpt" / "notes.txt").read_text() == "the user's"
