"""AdvancedProfiler: a cProfile of every action — which functions inside it took the time."""

from __future__ import annotations

import cProfile
import io
import os
import pstats

from ember.fs import make_folders, written_by
from ember.profilers.profiler import Profiler


class AdvancedProfiler(Profiler):
    """Run each action under its own ``cProfile.Profile`` and report the functions by cumulative time.

    ``line_count_restriction`` limits each action's listing (an int: that many lines; a float in
    (0, 1]: that share of them); ``dump_stats=True`` also writes each action's raw ``.prof`` file
    beside the report (open it with ``pstats`` or snakeviz).

    Example:
        >>> profiler = AdvancedProfiler(line_count_restriction=5)
        >>> with profiler.profile("training_step"):
        ...     _ = sorted(range(1000))
        >>> "Profile stats for: training_step" in profiler.summary()
        True
    """

    def __init__(
        self,
        dirpath: str | os.PathLike[str] | None = None,
        filename: str | None = None,
        line_count_restriction: float = 1.0,
        dump_stats: bool = False,
    ) -> None:
        super().__init__(dirpath=dirpath, filename=filename)
        self.profiled_actions: dict[str, cProfile.Profile] = {}
        self.line_count_restriction = line_count_restriction
        self.dump_stats = dump_stats

    def start(self, action_name: str) -> None:
        self.profiled_actions.setdefault(action_name, cProfile.Profile()).enable()

    def stop(self, action_name: str) -> None:
        profile = self.profiled_actions.get(action_name)
        if profile is None:
            raise ValueError(
                f"Attempting to stop recording an action ({action_name}) which was never started."
            )
        profile.disable()

    def summary(self) -> str:
        texts = {}
        for action, profile in self.profiled_actions.items():
            if self.dump_stats and self.filename:
                path = self.report_path(action_name=action, extension=".prof")
                assert path is not None
                make_folders(path.parent)
                with written_by(
                    path
                ) as scratch:  # a link planted at the .prof name is replaced, not followed
                    profile.dump_stats(scratch)
            stream = io.StringIO()
            pstats.Stats(profile, stream=stream).strip_dirs().sort_stats("cumulative").print_stats(
                self.line_count_restriction
            )
            texts[action] = stream.getvalue()
        return self._stats_to_str(texts) if texts else ""

    def teardown(self, stage: str | None) -> None:
        self.profiled_actions = {}
