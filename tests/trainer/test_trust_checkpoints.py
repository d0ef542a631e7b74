"""Checkpoints keep what the user has: verified contents, safe loading, one-line errors, the right file."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from _models import DigitsMLP, digits_loaders

import ember
from ember.checkpoint import save_checkpoint
from ember.errors import CheckpointError

QUIET = {"enable_progress_bar": False, "enable_model_summary": False}


@pytest.fixture(scope="module")
def data():
    return digits_loaders()


def keeps_last() -> list[ember.Callback]:
    """A checkpoint callback that writes last.ckpt (Lightning's default ModelCheckpoint does not)."""
    return [ember.ModelCheckpoint(save_last=True)]


def fit_once(root: Path, data, **options) -> tuple[ember.Trainer, DigitsMLP]:
    options.setdefault("callbacks", keeps_last())
    model = DigitsMLP()
    trainer = ember.Trainer(max_epochs=1, default_root_dir=root, **QUIET, **options)
    trainer.fit(model, data[0])
    return trainer, model


# ---- contents: checksum, safe loading, plain data ----------------------------------------------------
def test_a_flipped_bit_in_a_weight_is_a_one_line_error_naming_the_file(tmp_path, data):
    trainer, model = fit_once(tmp_path, data)
    last = Path(trainer.checkpoint_callback.last_model_path)
    plain = torch.load(last, weights_only=True)  # still an ordinary, safely loadable torch file
    assert isinstance(plain["checksum"]["value"], int)
    raw = bytearray(last.read_bytes())
    weight = model.net[0].weight.detach().numpy().tobytes()
    at = raw.find(weight)
    assert at > 0
    raw[at + len(weight) // 2] ^= 0x10  # one bit inside the first layer's weights
    last.write_bytes(bytes(raw))
    with pytest.raises(CheckpointError) as caught:
        ember.Trainer(max_epochs=2, default_root_dir=tmp_path, **QUIET).fit(
            DigitsMLP(), data[0], ckpt_path=last
        )
    message = str(caught.value)
    assert (
        f"checkpoint {last} is corrupt: its contents do not match the checksum" in message
        and "\n" not in message
    )
    with pytest.raises(CheckpointError, match="do not match the checksum"):
        DigitsMLP.load_from_checkpoint(last)


def test_checkpoints_without_a_checksum_still_load(tmp_path, data):
    trainer, model = fit_once(tmp_path, data)
    old = torch.load(trainer.checkpoint_callback.last_model_path, weights_only=True)
    del old["checksum"]
    torch.save(old, tmp_path / "old.ckpt")  # as an ember version before checksums wrote it
    resumed = ember.Trainer(max_epochs=2, default_root_dir=tmp_path / "again", **QUIET)
    resumed.fit(DigitsMLP(), data[0], ckpt_path=tmp_path / "old.ckpt")
    assert resumed.global_step == 2 * 47


class KeepsExtras(DigitsMLP):
    def __init__(self, extra=None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.extra = extra
        self.loaded = None

    def on_save_checkpoint(self, checkpoint):
        checkpoint["extras"] = self.extra

    def on_load_checkpoint(self, checkpoint):
        self.loaded = checkpoint.get("extras")


def test_numpy_and_plain_containers_from_on_save_checkpoint_round_trip(tmp_path, data):
    extra = {
        "mask": np.arange(6, dtype=np.int16).reshape(2, 3),
        "scale": np.float32(0.5),
        "count": 3,
        "names": ["a", "b"],
        "pair": (1.5, "x"),
        "nested": {"ids": np.array([7, 8], dtype=np.uint64)},
    }
    trainer, _ = fit_once(tmp_path, data, callbacks=[])
    module = KeepsExtras(extra)
    trainer = ember.Trainer(max_epochs=1, default_root_dir=tmp_path / "x", **QUIET, callbacks=keeps_last())
    trainer.fit(module, data[0])
    resumed = KeepsExtras()
    # the file itself: its hyperparameters record extra= (DigitsMLP's save_hyperparameters records its
    # subclass's arguments too, as Lightning's), so ckpt_path="last" would refuse it as maybe another
    # experiment's run
    last = tmp_path / "x" / "lightning_logs" / "version_0" / "checkpoints" / "last.ckpt"
    ember.Trainer(max_epochs=2, default_root_dir=tmp_path / "x", **QUIET).fit(
        resumed, data[0], ckpt_path=last
    )
    got = resumed.loaded
    assert np.array_equal(got["mask"], extra["mask"]) and got["mask"].dtype == np.int16
    assert got["scale"] == np.float32(0.5) and got["count"] == 3 and got["names"] == ["a", "b"]
    assert got["pair"] == (1.5, "x") and got["nested"]["ids"].dtype == np.uint64


class Opaque:
    pass


def test_an_object_safe_loading_cannot_restore_fails_at_save_naming_the_key(tmp_path, data):
    trainer = ember.Trainer(max_epochs=1, default_root_dir=tmp_path, **QUIET)
    with pytest.raises(CheckpointError) as caught:
        trainer.fit(KeepsExtras({"ok": 1, "sampler": Opaque()}), data[0])
    message = str(caught.value)
    assert "checkpoint key ['extras']['sampler'] holds a " in message
    assert "test_trust_checkpoints.Opaque, which safe loading cannot restore" in message
    assert "store plain data there instead" in message and "\n" not in message
    assert not list(tmp_path.rglob("*.ckpt"))  # nothing unloadable was written
    with pytest.raises(CheckpointError, match="numpy array of Python objects"):
        save_checkpoint({"x": np.array([Opaque()], dtype=object)}, tmp_path / "y.ckpt")


# ---- what is given as ckpt_path --------------------------------------------------------------------------
def test_a_text_file_as_checkpoint(tmp_path, data):
    notes = tmp_path / "notes.ckpt"
    notes.write_text("experiment notes\n")
    with pytest.raises(
        CheckpointError, match=r"notes.ckpt is not a PyTorch checkpoint \(it starts with 'expe'"
    ):
        ember.Trainer(max_epochs=1, default_root_dir=tmp_path, **QUIET).fit(
            DigitsMLP(), data[0], ckpt_path=notes
        )
    assert notes.read_text() == "experiment notes\n"


def test_the_classic_scripts_own_files_are_recognised(tmp_path, data):
    model = DigitsMLP()
    torch.save(model.state_dict(), tmp_path / "model.pth")
    torch.save(torch.optim.SGD(model.parameters(), lr=0.1).state_dict(), tmp_path / "optimiser.pth")
    trainer = ember.Trainer(max_epochs=1, default_root_dir=tmp_path, **QUIET)
    with pytest.raises(CheckpointError) as caught:
        trainer.fit(DigitsMLP(), data[0], ckpt_path=tmp_path / "model.pth")
    message = str(caught.value)
    assert "model.pth is a plain state_dict (4 tensors such as 'net.0.weight'" in message
    assert "model.load_state_dict(torch.load(" in message and "then call fit without ckpt_path" in message
    with pytest.raises(CheckpointError, match="optimiser.pth is a plain optimizer state_dict"):
        trainer.fit(DigitsMLP(), data[0], ckpt_path=tmp_path / "optimiser.pth")


def test_resuming_sgd_state_into_adam_is_one_line(tmp_path, data):
    trainer, _ = fit_once(tmp_path, data)

    class WithAdam(DigitsMLP):
        def configure_optimizers(self):
            return torch.optim.Adam(self.parameters(), lr=1e-3)

    with pytest.raises(CheckpointError) as caught:
        ember.Trainer(max_epochs=2, default_root_dir=tmp_path, **QUIET).fit(
            WithAdam(), data[0], ckpt_path="last"
        )
    assert "the checkpoint holds the state of SGD but configure_optimizers returns Adam" in str(caught.value)
    # a checkpoint from before optimizer types were recorded: the settings tell
    old = torch.load(trainer.checkpoint_callback.last_model_path, weights_only=True)
    del old["optimizer_types"], old["checksum"]
    torch.save(old, tmp_path / "old.ckpt")
    with pytest.raises(
        CheckpointError, match="the saved optimizer has no 'betas' setting, so it was not Adam"
    ):
        ember.Trainer(max_epochs=2, default_root_dir=tmp_path, **QUIET).fit(
            WithAdam(), data[0], ckpt_path=tmp_path / "old.ckpt"
        )


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run the reader as another user")
def test_an_unreadable_checkpoint_says_permission_denied(tmp_path, data):
    # As root, chmod does not stop reads, so the reading side runs as the unprivileged user 'nobody'.
    trainer, _ = fit_once(tmp_path, data)
    secret = tmp_path / "secret.ckpt"
    shutil.copy(trainer.checkpoint_callback.last_model_path, secret)
    secret.chmod(0o600)
    for folder in [tmp_path, *tmp_path.parents]:
        folder.chmod(folder.stat().st_mode | 0o001)  # let 'nobody' reach the file, not read it
    code = (
        "import os, sys; from ember.checkpoint import load_checkpoint\n"
        "os.setgid(65534); os.setuid(65534)  # imported as root, now read as 'nobody'\n"
        "try: load_checkpoint(sys.argv[1])\nexcept Exception as e: print(type(e).__name__, e)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(secret)], capture_output=True, text=True, timeout=120
    )
    assert f"CheckpointError permission denied reading checkpoint {secret}" in done.stdout, (
        done.stdout + done.stderr
    )


# ---- which file "last" is ----------------------------------------------------------------------------------
def test_last_resolves_within_this_runs_own_checkpoint_folder(tmp_path, data):
    root = tmp_path / "shared"
    for name, lr in (("A", 0.1), ("B", 0.5)):
        model = DigitsMLP(lr=lr)
        ember.Trainer(
            max_steps=10 if name == "A" else 30,
            default_root_dir=root,
            **QUIET,
            callbacks=[ember.ModelCheckpoint(dirpath=root / name, save_last=True, every_n_train_steps=5)],
        ).fit(model, data[0])
    # B ran last and its last.ckpt is the newest file under the root; resuming A must continue A
    trainer = ember.Trainer(
        max_steps=12,
        default_root_dir=root,
        **QUIET,
        callbacks=[ember.ModelCheckpoint(dirpath=root / "A", save_last=True, every_n_train_steps=5)],
    )
    trainer.fit(DigitsMLP(lr=0.1), data[0], ckpt_path="last")
    assert trainer.global_step == 12  # continued from A's step 10, not B's step 30


def test_last_from_another_experiment_with_other_hyperparameters_is_refused(tmp_path, data):
    for lr in (0.1, 0.5):
        ember.Trainer(max_steps=10, default_root_dir=tmp_path, **QUIET, callbacks=keeps_last()).fit(
            DigitsMLP(lr=lr), data[0]
        )
    with pytest.raises(CheckpointError) as caught:  # newest run is lr=0.5; this is the lr=0.1 experiment
        ember.Trainer(max_steps=20, default_root_dir=tmp_path, **QUIET).fit(
            DigitsMLP(lr=0.1), data[0], ckpt_path="last"
        )
    message = str(caught.value)
    assert "version_1" in message and "lr: 0.5 in the checkpoint, 0.1 now" in message
    assert "pass that file as ckpt_path to resume it anyway" in message
    # naming the file is a deliberate choice: a warning, and the resume goes ahead
    chosen = tmp_path / "lightning_logs" / "version_1" / "checkpoints" / "last.ckpt"
    with pytest.warns(
        UserWarning, match="hyperparameters differ from this model's .lr: 0.5 in the checkpoint, 0.1 now"
    ):
        trainer = ember.Trainer(max_steps=20, default_root_dir=tmp_path, **QUIET)
        trainer.fit(DigitsMLP(lr=0.1), data[0], ckpt_path=chosen)
    assert trainer.global_step == 20


def test_save_top_k_holds_across_resumes(tmp_path, data):
    folder = tmp_path / "ckpts"
    for resume in range(5):
        ember.Trainer(
            max_steps=10 * (resume + 1),
            default_root_dir=tmp_path,
            **QUIET,
            callbacks=[
                ember.ModelCheckpoint(dirpath=folder, every_n_train_steps=5, save_top_k=1, save_last=True)
            ],
        ).fit(DigitsMLP(), data[0], ckpt_path="last" if resume else None)
    assert sorted(p.name for p in folder.iterdir()) == ["epoch=1-step=50.ckpt", "last.ckpt"]

    monitored = tmp_path / "monitored"
    for resume in range(4):
        ember.Trainer(
            max_epochs=resume + 1,
            default_root_dir=tmp_path,
            **QUIET,
            callbacks=[
                ember.ModelCheckpoint(dirpath=monitored, monitor="val_loss", save_top_k=2, save_last=True)
            ],
        ).fit(DigitsMLP(), *data, ckpt_path="last" if resume else None)
    assert len([p for p in monitored.iterdir() if p.name != "last.ckpt"]) == 2


# ---- a full disk and a read-only folder
# ---------------------------------------------------------------------
@pytest.fixture
def small_disk(tmp_path):
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small tmpfs needs root and mount(8)")
    mountpoint = tmp_path / "disk"
    mountpoint.mkdir()
    if subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mountpoint)], capture_output=True
    ).returncode:
        pytest.skip("this machine does not allow mounting a tmpfs here")
    yield mountpoint
    subprocess.run(["umount", str(mountpoint)], check=True)


