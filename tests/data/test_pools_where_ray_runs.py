"""ember.data's worker pools in a process where Ray runs: the workers never are forks of this process.

A fork copies Ray's sockets to the raylet and GCS into the child, and bytes sent or read there mix with
the parent's messages: Ray documents forking in a driver, task or actor as an anti-pattern, and in this
process it crashed the raylet ("unexpected system state" in HandleRequestWorkerLease) within a few rounds
of alternating Ray Data and ember.data work. ``ember/data/execute/spawned.py`` forks such workers from a
zygote instead: one fresh interpreter per process, which holds nothing of Ray.
"""

from __future__ import annotations

import pytest

import ember.data
from tests._procs import child_pids, command_line
from tests.data._where_am_i import WhereAmI

pytest.importorskip("ray.data")


def test_workers_come_from_one_zygote_and_ray_keeps_working_beside_them(local_ray):
    for _ in range(3):  # the forked pools crashed the raylet within a few such rounds
        assert local_ray.data.range(1000).map(lambda r: {"id": r["id"] * 2}).take(2) == [{"id": 0}, {"id": 2}]
        rows = ember.data.range(1000).map_batches(WhereAmI, concurrency=2, batch_size=100).take_all()
        assert [r["id"] for r in rows] == list(range(1000)) and all(r["spawned"] for r in rows)
        doubled = ember.data.range(1000).map(lambda r: {"id": r["id"] * 2}, concurrency=2).take(3)
        assert doubled == [{"id": 0}, {"id": 2}, {"id": 4}]
    assert all(node["Alive"] for node in local_ray.nodes())
    # the pools are done: their workers have ended, and the zygote after its last one
    assert not [pid for pid in child_pids() if b"ember.processes.zygote_main" in command_line(pid)]


def test_a_worker_of_the_zygote_has_this_process_environment_and_folder(local_ray, tmp_path, monkeypatch):
    # the zygote starts with the environment and folder of its moment and serves every pool running
    # beside that one; each worker takes this process's as they are when the pool starts it
    first = iter(ember.data.range(1000, override_num_blocks=10).map(lambda r: r, concurrency=2).iter_rows())
    next(first)  # a pool of the zygote's workers, still running
    monkeypatch.setenv("EMBER_TEST_SEEN_BY_WORKER", "yes")
    monkeypatch.chdir(tmp_path)
    rows = ember.data.range(2).map(_environment_and_folder, concurrency=1).take_all()
    assert {(r["variable"], r["folder"]) for r in rows} == {("yes", str(tmp_path))}
    assert len(list(first)) == 999


def _environment_and_folder(row):
    import os

    return {"variable": os.environ.get("EMBER_TEST_SEEN_BY_WORKER"), "folder": os.getcwd()}
