"""RandomSeedConfig: Ray's seed= object for random_shuffle / randomize_block_order / random_sample,
with ember's execution index being the epoch."""

from __future__ import annotations

import dataclasses

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ember.data
from ember.data import RandomSeedConfig
from ember.errors import ConfigError


@pytest.fixture
def parquet(tmp_path):
    path = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"x": list(range(60))}), path, row_group_size=6)
    return ember.data.read_parquet(str(path))


def _epochs(ds, n=2):
    batches = ds.iter_batches(batch_size=None)
    return [[x for b in batches for x in b["x"].tolist()] for _ in range(n)]


@pytest.mark.parametrize("method", ["random_shuffle", "randomize_block_order"])
def test_a_reseeding_config_draws_a_new_order_each_epoch(parquet, method):
    by_config = _epochs(getattr(parquet, method)(seed=RandomSeedConfig(seed=11)))
    assert by_config[0] != by_config[1] and sorted(by_config[0]) == list(range(60))
    again = _epochs(getattr(parquet, method)(seed=RandomSeedConfig(seed=11, reseed_after_execution=True)))
    assert again == by_config  # reproducible: an epoch's order is a function of (seed, epoch)


@pytest.mark.parametrize("method", ["random_shuffle", "randomize_block_order"])
def test_an_integer_seed_is_one_order_for_every_epoch_as_in_ray(parquet, method):
    """Ray 2.60: "If an integer is provided, it defaults to fully deterministic behavior (same shuffle
    order across executions)" - RandomSeedConfig(seed, reseed_after_execution=False)."""
    by_int = _epochs(getattr(parquet, method)(seed=11), n=3)
    assert by_int[0] == by_int[1] == by_int[2] != list(range(60))
    fixed = RandomSeedConfig(seed=11, reseed_after_execution=False)
    assert _epochs(getattr(parquet, method)(seed=fixed), n=3) == by_int
    assert by_int[0] == _epochs(getattr(parquet, method)(seed=RandomSeedConfig(seed=11)))[0]  # epoch 0
    assert [r["x"] for r in getattr(parquet, method)(seed=11).take_all()] == by_int[0]


def test_a_seedless_config_draws_a_seed(parquet):
    rows = [r["x"] for r in parquet.random_shuffle(seed=RandomSeedConfig()).take_all()]
    assert sorted(rows) == list(range(60))


def test_random_sample_takes_a_fixed_config(parquet):
    fixed = RandomSeedConfig(seed=5, reseed_after_execution=False)
    by_config = _epochs(parquet.random_sample(0.3, seed=fixed))
    assert by_config == _epochs(parquet.random_sample(0.3, seed=5))
    assert by_config[0] == by_config[1] and 0 < len(by_config[0]) < 60
    with pytest.raises(ConfigError, match="reseed_after_execution=True"):
        parquet.random_sample(0.3, seed=RandomSeedConfig(seed=5))


def test_rays_own_config_is_accepted_and_the_class_matches_rays():
    ray_data = pytest.importorskip("ray.data")
    assert [f.name for f in dataclasses.fields(RandomSeedConfig)] == [
        f.name for f in dataclasses.fields(ray_data.RandomSeedConfig)
    ]
    ds = ember.data.range(20)
    theirs = ds.random_shuffle(seed=ray_data.RandomSeedConfig(seed=4, reseed_after_execution=False))
    assert _epochs(theirs.rename_columns({"id": "x"})) == _epochs(
        ds.random_shuffle(seed=4).rename_columns({"id": "x"})
    )
    reseeding = _epochs(ds.random_shuffle(seed=ray_data.RandomSeedConfig(seed=4)).rename_columns({"id": "x"}))
    assert reseeding[0] != reseeding[1]
    for cls in (RandomSeedConfig, ray_data.RandomSeedConfig):
        with pytest.raises(ValueError, match="^Seed must be an integer or None.$"):
            cls(seed="4")