def test_a_full_disk_is_one_line_and_the_previous_checkpoint_stays(small_disk, data):
    class Wide(DigitsMLP):
        def __init__(self):
            super().__init__()
            self.big = torch.nn.Parameter(torch.zeros(1), requires_grad=False)

    trainer = ember.Trainer(
        max_steps=3,
        default_root_dir=small_disk,
        logger=False,
        **QUIET,
        callbacks=[
            ember.ModelCheckpoint(dirpath=small_disk, every_n_train_steps=1, save_top_k=0, save_last=True)
        ],
    )
    model = Wide()
    trainer.fit(model, data[0])
    good = (small_disk / "last.ckpt").read_bytes()
    filler = small_disk / "filler"
    free = shutil.disk_usage(small_disk).free
    filler.write_bytes(b"\0" * (free - len(good) // 2))  # leaves room for half a checkpoint
    with pytest.raises(CheckpointError) as caught:
        ember.Trainer(
            max_steps=6,
            default_root_dir=small_disk,
            logger=False,
            **QUIET,
            callbacks=[
                ember.ModelCheckpoint(dirpath=small_disk, every_n_train_steps=1, save_top_k=0, save_last=True)
            ],
        ).fit(Wide(), data[0], ckpt_path="last")
    message = str(caught.value)
    assert (
        f"could not write checkpoint last.ckpt into {small_disk}: the disk is full" in message
        and "\n" not in message
    )
    assert (small_disk / "last.ckpt").read_bytes() == good  # the previous good checkpoint is intact
    assert sorted(p.name for p in small_disk.iterdir()) == ["filler", "last.ckpt"]  # no temporary left


def test_a_read_only_folder_is_one_line(small_disk, data):
    trainer = ember.Trainer(
        max_steps=2,
        default_root_dir=small_disk,
        logger=False,
        **QUIET,
        callbacks=[
            ember.ModelCheckpoint(dirpath=small_disk, every_n_train_steps=1, save_top_k=0, save_last=True)
        ],
    )
    trainer.fit(DigitsMLP(), data[0])
    good = (small_disk / "last.ckpt").read_bytes()
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    try:
        with pytest.raises(
            CheckpointError,
            match=f"could not write checkpoint last.ckpt into {small_disk}: the file "
            "system is read-only; free space or choose a writable folder",
        ):
            ember.Trainer(
                max_steps=4,
                default_root_dir=small_disk,
                logger=False,
                **QUIET,
                callbacks=[
                    ember.ModelCheckpoint(
                        dirpath=small_disk, every_n_train_steps=1, save_top_k=0, save_last=True
                    )
                ],
            ).fit(DigitsMLP(), data[0], ckpt_path="last")
        assert (small_disk / "last.ckpt").read_bytes() == good
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(small_disk)], check=True)


def test_a_callback_state_the_new_trainer_cannot_take_is_named_in_a_warning(tmp_path):
    # As Lightning: a saved callback state with no matching callback is not restored, and says so.
    train, _ = digits_loaders()
    saver = ember.ModelCheckpoint(dirpath=tmp_path / "a", every_n_train_steps=3, save_top_k=-1)
    ember.Trainer(max_steps=3, default_root_dir=tmp_path, callbacks=[saver], logger=False, **QUIET).fit(
        DigitsMLP(), train
    )
    path = next((tmp_path / "a").glob("*.ckpt"))
    other = ember.ModelCheckpoint(dirpath=tmp_path / "b", every_n_train_steps=5)
    trainer = ember.Trainer(max_steps=4, default_root_dir=tmp_path, callbacks=[other], logger=False, **QUIET)
    with pytest.warns(
        UserWarning,
        match=r"callbacks this Trainer does not have, which is not restored: .*'every_n_train_steps': 3",
    ):
        trainer.fit(DigitsMLP(), train, ckpt_path=path)
    assert trainer.global_step == 4
