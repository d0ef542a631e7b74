"""Trainer(sync_batchnorm=True) under DDP with 2 CPU processes (gloo): BatchNorm normalises with the global
batch, so both ranks hold the same running statistics and the run equals one process training on the two
ranks' batches concatenated; without it each rank keeps its own statistics."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from _dist import assert_no_orphans, assert_ok, run_ranks

from ember.runtime.sync_batchnorm import SyncBatchNorm, convert_sync_batchnorm

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]


def one_process_on_the_global_batch(steps: int) -> tuple[dict, torch.Tensor, torch.Tensor]:
    """The script's model trained in one process with plain
    BatchNorm on the 16 rows both ranks see per step."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Linear(5, 4), torch.nn.BatchNorm1d(4), torch.nn.Tanh(), torch.nn.Linear(4, 1)
    )
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(64, 5, generator=gen) * torch.arange(1, 6)
    y = x[:, :1].sin()
    # the training loader's DistributedSampler shuffles (Lightning's rule), seeded 0 without seed_everything
    shards = [
        list(torch.utils.data.DistributedSampler(range(64), num_replicas=2, rank=r, shuffle=True, seed=0))
        for r in range(2)
    ]
    for step in range(steps):
        rows = shards[0][8 * step : 8 * (step + 1)] + shards[1][8 * step : 8 * (step + 1)]
        loss = F.mse_loss(net(x[rows]), y[rows])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return {f"net.{k}": v for k, v in net.state_dict().items()}, net[1].running_mean, net[1].running_var


def test_sync_batchnorm_trains_as_one_process_on_the_global_batch(tmp_path):
    synced = run_ranks("train_sync_batchnorm.py", tmp_path / "sync", ranks=2, timeout=240)
    assert_ok(synced)
    final = synced.final()
    assert final["bn_class"] == "SyncBatchNorm"
    (mean0, var0), (mean1, var1) = final["stats"]
    assert torch.equal(mean0, mean1) and torch.equal(var0, var1)  # the same statistics on both ranks
    expected, mean, var = one_process_on_the_global_batch(3)
    torch.testing.assert_close(mean0, mean, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(var0, var, rtol=1e-5, atol=1e-6)
    for name, value in expected.items():
        torch.testing.assert_close(final["state_dict"][name], value, rtol=1e-5, atol=1e-6)
    assert_no_orphans(synced)


def test_without_sync_batchnorm_each_rank_keeps_its_own_statistics(tmp_path):
    plain = run_ranks("train_sync_batchnorm.py", tmp_path / "plain", "--no-sync", ranks=2, timeout=240)
    assert_ok(plain)
    final = plain.final()
    (mean0, _), (mean1, _) = final["stats"]
    assert final["bn_class"] == "BatchNorm1d" and not torch.allclose(mean0, mean1)


def test_conversion_keeps_parameters_statistics_and_one_process_behaviour():
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(3, 4, 3),
        torch.nn.BatchNorm2d(4, momentum=None),
        torch.nn.Sequential(torch.nn.BatchNorm2d(4)),
    )
    net(torch.randn(6, 3, 8, 8))  # running statistics that are not the initial ones
    x = torch.randn(5, 3, 8, 8)
    before = net(x)  # normalised with the batch's statistics (the running ones updated)
    before_eval = net.eval()(x)  # normalised with the running statistics
    reference = {k: v.clone() for k, v in net.state_dict().items()}
    net.train()
    assert (
        convert_sync_batchnorm(net, "cpu") == 2
        and isinstance(net[1], SyncBatchNorm)
        and isinstance(net[2][0], SyncBatchNorm)
    )
    assert net[1].momentum is None and net[1].training
    for key, value in reference.items():
        assert torch.equal(net.state_dict()[key], value), key
    # no process group: plain batch norm, the same numbers
    torch.testing.assert_close(net.eval()(x), before_eval)
    torch.testing.assert_close(net.train()(x), before)
