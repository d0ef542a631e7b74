"""Profilers: where a run's time goes, per action (Lightning's ``lightning.pytorch.profilers``).

``Trainer(profiler="simple" | "advanced" | "pytorch" | <Profiler>)`` times every hook, step and
data fetch under Lightning's action names and writes the report at the end of each stage: to
``<dirpath>/<stage>-<filename>.txt`` when a filename is given, else to the terminal. With no
profiler the Trainer wraps nothing, so an unprofiled step pays nothing.
"""

from typing import Any

from ember.errors import ConfigError
from ember.profilers.advanced import AdvancedProfiler
from ember.profilers.profiler import PassThroughProfiler, Profiler
from ember.profilers.pytorch import PyTorchProfiler
from ember.profilers.simple import SimpleProfiler

__all__ = [
    "AdvancedProfiler",
    "PassThroughProfiler",
    "Profiler",
    "PyTorchProfiler",
    "SimpleProfiler",
    "resolve_profiler",
]


def resolve_profiler(profiler: Any) -> Profiler | None:
    """The profiler a Trainer option names: None, "simple", "advanced", "pytorch" or a Profiler.

    >>> type(resolve_profiler("simple")).__name__, resolve_profiler(None)
    ('SimpleProfiler', None)
    """
    if profiler is None or isinstance(profiler, Profiler):
        return profiler
    if isinstance(profiler, str):
        choices: dict[str, type[Profiler]] = {
            "simple": SimpleProfiler,
            "advanced": AdvancedProfiler,
            "pytorch": PyTorchProfiler,
        }
        if profiler.lower() in choices:
            return choices[profiler.lower()]()
    raise ConfigError(
        f"Trainer(profiler={profiler!r}) is not a profiler; use 'simple', 'advanced', 'pytorch', "
        "an ember.profilers.Profiler instance, or None"
    )


from ember.paths import refused_names  # noqa: E402 - Lightning's other names refuse use (docs/lightning_paths.md)

__getattr__ = refused_names(__name__)
