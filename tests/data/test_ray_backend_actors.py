"""Class-UDF actors on Ray start as Ray Data's own do: nothing imported that the UDF does not use.

An ember actor used to import torch to set its thread count before building the UDF; that import
alone was seconds of each actor's start, and the actor pool's first batch waits for its actors.
Threads are now limited as the local executor's workers limit them, so a UDF that loads torch gets
the same thread count locally and on Ray, and one that does not never pays for torch.
"""

from __future__ import annotations

import os
import sys

os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # read when Ray is first imported
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import ember.data  # noqa: E402

ray = pytest.importorskip("ray")


def udf(name: str) -> type:
    """This module's class ``name`` as Ray workers can import it: by its package path (pytest may
    import this file under another name, which the workers could not find)."""
    import importlib

    return getattr(importlib.import_module("tests.data.test_ray_backend_actors"), name)


class ReportsTorchLoaded:
    """Tags each row with whether torch is loaded in the process running it (it never imports torch)."""

    def __call__(self, batch):
        return {**batch, "torch_loaded": np.full(len(batch["id"]), "torch" in sys.modules)}


class ReportsTorchThreads:
    """Loads torch in its constructor (as a model would) and tags each row with torch's thread count."""

    def __init__(self) -> None:
        import torch

        self.threads = torch.get_num_threads()

    def __call__(self, batch):
        return {**batch, "threads": np.full(len(batch["id"]), self.threads)}


def test_an_actor_whose_udf_does_not_use_torch_never_imports_it(ray_execution):
    ds = ember.data.range(8, override_num_blocks=2).map_batches(
        udf("ReportsTorchLoaded"), concurrency=1, num_cpus=0.5
    )
    rows = ray_execution(ds.take_all)
    assert [r["id"] for r in rows] == list(range(8))
    assert {r["torch_loaded"] for r in rows} == {False}


@pytest.mark.parametrize("threads", [1, 2])
def test_a_udf_that_loads_torch_gets_the_thread_count_of_the_setting_on_ray(ray_execution, threads):
    """The local rule (``pool.py``: ``worker_torch_threads`` for each worker), checked on Ray only: a local
    class-UDF run forks this process, and a fork of a process connected to Ray can crash the raylet."""
    context = ember.data.DataContext.get_current()
    before, context.worker_torch_threads = context.worker_torch_threads, threads
    try:
        ds = ember.data.range(6, override_num_blocks=2).map_batches(
            udf("ReportsTorchThreads"), concurrency=1, num_cpus=0.5
        )
        rows = ray_execution(ds.take_all)
    finally:
        context.worker_torch_threads = before
    assert [r["id"] for r in rows] == list(range(6))
    assert {r["threads"] for r in rows} == {threads}
