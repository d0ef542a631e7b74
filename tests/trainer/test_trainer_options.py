"""Trainer arguments behave as Lightning 2.6's: an explicit None is the default, max_epochs=-1 has no
epoch limit, fast_dev_run writes nothing, barebones refuses what it turns off, min_steps/min_epochs hold
EarlyStopping back, benchmark/detect_anomaly reach torch, and the precision/strategy names ember lacks
are refused with the alternative."""

from __future__ import annotations

import inspect

import pytest
import torch
from _models import DigitsMLP, digits_loaders

import ember
from ember.errors import ConfigError

QUIET = {"enable_progress_bar": False, "enable_model_summary": False}


def test_explicit_none_means_lightnings_default(tmp_path):
    """LightningCLI configs spell every default as null: nothing may turn off, nothing may be refused."""
    nones = dict(
        logger=None,
        enable_checkpointing=None,
        enable_progress_bar=None,
        enable_model_summary=None,
        num_sanity_val_steps=None,
        precision=None,
        gradient_clip_algorithm=None,
        log_every_n_steps=None,
        deterministic=None,
        benchmark=None,
        max_epochs=None,
        min_epochs=None,
        min_steps=None,
    )
    trainer = ember.Trainer(default_root_dir=tmp_path, **nones)
    default = ember.Trainer(default_root_dir=tmp_path)
    assert trainer.options == default.options
    assert (
        trainer.num_sanity_val_steps,
        trainer.log_every_n_steps,
        trainer.precision,
        trainer.gradient_clip_algorithm,
    ) == (2, 50, "32-true", None)  # Lightning keeps gradient_clip_algorithm None (clipping by norm)
    assert (
        trainer.max_epochs is None
    )  # as Lightning: resolved when a fit starts (1000 when nothing else bounds it)
    assert [type(cb).__name__ for cb in trainer.callbacks] == [type(cb).__name__ for cb in default.callbacks]
    assert trainer.checkpoint_callback is not None and trainer.enable_model_summary is True

    train, val = digits_loaders()
    trainer = ember.Trainer(
        default_root_dir=tmp_path,
        max_epochs=1,
        limit_train_batches=3,
        limit_val_batches=1,
        logger=None,
        enable_checkpointing=None,
        enable_progress_bar=False,
    )
    trainer.fit(DigitsMLP(), train, val)
    # logger and checkpoint on: Lightning's default logger (TensorBoard's when installed, else CSV)
    assert list(tmp_path.rglob("events.out.tfevents.*")) or list(tmp_path.rglob("metrics.csv"))
    assert list(tmp_path.rglob("*.ckpt"))


def test_none_matches_the_lightning_signature():
    """Every argument Lightning types Optional[...] = None that ember also takes defaults to None here too."""
    lightning = pytest.importorskip("lightning.pytorch")
    theirs = inspect.signature(lightning.Trainer.__init__).parameters
    ours = inspect.signature(ember.Trainer.__init__).parameters
    for name, param in theirs.items():
        if param.default is None and name in ours:
            assert ours[name].default is None, name


def test_max_epochs_minus_one_trains_until_max_steps(tmp_path):
    train, _ = digits_loaders()  # 47 batches per epoch
    trainer = ember.Trainer(
        max_epochs=-1,
        max_steps=100,
        logger=False,
        enable_checkpointing=False,
        default_root_dir=tmp_path,
        **QUIET,
    )
    assert trainer.estimated_stepping_batches == 100
    trainer.fit(DigitsMLP(), train)
    assert (trainer.global_step, trainer.current_epoch) == (
        100,
        3,
    )  # epoch 2 stopped inside counts (Lightning)
    assert ember.Trainer(max_epochs=-1, default_root_dir=tmp_path).estimated_stepping_batches == float("inf")
    with pytest.raises(ConfigError, match="max_epochs=-2"):
        ember.Trainer(max_epochs=-2)


def test_max_steps_or_max_time_alone_set_no_epoch_limit(tmp_path):
    # Lightning: None until fit, then the 1000-epoch default only when neither max_steps nor max_time is set
    for given, resolved in (
        ({"max_steps": 3}, -1),
        ({"max_time": {"hours": 1}, "limit_train_batches": 2}, -1),
        ({}, 1000),
    ):
        trainer = ember.Trainer(
            default_root_dir=tmp_path, logger=False, enable_checkpointing=False, **given, **QUIET
        )
        assert trainer.max_epochs is None
        seen: list = []

        def note_and_stop(t, m, seen=seen):
            seen.append(t.max_epochs)
            t.should_stop = True

        stop = ember.callbacks.LambdaCallback(on_train_start=note_and_stop)
        trainer.callbacks.append(stop)
        trainer.fit(DigitsMLP(), digits_loaders()[0])
        assert seen == [resolved] and trainer.max_epochs == resolved
    assert ember.Trainer(fast_dev_run=2).max_epochs == 1


