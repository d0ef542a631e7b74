"""Checkpoints, resume and loggers on a real S3-compatible server (moto) and on memory:// / file://."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
from _s3 import keys, s3_client

sys.path.insert(0, str(Path(__file__).parent.parent / "trainer"))
from _models import DigitsMLP, digits_loaders  # noqa: E402

import ember  # noqa: E402
from ember.callbacks import ModelCheckpoint  # noqa: E402
from ember.errors import CheckpointError  # noqa: E402


def _fit(max_epochs, ckpt_path=None, **trainer_options):
    torch.manual_seed(0)
    model = DigitsMLP()
    train, val = digits_loaders()
    trainer = ember.Trainer(
        max_epochs=max_epochs, enable_progress_bar=False, deterministic=True, **trainer_options
    )
    trainer.fit(model, train, val, ckpt_path=ckpt_path)
    return model, trainer


def _weights(model):
    return {k: v.clone() for k, v in model.state_dict().items()}


@pytest.mark.slow
def test_checkpoint_and_resume_from_s3_is_bitwise(bucket, tmp_path):
    straight, _ = _fit(
        3,
        default_root_dir=tmp_path / "straight",
        logger=False,
        callbacks=[ModelCheckpoint(dirpath=tmp_path / "c0")],
    )
    url = f"s3://{bucket}/ckpts"
    _fit(
        2,
        default_root_dir=tmp_path,
        logger=False,
        callbacks=[ModelCheckpoint(dirpath=url, monitor="step", mode="max", save_top_k=2, save_last=True)],
    )
    stored = keys(bucket, "ckpts/")
    assert "ckpts/last.ckpt" in stored and "ckpts/epoch=1-step=" in " ".join(stored)
    assert (
        not Path("s3:").exists() and not (tmp_path / "s3:").exists()
    )  # no local folder named after the scheme
    resumed, _ = _fit(
        3,
        ckpt_path=f"{url}/last.ckpt",
        default_root_dir=tmp_path,
        logger=False,
        callbacks=[ModelCheckpoint(dirpath=url, monitor="step", mode="max", save_top_k=2, save_last=True)],
    )
    for name, value in _weights(straight).items():
        assert torch.equal(value, resumed.state_dict()[name]), name
    # top-k bookkeeping on the store: two epoch files kept, the oldest one removed.
    epochs = [k for k in keys(bucket, "ckpts/") if k.startswith("ckpts/epoch=")]
    assert [k.split("/")[1].split("-")[0] for k in epochs] == ["epoch=1", "epoch=2"]


def test_ckpt_path_last_resumes_from_the_store(bucket, tmp_path):
    url = f"s3://{bucket}/run"
    _fit(1, default_root_dir=tmp_path, logger=False, callbacks=[ModelCheckpoint(dirpath=url, save_last=True)])
    model, trainer = _fit(
        2,
        ckpt_path="last",
        default_root_dir=tmp_path,
        logger=False,
        callbacks=[ModelCheckpoint(dirpath=url, save_last=True)],
    )
    assert trainer.current_epoch == 2
    from ember.checkpoint import load_checkpoint

    ckpt = load_checkpoint(f"{url}/last.ckpt")
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in ckpt["state_dict"].items())


@pytest.mark.slow
def test_default_root_dir_on_s3_holds_logs_and_checkpoints(bucket):
    pytest.importorskip("tensorboard")
    _fit(1, default_root_dir=f"s3://{bucket}/root")
    stored = keys(bucket, "root/")
    # Lightning's default logger (TensorBoard's): its event files and hparams.yaml, no metrics.csv
    assert "root/lightning_logs/version_0/hparams.yaml" in stored and not any(
        k.endswith("metrics.csv") for k in stored
    )
    assert any(k.startswith("root/lightning_logs/version_0/checkpoints/epoch=0") for k in stored)
    events = [k for k in stored if "events.out.tfevents" in k]
    assert events, stored
    assert (
        len(s3_client().get_object(Bucket=bucket, Key=events[0])["Body"].read()) > 100
    )  # scalars were written
    _fit(1, default_root_dir=f"s3://{bucket}/root")  # a second run gets the next version folder
    assert any(k.startswith("root/lightning_logs/version_1/") for k in keys(bucket, "root/"))


def test_memory_dirpath_saves_there_and_not_in_a_local_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    model, _ = _fit(1, logger=False, callbacks=[ModelCheckpoint(dirpath="memory://x/ckpts", save_last=True)])
    assert not (tmp_path / "memory:").exists()
    from ember.checkpoint import load_checkpoint
    from ember.fs import storage_path

    assert storage_path("memory://x/ckpts/last.ckpt").is_file()
    ckpt = load_checkpoint("memory://x/ckpts/last.ckpt")
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in ckpt["state_dict"].items())


def test_file_url_dirpath_is_the_local_folder(tmp_path):
    _fit(1, logger=False, callbacks=[ModelCheckpoint(dirpath=f"file://{tmp_path}/ck", save_last=True)])
    assert (tmp_path / "ck" / "last.ckpt").is_file()


def test_loggers_write_to_s3(bucket, tmp_path):
    pytest.importorskip("tensorboard")
    from ember.loggers import CSVLogger, TensorBoardLogger

    csv_logger = CSVLogger(f"s3://{bucket}/logs", name="csv")
    tb_logger = TensorBoardLogger(f"s3://{bucket}/logs", name="tb")
    _fit(2, logger=[csv_logger, tb_logger], enable_checkpointing=False)
    body = s3_client().get_object(Bucket=bucket, Key="logs/csv/version_0/metrics.csv")["Body"].read().decode()
    rows = body.strip().splitlines()
    assert len(rows) >= 3 and {"epoch", "step"} <= set(rows[0].split(","))  # header sorted, as Lightning
    events = [k for k in keys(bucket, "logs/tb/version_0/") if "tfevents" in k]
    assert len(events) == 1
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    assert tb_logger._staging is None  # the local staging copy is gone once uploaded
    copy = tmp_path / Path(events[0]).name
    copy.write_bytes(s3_client().get_object(Bucket=bucket, Key=events[0])["Body"].read())
    accumulator = EventAccumulator(str(tmp_path))
    accumulator.Reload()
    assert {"train_loss", "val_loss", "val_acc"} <= set(
        accumulator.Tags()["scalars"]
    )  # a whole, readable file


def test_missing_checkpoint_on_s3_is_one_line(bucket):
    with pytest.raises(CheckpointError, match=rf"checkpoint s3://{bucket}/nothing.ckpt does not exist"):
        from ember.checkpoint import load_checkpoint

        load_checkpoint(f"s3://{bucket}/nothing.ckpt")


def test_checkpoint_folder_in_a_missing_bucket_fails_before_training(s3_server, tmp_path):
    from ember.errors import StorageError

    model = DigitsMLP()
    train, val = digits_loaders()
    trainer = ember.Trainer(
        max_epochs=1,
        enable_progress_bar=False,
        logger=False,
        default_root_dir=tmp_path,
        callbacks=[ModelCheckpoint(dirpath="s3://no-such-bucket-ckpt/run")],
    )
    with pytest.raises(
        StorageError, match=r"^s3://no-such-bucket-ckpt/run: bucket 'no-such-bucket-ckpt' does not exist"
    ):
        trainer.fit(model, train, val)
    assert trainer.global_step == 0
