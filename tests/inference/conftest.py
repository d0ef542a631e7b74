"""Real data and a briefly trained model, shared by the inference tests.

Fashion-MNIST comes from /usr/share/datasets/fashion-mnist (ember.datasets.FashionMNIST). The
test split is written once as parquet: ``id``, ``image`` (uint8 [28, 28] tensor), ``label``, in
row groups of 250, so that each row group is one fragment of a resumable job.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

REPO = Path(__file__).resolve().parents[2]
MEAN, STD = 0.2860, 0.3530
#: Flags that turn the uint8 parquet images into the normalised [N, 1, 28, 28] the Net was trained on.
PREPROCESS = ["--scale", "1/255", "--normalize", f"{MEAN},{STD}", "--shape", "1,28,28"]


@pytest.fixture(scope="session")
def fashion_test():
    from ember.datasets import FashionMNIST

    ds = FashionMNIST(train=False)
    return ds.data.numpy(), ds.targets.numpy()


@pytest.fixture(scope="session")
def fashion_parquet(tmp_path_factory, fashion_test):
    """The first 3000 test images as parquet: 12 row groups (fragments) of 250 rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    images, labels = fashion_test
    n = 3000
    table = pa.table(
        {
            "id": np.arange(n, dtype=np.int64),
            "image": pa.FixedShapeTensorArray.from_numpy_ndarray(np.ascontiguousarray(images[:n])),
            "label": labels[:n],
        }
    )
    path = tmp_path_factory.mktemp("fashion") / "test.parquet"
    pq.write_table(table, path, row_group_size=250)
    return path


@pytest.fixture(scope="session")
def trained_ckpt(tmp_path_factory):
    """The classic Net trained for 150 steps on Fashion-MNIST (≈70% test accuracy), checkpointed."""
    import ember
    from ember.datasets import FashionMNIST
    from tests.inference._model import ClassicNet

    ember.seed_everything(0)
    train = FashionMNIST(train=True, normalize=True)
    subset = torch.utils.data.Subset(train, range(9600))
    loader = torch.utils.data.DataLoader(subset, batch_size=64, shuffle=True)
    root = tmp_path_factory.mktemp("train")
    model = ClassicNet()
    trainer = ember.Trainer(
        max_steps=150,
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        enable_checkpointing=False,
        default_root_dir=root,
        accelerator="cpu",
    )
    trainer.fit(model, loader)
    path = root / "net.ckpt"
    trainer.save_checkpoint(path)
    return path


def reference_predictions(ckpt: Path, images: np.ndarray) -> np.ndarray:
    """The plain single-process loop: load, normalise, forward in inference mode."""
    from tests.inference._model import ClassicNet

    model = ClassicNet.load_from_checkpoint(ckpt).eval()
    x = torch.from_numpy(images).float().div(255).sub(MEAN).div(STD).unsqueeze(1)
    with torch.inference_mode():
        return torch.cat([model(x[i : i + 500]) for i in range(0, len(x), 500)]).numpy()


def ember_cli(*args: str, timeout: float = 120, **popen) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ember.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
        **popen,
    )