def test_fast_dev_run_disables_a_user_model_checkpoint_and_loggers(tmp_path):
    from ember.loggers import CSVLogger

    train, val = digits_loaders()
    checkpoint = ember.ModelCheckpoint(dirpath=tmp_path / "ckpts", monitor="val_loss", save_last=True)
    stopper = ember.EarlyStopping("val_loss", patience=0, min_delta=100.0)
    trainer = ember.Trainer(
        fast_dev_run=2,
        callbacks=[checkpoint, stopper],
        logger=CSVLogger(tmp_path / "csv"),
        default_root_dir=tmp_path,
        **QUIET,
    )
    assert trainer.fast_dev_run == 2 and ember.Trainer(fast_dev_run=1).fast_dev_run is True
    trainer.fit(DigitsMLP(), train, val)
    assert trainer.global_step == 2
    assert trainer.checkpoint_callbacks == [checkpoint]  # kept, as in Lightning, but it never ran
    assert not list(tmp_path.rglob("*.ckpt")) and not list(tmp_path.rglob("metrics.csv"))
    assert checkpoint.best_model_path == "" and stopper.wait_count == 0


def test_barebones_turns_features_off_and_refuses_them(tmp_path):
    trainer = ember.Trainer(barebones=True, max_steps=3, default_root_dir=tmp_path)
    assert trainer.checkpoint_callbacks == [] and trainer.num_sanity_val_steps == 0
    assert not any(isinstance(cb, ember.callbacks.ProgressBar) for cb in trainer.callbacks)
    assert trainer.enable_model_summary is False and trainer.barebones
    train, _ = digits_loaders()
    trainer.fit(DigitsMLP(), train)
    assert not list(tmp_path.rglob("*.ckpt")) and not list(tmp_path.rglob("metrics.csv"))
    for given in (
        {"enable_checkpointing": True},
        {"logger": True},
        {"enable_progress_bar": True},
        {"log_every_n_steps": 10},
        {"enable_model_summary": True},
        {"num_sanity_val_steps": 2},
        {"fast_dev_run": True},
        {"detect_anomaly": True},
        {"profiler": "simple"},
    ):
        with pytest.raises(ConfigError, match=f"barebones=True, {next(iter(given))}="):
            ember.Trainer(barebones=True, **given)


def test_min_steps_holds_early_stopping_back(tmp_path):
    class StopAtOnce(ember.Callback):
        def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
            trainer.should_stop = True

    train, _ = digits_loaders()
    trainer = ember.Trainer(
        max_epochs=5,
        min_steps=60,
        callbacks=[StopAtOnce()],
        logger=False,
        enable_checkpointing=False,
        default_root_dir=tmp_path,
        **QUIET,
    )
    trainer.fit(DigitsMLP(), train)
    assert trainer.global_step == 60  # Lightning stops as soon as min_steps is met (should_stop stays set)
    trainer = ember.Trainer(
        max_epochs=5,
        min_epochs=2,
        callbacks=[StopAtOnce()],
        logger=False,
        enable_checkpointing=False,
        default_root_dir=tmp_path,
        **QUIET,
    )
    trainer.fit(DigitsMLP(), train)
    assert trainer.global_step == 2 * 47  # should_stop waits until the second epoch is done


def test_benchmark_and_detect_anomaly_reach_torch(tmp_path):
    before = torch.backends.cudnn.benchmark
    try:
        assert ember.Trainer(benchmark=True).benchmark is True and torch.backends.cudnn.benchmark is True
        ember.Trainer(deterministic=True)
        assert torch.backends.cudnn.benchmark is False  # None under deterministic: False, as Lightning
    finally:
        torch.backends.cudnn.benchmark = before

    seen = []

    class Watch(DigitsMLP):
        def training_step(self, batch, batch_idx):
            seen.append(torch.is_anomaly_enabled())
            return super().training_step(batch, batch_idx)

    train, _ = digits_loaders()
    ember.Trainer(
        max_steps=2,
        detect_anomaly=True,
        logger=False,
        enable_checkpointing=False,
        default_root_dir=tmp_path,
        **QUIET,
    ).fit(Watch(), train)
    assert seen == [True, True] and not torch.is_anomaly_enabled()


def test_precisions_ember_lacks_are_refused_with_the_alternative():
    with pytest.raises(ConfigError, match="precision='transformer-engine'.*use"):
        ember.Trainer(precision="transformer-engine", accelerator="cpu")


