"""A 2-process CPU DDP fit and predict with every file-writing logger and callback, for the one-writer guard.

    python rank_zero_files.py OUT_DIR simple|advanced|pytorch

Loggers: CSVLogger, TensorBoardLogger, MLFlowLogger (sqlite store under OUT_DIR); callbacks: ModelCheckpoint
(every 2 steps, all kept), LearningRateMonitor (through the loggers), PredictionWriter; the profiler named on
the command line (files named per rank by design). 2 epochs of
4 steps, log_every_n_steps=1. Rank 0 writes OUT_DIR/finished.
"""

import os
import sys
import warnings
from pathlib import Path

import torch
from torch.utils.data import DataLoader

import ember
from ember.callbacks import LearningRateMonitor, ModelCheckpoint, PredictionWriter
from ember.loggers import CSVLogger, MLFlowLogger, TensorBoardLogger
from ember.profilers import AdvancedProfiler, PyTorchProfiler, SimpleProfiler

warnings.filterwarnings("ignore")
out, profiler_name = Path(sys.argv[1]), sys.argv[2]


class Tiny(ember.Module):
    def __init__(self, lr: float = 0.1):
        super().__init__()
        self.save_hyperparameters()
        self.layer = torch.nn.Linear(4, 1)

    def training_step(self, batch, batch_idx):
        loss = self.layer(batch).pow(2).mean()
        self.log("loss", loss)
        self.log(
            "rank_sum",
            torch.tensor(float(self.global_rank)),
            on_step=False,
            on_epoch=True,
            sync_dist=True,
            reduce_fx="sum",
        )
        return loss

    def validation_step(self, batch, batch_idx):
        self.log("val", self.layer(batch).mean(), sync_dist=True)

    def predict_step(self, batch, batch_idx):
        return self.layer(batch)

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=self.hparams.lr)
        return {
            "optimizer": optimizer,
            "lr_scheduler": torch.optim.lr_scheduler.StepLR(optimizer, 1, gamma=0.5),
        }


profiler_class = {"simple": SimpleProfiler, "advanced": AdvancedProfiler, "pytorch": PyTorchProfiler}[
    profiler_name
]
loggers = [
    CSVLogger(out / "csv"),
    TensorBoardLogger(out / "tb"),
    MLFlowLogger(experiment_name="guard", tracking_uri=f"sqlite:///{out}/mlflow.db"),
]
writer = PredictionWriter(out / "predictions", write_interval="epoch")
trainer = ember.Trainer(
    strategy="ddp",
    devices=2,
    accelerator="cpu",
    max_epochs=2,
    log_every_n_steps=1,
    num_sanity_val_steps=0,
    logger=loggers,
    enable_progress_bar=False,
    enable_model_summary=False,
    default_root_dir=out / "root",
    profiler=profiler_class(dirpath=out / "profiles", filename="prof"),
    callbacks=[
        ModelCheckpoint(dirpath=out / "checkpoints", every_n_train_steps=2, save_top_k=-1),
        LearningRateMonitor(logging_interval="step"),
        writer,
    ],
)
model = Tiny()
trainer.fit(model, DataLoader(torch.randn(32, 4), batch_size=4), DataLoader(torch.randn(8, 4), batch_size=4))
trainer.predict(model, DataLoader(torch.randn(16, 4), batch_size=4), return_predictions=False)
if os.environ.get("RANK", "0") == "0":
    (out / "finished").write_text("done")
