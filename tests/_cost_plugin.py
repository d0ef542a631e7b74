"""Where the suite's time goes, per test: ``pytest -p tests._cost_plugin`` with ``EMBER_TEST_COSTS=FILE``.

Appends one JSON line per test to FILE: the xdist ``worker`` that ran it and its ``start`` (epoch seconds:
a run's timeline per worker), ``wall`` seconds (setup, call and teardown), ``self`` CPU seconds
of this pytest process, ``child`` CPU seconds of the processes it waited for, and ``busy`` CPU seconds of
the whole machine meanwhile (from /proc/stat: Ray's daemons and a test's unwaited processes included, but
also anything else running, so only meaningful in a one-process run on an otherwise idle machine).
The suite is CPU-bound on a small machine: these, not wall times, say what a change saved.
``RAY_MODULE_SECONDS`` in tests/conftest.py was taken with it.
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Iterator
from typing import Any

import pytest

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _machine_busy_seconds() -> float:
    with open("/proc/stat") as stat:
        fields = [int(v) for v in stat.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    return (sum(fields) - idle) / _CLOCK_TICKS


def _cpu_seconds() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    waited = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, waited.ru_utime + waited.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[Any]:
    path = os.environ.get("EMBER_TEST_COSTS")
    if not path:
        yield
        return
    started, wall = time.time(), time.perf_counter()
    busy, (own, waited) = _machine_busy_seconds(), _cpu_seconds()
    yield
    own_after, waited_after = _cpu_seconds()
    row = {
        "id": item.nodeid,
        "worker": os.environ.get("PYTEST_XDIST_WORKER", "main"),
        "start": round(started, 3),
        "wall": round(time.perf_counter() - wall, 3),
        "self": round(own_after - own, 3),
        "child": round(waited_after - waited, 3),
        "busy": round(_machine_busy_seconds() - busy, 3),
    }
    with open(path, "a") as out:  # one short line per write: workers of one run can share the file
        out.write(json.dumps(row) + "\n")
