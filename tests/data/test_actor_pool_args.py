"""ActorPoolStrategy's Ray 2.60 arguments: initial_size starts that many workers; the per-actor queueing
arguments are checked as Ray checks them and leave results unchanged; concurrent UDF calls in one actor
(enable_true_multi_threading with max_concurrent_calls_per_actor > 1), which ember's workers do not run, are
refused in one line."""

from __future__ import annotations

import os

import pytest

import ember.data
from tests.data._pool_probe import Probe


@pytest.mark.parametrize("initial", [1, 2])
def test_initial_size_is_how_many_workers_start(tmp_path, initial):
    folder = tmp_path / str(initial)
    folder.mkdir()
    strategy = ember.data.ActorPoolStrategy(min_size=1, max_size=2, initial_size=initial)
    rows = (
        ember.data.range(4)
        .map_batches(Probe, fn_constructor_args=(str(folder),), compute=strategy)
        .take_all()
    )
    assert [r["id"] for r in rows] == [0, 2, 4, 6]
    assert len(os.listdir(folder)) == initial  # one batch: a pool started with one worker never grows


def test_queueing_arguments_leave_the_result_unchanged(tmp_path):
    strategy = ember.data.ActorPoolStrategy(
        size=2,
        max_tasks_in_flight_per_actor=4,
        max_concurrent_calls_per_actor=2,
        enable_true_multi_threading=False,
    )
    ds = ember.data.range(40, override_num_blocks=4).map_batches(
        Probe, fn_constructor_args=(str(tmp_path),), compute=strategy, batch_size=5
    )
    assert [r["id"] for r in ds.take_all()] == [2 * i for i in range(40)]


BAD = [
    dict(size=0),
    dict(size=2, initial_size=2),
    dict(size=2, min_size=1),
    dict(min_size=0),
    dict(min_size=3, max_size=2),
    dict(min_size=2, max_size=4, initial_size=1),
    dict(min_size=1, max_size=2, initial_size=3),
    dict(size=1, max_tasks_in_flight_per_actor=0),
    dict(size=1, max_concurrent_calls_per_actor=0),
]


@pytest.mark.parametrize("kwargs", BAD, ids=[str(b) for b in BAD])
def test_what_ray_refuses_is_refused(kwargs):
    ray_data = pytest.importorskip("ray.data")
    with pytest.raises(ValueError):
        ray_data.ActorPoolStrategy(**kwargs)
    with pytest.raises(ValueError):
        ember.data.ActorPoolStrategy(**kwargs)


def test_concurrent_udf_calls_in_one_actor_are_refused_in_one_line():
    with pytest.raises(
        ValueError, match=r"ember's workers run one UDF call at a time; for calls in parallel use more"
    ):
        ember.data.ActorPoolStrategy(
            size=2, max_concurrent_calls_per_actor=2, enable_true_multi_threading=True
        )
    ember.data.ActorPoolStrategy(size=2, max_concurrent_calls_per_actor=1, enable_true_multi_threading=True)
