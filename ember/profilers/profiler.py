"""The profiler protocol: start/stop an action, summarize, describe (write the report) per stage."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ember.fs import make_folders, open_for_append


class Profiler:
    """Base class: subclasses implement ``start``, ``stop`` and ``summary``.

    ``setup(stage, local_rank, log_dir)`` runs when a Trainer stage begins (``dirpath`` defaults to
    the run's log folder); ``describe()`` at its end writes ``summary()`` to
    ``<dirpath>/<stage>-<filename>[-<rank>].txt`` (appended, like Lightning) when ``filename`` is set,
    otherwise prints it on local rank zero.

    Example:
        >>> class Counting(Profiler):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.calls = {}
        ...     def start(self, action_name):
        ...         self.calls[action_name] = self.calls.get(action_name, 0) + 1
        ...     def stop(self, action_name):
        ...         pass
        >>> profiler = Counting()
        >>> with profiler.profile("training_step"):
        ...     pass
        >>> profiler.calls
        {'training_step': 1}
    """

    def __init__(self, dirpath: str | os.PathLike[str] | None = None, filename: str | None = None) -> None:
        self.dirpath = dirpath
        self.filename = filename
        self._stage: str | None = None
        self._local_rank: int | None = None

    def start(self, action_name: str) -> None:
        raise NotImplementedError(f"{type(self).__name__} must define start(action_name)")

    def stop(self, action_name: str) -> None:
        raise NotImplementedError(f"{type(self).__name__} must define stop(action_name)")

    def summary(self) -> str:
        return ""

    @contextmanager
    def profile(self, action_name: str) -> Iterator[None]:
        """Time the body of a ``with`` block as ``action_name``."""
        try:
            self.start(action_name)
            yield
        finally:
            self.stop(action_name)

    def setup(
        self, stage: str, local_rank: int | None = None, log_dir: str | os.PathLike[str] | None = None
    ) -> None:
        self._stage = stage
        self._local_rank = local_rank
        self.dirpath = self.dirpath or log_dir

    def teardown(self, stage: str | None) -> None:
        """Release what the stage held (the base class holds nothing)."""

    def describe(self) -> None:
        """Write the report of the stage that ends now, then tear down."""
        report = self.summary()
        if report:
            self._write(report)
        self.teardown(stage=self._stage)

    @property
    def local_rank(self) -> int:
        return 0 if self._local_rank is None else self._local_rank

    def report_path(self, action_name: str | None = None, extension: str = ".txt") -> Path | None:
        """Where ``describe`` writes: ``<dirpath>/<stage>-<filename>[-<rank>][-<action>]<extension>``."""
        if not self.filename:
            return None
        parts = [
            p
            for p in (
                self._stage,
                self.filename,
                None if self._local_rank is None else str(self._local_rank),
                action_name,
            )
            if p is not None
        ]
        name = re.sub(r"_+", "_", re.sub(r"[\\/:*?\"<>|\n\r\t]", "_", "-".join(parts))).strip() or "profile"
        return Path(self.dirpath or ".") / (name + extension)

    def _write(self, report: str) -> None:
        path = self.report_path()
        if path is None:
            if self.local_rank == 0:
                print(report, file=sys.stderr)
            return
        make_folders(path.parent)
        with open_for_append(path) as stream:
            stream.write(report)

    def _stats_to_str(self, stats: dict[str, str]) -> str:
        """One report from per-action texts (the advanced and PyTorch profilers' layout)."""
        lines = [f"{self._stage.upper()} Profiler Report" if self._stage else "Profiler Report"]
        rank = "" if self._local_rank is None else f" rank: {self._local_rank}"
        for action, text in stats.items():
            lines += [f"Profile stats for: {action}{rank}", text]
        return os.linesep.join(lines)


class PassThroughProfiler(Profiler):
    """Records nothing (what ``profiler=None`` means; the Trainer then skips profiling entirely)."""

    def start(self, action_name: str) -> None:
        pass

    def stop(self, action_name: str) -> None:
        pass
