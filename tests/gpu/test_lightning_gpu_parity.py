"""On a CUDA machine, ember's Trainer against the real Lightning 2.6 on the same GPU (issue 13's precisions).

The CPU parity harnesses (tests/trainer/test_lightning_parity*.py) cannot see what only a GPU does: autocast
to float16/bfloat16, the GradScaler's skipped steps and unscale-before-clip, half-precision weights
(``"16-true"``/``"bf16-true"``), CUDA's memory statistics. Here the same module is fitted by both libraries
from the same seed on the same batches with deterministic kernels, and the results are compared exactly.
Skipped where there is no GPU (tests/gpu/conftest.py) or no Lightning.
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

import pytest
import torch

import ember
import ember.callbacks
import ember.loggers

pl = pytest.importorskip("lightning.pytorch")

QUIET = {
    "logger": False,
    "enable_progress_bar": False,
    "enable_model_summary": False,
    "enable_checkpointing": False,
    "num_sanity_val_steps": 0,
}
PRECISIONS = ["32-true", "64-true", "16-mixed", "bf16-mixed", "16-true", "bf16-true"]


@pytest.fixture(autouse=True)
def _deterministic_kernels():
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(True)
    yield
    torch.use_deterministic_algorithms(False)


def _digits() -> torch.utils.data.TensorDataset:
    from sklearn.datasets import load_digits

    digits = load_digits()
    return torch.utils.data.TensorDataset(
        torch.tensor(digits.data, dtype=torch.float32) / 16.0, torch.tensor(digits.target, dtype=torch.int64)
    )


def _module(L, lr: float):
    """A 64 → 128 → 10 MLP with dropout (the CUDA generator matters), SGD with momentum, a step schedule."""

    class MLP(L.LightningModule):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.net = torch.nn.Sequential(
                torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Dropout(0.1), torch.nn.Linear(128, 10)
            )
            self.losses: list[float] = []
            self.dtypes: set[torch.dtype] = set()

        def training_step(self, batch, batch_idx):
            x, y = batch
            logits = self.net(x)
            self.dtypes.add(logits.dtype)
            loss = torch.nn.functional.cross_entropy(logits, y)
            self.losses.append(loss.item())
            self.log("train_loss", loss)
            return loss

        def validation_step(self, batch, batch_idx):
            x, y = batch
            self.log("val_acc", (self.net(x).argmax(1) == y).float().mean())

        def configure_optimizers(self):
            optimizer = torch.optim.SGD(self.parameters(), lr=lr, momentum=0.9)
            return [optimizer], [torch.optim.lr_scheduler.StepLR(optimizer, step_size=20, gamma=0.5)]

    return MLP()


def _fit(L, root: Path, precision: str, lr: float = 0.5, **trainer_args):
    data = _digits()
    # Not shuffled: with a seeded generator, Lightning's epoch 2 order differs from a hand-written loop's (it
    # stops at len(loader) without the final next() that makes
    # RandomSampler draw once more); ember's equals the loop's.
    train = torch.utils.data.DataLoader(
        torch.utils.data.Subset(data, range(1500)), batch_size=50, pin_memory=True
    )
    val = torch.utils.data.DataLoader(torch.utils.data.Subset(data, range(1500, 1797)), batch_size=100)
    module = _module(L, lr)
    torch.manual_seed(1)
    torch.cuda.manual_seed_all(1)
    options = {
        **QUIET,
        "max_epochs": 2,
        "default_root_dir": str(root),
        "accelerator": "cuda",
        "devices": 1,
        "precision": precision,
        **trainer_args,
    }
    trainer = L.Trainer(**options)
    trainer.fit(module, train, val)
    return trainer, module


def _observed(trainer, module) -> dict:
    return {
        "weights": {k: v.detach().cpu() for k, v in module.state_dict().items()},
        "losses": module.losses,
        "dtypes": module.dtypes,
        "global_step": trainer.global_step,
        "val_acc": trainer.callback_metrics["val_acc"].item(),
        "weight_dtype": next(module.parameters()).dtype,
    }


def _assert_same(ours: dict, theirs: dict) -> None:
    assert ours["weight_dtype"] == theirs["weight_dtype"]
    assert ours["dtypes"] == theirs["dtypes"]
    assert ours["global_step"] == theirs["global_step"]
    assert ours["losses"] == theirs["losses"]
    assert ours["val_acc"] == theirs["val_acc"]
    assert ours["weights"].keys() == theirs["weights"].keys()
    for name, tensor in ours["weights"].items():
        assert torch.equal(tensor, theirs["weights"][name]), name


@pytest.mark.parametrize("precision", PRECISIONS)
def test_each_precision_trains_bitwise_as_lightning(precision, tmp_path):
    theirs = _observed(*_fit(pl, tmp_path / "lightning", precision))
    ours = _observed(*_fit(ember, tmp_path / "ember", precision))
    _assert_same(ours, theirs)


@pytest.mark.parametrize("precision", ["16-mixed", "bf16-mixed"])
@pytest.mark.parametrize("algorithm", ["norm", "value"])
def test_clipping_and_accumulation_under_autocast_as_lightning(precision, algorithm, tmp_path):
    args = {"gradient_clip_val": 0.05, "gradient_clip_algorithm": algorithm, "accumulate_grad_batches": 3}
    theirs = _observed(*_fit(pl, tmp_path / "lightning", precision, **args))
    ours = _observed(*_fit(ember, tmp_path / "ember", precision, **args))
    _assert_same(ours, theirs)


def test_grad_scaler_skips_the_same_overflowing_steps_as_lightning(tmp_path):
    # lr 1e4 drives float16 activations to inf: the scaler skips those steps and lowers its scale
    theirs_trainer, theirs_module = _fit(pl, tmp_path / "lightning", "16-mixed", lr=1e4)
    # ember stops a run whose loss is not finite by default (ember's stop_on_nan); Lightning goes on
    ours_trainer, ours_module = _fit(ember, tmp_path / "ember", "16-mixed", lr=1e4, stop_on_nan=False)
    ours, theirs = _observed(ours_trainer, ours_module), _observed(theirs_trainer, theirs_module)
    assert repr(ours["losses"]) == repr(theirs["losses"])  # nan == nan is False; their reprs are equal
    for name, tensor in ours["weights"].items():
        assert torch.equal(tensor, theirs["weights"][name]), name
    assert ours_trainer.global_step == theirs_trainer.global_step
    scale = ours_trainer.precision_plugin.scaler.get_scale()
    assert scale == theirs_trainer.precision_plugin.scaler.get_scale()
    assert scale < 2.0**16  # below GradScaler's initial scale: steps overflowed and were skipped


def _stats_names(root: Path) -> set[str]:
    with open(next(root.rglob("metrics.csv"))) as f:
        header = next(csv.reader(f))
    return {name for name in header if name.startswith("DeviceStatsMonitor.")}


def test_device_stats_monitor_logs_lightnings_cuda_statistics(tmp_path):
    names = {}
    for L, library in ((pl, "lightning"), (ember, "ember")):
        root = tmp_path / library
        _fit(
            L,
            root,
            "32-true",
            callbacks=[L.callbacks.DeviceStatsMonitor()],
            logger=L.loggers.CSVLogger(root),
            log_every_n_steps=5,
        )
        names[library] = _stats_names(root)
    assert names["ember"] == names["lightning"]
    assert any(name.endswith("/allocated_bytes.all.current") for name in names["ember"])
