# ruff: noqa: UP006, UP035, SIM118  (the guide's code is kept as the guide writes it)
"""The Ray Data + PyTorch guide (shared/seeds/002) with its s3:// paths unchanged, against the moto server.

The session fills the guide's buckets (ray-example-data, air-example-data) with the same kind of
files the guide reads: a tiny image folder, batoidea JPEGs named by label, simple.txt and the
breast-cancer CSV (tests/data/conftest.py makes them). Each example is the guide's code with
``ray`` replaced by ``ember``; ``s3://anonymous@...`` reads without credentials, as in pyarrow and Ray.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Dict

import numpy as np
import pytest
import torch
from _s3 import s3_client

from tests.data.conftest import batoidea, breast_cancer_csv, data_root, simple_images, simple_txt  # noqa: F401

REPO = Path(__file__).resolve().parents[2]
PUBLIC = {"ACL": "public-read"}


@pytest.fixture(scope="module")
def guide_buckets(s3_server, simple_images, batoidea, breast_cancer_csv, simple_txt):  # noqa: F811
    client = s3_client()
    for name in ("ray-example-data", "air-example-data"):
        with contextlib.suppress(client.exceptions.BucketAlreadyOwnedByYou):  # as the real ones: public
            client.create_bucket(Bucket=name, ACL="public-read")
    for folder, prefix in ((simple_images, "image-datasets/simple"), (batoidea, "batoidea/JPEGImages")):
        for file in sorted(Path(folder).iterdir()):
            client.upload_file(str(file), "ray-example-data", f"{prefix}/{file.name}", ExtraArgs=PUBLIC)
    client.upload_file(simple_txt, "ray-example-data", "simple.txt", ExtraArgs=PUBLIC)
    client.upload_file(breast_cancer_csv, "air-example-data", "breast_cancer.csv", ExtraArgs=PUBLIC)


def test_iterate_torch_batches(guide_buckets):
    import ember

    ds = ember.data.read_images("s3://anonymous@ray-example-data/image-datasets/simple")
    batches = list(ds.iter_torch_batches(batch_size=2))
    assert [tuple(b["image"].shape) for b in batches] == [(2, 32, 32, 3), (1, 32, 32, 3)]
    assert batches[0]["image"].dtype == torch.uint8


def test_map_returning_torch_tensors(guide_buckets, capsys):
    import ember

    ds = ember.data.read_images("s3://anonymous@ray-example-data/image-datasets/simple")

    def convert_to_torch(row: Dict[str, np.ndarray]) -> Dict[str, torch.Tensor]:
        return {"tensor": torch.as_tensor(row["image"])}

    transformed_ds = ds.map(convert_to_torch)
    print(transformed_ds.schema())

    def check_numpy(row: Dict[str, np.ndarray]):
        assert isinstance(row["tensor"], np.ndarray)
        return row

    assert len(transformed_ds.map(check_numpy).take_all()) == 3
    assert "tensor ArrowTensorTypeV2(shape=(32, 32, 3), dtype=uint8)" in " ".join(capsys.readouterr().out.split())


def test_read_text(guide_buckets):
    import ember

    ds = ember.data.read_text("s3://anonymous@ray-example-data/simple.txt")
    assert ds.take(1)[0]["text"] == "this is the first line"


def test_custom_dataset_migration(guide_buckets):
    import ember

    ds = ember.data.read_images("s3://anonymous@ray-example-data/batoidea/JPEGImages", include_paths=True)

    def extract_label(row: dict):
        filepath = row["path"]
        last_slash_idx = filepath.rfind("/")
        dot_idx = filepath.rfind('.')
        label = int(filepath[last_slash_idx+1:dot_idx])
        row["label"] = label
        return row

    ds = ds.map(extract_label)
    rows = ds.take_all()
    assert sorted(r["label"] for r in rows) == [1, 2, 3, 4]
    assert all(r["path"].startswith("ray-example-data/batoidea/JPEGImages/") for r in rows)


GUIDE_TRAIN = '''
import torch
from torch import nn
import ember
from ember import train
from ember.train import ScalingConfig
from ember.train.torch import TorchTrainer

def train_func(config):
    model = nn.Sequential(nn.Linear(30, 1), nn.Sigmoid())
    loss_fn = torch.nn.BCELoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.001)

    # Datasets can be accessed in your train_func via ``get_dataset_shard``.
    train_data_shard = train.get_dataset_shard("train")

    for epoch_idx in range(2):
        for batch in train_data_shard.iter_torch_batches(batch_size=128, dtypes=torch.float32):
            features = torch.stack([batch[col_name] for col_name in batch.keys() if col_name != "target"], axis=1)
            predictions = model(features)
            train_loss = loss_fn(predictions, batch["target"].unsqueeze(1))
            train_loss.backward()
            optimizer.step()

train_dataset = ember.data.read_csv("s3://anonymous@air-example-data/breast_cancer.csv")
trainer = TorchTrainer(
    train_func, datasets={"train": train_dataset}, scaling_config=ScalingConfig(num_workers=2)
)
trainer.fit()
'''


@pytest.mark.slow
def test_torch_trainer_example_reads_the_csv_from_s3(guide_buckets, tmp_path):
    script = tmp_path / "guide_train.py"
    script.write_text(GUIDE_TRAIN + 'print("rows", train_dataset.count())\n')
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=150,
                          env={**os.environ, "PYTHONPATH": str(REPO), "HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "rows 569"
