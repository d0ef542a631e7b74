"""ember.train.lightning: the Ray Train + Lightning user guide's training function, imports changed, run by
TorchTrainer on 2 local workers -- RayDDPStrategy on the workers' group, RayLightningEnvironment's ranks,
RayTrainReportCallback's per-epoch reports and checkpoints, prepare_trainer's checks, exact resume from a
reported checkpoint -- and each Ray name refused in one line where ember cannot honour it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

import ember
from ember.errors import ConfigError
from ember.train import CheckpointConfig, RunConfig, ScalingConfig, TorchTrainer
from ember.train.lightning import (
    RayDDPStrategy,
    RayDeepSpeedStrategy,
    RayFSDPStrategy,
    RayLightningEnvironment,
    RayTrainReportCallback,
    prepare_trainer,
)


class Classifier(ember.Module):
    """Logistic regression on the breast-cancer data (30 standardised features, 2 classes)."""

    def __init__(self, lr: float = 0.1):
        super().__init__()
        self.save_hyperparameters()
        self.layer = torch.nn.Linear(30, 2)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.cross_entropy(self.layer(x), y)
        self.log("train_loss", loss, on_step=False, on_epoch=True, sync_dist=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr, momentum=0.9)


def train_loader() -> torch.utils.data.DataLoader:
    from sklearn.datasets import load_breast_cancer

    x, y = load_breast_cancer(return_X_y=True)
    x = (x - x.mean(0)) / x.std(0)
    data = torch.utils.data.TensorDataset(torch.tensor(x, dtype=torch.float32), torch.tensor(y))
    return torch.utils.data.DataLoader(data, batch_size=32, shuffle=True)


def train_func(config):
    """The guide's function: the strategy, plugin, callback and prepare_trainer are the only Ray parts."""
    torch.manual_seed(0)
    model = Classifier(lr=0.1)
    trainer = ember.Trainer(
        max_epochs=config["max_epochs"],
        devices="auto",
        accelerator="cpu",
        strategy=RayDDPStrategy(),
        plugins=[RayLightningEnvironment()],
        callbacks=[RayTrainReportCallback()],
        enable_checkpointing=False,
        enable_progress_bar=False,
        logger=False,
        enable_model_summary=False,
    )
    trainer = prepare_trainer(trainer)
    checkpoint = ember.train.get_checkpoint()
    if checkpoint:
        with checkpoint.as_directory() as folder:
            trainer.fit(
                model,
                train_dataloaders=train_loader(),
                ckpt_path=str(Path(folder) / RayTrainReportCallback.CHECKPOINT_NAME),
            )
    else:
        trainer.fit(model, train_dataloaders=train_loader())
    rank = ember.train.get_context().get_world_rank()
    torch.save(
        {
            "weights": model.state_dict(),
            "steps": trainer.global_step,
            "world_size": trainer.world_size,
            "environment": type(trainer.strategy.cluster_environment).__name__,
        },
        Path(config["out"]) / f"rank_{rank}.pt",
    )


def _fit(tmp_path: Path, name: str, max_epochs: int, resume_from=None):
    import cloudpickle

    cloudpickle.register_pickle_by_value(
        sys.modules[__name__]
    )  # the workers need not import this test module
    out = tmp_path / name
    out.mkdir()
    result = TorchTrainer(
        train_func,
        train_loop_config={"max_epochs": max_epochs, "out": str(out)},
        scaling_config=ScalingConfig(num_workers=2),
        run_config=RunConfig(
            name=name,
            storage_path=str(tmp_path / "runs"),
            checkpoint_config=CheckpointConfig(num_to_keep=None),
        ),
        resume_from_checkpoint=resume_from,
    ).fit()
    ranks = [torch.load(out / f"rank_{r}.pt", weights_only=True) for r in (0, 1)]
    return result, ranks


@pytest.mark.slow  # two TorchTrainer runs of 2 workers (~30 s)
@pytest.mark.timeout(240)
def test_the_guides_function_reports_each_epoch_and_resumes_exactly_from_a_reported_checkpoint(tmp_path):
    result, ranks = _fit(tmp_path, "full", max_epochs=3)

    # DDP over the TorchTrainer's two workers: 569 rows -> 285 per rank (DistributedSampler) -> 9 batches
    assert [r["world_size"] for r in ranks] == [2, 2] and [r["steps"] for r in ranks] == [27, 27]
    assert [r["environment"] for r in ranks] == ["RayLightningEnvironment"] * 2
    assert all(torch.equal(ranks[0]["weights"][k], ranks[1]["weights"][k]) for k in ranks[0]["weights"])
    # one report per epoch: callback_metrics plus epoch and step, each with a checkpoint.ckpt
    history = result.metrics_history
    assert [(m["epoch"], m["step"]) for m in history] == [(0, 9), (1, 18), (2, 27)]
    assert history[-1]["train_loss"] < history[0]["train_loss"]
    assert len(result.best_checkpoints) == 3
    final = Path(result.checkpoint.path) / "checkpoint.ckpt"
    saved = torch.load(final, weights_only=False)["state_dict"]
    assert all(torch.equal(saved[k], ranks[0]["weights"][k]) for k in saved)

    # resume from the first epoch's report: the same last two epochs, bit for bit
    first_epoch = result.best_checkpoints[0][0]
    resumed, resumed_ranks = _fit(tmp_path, "resumed", max_epochs=3, resume_from=first_epoch)
    assert [r["steps"] for r in resumed_ranks] == [27, 27]
    assert all(torch.equal(resumed_ranks[0]["weights"][k], ranks[0]["weights"][k]) for k in saved)
    assert [(m["epoch"], m["step"]) for m in resumed.metrics_history] == [(1, 18), (2, 27)]


