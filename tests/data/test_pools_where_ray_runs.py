"""ember.data's worker pools in a process where Ray runs: the workers are started fresh, never forked.

A fork copies Ray's sockets to the raylet and GCS into the child, and bytes sent or read there mix with
the parent's messages: Ray documents forking in a driver, task or actor as an anti-pattern, and in this
process it crashed the raylet ("unexpected system state" in HandleRequestWorkerLease) within a few rounds
of alternating Ray Data and ember.data work. ``ember/data/execute/spawned.py`` starts such workers as
fresh interpreters instead.
"""

from __future__ import annotations

import pytest

import ember.data
from tests._procs import child_pids
from tests.data._where_am_i import WhereAmI

pytest.importorskip("ray.data")


def test_workers_are_fresh_processes_and_ray_keeps_working_beside_them(local_ray):
    for _ in range(3):  # the forked pools crashed the raylet within a few such rounds
        assert local_ray.data.range(1000).map(lambda r: {"id": r["id"] * 2}).take(2) == [{"id": 0}, {"id": 2}]
        rows = ember.data.range(1000).map_batches(WhereAmI, concurrency=2, batch_size=100).take_all()
        assert [r["id"] for r in rows] == list(range(1000)) and all(r["spawned"] for r in rows)
        doubled = ember.data.range(1000).map(lambda r: {"id": r["id"] * 2}, concurrency=2).take(3)
        assert doubled == [{"id": 0}, {"id": 2}, {"id": 4}]
    assert all(node["Alive"] for node in local_ray.nodes())
    assert not [pid for pid in child_pids() if b"ember.data.execute.spawned_worker" in _command_line(pid)]


def _command_line(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:  # ended meanwhile
        return b""
