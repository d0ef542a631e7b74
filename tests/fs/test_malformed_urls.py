"""One URL parser for every path that enters ember: a string that looks like a URL but is malformed
(``s3:/bucket``, ``s3:bucket``, ``foo://x``) is refused in
one line, and no local folder named ``s3:`` appears."""

from __future__ import annotations

import os

import pytest
import torch

import ember
from ember.demos import BoringModel
from ember.errors import MalformedURLError
from ember.fs import is_url, storage_path

ONE_SLASH = (
    r"^'s3:/bucket/run' looks like a URL but is malformed \(one slash after 's3:'\); write s3://bucket/run"
)


@pytest.fixture(autouse=True)
def in_empty_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    yield
    assert os.listdir(tmp_path) == [], "a malformed URL became a local file or folder"


def refused(call, pattern=ONE_SLASH):
    with pytest.raises(MalformedURLError, match=pattern):
        call()


def test_the_parser_refuses_malformed_urls_and_keeps_local_names_with_colons():
    assert is_url("s3://b/x") and is_url("memory://m/x") and not is_url("file:///tmp/x")
    assert (
        not is_url("runs/a:b") and not is_url("run:1") and not is_url("C:/x") and not is_url("./s3:/bucket")
    )
    refused(
        lambda: is_url("s3:bucket/run"),
        r"^'s3:bucket/run' looks like a URL but is malformed \(no slashes "
        r"after 's3:'\); write s3://bucket/run for the object store, or "
        r"\./s3:bucket/run for a local folder$",
    )
    refused(
        lambda: storage_path("foo://x"),
        r"^'foo://x': unknown URL scheme 'foo://'; ember reads and writes "
        r"local paths and s3://",
    )
    refused(lambda: storage_path("gs:/b/x"), r"one slash after 'gs:'")


def test_trainer_default_root_dir():
    refused(lambda: ember.Trainer(default_root_dir="s3:/bucket/run"))


def test_trainer_fit_ckpt_path_and_loggers_and_checkpoint_dirpath(tmp_path_factory):
    root = tmp_path_factory.mktemp("root")

    def fit(**options):
        torch.manual_seed(0)
        ember.Trainer(
            max_epochs=1,
            limit_train_batches=1,
            limit_val_batches=0,
            enable_progress_bar=False,
            enable_model_summary=False,
            logger=options.pop("logger", False),
            callbacks=options.pop("callbacks", None),
            enable_checkpointing=False,
            default_root_dir=root,
        ).fit(BoringModel(), **options)
        raise AssertionError("not refused")

    refused(lambda: fit(ckpt_path="s3:/bucket/run"))
    refused(lambda: fit(logger=ember.loggers.CSVLogger("s3:/bucket/run")))
    refused(lambda: fit(callbacks=[ember.ModelCheckpoint(dirpath="s3:/bucket/run")]))
    assert not [p for p in root.rglob("*") if "s3:" in str(p)]


@pytest.mark.parametrize("writer", ["write_parquet", "write_csv", "write_json", "write_numpy"])
def test_dataset_writers(writer):
    dataset = ember.data.range(3)
    options = {"column": "id"} if writer == "write_numpy" else {}
    refused(lambda: getattr(dataset, writer)("s3:/bucket/run", **options))


@pytest.mark.parametrize("reader", ["read_parquet", "read_csv", "read_json", "read_binary_files"])
def test_dataset_readers(reader):
    refused(lambda: getattr(ember.data, reader)("s3:/bucket/run"))


def test_torch_trainer_storage_path():
    from ember.train import RunConfig, ScalingConfig, TorchTrainer

    def fit():
        TorchTrainer(
            lambda config: None,
            scaling_config=ScalingConfig(num_workers=1),
            run_config=RunConfig(name="exp", storage_path="s3:/bucket/run"),
        ).fit()

    refused(fit)
