"""`ember.seed_everything` is Lightning 2.6's: the same arguments (`workers=False`, `verbose=True`), seed from
the environment, bounds, and the same random numbers after it."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

import ember

lightning = pytest.importorskip("lightning.pytorch", reason="Lightning is a test-only dependency")


def _draws():
    import random

    return random.random(), float(np.random.rand()), torch.rand(2).tolist()


@pytest.fixture
def clean_seed_env(monkeypatch):
    for name in ("PL_GLOBAL_SEED", "EMBER_GLOBAL_SEED", "PL_SEED_WORKERS", "EMBER_SEED_WORKERS"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.mark.parametrize("seed", [0, 7, 2**32 - 1, "12"])
def test_the_same_seed_gives_the_same_numbers_and_returns_the_same_value(seed, clean_seed_env):
    theirs = lightning.seed_everything(seed, verbose=False), _draws()
    mine = ember.seed_everything(seed, verbose=False), _draws()
    assert mine == theirs


@pytest.mark.parametrize("seed", [-1, 2**32])
def test_a_seed_out_of_numpys_bounds_is_a_value_error_in_both(seed):
    for library in (lightning, ember):
        with pytest.raises(ValueError, match="is not in bounds, numpy accepts from 0 to 4294967295"):
            library.seed_everything(seed)


def test_no_seed_reads_the_environment_else_warns_and_uses_zero(clean_seed_env):
    with pytest.warns(UserWarning, match="No seed found, seed set to 0"):
        assert ember.seed_everything() == 0
    clean_seed_env.delenv("EMBER_GLOBAL_SEED")
    clean_seed_env.setenv("PL_GLOBAL_SEED", "5")  # a Lightning launch script's variable is honoured
    assert ember.seed_everything(verbose=False) == lightning.seed_everything(verbose=False) == 5
    clean_seed_env.setenv("EMBER_GLOBAL_SEED", "oops")
    with pytest.raises(ValueError, match="Invalid seed specified via EMBER_GLOBAL_SEED: 'oops'"):
        ember.seed_everything()


def test_workers_are_seeded_only_when_asked_as_in_lightning(clean_seed_env):
    ember.seed_everything(1, verbose=False)
    assert os.environ["EMBER_SEED_WORKERS"] == "0"  # Lightning's default: workers=False
    ember.seed_everything(1, workers=True, verbose=False)
    assert os.environ["EMBER_SEED_WORKERS"] == "1"
