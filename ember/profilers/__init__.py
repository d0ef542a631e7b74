"""Profilers: where a run's time goes, per action (Lightning's ``lightning.pytorch.profilers``).

``Trainer(profiler="simple" | "advanced" | "pytorch" | <Profiler>)`` times every hook, step and
data fetch under Lightning's action names and writes the report at the end of each stage: to
``<dirpath>/<stage>-<filename>.txt`` when a filename is given, else to the terminal. With no
profiler the Trainer wraps nothing, so an unprofiled step pays nothing.
"""

from ember.profilers.advanced import AdvancedProfiler
from ember.profilers.profiler import PassThroughProfiler, Profiler, resolve_profiler
from ember.profilers.pytorch import PyTorchProfiler
from ember.profilers.simple import SimpleProfiler

__all__ = ["AdvancedProfiler", "PassThroughProfiler", "Profiler", "PyTorchProfiler", "SimpleProfiler",
           "resolve_profiler"]
