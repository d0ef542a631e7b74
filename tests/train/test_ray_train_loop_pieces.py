"""The pieces of Ray Train a training function uses, in a real 2-worker run of local processes:
`get_dataset_shard(dataset_name=...)`, `enable_reproducibility`, `report(checkpoint_dir_name=...)`,
`get_all_reported_checkpoints()`,
checkpoint metadata carried into the run folder, and the function's return value in `Result.return_value`
(Ray Train's `torch_regression_example.py` returns its per-epoch results)."""

from __future__ import annotations

import os
import sys
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


def _train_modules(config):
    """ember.train (and .torch), or Ray Train's when the loop runs under Ray for comparison."""
    if config.get("under") == "ray":
        import ray.train
        import ray.train.torch

        return ray.train, ray.train.torch
    return ember.train, ember.train.torch


def train_func(config):
    train, train_torch = _train_modules(config)
    train_torch.enable_reproducibility(config["seed"])
    shard = train.get_dataset_shard(dataset_name="train")
    model = train_torch.prepare_model(torch.nn.Linear(2, 1))
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
            checkpoint = train.Checkpoint.from_directory(folder)
            checkpoint.set_metadata({"epoch": epoch})
            train.report(results[-1], checkpoint=checkpoint, checkpoint_dir_name=f"epoch_{epoch}")
    kept = train.get_all_reported_checkpoints()
    results.append(
        {"kept": [(Path(r.checkpoint.path).name, r.metrics["epoch"], r.status.value) for r in kept]}
    )
    return results


ROWS = [{"x": [float(i), float(i % 3)], "y": float(2 * i + 1)} for i in range(16)]


def _dataset():
    return ember.data.from_items(ROWS)


def _outcome(result):
    """What must agree between Ray Train and ember: per-epoch rows, the kept folders, the checkpoint's
    metadata and files, the metrics of the last report and the return value's shape."""
    run = Path(result.path)
    *epochs, kept = result.return_value
    return {
        "epochs": [(r["epoch"], r["rows"]) for r in epochs],
        "kept": kept,
        "last_metrics_are_returned": {k: result.metrics[k] for k in ("epoch", "rows", "loss")} == epochs[-1],
        "folders": sorted(
            p.name
            for p in run.iterdir()
            if p.is_dir() and not p.name.startswith(".") and p.name.startswith("epoch_")
        ),
        "checkpoint": Path(result.checkpoint.path).name,
        "metadata": result.checkpoint.get_metadata(),
        "files": sorted(p.name for p in Path(result.checkpoint.path).iterdir()),
        "best": [(Path(c.path).name, m["epoch"]) for c, m in result.best_checkpoints],
    }


@pytest.fixture(scope="module")
def ours(tmp_path_factory):
    """The loop's 2-worker run on ember's local processes, once for the module (~10 s): the test of its
    value and the comparison with Ray Train's run read its result and run folder, neither changes them.
    use_ray=False: local processes even where an earlier module left a Ray initialized in this process."""
    trainer = TorchTrainer(
        train_func,
        train_loop_config={"seed": 3},
        datasets={"train": _dataset()},
        scaling_config=ScalingConfig(num_workers=2),
        run_config=RunConfig(
            "pieces",
            str(tmp_path_factory.mktemp("ember")),
            None,
            None,
            CheckpointConfig(num_to_keep=1),
            use_ray=False,
        ),
    )
    return trainer.fit()


@pytest.mark.slow  # a 2-worker run (~10 s)
@pytest.mark.timeout(300)
def test_a_loop_using_rays_pieces_runs_and_returns_its_value(ours):
    result = ours
    *epochs, kept = result.return_value
    assert [r["epoch"] for r in epochs] == [0, 1]
    assert all(r["rows"] == 8 for r in epochs)  # 16 list-column rows split over 2 ranks
    assert result.metrics == epochs[-1]
    assert kept == {
        "kept": [("epoch_1", 1, "COMMITTED")]
    }  # get_all_reported_checkpoints, after num_to_keep=1
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
@pytest.mark.parametrize(
    ("loop", "message"),
    [
        (
            shard_without_name,
            r"get_dataset_shard\(\) needs the dataset's name, as in Ray 2.60: get_dataset_shard\('train'\)",
        ),
        (reuse_a_name, r"report\(checkpoint_dir_name='same'\): the run folder already has same"),
    ],
)
def test_what_ray_also_refuses_fails_the_run_naming_it(tmp_path, loop, message):
    trainer = TorchTrainer(loop, datasets={"train": _dataset()}, run_config=RunConfig("r", str(tmp_path)))
    with pytest.raises((WorkerError, ConfigError), match=message):
        trainer.fit()


@pytest.mark.slow  # starts a one-node Ray (~30 s here) and runs the loop there too
@pytest.mark.timeout(600)
def test_the_same_loop_gives_the_same_outcome_as_ray_train(ours, tmp_path):
    pytest.importorskip("ray.train")
    import ray.train
    import ray.train.torch

    if ray.is_initialized():
        ray.shutdown()
    ray.init(
        address="local",
        _node_ip_address="127.0.0.1",
        include_dashboard=False,
        num_cpus=3,
        object_store_memory=128 * 1024 * 1024,
        log_to_driver=False,
    )
    try:
        ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # Ray's workers cannot import it
        theirs = ray.train.torch.TorchTrainer(
            train_func,
            train_loop_config={"seed": 3, "under": "ray"},
            datasets={"train": ray.data.from_items(ROWS)},
            scaling_config=ray.train.ScalingConfig(num_workers=2),
            run_config=ray.train.RunConfig(
                "pieces", str(tmp_path / "ray"), checkpoint_config=ray.train.CheckpointConfig(num_to_keep=1)
            ),
        ).fit()
    finally:
        ray.shutdown()
    assert _outcome(ours) == _outcome(theirs)
    assert _outcome(ours)["metadata"] == {"epoch": 1} and _outcome(ours)["epochs"] == [(0, 8), (1, 8)]
