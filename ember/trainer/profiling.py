"""`Trainer(profiler=...)`: the run's actions timed under Lightning's names, the report at the stage's end.

Only a run with a profiler is touched: its hook lists and its batch step are wrapped once when the
run starts (nothing is wrapped otherwise, so an unprofiled step pays nothing). Actions, as Lightning
names them: ``[Callback]<Class>.<hook>``, ``[LightningModule]<Class>.<hook>``,
``[Strategy]<Strategy class>.training_step`` (and ``validation_step``, ``test_step``, ``predict_step``: the
module's steps, which Lightning calls through its strategy) and ``run_training_batch`` (one training
batch: forward, backward, optimizer step). The report is
written by ``Profiler.describe`` when the stage ends: to ``<log_dir>/<stage>-<filename>.txt`` when
the profiler has a filename (its dirpath defaults to the run folder, as in Lightning), else printed.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ember.module import Module
from ember.profilers import Profiler
from ember.trainer.refused_hooks import overridden
from ember.trainer.run import Run


def profiled(profiler: Profiler, action: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` timed as `action` on every call.

    >>> from ember.profilers import SimpleProfiler
    >>> p = SimpleProfiler()
    >>> profiled(p, "work", lambda x: x + 1)(1), len(p.recorded_durations["work"])
    (2, 1)
    """

    @functools.wraps(fn)
    def timed(*args: Any, **kwargs: Any) -> Any:
        with profiler.profile(action):
            return fn(*args, **kwargs)

    return timed


def action_name(fn: Callable[..., Any], hook: str) -> str:
    """Lightning's action name for a hook function: ``[Callback]ModelCheckpoint.on_train_epoch_end``."""
    owner = getattr(getattr(fn, "func", fn), "__self__", None)
    from ember.callbacks.callback import Callback

    kind = "Callback" if isinstance(owner, Callback) else "LightningModule"
    return f"[{kind}]{type(owner).__name__}.{hook}"


def start_profiling(run: Run, profiler: Profiler, log_dir: str) -> None:
    """Set the profiler up for this stage and wrap the run's hooks and training batch step."""
    rank = (
        run.strategy.local_rank if run.strategy.world_size > 1 else None
    )  # Lightning: a rank only when several
    profiler.setup(stage=run.stage, local_rank=rank, log_dir=log_dir)
    assert run.hooks is not None
    run.hooks.wrap_each(lambda hook, fn: profiled(profiler, action_name(fn, hook), fn))
    if run.optimization is not None:
        # this run's optimization object only: an instance attribute shadows the method
        run.optimization.run_batch = profiled(  # type: ignore[method-assign]
            profiler, "run_training_batch", run.optimization.run_batch
        )
    strategy = type(run.strategy).__name__
    for step in _STEPS:
        if overridden(run.module, step, Module):  # timed on the instance, removed again by finish_profiling
            run.module.__dict__[step] = profiled(
                profiler, f"[Strategy]{strategy}.{step}", getattr(run.module, step)
            )


def finish_profiling(profiler: Profiler, run: Run) -> None:
    """Write the stage's report (Lightning's `profiler.describe()` at teardown) and unwrap the module's
    steps."""
    for step in _STEPS:
        run.module.__dict__.pop(step, None)
    profiler.describe()


_STEPS = ("training_step", "validation_step", "test_step", "predict_step")
