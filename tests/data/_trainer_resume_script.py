"""Trains on an ember.data Dataset through ember.Trainer; SIGKILLs itself at a chosen step.

Usage: python _trainer_resume_script.py ROOT LOG KILL_AT_STEP (-1: never) [seedless]
With ``seedless``, the shuffles get no seed (each run draws its own): the first run writes the
batches its two epochs will give to LOG.expected, which resumed runs must continue exactly.
Each training step appends the sample ids it saw to LOG (flushed and fsynced) before the step
returns, so the log records exactly what the model trained on.
"""

from __future__ import annotations

import os
import signal
import sys

import torch

import ember
import ember.data


class Recorder(ember.Module):
    def __init__(self, log_path: str, kill_at: int) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(1, 1)
        self.log_path, self.kill_at = log_path, kill_at

    def training_step(self, batch, batch_idx):
        if self.trainer.global_step == self.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)  # after the checkpoint of the previous step
        with open(self.log_path, "a") as f:
            f.write(" ".join(str(int(i)) for i in batch["id"]) + "\n")
            f.flush()
            os.fsync(f.fileno())
        return self.layer(batch["id"].float()[:, None]).pow(2).mean()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=1e-6)


def main(root: str, log_path: str, kill_at: int, seedless: bool = False) -> None:
    if seedless:
        dataset = ember.data.range(40, override_num_blocks=3).random_shuffle()
        batches = dataset.iter_torch_batches(batch_size=4, local_shuffle_buffer_size=8)
        if not os.path.exists(log_path + ".expected"):
            write_expected(dataset, batches, log_path + ".expected")
    else:
        dataset = ember.data.range(40, override_num_blocks=3).random_shuffle(
            seed=ember.data.RandomSeedConfig(seed=3)
        )
        batches = dataset.iter_torch_batches(batch_size=4, local_shuffle_buffer_size=8, local_shuffle_seed=5)
    trainer = ember.Trainer(
        max_epochs=2,
        default_root_dir=root,
        enable_progress_bar=False,
        logger=False,
        callbacks=[ember.callbacks.ModelCheckpoint(dirpath=root, every_n_train_steps=1, save_last=True)],
    )
    trainer.fit(Recorder(log_path, kill_at), train_dataloaders=batches, ckpt_path="last")


def write_expected(dataset, batches, path: str) -> None:
    """The two epochs' batches of an iterable with ``batches``'s seeds (its state holds them all)."""
    twin = dataset.iter_torch_batches(batch_size=4, local_shuffle_buffer_size=8)
    twin.load_state_dict(batches.state_dict())
    lines = [" ".join(str(int(i)) for i in batch["id"]) for _ in range(2) for batch in twin]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:] == ["seedless"])
