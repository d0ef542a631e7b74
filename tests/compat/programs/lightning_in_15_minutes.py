"""Lightning's doc page "Lightning in 15 minutes" (starter/introduction), its code as written there except the
MNIST download: a few seeded random images stand in, so the program runs with no network.

Run unchanged by Lightning (`python lightning_in_15_minutes.py`) and by ember (`python -m ember ...`);
tests/compat/test_runner.py compares the last line (RESULT {...}) and the files each run leaves.
"""

import json
import os

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn, optim
from torch.utils.data import DataLoader, TensorDataset

L.seed_everything(7)  # (not on the page) both runs build the same weights, so their results can be compared
encoder = nn.Sequential(nn.Linear(28 * 28, 64), nn.ReLU(), nn.Linear(64, 3))
decoder = nn.Sequential(nn.Linear(3, 64), nn.ReLU(), nn.Linear(64, 28 * 28))


class LitAutoEncoder(L.LightningModule):
    def __init__(self, encoder, decoder):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder

    def training_step(self, batch, batch_idx):
        x, _ = batch
        x = x.view(x.size(0), -1)
        z = self.encoder(x)
        x_hat = self.decoder(z)
        loss = F.mse_loss(x_hat, x)
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self):
        return optim.Adam(self.parameters(), lr=1e-3)


if __name__ == "__main__":
    autoencoder = LitAutoEncoder(encoder, decoder)
    images = torch.rand(64, 1, 28, 28, generator=torch.Generator().manual_seed(0))
    train_loader = DataLoader(TensorDataset(images, torch.zeros(64)), batch_size=16)
    trainer = L.Trainer(limit_train_batches=4, max_epochs=2)
    trainer.fit(model=autoencoder, train_dataloaders=train_loader)
    checkpoints = sorted(
        os.path.relpath(os.path.join(d, f)) for d, _, fs in os.walk(".") for f in fs if f.endswith(".ckpt")
    )
    # the page's next step: load the checkpoint and use the encoder
    restored = LitAutoEncoder.load_from_checkpoint(checkpoints[-1], encoder=encoder, decoder=decoder)
    embedding = restored.encoder(torch.ones(1, 28 * 28, device=restored.device))
    print(
        "RESULT "
        + json.dumps(
            {
                "train_loss": float(trainer.callback_metrics["train_loss"]),
                "embedding": embedding.detach().flatten().tolist(),
                "global_step": trainer.global_step,
            }
        )
    )
