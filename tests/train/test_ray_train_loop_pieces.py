"""The pieces of Ray Train a training function uses, in a real 2-worker run of local processes:
`get_dataset_shard(dataset_name=...)`, `enable_reproducibility`, `report(checkpoint_dir_name=...)`,
checkpoint metadata carried into the run folder, and the function's return value in `Result.return_value`
(Ray Train's `torch_regression_example.py` returns its per-epoch results)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
import torch

import ember.data
import ember.train
import ember.train.torch
from ember.errors import ConfigError, WorkerError
from ember.train import Checkpoint, CheckpointConfig, RunConfig, ScalingConfig
from ember.train.torch import TorchTrainer


def train_func(config):
    ember.train.torch.enable_reproducibility(config["seed"])
    shard = ember.train.get_dataset_shard(dataset_name="train")
    model = ember.train.torch.prepare_model(torch.nn.Linear(2, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    results = []
    for epoch in range(2):
        rows = 0
        for batch in shard.iter_torch_batches(batch_size=4):
            loss = torch.nn.functional.mse_loss(model(batch["x"].float()).squeeze(1), batch["y"].float())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            rows += len(batch["y"])
        results.append({"epoch": epoch, "rows": rows, "loss": loss.item()})
        with tempfile.TemporaryDirectory() as folder:
            torch.save(model.module.state_dict(), os.path.join(folder, "model.pt"))
            checkpoint = Checkpoint.from_directory(folder)
            checkpoint.set_metadata({"epoch": epoch})
            ember.train.report(results[-1], checkpoint=checkpoint, checkpoint_dir_name=f"epoch_{epoch}")
    return results


def _dataset():
    rows = [{"x": [float(i), float(i % 3)], "y": float(2 * i + 1)} for i in range(16)]
    return ember.data.from_items(rows)


@pytest.mark.slow  # a 2-worker run (~10 s)
@pytest.mark.timeout(300)
def test_a_loop_using_rays_pieces_runs_and_returns_its_value(tmp_path):
    trainer = TorchTrainer(train_func, train_loop_config={"seed": 3}, datasets={"train": _dataset()},
                           scaling_config=ScalingConfig(num_workers=2),
                           run_config=RunConfig("pieces", str(tmp_path), None, None, CheckpointConfig(num_to_keep=1)))
    result = trainer.fit()
    assert [r["epoch"] for r in result.return_value] == [0, 1]
    assert all(r["rows"] == 8 for r in result.return_value)  # 16 list-column rows split over 2 ranks
    assert result.metrics == result.return_value[-1]
    run = Path(result.path)
    assert sorted(p.name for p in run.iterdir() if p.is_dir()) == ["epoch_1"]  # num_to_keep=1 removed epoch_0
    assert result.checkpoint.path == str(run / "epoch_1")
    assert result.checkpoint.get_metadata() == {"epoch": 1}
    state = torch.load(run / "epoch_1" / "model.pt")
    assert set(state) == {"weight", "bias"}
    assert not torch.are_deterministic_algorithms_enabled()  # the workers' setting stayed in the workers


def shard_without_name(config):
    ember.train.get_dataset_shard()


def reuse_a_name(config):
    for _ in range(2):
        with tempfile.TemporaryDirectory() as folder:
            ember.train.report({}, checkpoint=Checkpoint.from_directory(folder), checkpoint_dir_name="same")


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize(("loop", "message"), [
    (shard_without_name, r"get_dataset_shard\(\) needs the dataset's name, as in Ray 2.60: get_dataset_shard\('train'\)"),
    (reuse_a_name, r"report\(checkpoint_dir_name='same'\): the run folder already has same"),
])
def test_what_ray_also_refuses_fails_the_run_naming_it(tmp_path, loop, message):
    trainer = TorchTrainer(loop, datasets={"train": _dataset()}, run_config=RunConfig("r", str(tmp_path)))
    with pytest.raises((WorkerError, ConfigError), match=message):
        trainer.fit()
