"""A training script the resume tests run as a real process, kill, and run again.

    python _fit_script.py ROOT OUT [--resume] [--die-at STEP] [--term-at STEP] [--workers N]
        [--die-in-save-at STEP [--save-fraction F]] [--die-at-rename STEP:N] [--pause-at STEP]

Trains DigitsMLP (dropout, so RNG matters) with a shuffling DataLoader for 3 epochs, a checkpoint every
7 steps (not aligned with the 47-batch epochs), and saves the final weights and the steps it ran to OUT.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from _models import DigitsMLP, digits_loaders, seeded  # noqa: E402

import ember  # noqa: E402

CURRENT_STEP = [0]


class Steps(ember.Callback):
    """Records the global steps this process trained, and kills it at a chosen one."""

    def __init__(self, die_at: int | None, term_at: int | None, pause_at: int | None = None) -> None:
        self.steps: list[int] = []
        self.die_at, self.term_at, self.pause_at = die_at, term_at, pause_at

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
        self.steps.append(trainer.global_step)
        CURRENT_STEP[0] = trainer.global_step
        if trainer.global_step == self.pause_at:
            print(f"paused at step {trainer.global_step}", flush=True)  # the test sends its signals now
            time.sleep(3)
        if trainer.global_step == self.die_at:
            os.kill(os.getpid(), signal.SIGKILL)  # no cleanup, no atexit: like a lost machine
        if trainer.global_step == self.term_at:
            os.kill(os.getpid(), signal.SIGTERM)  # like a preemption notice


def die_at_rename(at_step: int, nth: int) -> None:
    """SIGKILL just before the `nth` rename of a complete temporary file at `at_step` (1: the step's
    checkpoint, 2: the last.ckpt link): the temporary is whole, only the rename is lost."""
    from ember.fs import is_temporary

    real_replace, seen = os.replace, [0]

    def replace(src, dst, *args, **kwargs):
        if CURRENT_STEP[0] == at_step and is_temporary(Path(src).name):
            seen[0] += 1
            if seen[0] == nth:
                os.kill(os.getpid(), signal.SIGKILL)
        return real_replace(src, dst, *args, **kwargs)

    os.replace = replace


def die_halfway_through_saving(at_step: int, fraction: float = 0.5) -> None:
    """Make the checkpoint write of `at_step` stop dead after `fraction` of its bytes, as a power cut
    would."""
    import io

    real_save = torch.save

    def save(obj, f, *args, **kwargs):
        if not isinstance(obj, dict) or obj.get("progress", {}).get("global_step") != at_step:
            return real_save(obj, f, *args, **kwargs)
        buffer = io.BytesIO()
        real_save(obj, buffer, *args, **kwargs)
        f.write(buffer.getvalue()[: int(len(buffer.getvalue()) * fraction)])
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
    parser.add_argument(
        "--die-in-save-at", type=int, help="SIGKILL halfway through writing this step's checkpoint"
    )
    parser.add_argument("--save-fraction", type=float, default=0.5)
    parser.add_argument("--die-at-rename", help="STEP:N, SIGKILL before the N-th rename at STEP")
    parser.add_argument("--pause-at", type=int, help="sleep 3 s after this step (for signals from the test)")
    args = parser.parse_args()
    if args.die_in_save_at:
        die_halfway_through_saving(at_step=args.die_in_save_at, fraction=args.save_fraction)
    if args.die_at_rename:
        step, nth = map(int, args.die_at_rename.split(":"))
        die_at_rename(step, nth)

    seeded(0)  # the script starts the same way whether it resumes or not
    model = DigitsMLP()
    train, val = digits_loaders(num_workers=args.workers)
    steps = Steps(args.die_at, args.term_at, args.pause_at)
    trainer = ember.Trainer(
        max_epochs=3,
        default_root_dir=args.root,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[steps, ember.ModelCheckpoint(every_n_train_steps=7, save_last=True, save_top_k=-1)],
        val_check_interval=20,
    )
    trainer.fit(model, train, val, ckpt_path="last" if args.resume else None)
    torch.save(
        {
            "weights": model.state_dict(),
            "steps": steps.steps,
            "val_loss": trainer.callback_metrics["val_loss"],
        },
        args.out,
    )


if __name__ == "__main__":
    main()
