"""A sharded checkpoint's ranks open their shard files by name: a link planted in the folder (or the folder
itself a link) is refused in one line before any rank writes, and the link's target stays untouched."""

from __future__ import annotations

import warnings

import pytest
import torch

from ember.errors import UnsafePathError
from ember.runtime.sharded_checkpoint import load_sharded_checkpoint, save_sharded


def save(folder):
    model = torch.nn.Linear(4, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "assuming the intent is to save in a single process"
        save_sharded(model, [torch.optim.SGD(model.parameters(), lr=0.1)], folder, global_step=3)
    return model


def test_a_link_planted_in_the_folder_is_refused_and_its_target_untouched(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    folder = tmp_path / "sharded"
    folder.mkdir()
    (folder / "__0_0.distcp").symlink_to(victim)
    with pytest.raises(
        UnsafePathError,
        match=r"__0_0.distcp is a symbolic link where ember keeps its own "
        r"checkpoint shard",
    ):
        save(folder)
    assert victim.read_text() == "precious"


def test_a_folder_that_is_a_link_is_refused(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "sharded").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(UnsafePathError, match=r"sharded is a symbolic link where ember keeps its own folder"):
        save(tmp_path / "sharded")
    assert list((tmp_path / "elsewhere").iterdir()) == []


def test_a_clean_folder_saves_and_loads(tmp_path):
    model = save(tmp_path / "sharded")
    assert torch.equal(
        load_sharded_checkpoint(tmp_path / "sharded")["state_dict"]["weight"], model.weight.detach()
    )
