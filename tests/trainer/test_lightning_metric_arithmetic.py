"""Epoch values reduced in Lightning's arithmetic, so `callback_metrics` equal Lightning's to the last bit.

Lightning folds each logged value as ``acc + value * batch_size`` in the value's dtype (float32, or float64
under "64-true", whose steps run with torch's default dtype at float64), then divides by the summed batch
sizes. Uneven batch sizes and values that are not exact in float32 (k / 97) make any other order or dtype
show in the last bits.
"""

from __future__ import annotations

import pytest
import torch

import ember

pl = pytest.importorskip("lightning.pytorch")


def _module(L):
    class Fractions(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(1, 1)

        def validation_step(self, batch, batch_idx):
            (x,) = batch
            value = (x > 0.3).float().mean()  # float32 explicitly, as users' accuracies are
            self.log("frac", value, batch_size=len(x))
            self.log("frac_max", value, reduce_fx="max", batch_size=len(x))
            self.log("frac_sum", value, reduce_fx="sum", batch_size=len(x))

    return Fractions()


@pytest.mark.parametrize("precision", ["32-true", "64-true"])
def test_epoch_means_equal_lightnings_bitwise(precision, tmp_path):
    x = torch.rand(97 * 7, 1, generator=torch.Generator().manual_seed(0))
    results = {}
    for L in (pl, ember):
        loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x), batch_size=97)
        trainer = L.Trainer(
            logger=False,
            enable_progress_bar=False,
            enable_model_summary=False,
            accelerator="cpu",
            precision=precision,
            default_root_dir=str(tmp_path),
        )
        trainer.validate(_module(L), loader, verbose=False)
        results[L.__name__] = {k: (v.dtype, v.item()) for k, v in trainer.callback_metrics.items()}
    assert results["ember"] == results["lightning.pytorch"]
    expected_dtype = torch.float64 if precision == "64-true" else torch.float32
    assert {dtype for dtype, _ in results["ember"].values()} == {expected_dtype}
