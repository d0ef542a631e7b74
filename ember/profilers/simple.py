"""SimpleProfiler: the wall time of every action — mean, calls, total, share of the stage."""

from __future__ import annotations

import math
import os
import time
from collections import defaultdict

from ember.profilers.profiler import Profiler


class SimpleProfiler(Profiler):
    """Record how long each action takes; report mean and total per action (with ``extended``, also the
    number of calls and the share of the stage's wall time), slowest first.

    Starting an action that is running, or stopping one that is not, raises ``ValueError`` (a bug in
    the caller, as in Lightning).

    Example:
        >>> profiler = SimpleProfiler()
        >>> for _ in range(3):
        ...     with profiler.profile("training_step"):
        ...         pass
        >>> len(profiler.recorded_durations["training_step"])
        3
        >>> "training_step" in profiler.summary()
        True
    """

    def __init__(
        self,
        dirpath: str | os.PathLike[str] | None = None,
        filename: str | None = None,
        extended: bool = True,
    ) -> None:
        super().__init__(dirpath=dirpath, filename=filename)
        self.current_actions: dict[str, float] = {}
        self.recorded_durations: dict[str, list[float]] = defaultdict(list)
        self.extended = extended
        self.start_time = time.perf_counter()

    def start(self, action_name: str) -> None:
        if action_name in self.current_actions:
            raise ValueError(f"Attempted to start {action_name} which has already started.")
        self.current_actions[action_name] = time.perf_counter()

    def stop(self, action_name: str) -> None:
        now = time.perf_counter()
        if action_name not in self.current_actions:
            raise ValueError(
                f"Attempting to stop recording an action ({action_name}) which was never started."
            )
        self.recorded_durations[action_name].append(now - self.current_actions.pop(action_name))

    def summary(self) -> str:
        if not self.recorded_durations:
            return ""
        title = f"{self._stage.upper()} Profiler Report" if self._stage else "Profiler Report"
        stage_seconds = time.perf_counter() - self.start_time
        rows = []
        for action, durations in self.recorded_durations.items():
            total = math.fsum(durations)
            rows.append(
                (action, total / len(durations), len(durations), total, 100.0 * total / stage_seconds)
            )
        if self.extended:
            rows.sort(key=lambda row: row[3], reverse=True)
            header: tuple[str, ...] = (
                "Action",
                "Mean duration (s)",
                "Num calls",
                "Total time (s)",
                "Percentage %",
            )
            table: list[tuple[str, ...]] = [
                ("Total", "-", str(sum(r[2] for r in rows)), f"{stage_seconds:.5}", "100 %")
            ]
            table += [(a, f"{m:.5}", str(n), f"{t:.5}", f"{p:.5}") for a, m, n, t, p in rows]
        else:
            rows.sort(key=lambda row: row[1], reverse=True)
            header = ("Action", "Mean duration (s)", "Total time (s)")
            table = [(a, f"{m:.5}", f"{t:.5}") for a, m, _, t, _ in rows]
        return os.linesep.join([title, *_table(header, table)]) + os.linesep


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows, strict=True)]

    def line(cells: tuple[str, ...]) -> str:
        return (
            "|  " + "  |  ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True)) + "  |"
        )

    rule = "-" * len(line(header))
    return [rule, line(header), rule, *(line(row) for row in rows), rule]
