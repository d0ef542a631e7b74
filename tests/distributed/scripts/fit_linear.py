"""A tiny regression trained with the ember Trainer; the tests run it as 1 or 2 processes.

    python fit_linear.py OUT_DIR [--devices N] [--batch B] [--rows R] [--epochs E] [--max-steps S]
        [--ckpt last] [--fail-rank R --fail-step S] [--kill-rank R --kill-step S] [--sigterm-rank R --sigterm-step S]
        [--max-failures K] [--shuffle] [--accumulate A]

Rank zero writes OUT_DIR/final.pt (weights, global_step, the batches each rank saw) at the end.
"""

import argparse
import os
import signal
import sys
from pathlib import Path

import torch

import ember
from ember.runtime.distributed import DDPStrategy

p = argparse.ArgumentParser()
p.add_argument("out")
p.add_argument("--devices", type=int, default=2)
p.add_argument("--batch", type=int, default=8)
p.add_argument("--rows", type=int, default=64)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--max-steps", type=int, default=-1)
p.add_argument("--ckpt", default=None)
p.add_argument("--fail-rank", type=int, default=-1)
p.add_argument("--kill-rank", type=int, default=-1)
p.add_argument("--sigterm-rank", type=int, default=-1)
p.add_argument("--at-step", type=int, default=3)
p.add_argument("--max-failures", type=int, default=0)
p.add_argument("--shuffle", action="store_true")
p.add_argument("--accumulate", type=int, default=1)
p.add_argument("--every-n-steps", type=int, default=0)
args = p.parse_args()
out = Path(args.out)
RANK = int(os.environ.get("RANK", 0))
ATTEMPT = int(os.environ.get("EMBER_RESTART_COUNT", 0))


class Regression(ember.Module):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(3, 1)
        self.seen = []

    def training_step(self, batch, batch_idx):
        x, y = batch
        self.seen.append(x[:, 0].tolist())
        step = self.trainer.global_step
        if ATTEMPT == 0 and args.fail_rank == RANK and step == args.at_step:
            raise ValueError(f"boom on rank {RANK} at step {step}")
        if ATTEMPT == 0 and args.kill_rank == RANK and step == args.at_step:
            os.kill(os.getpid(), signal.SIGKILL)
        if args.sigterm_rank == RANK and step == args.at_step and not (out / "sigterm_sent").exists():
            (out / "sigterm_sent").touch()
            os.kill(os.getpid(), signal.SIGTERM)
        loss = torch.nn.functional.mse_loss(self.layer(x[:, 1:]), y)
        self.log("train_loss", loss, on_epoch=True, sync_dist=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)


ember.seed_everything(7)
x = torch.randn(args.rows, 4, generator=torch.Generator().manual_seed(0))
x[:, 0] = torch.arange(args.rows, dtype=torch.float32)  # column 0 = row id (not a feature): who saw which row
y = x[:, 1:] @ torch.tensor([[1.0], [-2.0], [0.5]]) + 1
data = torch.utils.data.TensorDataset(x, y)
loader = torch.utils.data.DataLoader(data, batch_size=args.batch, shuffle=args.shuffle)
model = Regression()
callbacks = []
if args.every_n_steps:
    callbacks.append(ember.callbacks.ModelCheckpoint(every_n_train_steps=args.every_n_steps, save_last=True,
                                                     save_top_k=0))
strategy = DDPStrategy(max_failures=args.max_failures) if args.devices > 1 or "WORLD_SIZE" in os.environ else "auto"
trainer = ember.Trainer(
    accelerator="cpu", devices=args.devices, strategy=strategy, max_epochs=args.epochs, max_steps=args.max_steps,
    default_root_dir=out, enable_progress_bar=False, enable_model_summary=False, logger=False,
    accumulate_grad_batches=args.accumulate, callbacks=callbacks, num_sanity_val_steps=0,
)
trainer.fit(model, loader, ckpt_path=args.ckpt)
seen = trainer.strategy.all_gather(torch.tensor([len(model.seen)])) if trainer.world_size > 1 else None
if trainer.is_global_zero:
    torch.save({"state_dict": model.state_dict(), "global_step": trainer.global_step,
                "batches_per_rank": seen.flatten().tolist() if seen is not None else [len(model.seen)],
                "world_size": trainer.world_size, "seen": model.seen,
                "train_loss": float(trainer.callback_metrics.get("train_loss", float("nan")))},
               out / "final.pt")
print(f"rank {trainer.global_rank} done at step {trainer.global_step}", file=sys.stderr)