class _StepMade(torch.nn.Module):
    """Adds a tensor made inside the step (its dtype follows torch's default dtype, as Lightning sets it)."""

    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(64, 16), torch.nn.ReLU(), torch.nn.Linear(16, 10))

    def loss(self, batch):
        x, y = batch
        made = torch.full((10,), 0.01)
        assert x.dtype == self.net[0].weight.dtype == made.dtype
        logits = self.net(x) + made
        return torch.nn.functional.cross_entropy(logits.float(), y)


@pytest.mark.parametrize("precision", ["64-true", "bf16-true", "16-true"])
def test_true_precisions_train_weights_inputs_and_new_tensors_in_one_dtype_as_lightning(precision, tmp_path):
    lightning = pytest.importorskip("lightning.pytorch")
    train, _ = digits_loaders(
        batch_size=32, shuffle=False
    )  # float32 inputs: converted to the dtype, as Lightning does
    finals = {}
    for name, base, trainer_cls in (
        ("ember", ember.Module, ember.Trainer),
        ("lightning", lightning.LightningModule, lightning.Trainer),
    ):
        torch.manual_seed(0)

        class Model(base):
            def __init__(self):
                super().__init__()
                self.inner = _StepMade()

            def training_step(self, batch, batch_idx):
                return self.inner.loss(batch)

            def configure_optimizers(self):
                return torch.optim.SGD(self.parameters(), lr=0.1)

        model = Model()
        trainer_cls(
            max_steps=5,
            precision=precision,
            accelerator="cpu",
            default_root_dir=tmp_path / name,
            logger=False,
            enable_checkpointing=False,
            **QUIET,
        ).fit(model, train)
        finals[name] = model.inner.state_dict()
    dtype = {"64-true": torch.float64, "bf16-true": torch.bfloat16, "16-true": torch.float16}[precision]
    for key, value in finals["ember"].items():
        assert value.dtype == dtype and torch.equal(value, finals["lightning"][key]), key


def test_strategy_aliases():
    with pytest.raises(ConfigError, match="ddp_spawn.*use strategy='ddp'"):
        ember.Trainer(strategy="ddp_spawn", accelerator="cpu", devices=2)
    trainer = ember.Trainer(strategy="ddp_find_unused_parameters_true", accelerator="cpu", devices=2)
    assert type(trainer.strategy).__name__ == "DDPStrategy"
    assert trainer.strategy.ddp_kwargs == {"find_unused_parameters": True}


@pytest.mark.parametrize("given", ["simple", "object"])
def test_profiler_times_the_run_and_writes_the_report_to_the_run_folder(given, tmp_path):
    from ember.profilers import SimpleProfiler

    profiler = SimpleProfiler(filename="perf") if given == "object" else "simple"
    train, val = digits_loaders()
    trainer = ember.Trainer(
        max_steps=5, limit_val_batches=1, profiler=profiler, default_root_dir=tmp_path, **QUIET
    )
    trainer.fit(DigitsMLP(), train, val)
    durations = trainer.profiler.recorded_durations
    assert len(durations["run_training_batch"]) == 5
    assert "[Callback]ModelCheckpoint.on_validation_end" in durations
    if given == "object":
        report = (tmp_path / "lightning_logs" / "version_0" / "fit-perf.txt").read_text()
        assert "run_training_batch" in report


@pytest.mark.parametrize("overfit", [3, 0.5])
def test_overfit_batches_repeats_the_first_batches_unshuffled(overfit, tmp_path):
    """Lightning 2.6: the limits of train and val become overfit_batches and shuffling is turned off
    (validation keeps its own loader: "Training and validation use different sets of data")."""
    seen: list[torch.Tensor] = []

    class Watch(DigitsMLP):
        def training_step(self, batch, batch_idx):
            seen.append(batch[1].clone())
            return super().training_step(batch, batch_idx)

    train, val = digits_loaders(shuffle=True)
    trainer = ember.Trainer(
        max_epochs=2,
        overfit_batches=overfit,
        logger=False,
        enable_checkpointing=False,
        default_root_dir=tmp_path,
        **QUIET,
    )
    with pytest.warns(UserWarning, match="overfit but enabled train dataloader shuffling"):
        trainer.fit(Watch(), train, val)
    per_epoch = 3 if overfit == 3 else int(47 * 0.5)
    assert trainer.num_training_batches == per_epoch and trainer.num_val_batches == [3 if overfit == 3 else 1]
    first = [y for _, y in list(torch.utils.data.DataLoader(train.dataset, batch_size=32))[:per_epoch]]
    assert len(seen) == 2 * per_epoch
    assert all(torch.equal(a, b) for a, b in zip(seen, first + first, strict=True))
