"""WandbLogger as Lightning's: an offline run (no network) records the same config and metrics as Lightning's
WandbLogger does for the same program, in a local run folder,
with checkpoints under <save_dir>/<project>/<run id>.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import ember
from ember.errors import ConfigError

pl = pytest.importorskip("lightning.pytorch")
pytest.importorskip("wandb")

QUIET = {
    "enable_progress_bar": False,
    "enable_model_summary": False,
    "accelerator": "cpu",
    "log_every_n_steps": 1,
}


def _module(L):
    class Tiny(L.LightningModule):
        def __init__(self, lr: float = 0.1, act=torch.relu):
            super().__init__()
            self.save_hyperparameters()
            self.layer = nn.Linear(4, 1)

        def training_step(self, batch, batch_idx):
            loss = self.layer(batch[0]).pow(2).mean()
            self.log("loss", loss)
            return loss

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)

    return Tiny()


def _run(L, root: Path) -> dict:
    torch.manual_seed(0)
    data = DataLoader(TensorDataset(torch.randn(16, 4)), batch_size=4)
    logger = L.loggers.WandbLogger(project="mnist", offline=True, save_dir=str(root), prefix="train")
    trainer = L.Trainer(max_epochs=2, logger=logger, default_root_dir=str(root), **QUIET)
    trainer.fit(_module(L), data)
    run = logger.experiment
    seen = {
        "config": dict(run.config),
        "name": logger.name,
        "log_dir": os.path.relpath(trainer.log_dir, root),
        "summary": {k: run.summary[k] for k in sorted(run.summary.keys()) if not k.startswith("_")},
        "checkpoints": sorted(str(p.relative_to(root)).replace(run.id, "ID") for p in root.rglob("*.ckpt")),
        "id_is_version": logger.version == run.id,
    }
    run.finish()
    runs = list((root / "wandb").glob("offline-run-*"))
    seen["local_run"] = [len(runs), [p.name.replace(run.id, "ID") for p in runs[0].glob("run-*.wandb")]]
    return seen


def test_an_offline_run_records_what_lightnings_records(tmp_path, monkeypatch):
    monkeypatch.setenv(
        "WANDB_MODE", "offline"
    )  # restored after the test (the logger sets it, as Lightning's)
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.delenv("WANDB_PROJECT", raising=False)
    theirs, ours = _run(pl, tmp_path / "lightning"), _run(ember, tmp_path / "ember")
    assert ours == theirs
    assert ours["config"] == {"lr": 0.1, "act": "relu"} and ours["name"] == "mnist"
    assert ours["summary"]["train-loss"] > 0 and ours["summary"]["trainer/global_step"] == 7
    assert ours["checkpoints"] == ["mnist/ID/checkpoints/epoch=1-step=8.ckpt"]
    assert ours["local_run"] == [1, ["run-ID.wandb"]] and ours["id_is_version"]


def test_log_model_offline_is_refused_as_lightning_refuses_it():
    with pytest.raises(ConfigError) as error:
        ember.loggers.WandbLogger(offline=True, log_model=True)
    assert "offline" in str(error.value) and "\n" not in str(error.value)
    with pytest.raises(Exception, match="offline"):
        pl.loggers.WandbLogger(offline=True, log_model=True)


def test_the_project_defaults_to_lightning_logs_and_the_version_to_the_id_given(monkeypatch):
    monkeypatch.delenv("WANDB_PROJECT", raising=False)
    ours = ember.loggers.WandbLogger(id="abc123", offline=True)
    theirs = pl.loggers.WandbLogger(id="abc123", offline=True)
    assert (ours.name, ours.version, ours.save_dir) == (theirs.name, theirs.version, theirs.save_dir)
    assert ours.name == "lightning_logs" and os.environ.get("WANDB_MODE") != "offline"  # no run until used
