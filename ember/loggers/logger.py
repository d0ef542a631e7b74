"""What a custom logger written as Lightning's docs show imports: `Logger`, and the rank-zero decorators
(`rank_zero_only` for its writing methods, `rank_zero_experiment` for its `experiment` property).

Lightning keeps `rank_zero_only` in ``lightning.pytorch.utilities``; ember keeps it here, beside `Logger`.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any, TypeVar

from ember.loggers.base import Logger

__all__ = ["DummyLogger", "Logger", "rank_zero_experiment", "rank_zero_only"]

F = TypeVar("F", bound=Callable[..., Any])


def global_rank() -> int:
    """This process's global rank: torch.distributed's once a process group exists, else the launcher's RANK.

    >>> global_rank()
    0
    """
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank()
    return int(os.environ.get("RANK", "0"))


def rank_zero_only(fn: F) -> F:
    """Run `fn` on global rank zero only; elsewhere the call does nothing and returns None (Lightning's).

    Example:
        >>> @rank_zero_only
        ... def hello(name):
        ...     return f"hello {name}"
        >>> hello("rank 0")
        'hello rank 0'
    """

    @functools.wraps(fn)
    def on_rank_zero(*args: Any, **kwargs: Any) -> Any:
        if global_rank() == 0:
            return fn(*args, **kwargs)
        return None

    return on_rank_zero  # type: ignore[return-value]


class _DummyExperiment:
    """What `experiment` is on the other ranks: every method call does nothing."""

    def nop(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __getattr__(self, _: str) -> Callable[..., None]:
        return self.nop

    def __getitem__(self, _: Any) -> _DummyExperiment:
        return self


def rank_zero_experiment(fn: Callable[..., Any]) -> Callable[..., Any]:
    """For a logger's `experiment` property: the real object on rank zero, a do-nothing stand-in elsewhere.

    Example:
        >>> class MyLogger(Logger):
        ...     @property
        ...     @rank_zero_experiment
        ...     def experiment(self):
        ...         return {"runs": 1}
        >>> MyLogger().experiment
        {'runs': 1}
    """

    @functools.wraps(fn)
    def experiment(self: Any) -> Any:
        return fn(self) if global_rank() == 0 else _DummyExperiment()

    return experiment


class DummyLogger(Logger):
    """The logger `fast_dev_run` puts in place of the user's (Lightning's): it keeps `trainer.loggers`
    non-empty (so code reading `trainer.logger` runs) while writing nothing; no folder, `log_dir` None.

    Example:
        >>> logger = DummyLogger()
        >>> logger.log_metrics({"loss": 1.0}, step=0)
        >>> logger.name, logger.version, logger.log_dir
        ('', '', None)
        >>> logger.experiment.add_scalar("loss", 1.0)
    """

    def __init__(self) -> None:
        super().__init__(save_dir=None, name="", version="")

    @property
    def experiment(self) -> _DummyExperiment:
        return _DummyExperiment()

    def log_metrics(self, metrics: dict[str, float], step: int | None = None) -> None:
        pass

    def log_hyperparams(self, params: Any, *args: Any, **kwargs: Any) -> None:
        pass


from ember.paths import refused_names  # noqa: E402 - Lightning's other names refuse use (docs/lightning_paths.md)

__getattr__ = refused_names(__name__)
