"""Orchestration: the Trainer (Lightning-style) and the loops it runs.

`ember.trainer` vs `ember.train` — one letter apart, two different APIs:

- `ember.trainer` (this package) is the **Lightning-style** side: `ember.Trainer(...).fit(module)`
  drives an `ember.Module` through its hooks; ember owns the loop, checkpoints and resume.
- `ember.train` is the **Ray-Train-style** functional API: `TorchTrainer(train_loop_per_worker)`
  runs *your* loop function on N workers; you own the loop, ember provides the workers, the
  dataset shards, `report` and `Checkpoint`.

Inside this package (imports point down; the loops never see the Trainer's private fields):

    trainer.py       Trainer: checks options, builds the run, delegates (the set-up sequence, in order)
    properties.py    TrainerProperties: Lightning's read-only attributes, which Trainer inherits
    options.py       Options: the checked Trainer arguments the loops read (fast_dev_run applied)
    build.py         building a run step by step: strategy, callbacks, run folder, model, hooks, optimizers
    run.py           Run: the typed state of one fit/validate/test/predict call, in parts with one writer each
    data_fetch.py    Run.data: when the data is fetched, fetched again, counted (its one writer)
    batches.py       one batch preparation for every loop: transfer hooks or device, precision's dtype
    loops.py         run_stage; the fit loop, the evaluation and prediction loops; Run.loop's one writer
    optimization.py  one optimization step: backward, accumulation, clipping, scaling, schedulers
    stopping.py      StopRules: the one place that decides when fit (or an epoch) stops
    signals.py       SIGTERM / Ctrl-C: flag, checkpoint, one-line exit
    resume.py        every resume decision: which file, whether it fits, what the loops still do
    participants.py  the registry of checkpointed state; a checkpoint is their collection
    reporting.py     Reporter: metric stores behind Module.log, loggers, the NaN check
    metrics.py       MetricStore: one stage's logged values, kept on the device until a flush
    hooks.py         HookDispatcher: the one place hooks are called, in the documented order
    progress.py      Progress: where a fit is (epoch, step, batch) — the resume point
    dataloaders.py   training/evaluation data: accepted inputs, limits, resumable epoch iteration
"""

from ember.runtime.seed import seed_everything  # Lightning's lightning.pytorch.trainer offers it too
from ember.trainer.trainer import Trainer

__all__ = ["Trainer", "seed_everything"]
