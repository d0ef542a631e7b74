"""ember.fs's rename/link/copy/delete doors: what each refuses (real files and links)."""

from __future__ import annotations

import os

import pytest

from ember.errors import ConfigError, UnsafePathError
from ember.fs import (
    make_folders,
    make_temporary_folder,
    remove_temporary_folder,
    remove_tree,
    symlink,
    truncate_torn_tail,
    write_text,
    written_by,
)


@pytest.fixture()
def user(tmp_path):
    folder = tmp_path / "user"
    folder.mkdir()
    (folder / "thesis.tex").write_text("years of work")
    return folder


def test_remove_tree_deletes_only_strictly_below_its_root(tmp_path, user):
    root = tmp_path / "run"
    (root / "checkpoint_000001").mkdir(parents=True)
    (root / "checkpoint_000001" / "link_to_user").symlink_to(user)
    (root / "checkpoint_000002").symlink_to(user)
    for path in (user, root / ".." / "user", root, tmp_path):
        with pytest.raises(
            UnsafePathError, match=r"is not below .*run'; ember deletes only inside the folder it writes"
        ):
            remove_tree(path, root)
    assert remove_tree(root / "checkpoint_000002", root)  # a link: the link goes, its target stays
    assert remove_tree(root / "checkpoint_000001", root)  # a link inside is unlinked, never followed
    outside_link = tmp_path / "outside_link"
    outside_link.symlink_to(user)
    with pytest.raises(UnsafePathError):
        remove_tree(outside_link, root)
    assert (user / "thesis.tex").read_text() == "years of work" and outside_link.is_symlink()
    assert sorted(os.listdir(root)) == []


def test_remove_temporary_folder_refuses_anything_it_did_not_make(tmp_path, user):
    folder = make_temporary_folder("probe-", dir=tmp_path)
    (folder / "x").write_text("x")
    remove_temporary_folder(folder)
    assert not folder.exists()
    (tmp_path / "ember-looks-like-ours").symlink_to(user)
    for path in (user, tmp_path / "ember-looks-like-ours"):
        with pytest.raises(UnsafePathError, match="is not a temporary folder ember made; it was left alone"):
            remove_temporary_folder(path)
    assert (user / "thesis.tex").exists()


def test_symlink_and_written_by_replace_a_planted_link_never_write_through_it(tmp_path, user):
    (tmp_path / "last.ckpt").symlink_to(user / "thesis.tex")
    symlink("epoch=1.ckpt", tmp_path / "last.ckpt")
    assert os.readlink(tmp_path / "last.ckpt") == "epoch=1.ckpt"
    (tmp_path / "trace.json").symlink_to(user / "thesis.tex")
    with written_by(tmp_path / "trace.json") as scratch:
        scratch.write_text("{}")  # as a third-party writer that only takes a name
    assert (tmp_path / "trace.json").read_text() == "{}" and not (tmp_path / "trace.json").is_symlink()
    assert (user / "thesis.tex").read_text() == "years of work"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["last.ckpt", "trace.json", "user"]


def test_truncate_torn_tail_cuts_only_an_unfinished_line_and_refuses_a_link(tmp_path, user):
    log = tmp_path / "metrics.csv"
    write_text(log, "step,loss\n0,1.0\n1,0.")
    assert truncate_torn_tail(log) and log.read_text() == "step,loss\n0,1.0\n"
    assert not truncate_torn_tail(log) and log.read_text() == "step,loss\n0,1.0\n"
    (tmp_path / "linked.csv").symlink_to(user / "thesis.tex")
    with pytest.raises(UnsafePathError, match="is a symbolic link"):
        truncate_torn_tail(tmp_path / "linked.csv")
    assert (user / "thesis.tex").read_text() == "years of work"


def test_make_folders_creates_missing_parents_and_names_a_file_in_the_way(tmp_path, user):
    made = make_folders(tmp_path / "runs" / "a" / "b")
    assert made == tmp_path / "runs" / "a" / "b" and made.is_dir()
    assert make_folders(made) == made  # already there: nothing changes
    with pytest.raises(ConfigError) as error:
        make_folders(user / "thesis.tex" / "logs")
    assert str(error.value) == (
        f"{user / 'thesis.tex'} is a file, so the folder {user / 'thesis.tex' / 'logs'} cannot be made; "
        "move the file or choose another folder"
    )
    assert (user / "thesis.tex").read_text() == "years of work"
