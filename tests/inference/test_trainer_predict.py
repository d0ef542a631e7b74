"""Trainer.predict over an ember.data Dataset and a DataLoader, returning or writing predictions."""

from __future__ import annotations

import numpy as np
import torch

import ember
import ember.data
from ember.callbacks import BasePredictionWriter, PredictionWriter
from tests.inference._model import ClassicNet
from tests.inference.conftest import MEAN, STD, reference_predictions


class DictNet(ClassicNet):
    """predict_step reading the parquet columns of an ember.data batch."""

    def predict_step(self, batch, batch_idx, dataloader_idx=0):
        x = batch["image"].float().div(255).sub(MEAN).div(STD).unsqueeze(1)
        return {"id": batch["id"], "output": self(x)}


def quiet(**kwargs):
    return ember.Trainer(
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        enable_checkpointing=False,
        accelerator="cpu",
        **kwargs,
    )


def test_predict_over_a_dataset_returns_every_row_in_order(trained_ckpt, fashion_parquet, fashion_test):
    model = DictNet.load_from_checkpoint(trained_ckpt)
    predictions = quiet().predict(model, ember.data.read_parquet(str(fashion_parquet)))
    ids = torch.cat([p["id"] for p in predictions]).numpy()
    outputs = torch.cat([p["output"] for p in predictions]).numpy()
    assert ids.tolist() == list(range(3000))
    np.testing.assert_allclose(
        outputs, reference_predictions(trained_ckpt, fashion_test[0][:3000]), atol=1e-5
    )


def test_prediction_writer_writes_cpu_tensors_per_batch_and_per_epoch(trained_ckpt, fashion_test, tmp_path):
    images, _ = fashion_test
    x = torch.from_numpy(images[:600]).float().div(255).sub(MEAN).div(STD).unsqueeze(1)
    loader = torch.utils.data.DataLoader(x, batch_size=256)
    model = ClassicNet.load_from_checkpoint(trained_ckpt)
    per_batch = PredictionWriter(tmp_path / "batches", write_interval="batch")
    per_epoch = PredictionWriter(tmp_path / "epoch", write_interval="epoch")
    assert quiet(callbacks=[per_batch, per_epoch]).predict(model, loader, return_predictions=False) is None

    files = sorted((tmp_path / "batches").iterdir())
    assert [f.name for f in files] == [f"predictions-0-{i:06d}.pt" for i in range(3)]
    parts = [torch.load(f, weights_only=True) for f in files]  # safe to open: tensors and lists only
    assert [len(p["batch_indices"]) for p in parts] == [256, 256, 88]
    assert parts[2]["batch_indices"][0] == 512
    batched = torch.cat([p["predictions"] for p in parts]).numpy()
    epoch = torch.load(tmp_path / "epoch" / "predictions-0.pt", weights_only=True)
    assert len(epoch["predictions"]) == 3 and epoch["batch_indices"][1][0] == 256
    expected = reference_predictions(trained_ckpt, images[:600])
    np.testing.assert_allclose(batched, expected, atol=1e-5)
    np.testing.assert_array_equal(torch.cat(epoch["predictions"]).numpy(), batched)


def test_base_prediction_writer_is_lightnings_interface():
    seen = []

    class Collect(BasePredictionWriter):
        def write_on_epoch_end(self, trainer, module, predictions, batch_indices):
            seen.append((len(predictions), batch_indices))

    model = ember.Module()
    model.forward = lambda x: x + 1
    quiet(callbacks=[Collect(write_interval="epoch")]).predict(model, [torch.zeros(2, 1), torch.zeros(3, 1)])
    assert seen == [(2, [[[0, 1], [2, 3, 4]]])]  # indices: a list per loader, even for one (as Lightning)
    assert ember.PredictionWriter is PredictionWriter and ember.BasePredictionWriter is BasePredictionWriter
