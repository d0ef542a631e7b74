"""On a CUDA machine: device placement, mixed precision,
GPU checkpoints on CPU, exact resume, ember.data to GPU.

Skipped where there is no GPU (CI); run on a GPU machine with `python -m pytest tests/gpu`.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from _models import DigitsMLP, assert_bitwise_equal, digits_loaders, seeded, weights

import ember

QUIET = {"logger": False, "enable_progress_bar": False, "enable_model_summary": False}


class DeviceProbe(DigitsMLP):
    def __init__(self):
        super().__init__()
        self.seen = []

    def training_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        self.seen.append((x.device.type, logits.dtype))
        loss = F.cross_entropy(logits, y)
        self.log("train_loss", loss)
        return loss


def test_auto_accelerator_picks_the_gpu_and_moves_pinned_batches(tmp_path):
    train = torch.utils.data.DataLoader(
        digits_loaders()[0].dataset, batch_size=32, shuffle=True, pin_memory=True
    )
    model = DeviceProbe()
    trainer = ember.Trainer(max_epochs=2, default_root_dir=tmp_path, **QUIET)
    trainer.fit(model, train, digits_loaders()[1])
    assert trainer.device_type == "cuda" and model.device.type == "cuda"
    assert {d for d, _ in model.seen} == {"cuda"}
    assert trainer.callback_metrics["val_acc"] > 0.85


@pytest.mark.parametrize(
    ("precision", "dtype"), [("16-mixed", torch.float16), ("bf16-mixed", torch.bfloat16)]
)
def test_mixed_precision_on_gpu_learns_and_checkpoints_the_scaler(precision, dtype, tmp_path):
    seeded(0)
    model = DeviceProbe()
    trainer = ember.Trainer(max_epochs=3, precision=precision, default_root_dir=tmp_path, **QUIET)
    trainer.fit(model, *digits_loaders())
    assert {t for _, t in model.seen} == {dtype}
    assert model.net[0].weight.dtype == torch.float32
    assert trainer.callback_metrics["val_acc"] > 0.85
    checkpoint = ember.checkpoint.load_checkpoint(trainer.checkpoint_callback.last_model_path)
    if precision == "16-mixed":
        assert checkpoint["precision"]["scale"] > 0  # the GradScaler's state travels with the weights


def test_gpu_checkpoint_loads_on_cpu(tmp_path):
    model = DigitsMLP()
    trainer = ember.Trainer(max_epochs=1, default_root_dir=tmp_path, **QUIET)
    trainer.fit(model, *digits_loaders())
    on_cpu = DigitsMLP.load_from_checkpoint(trainer.checkpoint_callback.last_model_path, map_location="cpu")
    assert all(p.device.type == "cpu" for p in on_cpu.parameters())
    assert_bitwise_equal(weights(on_cpu), {k: v.cpu() for k, v in weights(model).items()})


def test_sigkill_and_resume_on_gpu_is_bitwise_identical(tmp_path):
    script = Path(__file__).parents[1] / "trainer" / "_fit_script.py"
    env = {**os.environ, "CUBLAS_WORKSPACE_CONFIG": ":4096:8"}

    def run(root: Path, *flags: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, str(script), str(root), str(root / "out.pt"), *flags],
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
        )

    assert run(tmp_path / "a").returncode == 0
    assert run(tmp_path / "b", "--die-at", "60").returncode == -signal.SIGKILL
    resumed = run(tmp_path / "b", "--resume")
    assert resumed.returncode == 0, resumed.stderr
    a, b = torch.load(tmp_path / "a" / "out.pt"), torch.load(tmp_path / "b" / "out.pt")
    assert next(iter(a["weights"].values())).device.type == "cuda"
    assert b["steps"][0] == 57
    assert_bitwise_equal(a["weights"], b["weights"])


def test_ember_data_batches_land_on_the_gpu():
    import ember.data

    ds = ember.data.from_numpy(torch.arange(1000, dtype=torch.float32).reshape(250, 4).numpy())
    batches = list(ds.iter_torch_batches(batch_size=64, device="cuda"))
    assert all(b["data"].device.type == "cuda" for b in batches)
    assert torch.equal(torch.cat([b["data"] for b in batches]).cpu(), torch.arange(1000.0).reshape(250, 4))
