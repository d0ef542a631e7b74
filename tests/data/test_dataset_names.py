"""Ray Data 2.60 Dataset methods users reach for that ember lacked: random_sample."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ember.data
from ember.errors import ConfigError


def test_random_sample_keeps_order_and_roughly_the_fraction():
    rows = ember.data.range(10_000, override_num_blocks=4).random_sample(0.2, seed=7).take_all()
    ids = [r["id"] for r in rows]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert 1600 < len(ids) < 2400


def test_random_sample_is_deterministic_for_a_seed_and_differs_across_seeds():
    ds = ember.data.range(5000, override_num_blocks=5)
    first = ds.random_sample(0.3, seed=1).take_all()
    assert first == ds.random_sample(0.3, seed=1).take_all()
    assert first != ds.random_sample(0.3, seed=2).take_all()


def test_random_sample_seeded_is_independent_of_parallelism(tmp_path):
    for i in range(3):
        pq.write_table(pa.table({"id": list(range(i * 1000, (i + 1) * 1000))}), tmp_path / f"{i}.parquet")
    ds = ember.data.read_parquet(str(tmp_path))
    serial = ds.random_sample(0.5, seed=3).take_all()
    parallel = ds.random_sample(0.5, seed=3).map(lambda r: r, concurrency=2).take_all()
    assert sorted(r["id"] for r in serial) == sorted(r["id"] for r in parallel)


def test_random_sample_extremes():
    ds = ember.data.range(100)
    assert ds.random_sample(0).count() == 0
    assert ds.random_sample(1).take_all() == ds.take_all()


@pytest.mark.parametrize("fraction", [-0.1, 1.5, "0.5", None])
def test_random_sample_refuses_a_fraction_outside_zero_one(fraction):
    with pytest.raises(ConfigError, match="fraction must be between 0 and 1"):
        ember.data.range(3).random_sample(fraction)


def test_random_sample_refuses_a_non_integer_seed():
    with pytest.raises(ConfigError, match="non-negative integer seed"):
        ember.data.range(3).random_sample(0.5, seed="x")