def test_prepare_trainer_refuses_a_strategy_that_is_not_a_ray_one():
    trainer = ember.Trainer(strategy="ddp", accelerator="cpu", devices=1, logger=False)
    with pytest.raises(
        ConfigError,
        match=r"^prepare_trainer: strategy is DDPStrategy; inside a TorchTrainer worker "
        r"use strategy=RayDDPStrategy\(\) or RayFSDPStrategy\(\)$",
    ):
        prepare_trainer(trainer)


@pytest.mark.parametrize("strategy", [RayDDPStrategy, RayFSDPStrategy])
@pytest.mark.parametrize("argument", ["process_group_backend", "timeout", "start_method", "max_failures"])
def test_the_process_groups_own_arguments_are_refused_not_ignored(strategy, argument):
    with pytest.raises(
        ConfigError,
        match=rf"^{strategy.__name__}\({argument}=\.\.\.\): inside a TorchTrainer "
        r"worker the process group and restarts are the TorchTrainer's",
    ):
        strategy(**{argument: 1})


def test_deepspeed_is_refused_naming_fsdp():
    with pytest.raises(
        ConfigError,
        match=r"^RayDeepSpeedStrategy: ember has no DeepSpeed; shard the model with "
        r"RayFSDPStrategy\(\)",
    ):
        RayDeepSpeedStrategy(stage=3)


def test_outside_a_torchtrainer_worker_the_environment_and_callback_are_refused_in_one_line():
    with pytest.raises(
        ConfigError,
        match=r"^ember.train.get_context\(\) is only available inside "
        r"train_loop_per_worker of a TorchTrainer$",
    ):
        ember.Trainer(strategy=RayDDPStrategy(), plugins=[RayLightningEnvironment()], logger=False)
    with pytest.raises(ConfigError, match=r"^ember.train.get_context\(\) is only available inside"):
        RayTrainReportCallback()
    assert RayLightningEnvironment.detect() is False


def test_ray_train_v2_only_report_options_are_refused():
    with pytest.raises(
        ConfigError,
        match=r"^RayTrainReportCallback\(checkpoint_upload_mode=\.\.\., validation=\.\.\.\) "
        r"are Ray Train v2 options ember does not have",
    ):
        RayTrainReportCallback(validation=True)


def test_plugins_other_than_one_cluster_environment_are_refused_by_name():
    with pytest.raises(
        ConfigError,
        match=r"^Trainer\(plugins=\[MixedPrecision\]\): ember takes only a cluster "
        r"environment plugin",
    ):
        ember.Trainer(plugins=[type("MixedPrecision", (), {})()], logger=False)

    class Environment:  # a cluster environment that agrees with this single process
        def world_size(self):
            return 1

        global_rank = local_rank = node_rank = lambda self: 0

    with pytest.raises(
        ConfigError, match=r"^Trainer\(plugins=\.\.\.\) has 2 cluster environments; pass one$"
    ):
        ember.Trainer(strategy="ddp", devices=1, plugins=[Environment(), Environment()], logger=False)
    with pytest.raises(ConfigError, match=r"needs a multi-process strategy; use strategy=RayDDPStrategy\(\)"):
        ember.Trainer(strategy="single_device", plugins=[Environment()], logger=False)
    trainer = ember.Trainer(strategy="ddp", accelerator="cpu", devices=1, plugins=Environment(), logger=False)
    assert isinstance(trainer.strategy.cluster_environment, Environment)


def test_a_cluster_environment_that_disagrees_with_the_launcher_is_refused():
    class TwoProcesses:
        world_size = lambda self: 2  # noqa: E731
        global_rank = local_rank = node_rank = lambda self: 1

    with pytest.raises(
        ConfigError,
        match=r"^Trainer\(plugins=\[TwoProcesses\(\)\]\) says \{'world_size': 2, "
        r"'global_rank': 1\} but the launcher started this process as "
        r"\{'world_size': 1, 'global_rank': 0\}",
    ):
        ember.Trainer(strategy="ddp", accelerator="cpu", devices=1, plugins=[TwoProcesses()], logger=False)


def test_the_modules_examples_run():
    import doctest

    import ember.train.lightning

    result = doctest.testmod(ember.train.lightning, extraglobs={"ember": ember})
    assert result.attempted >= 5 and result.failed == 0
