"""A module written for Lightning (the seed-001 story) runs under ember with only its import lines changed."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

LIGHTNING_SCRIPT = textwrap.dedent('''
    import torch
    import torch.nn.functional as F
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset, random_split
    import pytorch_lightning as pl
    from pytorch_lightning.callbacks import ModelCheckpoint
    from pytorch_lightning.loggers import TensorBoardLogger
    from sklearn.datasets import load_digits


    class MNISTModel(pl.LightningModule):
        def __init__(self, lr=0.05):
            super().__init__()
            self.save_hyperparameters()
            self.l1 = nn.Linear(8 * 8, 64)
            self.l2 = nn.Linear(64, 10)

        def forward(self, x):
            return self.l2(torch.relu(self.l1(x.view(x.size(0), -1))))

        def training_step(self, batch, batch_nb):
            x, y = batch
            logits = self(x)
            loss = F.cross_entropy(logits, y)
            acc = (logits.argmax(dim=1) == y).float().mean()
            self.log("train_loss", loss, prog_bar=True)
            self.log("train_acc", acc, on_step=False, on_epoch=True)
            return loss

        def validation_step(self, batch, batch_nb):
            x, y = batch
            logits = self(x)
            self.log("val_loss", F.cross_entropy(logits, y), prog_bar=True)
            self.log("val_acc", (logits.argmax(dim=1) == y).float().mean(), prog_bar=True)

        def test_step(self, batch, batch_nb):
            x, y = batch
            self.log("test_acc", (self(x).argmax(dim=1) == y).float().mean())

        def configure_optimizers(self):
            return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)


    if __name__ == "__main__":
        pl.seed_everything(42)
        digits = load_digits()
        data = TensorDataset(torch.tensor(digits.data, dtype=torch.float32) / 16, torch.tensor(digits.target))
        train, val, test = random_split(data, [1300, 200, 297], generator=torch.Generator().manual_seed(0))
        model = MNISTModel()
        trainer = pl.Trainer(
            accelerator="auto",
            devices=1,
            max_epochs=5,
            logger=TensorBoardLogger("lightning_logs", name="mnist"),
            callbacks=[ModelCheckpoint(monitor="val_acc", mode="max")],
        )
        trainer.fit(model, DataLoader(train, batch_size=32, shuffle=True), DataLoader(val, batch_size=64))
        result = trainer.test(model, DataLoader(test, batch_size=64))
        best = MNISTModel.load_from_checkpoint(trainer.checkpoint_callback.best_model_path)
        print("best", trainer.checkpoint_callback.best_model_path, best.hparams.lr)
        print("test_acc", result[0]["test_acc"])
''')

EMBER_IMPORTS = {
    "import pytorch_lightning as pl": "import ember as pl",
    "from pytorch_lightning.callbacks import ModelCheckpoint": "from ember.callbacks import ModelCheckpoint",
    "from pytorch_lightning.loggers import TensorBoardLogger": "from ember.loggers import TensorBoardLogger",
}


def test_lightning_module_runs_with_import_lines_changed(tmp_path):
    script = LIGHTNING_SCRIPT
    for lightning, ember_line in EMBER_IMPORTS.items():
        assert lightning in script
        script = script.replace(lightning, ember_line)
    changed = [a for a, b in zip(LIGHTNING_SCRIPT.splitlines(), script.splitlines(), strict=True) if a != b]
    assert len(changed) == 3 and all("import" in line for line in changed)  # nothing but the imports

    (tmp_path / "train.py").write_text(script)
    done = subprocess.run([sys.executable, "train.py"], cwd=tmp_path, capture_output=True, text=True, timeout=240,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines() if line.startswith(("best", "test_acc")))
    assert float(lines["test_acc"]) > 0.9
    assert lines["best"].endswith(" 0.05") and ".ckpt" in lines["best"]
    events = list(Path(tmp_path, "lightning_logs", "mnist", "version_0").glob("events.out.tfevents.*"))
    assert events, "the TensorBoard logger wrote no event file"
