"""A training script the resume tests run as a real process, kill, and run again.

    python _fit_script.py ROOT OUT [--resume] [--die-at STEP] [--term-at STEP] [--workers N]

Trains DigitsMLP (dropout, so RNG matters) with a shuffling DataLoader for 3 epochs, a checkpoint every
7 steps (not aligned with the 47-batch epochs), and saves the final weights and the steps it ran to OUT.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from _models import DigitsMLP, digits_loaders, seeded  # noqa: E402

import ember  # noqa: E402


class Steps(ember.Callback):
    """Records the global steps this process trained, and kills it at a chosen one."""

    def __init__(self, die_at: int | None, term_at: int | None) -> None:
        self.steps: list[int] = []
        self.die_at, self.term_at = die_at, term_at

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
        self.steps.append(trainer.global_step)
        if trainer.global_step == self.die_at:
            os.kill(os.getpid(), signal.SIGKILL)  # no cleanup, no atexit: like a lost machine
        if trainer.global_step == self.term_at:
            os.kill(os.getpid(), signal.SIGTERM)  # like a preemption notice


def die_halfway_through_saving(at_step: int) -> None:
    """Make the checkpoint write of `at_step` stop dead after half its bytes, as a power cut would."""
    import io

    real_save = torch.save

    def save(obj, f, *args, **kwargs):
        if not isinstance(obj, dict) or obj.get("progress", {}).get("global_step") != at_step:
            return real_save(obj, f, *args, **kwargs)
        buffer = io.BytesIO()
        real_save(obj, buffer, *args, **kwargs)
        f.write(buffer.getvalue()[: len(buffer.getvalue()) // 2])
        f.flush()
        os.kill(os.getpid(), signal.SIGKILL)

    torch.save = save


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("root")
    parser.add_argument("out")
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--die-at", type=int)
    parser.add_argument("--term-at", type=int)
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--die-in-save-at", type=int, help="SIGKILL halfway through writing this step's checkpoint")
    args = parser.parse_args()
    if args.die_in_save_at:
        die_halfway_through_saving(at_step=args.die_in_save_at)

    seeded(0)  # the script starts the same way whether it resumes or not
    model = DigitsMLP()
    train, val = digits_loaders(num_workers=args.workers)
    steps = Steps(args.die_at, args.term_at)
    trainer = ember.Trainer(
        max_epochs=3, default_root_dir=args.root, enable_progress_bar=False, enable_model_summary=False,
        callbacks=[steps, ember.ModelCheckpoint(every_n_train_steps=7, save_last=True, save_top_k=-1)],
        val_check_interval=20,
    )
    trainer.fit(model, train, val, ckpt_path="last" if args.resume else None)
    torch.save({"weights": model.state_dict(), "steps": steps.steps,
                "val_loss": trainer.callback_metrics["val_loss"]}, args.out)


if __name__ == "__main__":
    main()
