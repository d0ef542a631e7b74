"""Profilers on their own: Lightning's API
(start/stop/profile/summary/describe), reports and files they write."""

from __future__ import annotations

import doctest
import importlib
import json
import pstats
import time

import pytest
import torch

from ember.errors import ConfigError
from ember.profilers import (
    AdvancedProfiler,
    PassThroughProfiler,
    PyTorchProfiler,
    SimpleProfiler,
    resolve_profiler,
)


def _slow_work() -> int:
    time.sleep(0.01)
    return sum(range(10_000))


def test_simple_profiler_times_actions_and_writes_the_stage_report(tmp_path):
    profiler = SimpleProfiler(dirpath=tmp_path, filename="perf")
    profiler.setup("fit", local_rank=None)
    for _ in range(3):
        with profiler.profile("training_step"):
            _slow_work()
    with profiler.profile("run_training_epoch"):
        pass
    durations = profiler.recorded_durations["training_step"]
    assert len(durations) == 3 and min(durations) >= 0.01
    report = profiler.summary()
    assert report.startswith("FIT Profiler Report")
    rows = [line for line in report.splitlines() if line.startswith("|  ")]
    assert rows[0].split("|")[1].strip() == "Action" and rows[1].split("|")[1].strip() == "Total"
    assert rows[2].split("|")[1].strip() == "training_step"  # the slowest action first
    assert rows[2].split("|")[3].strip() == "3"
    profiler.describe()
    profiler.setup("fit")
    profiler.describe()  # a second fit appends, as Lightning's report file does
    written = (tmp_path / "fit-perf.txt").read_text()
    assert written.count("FIT Profiler Report") == 2


def test_simple_profiler_refuses_unbalanced_actions():
    profiler = SimpleProfiler()
    profiler.start("a")
    with pytest.raises(ValueError, match="already started"):
        profiler.start("a")
    with pytest.raises(ValueError, match="never started"):
        profiler.stop("b")


def test_report_file_names_carry_stage_filename_and_rank(tmp_path):
    profiler = SimpleProfiler(dirpath=tmp_path, filename="run:1")
    profiler.setup("validate", local_rank=1)
    assert profiler.report_path() == tmp_path / "validate-run_1-1.txt"
    assert SimpleProfiler().report_path() is None  # no filename: the report goes to the terminal


def test_without_a_filename_the_report_is_printed(capsys):
    profiler = SimpleProfiler(extended=False)
    profiler.setup("test")
    with profiler.profile("test_step"):
        pass
    profiler.describe()
    err = capsys.readouterr().err
    assert "TEST Profiler Report" in err and "test_step" in err and "Num calls" not in err


def test_advanced_profiler_names_the_functions_inside_an_action(tmp_path):
    profiler = AdvancedProfiler(dirpath=tmp_path, filename="adv", dump_stats=True, line_count_restriction=10)
    profiler.setup("fit")
    with profiler.profile("training_step"):
        _slow_work()
    report = profiler.summary()
    assert "Profile stats for: training_step" in report and "_slow_work" in report
    stats = pstats.Stats(str(tmp_path / "fit-adv-training_step.prof"))
    assert any(name == "_slow_work" for (_, _, name) in stats.stats)


def test_pytorch_profiler_reports_operators_and_writes_a_chrome_trace(tmp_path):
    profiler = PyTorchProfiler(dirpath=tmp_path, filename="torch", row_limit=50)
    profiler.setup("fit")
    with profiler.profile("training_step"):
        torch.randn(64, 64) @ torch.randn(64, 64)
    profiler.describe()
    report = (tmp_path / "fit-torch.txt").read_text()
    assert "training_step" in report and "aten::mm" in report
    trace = json.loads((tmp_path / "fit-torch.pt.trace.json").read_text())
    assert any(event.get("name") == "training_step" for event in trace["traceEvents"])


def test_trainer_option_strings_resolve_and_anything_else_is_one_line():
    assert isinstance(resolve_profiler("simple"), SimpleProfiler)
    assert isinstance(resolve_profiler("Advanced"), AdvancedProfiler)
    assert isinstance(resolve_profiler("pytorch"), PyTorchProfiler)
    given = PassThroughProfiler()
    assert resolve_profiler(given) is given and resolve_profiler(None) is None
    with pytest.raises(ConfigError, match=r"profiler='xla'.*'simple', 'advanced', 'pytorch'"):
        resolve_profiler("xla")
    with pytest.raises(ConfigError, match=r"PyTorchProfiler\(record_shape=...\) is neither its option"):
        PyTorchProfiler(record_shape=True)  # torch's is record_shapes
    with pytest.raises(ConfigError, match=r"emit_nvtx=True"):
        PyTorchProfiler(emit_nvtx=True)


@pytest.mark.parametrize("name", ["profiler", "simple", "advanced", "pytorch"])
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(f"ember.profilers.{name}"), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
