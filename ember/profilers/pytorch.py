"""PyTorchProfiler: torch.profiler over the stage — operator-level CPU (and CUDA) time per action."""

from __future__ import annotations

import inspect
import os
from typing import Any

import torch

from ember.errors import ConfigError
from ember.fs import make_folders, written_by
from ember.profilers.profiler import Profiler


class PyTorchProfiler(Profiler):
    """Profile the stage with ``torch.profiler``; every action is a ``record_function`` range, so the
    operator table shows the actions beside the kernels they ran.

    The report is ``key_averages().table(sort_by=sort_by_key, row_limit=row_limit)``; with
    ``export_to_chrome`` (and a ``filename``) a Chrome trace is written beside it
    (``<stage>-<filename>.pt.trace.json``, open in chrome://tracing or Perfetto). Extra keyword
    arguments go to ``torch.profiler.profile`` (e.g. ``record_shapes=True``, ``profile_memory=True``).

    Example:
        >>> profiler = PyTorchProfiler(row_limit=5)
        >>> profiler.setup("fit")
        >>> with profiler.profile("training_step"):
        ...     _ = torch.ones(8, 8) @ torch.ones(8, 8)
        >>> "training_step" in profiler.summary()
        True
    """

    def __init__(
        self,
        dirpath: str | os.PathLike[str] | None = None,
        filename: str | None = None,
        group_by_input_shapes: bool = False,
        export_to_chrome: bool = True,
        row_limit: int = 20,
        sort_by_key: str | None = None,
        record_module_names: bool = True,
        table_kwargs: dict[str, Any] | None = None,
        emit_nvtx: bool = False,
        **profiler_kwargs: Any,
    ) -> None:
        super().__init__(dirpath=dirpath, filename=filename)
        if emit_nvtx:
            raise ConfigError(
                "PyTorchProfiler(emit_nvtx=True) (NVTX ranges for nsys) is not supported by ember; "
                "run under nsys with torch.autograd.profiler.emit_nvtx() yourself"
            )
        accepted = inspect.signature(torch.profiler.profile).parameters
        unknown = sorted(set(profiler_kwargs) - set(accepted))
        if unknown:
            raise ConfigError(
                f"PyTorchProfiler({unknown[0]}=...) is neither its option nor torch.profiler.profile's; "
                f"torch's are: {', '.join(n for n in accepted if n != 'self')}"
            )
        self._group_by_input_shapes = group_by_input_shapes and profiler_kwargs.get("record_shapes", False)
        self._export_to_chrome = export_to_chrome
        self._row_limit = row_limit
        cuda = torch.cuda.is_available()
        self._sort_by_key = sort_by_key or ("cuda_time_total" if cuda else "cpu_time_total")
        self._record_module_names = record_module_names
        self._table_kwargs = table_kwargs or {}
        activities = [torch.profiler.ProfilerActivity.CPU] + (
            [torch.profiler.ProfilerActivity.CUDA] if cuda else []
        )
        self._profiler_kwargs = {"activities": activities, **profiler_kwargs}
        self._profiler: Any = None
        self._ranges: dict[str, Any] = {}
        self._events: Any = None

    def start(self, action_name: str) -> None:
        if self._profiler is None:
            self._profiler = torch.profiler.profile(**self._profiler_kwargs)
            self._profiler.__enter__()
        scope = torch.autograd.profiler.record_function(action_name)
        scope.__enter__()
        self._ranges[action_name] = scope

    def stop(self, action_name: str) -> None:
        scope = self._ranges.pop(action_name, None)
        if scope is None:
            raise ValueError(
                f"Attempting to stop recording an action ({action_name}) which was never started."
            )
        scope.__exit__(None, None, None)

    def summary(self) -> str:
        self._finish()
        if self._events is None:
            return ""
        table = self._events.key_averages(group_by_input_shapes=self._group_by_input_shapes).table(
            sort_by=self._sort_by_key, row_limit=self._row_limit, **self._table_kwargs
        )
        return self._stats_to_str({"records": table})

    def teardown(self, stage: str | None) -> None:
        self._finish()
        self._events = None

    def _finish(self) -> None:
        if self._profiler is None:
            return
        for scope in self._ranges.values():
            scope.__exit__(None, None, None)
        self._ranges = {}
        self._profiler.__exit__(None, None, None)
        self._events = self._profiler.events()
        if self._export_to_chrome and self.filename:
            path = self.report_path(extension=".pt.trace.json")
            assert path is not None
            make_folders(path.parent)
            with written_by(path) as scratch:  # a link planted at the trace's name is replaced, not followed
                self._profiler.export_chrome_trace(str(scratch))
        self._profiler = None


from ember.paths import refused_names  # noqa: E402 - Lightning's other names refuse use (docs/lightning_paths.md)

__getattr__ = refused_names(__name__)
