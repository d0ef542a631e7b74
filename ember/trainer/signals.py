"""SIGTERM and Ctrl-C: set a flag, finish the step, write one checkpoint, exit with one line.

On SIGTERM (and, inside fit, the first Ctrl-C) the handler only sets `StopRules.signal` (under DDP
the strategy first makes every rank agree on the step); the fit loop stops at the next window
boundary and calls `stop_on_signal`. A second Ctrl-C leaves at once, without a checkpoint.
"""

from __future__ import annotations

import signal
import sys
import threading
from typing import TYPE_CHECKING, Any

from ember.errors import TrainingInterrupted
from ember.fs import storage_path

if TYPE_CHECKING:
    from ember.trainer.run import Run


class SignalHandler:
    """Installed for one run, put back when it ends."""

    def __init__(self, run: Run, interrupt: bool) -> None:
        self.run = run
        self.interrupted = False  # the first Ctrl-C was seen
        # every rank, signalled or not, stops once the ranks agree (DDP: after the same step)
        run.strategy.set_stop_callback(lambda agreed: setattr(run.stop, "signal", agreed))
        self.previous: dict[int, Any] = {}
        if threading.current_thread() is not threading.main_thread():
            return
        for signum in (signal.SIGTERM, signal.SIGINT) if interrupt else (signal.SIGTERM,):
            self.previous[signum] = signal.signal(signum, self.on_signal)

    def on_signal(self, signum: int, frame: Any) -> None:
        run = self.run
        if signum == signal.SIGINT and self.interrupted:
            exit_now(run)
        if signum == signal.SIGINT:
            self.interrupted = True
            if run.strategy.is_global_zero:
                print(
                    "\nember: Ctrl-C: finishing this step and saving a checkpoint (Ctrl-C again stops at "
                    "once)",
                    file=sys.stderr,
                    flush=True,
                )
        run.strategy.on_signal(
            signum
        )  # DDP: the ranks first agree on the step to stop after; one process: at once

    def restore(self) -> None:
        for signum, handler in self.previous.items():
            signal.signal(signum, handler)
        self.previous = {}


def model_checkpoint_of(trainer: Any) -> Any:
    """The trainer's first ModelCheckpoint (it writes last.ckpt), or None; `checkpoint_callback` may be
    another kind of checkpoint callback (an OnExceptionCheckpoint), as in Lightning."""
    from ember.callbacks.model_checkpoint import ModelCheckpoint

    return next((cb for cb in trainer.callbacks if isinstance(cb, ModelCheckpoint)), None)


def _last_checkpoint(run: Run) -> str:
    ckpt = model_checkpoint_of(run.trainer)
    return ckpt.last_model_path if ckpt is not None and ckpt.last_model_path else ""


def exit_now(run: Run) -> None:
    """The second Ctrl-C: leave now (a checkpoint being written is discarded whole, never half)."""
    last = _last_checkpoint(run)
    where = (
        f"the last checkpoint is {last}; resume with fit(..., ckpt_path='last') or `ember fit --resume`"
        if last
        else "no checkpoint was written"
    )
    raise interrupted_exit(
        f"ember: second Ctrl-C, stopped at once at epoch {run.progress.epoch}, step "
        f"{run.progress.global_step} without saving; {where}"
    )


def stop_on_signal(run: Run) -> None:
    """Finish here: write last.ckpt, close loggers, exit non-zero with one line (130 after Ctrl-C)."""
    trainer = run.trainer
    received = run.stop.signal
    name = signal.Signals(received or signal.SIGTERM).name
    ckpt = model_checkpoint_of(trainer)
    path = (
        ckpt.save_now(trainer)
        if ckpt is not None
        else storage_path(trainer.log_dir or trainer.default_root_dir) / "checkpoints" / "last.ckpt"
    )
    if ckpt is None:
        trainer.save_checkpoint(str(path))  # a local path or a URL, as a user passes it
    run.reporter.finalize("interrupted")
    message = (
        f"ember: {name} received at epoch {run.progress.epoch}, step {run.progress.global_step}; checkpoint "
        f"saved to {path}; resume with fit(..., ckpt_path='last') or `ember fit --resume`"
    )
    if received == signal.SIGINT:
        raise interrupted_exit(message)
    raise TrainingInterrupted(message)


def interrupted_exit(message: str) -> TrainingInterrupted:
    """Ctrl-C ends with exit status 130 (128 + SIGINT), as shells expect; the line is printed here
    because a SystemExit with a number as its code prints nothing."""
    print(message, file=sys.stderr, flush=True)
    exit_ = TrainingInterrupted(message)
    exit_.code = 128 + signal.SIGINT
    return exit_
