"""On a CUDA machine: `trainer.fit(torch.compile(model))` under bf16-mixed learns, logs, checkpoints plain
names and resumes bitwise. Skipped where there is no GPU."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from _models import DigitsMLP, digits_loaders, seeded

import ember

QUIET = {
    "logger": False,
    "enable_progress_bar": False,
    "enable_model_summary": False,
    "num_sanity_val_steps": 0,
}


class Logged(DigitsMLP):
    def training_step(self, batch, batch_idx):
        loss = F.cross_entropy(self(batch[0]), batch[1])
        self.log("train_loss", loss)
        return loss


def fit(tmp_path, max_steps, ckpt_path=None):
    seeded(0)
    model = Logged()
    trainer = ember.Trainer(max_steps=max_steps, precision="bf16-mixed", default_root_dir=tmp_path, **QUIET)
    trainer.fit(torch.compile(model), *digits_loaders(shuffle=False), ckpt_path=ckpt_path)
    return model, trainer


def test_compiled_module_under_bf16_mixed_learns_checkpoints_and_resumes_exactly(tmp_path):
    captured = torch._dynamo.utils.counters["stats"]["calls_captured"]
    whole, trainer = fit(tmp_path / "whole", 94)  # 2 epochs of 47 batches
    assert torch._dynamo.utils.counters["stats"]["calls_captured"] > captured
    assert whole.device.type == "cuda" and trainer.callback_metrics["val_acc"] > 0.5
    ckpt = torch.load(trainer.checkpoint_callback.best_model_path, weights_only=True)
    assert not any(key.startswith("_orig_mod") for key in ckpt["state_dict"])

    _, first = fit(tmp_path / "half", 47)  # a checkpoint at the end of epoch 0
    resumed, _ = fit(tmp_path / "half", 94, ckpt_path=first.checkpoint_callback.best_model_path)
    for key, value in whole.state_dict().items():
        assert torch.equal(resumed.state_dict()[key], value), key
