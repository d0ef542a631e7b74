"""Trainer options and callbacks, each on a real (small) model and real data, asserting what they did."""

from __future__ import annotations

import csv
import dataclasses
import time

import pytest
import torch
import torch.nn.functional as F
from _models import DigitsMLP, assert_bitwise_equal, digits_loaders, digits_tensors, seeded, weights
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import ember

QUIET = {"logger": False, "enable_progress_bar": False, "enable_model_summary": False}


class Linear(ember.Module):
    """No dropout: gradients depend only on the data, so accumulation can be compared exactly."""

    def __init__(self, lr: float = 0.1) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.layer = nn.Linear(64, 10)

    def forward(self, x):
        return self.layer(x)

    def training_step(self, batch, batch_idx):
        return F.cross_entropy(self(batch[0]), batch[1])

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)


class Counter(ember.Callback):
    def __init__(self) -> None:
        self.train_batches = self.val_runs = self.val_batches = self.epochs = 0

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
        self.train_batches += 1

    def on_validation_batch_end(self, trainer, module, outputs, batch, batch_idx, dataloader_idx=0):
        self.val_batches += not trainer.sanity_checking

    def on_validation_end(self, trainer, module):
        self.val_runs += not trainer.sanity_checking

    def on_train_epoch_end(self, trainer, module):
        self.epochs += 1


def digits(batch_size: int = 32, n: int = 1500) -> DataLoader:
    x, y = digits_tensors()
    return DataLoader(TensorDataset(x[:n], y[:n]), batch_size=batch_size)


def test_gradient_accumulation_equals_the_large_batch(tmp_path):
    seeded(0)
    accumulated, reference = Linear(), Linear()
    reference.load_state_dict(accumulated.state_dict())
    trainer = ember.Trainer(max_epochs=1, accumulate_grad_batches=2, default_root_dir=tmp_path, **QUIET)
    trainer.fit(accumulated, digits(batch_size=16, n=512))
    ember.Trainer(max_epochs=1, default_root_dir=tmp_path, **QUIET).fit(
        reference, digits(batch_size=32, n=512)
    )
    assert trainer.global_step == 16  # optimizer steps, not batches
    for name, value in weights(accumulated).items():
        torch.testing.assert_close(value, weights(reference)[name], rtol=0, atol=1e-6)


class SyncRecordingStrategy(ember.strategies.SingleDeviceStrategy):
    """One process, recording the `sync` the Trainer passes with every training step (one per batch)."""

    def __init__(self) -> None:
        super().__init__(torch.device("cpu"))
        self.syncs: list[bool] = []

    def training_step(self, module, batch, batch_idx, pass_index=True, sync=True):
        self.syncs.append(sync)
        return super().training_step(module, batch, batch_idx, pass_index, sync)


@pytest.mark.parametrize("hooked", [False, True], ids=["default_step", "overridden_optimizer_step"])
def test_accumulation_windows_sync_on_their_last_micro_step_and_on_the_epochs_last_batch(tmp_path, hooked):
    """The optimization step counts the window and tells the strategy (DDP: no_sync, FSDP: no reduce-scatter
    on the other micro-steps); a new epoch starts a new window; accumulate 1 always syncs."""

    class Hooked(Linear):
        def optimizer_step(self, epoch, batch_idx, optimizer, optimizer_closure=None):
            optimizer.step(closure=optimizer_closure)

    strategy = SyncRecordingStrategy()
    trainer = ember.Trainer(
        max_epochs=2, accumulate_grad_batches=2, strategy=strategy, default_root_dir=tmp_path, **QUIET
    )
    trainer.fit(Hooked() if hooked else Linear(), digits(batch_size=16, n=80))  # 5 batches an epoch
    assert strategy.syncs == [False, True, False, True, True] * 2
    assert trainer.global_step == 6
    strategy.syncs.clear()
    ember.Trainer(max_epochs=1, strategy=strategy, default_root_dir=tmp_path, **QUIET).fit(
        Linear(), digits(batch_size=16, n=48)
    )
    assert strategy.syncs == [True] * 3


@pytest.mark.parametrize("algorithm", ["norm", "value"])
def test_gradient_clipping(algorithm, tmp_path):
    seen = []
    model = Linear(lr=1.0)
    optimizer_hook = None

    class Spy(ember.Callback):
        def on_train_start(self, trainer, module):
            nonlocal optimizer_hook

            def before_step(optimizer, args, kwargs):  # runs after clipping, right before the update
                grads = [p.grad for p in module.parameters()]
                norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))
                seen.append(norm.item() if algorithm == "norm" else max(g.abs().max().item() for g in grads))

            optimizer_hook = trainer.optimizers[0].register_step_pre_hook(before_step)

    ember.Trainer(
        max_steps=10,
        gradient_clip_val=0.05,
        gradient_clip_algorithm=algorithm,
        callbacks=[Spy()],
        default_root_dir=tmp_path,
        **QUIET,
    ).fit(model, digits())
    optimizer_hook.remove()
    assert len(seen) == 10 and max(seen) <= 0.05 + 1e-6


def test_bf16_mixed_autocasts_and_learns(tmp_path):
    dtypes = []

    class Probe(DigitsMLP):
        def training_step(self, batch, batch_idx):
            dtypes.append(self(batch[0]).dtype)
            return super().training_step(batch, batch_idx)

    seeded(0)
    model = Probe()
    trainer = ember.Trainer(max_epochs=3, precision="bf16-mixed", default_root_dir=tmp_path, **QUIET)
    train, val = digits_loaders()
    trainer.fit(model, train, val)
    assert set(dtypes) == {torch.bfloat16}
    assert model.net[0].weight.dtype == torch.float32  # the weights stay in full precision
    assert trainer.callback_metrics["val_acc"] > 0.85


def test_limits_and_validation_schedule(tmp_path):
    counter = Counter()
    train, val = digits_loaders()  # 47 training batches, 3 validation batches
    trainer = ember.Trainer(
        max_epochs=2,
        val_check_interval=10,
        limit_val_batches=2,
        callbacks=[counter],
        default_root_dir=tmp_path,
        **QUIET,
    )
    trainer.fit(DigitsMLP(), train, val)
    assert counter.train_batches == 94
    # after batches 10, 20, 30, 40 only, as in Lightning: an int interval adds no validation at the epoch's
    # end
    assert counter.val_runs == 2 * 4
    assert counter.val_batches == 2 * 4 * 2

    counter = Counter()
    ember.Trainer(
        max_epochs=4,
        limit_train_batches=0.25,
        check_val_every_n_epoch=2,
        callbacks=[counter],
        default_root_dir=tmp_path,
        **QUIET,
    ).fit(DigitsMLP(), train, val)
    assert counter.train_batches == 4 * 11  # int(0.25 * 47)
    assert counter.val_runs == 2


def test_fast_dev_run_touches_every_path_once_and_writes_nothing(tmp_path):
    counter = Counter()
    train, val = digits_loaders()
    trainer = ember.Trainer(
        fast_dev_run=True, callbacks=[counter], default_root_dir=tmp_path, enable_progress_bar=False
    )
    trainer.fit(DigitsMLP(), train, val)
    assert (counter.train_batches, counter.val_runs, counter.val_batches) == (1, 1, 1)
    assert trainer.global_step == 1
    assert not list(tmp_path.rglob("*.ckpt")) and not list(tmp_path.rglob("metrics.csv"))
    assert not list(tmp_path.rglob("events.out.tfevents.*"))  # nor the default logger's (TensorBoard's) files


def test_max_steps_max_time_and_min_epochs(tmp_path):
    train, _ = digits_loaders()
    trainer = ember.Trainer(max_steps=60, default_root_dir=tmp_path, **QUIET)
    trainer.fit(DigitsMLP(), train)
    # 47 batches an epoch: the stop is inside epoch 1, which counts as run once fit ends (Lightning's 2 as
    # well)
    assert (trainer.global_step, trainer.current_epoch) == (60, 2)

    class Slow(DigitsMLP):
        def training_step(self, batch, batch_idx):
            time.sleep(0.01)
            return super().training_step(batch, batch_idx)

    start = time.perf_counter()
    trainer = ember.Trainer(max_epochs=1000, max_time={"seconds": 1}, default_root_dir=tmp_path, **QUIET)
    trainer.fit(Slow(), train)
    assert time.perf_counter() - start < 5
    assert (
        0 < trainer.global_step < 1000 * 47
    )  # stopped by the clock (how many steps fit in 1 s depends on the load)

    stopper = ember.EarlyStopping("val_loss", patience=0, min_delta=10.0)  # would stop after the first epoch
    counter = Counter()
    ember.Trainer(
        max_epochs=10, min_epochs=3, callbacks=[stopper, counter], default_root_dir=tmp_path, **QUIET
    ).fit(DigitsMLP(), *digits_loaders())
    assert counter.epochs == 3


def test_early_stopping_stops_when_the_metric_stalls(tmp_path):
    ember.seed_everything(0)  # the weights and the shuffle no longer depend on which tests ran before
    stopper = ember.EarlyStopping("val_acc", mode="max", patience=2, min_delta=0.05)
    counter = Counter()
    trainer = ember.Trainer(max_epochs=30, callbacks=[stopper, counter], default_root_dir=tmp_path, **QUIET)
    trainer.fit(DigitsMLP(), *digits_loaders())
    assert 3 <= counter.epochs < 30
    assert stopper.stopped_epoch == counter.epochs - 1
    assert trainer.callback_metrics["val_acc"] > 0.85


def test_step_and_epoch_logging_with_torchmetrics_and_learning_rates_in_csv(tmp_path):
    import torchmetrics

    class Logged(DigitsMLP):
        def __init__(self):
            super().__init__()
            self.accuracy = torchmetrics.classification.MulticlassAccuracy(num_classes=10, average="micro")
            self.val_preds = []

        def training_step(self, batch, batch_idx):
            loss = F.cross_entropy(self(batch[0]), batch[1])
            self.log("loss", loss, on_step=True, on_epoch=True, prog_bar=True)
            return loss

        def validation_step(self, batch, batch_idx):
            preds = self(batch[0]).argmax(1)
            self.val_preds.append((preds == batch[1]).float())
            self.accuracy.update(preds, batch[1])
            self.log("val_acc", self.accuracy)

        def configure_optimizers(self):
            optimizer = torch.optim.SGD(self.parameters(), lr=0.1)
            schedule = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
            return {"optimizer": optimizer, "lr_scheduler": {"scheduler": schedule, "interval": "epoch"}}

    model = Logged()
    trainer = ember.Trainer(
        max_epochs=3,
        log_every_n_steps=10,
        num_sanity_val_steps=0,
        default_root_dir=tmp_path,
        callbacks=[ember.LearningRateMonitor(logging_interval="epoch")],
        enable_progress_bar=False,
        logger=ember.loggers.CSVLogger(tmp_path),
    )  # the default is TensorBoard's, as Lightning's
    trainer.fit(model, *digits_loaders())
    rows = list(
        csv.DictReader((tmp_path / "lightning_logs" / "version_0" / "metrics.csv").read_text().splitlines())
    )
    step_rows = [r for r in rows if r.get("loss_step")]
    assert [int(r["step"]) for r in step_rows][:4] == [
        9,
        19,
        29,
        39,
    ]  # the step just taken, from 0 (Lightning)
    assert len([r for r in rows if r.get("loss_epoch")]) == 3
    assert [float(r["lr-SGD"]) for r in rows if r.get("lr-SGD")] == [0.1, 0.05, 0.025]
    last_epoch_acc = torch.cat(model.val_preds[-3:]).mean().item()  # 3 validation batches per epoch
    assert trainer.callback_metrics["val_acc"].item() == pytest.approx(last_epoch_acc, abs=1e-6)
    assert "loss_step" in trainer.progress_bar_metrics or "loss_epoch" in trainer.progress_bar_metrics


def test_schedulers_step_by_interval_and_frequency(tmp_path):
    class Scheduled(Linear):
        def configure_optimizers(self):
            optimizer = torch.optim.SGD(self.parameters(), lr=1.0)
            schedule = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
            return [optimizer], [{"scheduler": schedule, "interval": "step", "frequency": 5}]

    trainer = ember.Trainer(max_steps=20, default_root_dir=tmp_path, **QUIET)
    trainer.fit(Scheduled(), digits())
    assert trainer.optimizers[0].param_groups[0]["lr"] == 0.5**4


def test_manual_optimization_gan_on_real_digits(tmp_path):
    class GAN(ember.Module):
        def __init__(self):
            super().__init__()
            self.automatic_optimization = False
            self.generator = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 64), nn.Sigmoid())
            self.discriminator = nn.Sequential(nn.Linear(64, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))
            self.d_losses, self.g_losses = [], []

        def training_step(self, batch, batch_idx):
            real = batch[0]
            g_opt, d_opt = self.optimizers()
            fake = self.generator(torch.randn(real.shape[0], 8))
            ones, zeros = torch.ones(real.shape[0], 1), torch.zeros(real.shape[0], 1)
            # discriminator: the generator's output is detached, so only D gets gradients
            d_loss = F.binary_cross_entropy_with_logits(
                self.discriminator(real), ones
            ) + F.binary_cross_entropy_with_logits(self.discriminator(fake.detach()), zeros)
            d_opt.zero_grad()
            g_grads = [None if p.grad is None else p.grad.clone() for p in self.generator.parameters()]
            self.manual_backward(d_loss)
            for p, before in zip(self.generator.parameters(), g_grads, strict=True):
                assert (p.grad is None and before is None) or torch.equal(p.grad, before)
            d_opt.step()
            g_loss = F.binary_cross_entropy_with_logits(self.discriminator(fake), ones)
            g_opt.zero_grad()
            self.manual_backward(g_loss)
            g_opt.step()
            self.d_losses.append(d_loss.item())
            self.g_losses.append(g_loss.item())
            self.log_dict({"d_loss": d_loss, "g_loss": g_loss})

        def configure_optimizers(self):
            return (
                torch.optim.Adam(self.generator.parameters(), lr=2e-3),
                torch.optim.Adam(self.discriminator.parameters(), lr=2e-3),
            )

    seeded(0)
    gan = GAN()
    before = weights(gan)
    trainer = ember.Trainer(max_epochs=2, default_root_dir=tmp_path, **QUIET)
    trainer.fit(gan, digits())
    after = weights(gan)
    assert all(not torch.equal(before[k], after[k]) for k in before)  # both networks were updated
    assert trainer.global_step == 2 * 47 * 2  # Lightning counts every optimizer step
    assert len(gan.d_losses) == 94
    # the generator learned something about digits: its samples moved towards the data's mean intensity
    samples = gan.generator(torch.randn(512, 8)).mean().item()
    assert abs(samples - digits_tensors()[0].mean().item()) < 0.1


def test_datamodule_prepare_data_once_and_setup_per_stage(tmp_path):
    seeded(0)  # the accuracy bound below must not depend on which tests ran before in this process
    calls = []

    class Digits(ember.DataModule):
        def prepare_data(self):
            calls.append("prepare_data")

        def setup(self, stage):
            calls.append(f"setup:{stage}")
            x, y = digits_tensors()
            self.train_set, self.val_set = (
                TensorDataset(x[:1500], y[:1500]),
                TensorDataset(x[1500:], y[1500:]),
            )

        def train_dataloader(self):
            return DataLoader(self.train_set, batch_size=32, shuffle=True)

        def val_dataloader(self):
            return DataLoader(self.val_set, batch_size=128)

        def test_dataloader(self):
            return DataLoader(self.val_set, batch_size=128)

    trainer = ember.Trainer(max_epochs=2, default_root_dir=tmp_path, **QUIET)
    dm = Digits()
    trainer.fit(DigitsMLP(), datamodule=dm)
    result = trainer.test(datamodule=dm, verbose=False)
    assert calls == ["prepare_data", "setup:fit", "prepare_data", "setup:test"]
    assert result[0]["test_acc"] > 0.85


def test_model_dataloader_methods_and_nested_batches(tmp_path):
    @dataclasses.dataclass
    class Batch:
        features: torch.Tensor
        target: torch.Tensor

    class WithLoaders(DigitsMLP):
        def train_dataloader(self):
            x, y = digits_tensors()
            samples = [{"pair": (x[i], {"y": y[i]})} for i in range(320)]
            return DataLoader(
                samples,
                batch_size=32,
                collate_fn=lambda b: Batch(
                    torch.stack([s["pair"][0] for s in b]), torch.stack([s["pair"][1]["y"] for s in b])
                ),
            )

        def training_step(self, batch, batch_idx):
            assert isinstance(batch, Batch) and batch.features.shape == (32, 64)
            return F.cross_entropy(self(batch.features), batch.target)

    trainer = ember.Trainer(max_epochs=1, default_root_dir=tmp_path, **QUIET)
    trainer.fit(WithLoaders())
    assert trainer.global_step == 10


def test_top_k_checkpoints_best_path_and_load_from_checkpoint(tmp_path):
    checkpoints = ember.ModelCheckpoint(
        monitor="val_loss", mode="min", save_top_k=2, save_last=True, filename="{epoch}-{val_loss:.4f}"
    )
    trainer = ember.Trainer(max_epochs=5, callbacks=[checkpoints], default_root_dir=tmp_path, **QUIET)
    model = DigitsMLP(lr=0.05, hidden=24)
    trainer.fit(model, *digits_loaders())
    folder = tmp_path / "checkpoints"  # logger=False: default_root_dir/checkpoints, as Lightning
    kept = sorted(p.name for p in folder.glob("epoch=*.ckpt"))
    assert len(kept) == 2 and (folder / "last.ckpt").exists()
    scores = {name: float(name.split("val_loss=")[1][:-5]) for name in kept}
    assert checkpoints.best_model_path.endswith(min(scores, key=scores.get))
    assert float(checkpoints.best_model_score) == pytest.approx(min(scores.values()), abs=1e-4)

    restored = DigitsMLP.load_from_checkpoint(folder / "last.ckpt", map_location="cpu")
    assert restored.hparams.hidden == 24 and restored.hparams.lr == 0.05  # from save_hyperparameters
    # last.ckpt is written with each top-k save (Lightning 2.6: only when a checkpoint was saved that step),
    # so it holds the newest kept epoch: the final weights when the last epoch is among the best two (this
    # unseeded run's usual case, not every run's)
    newest = max(kept, key=lambda name: int(name.split("-")[0].removeprefix("epoch=")))
    kept_newest = DigitsMLP.load_from_checkpoint(folder / newest, map_location="cpu")
    assert_bitwise_equal(weights(restored), weights(kept_newest))
    if newest.startswith("epoch=4-"):
        assert_bitwise_equal(weights(restored), weights(model))


def test_predict_returns_outputs_in_order(tmp_path):
    class Predicts(DigitsMLP):
        def predict_step(self, batch, batch_idx, dataloader_idx=0):
            return self(batch[0]).argmax(1)

    model = Predicts()
    trainer = ember.Trainer(max_epochs=2, default_root_dir=tmp_path, **QUIET)
    train, val = digits_loaders()
    trainer.fit(model, train)
    predictions = trainer.predict(model, val)
    assert len(predictions) == 3
    model.eval()
    with torch.no_grad():
        expected = torch.cat([model(x).argmax(1) for x, _ in val])
    assert torch.equal(torch.cat(predictions), expected)


def test_each_fit_gets_a_new_version_folder(tmp_path):
    for _ in range(2):
        ember.Trainer(max_steps=2, default_root_dir=tmp_path, enable_progress_bar=False).fit(
            DigitsMLP(), digits()
        )
    assert sorted(p.name for p in (tmp_path / "lightning_logs").iterdir()) == ["version_0", "version_1"]
    assert (tmp_path / "lightning_logs" / "version_1" / "hparams.yaml").read_text().count("lr: 0.1") == 1


def test_compile_opt_in_trains(tmp_path):
    seeded(0)
    model = DigitsMLP()
    trainer = ember.Trainer(max_epochs=1, compile={"backend": "eager"}, default_root_dir=tmp_path, **QUIET)
    trainer.fit(model, *digits_loaders())
    assert trainer.global_step == 47 and trainer.callback_metrics["val_acc"] > 0.5
    assert not any(k.startswith("_orig_mod") for k in model.state_dict())  # checkpoints keep the plain names


def test_log_takes_lightnings_arguments_and_refuses_a_typo():
    class Logging(DigitsMLP):
        def __init__(self, **log_options):
            super().__init__()
            self.log_options = log_options

        def training_step(self, batch, batch_idx):
            loss = F.cross_entropy(self(batch[0]), batch[1])
            self.log("loss", loss, **self.log_options)
            return loss

    lightning_only = dict(
        enable_graph=False,
        sync_dist_group=None,
        add_dataloader_idx=False,
        metric_attribute=None,
        rank_zero_only=True,
        batch_size=32,
    )
    trainer = ember.Trainer(
        max_steps=2,
        logger=False,
        enable_progress_bar=False,
        enable_checkpointing=False,
        num_sanity_val_steps=0,
    )
    trainer.fit(Logging(**lightning_only), digits_loaders()[0])
    assert "loss" in trainer.callback_metrics
    trainer = ember.Trainer(
        max_steps=2,
        logger=False,
        enable_progress_bar=False,
        enable_checkpointing=False,
        num_sanity_val_steps=0,
    )
    with pytest.raises(TypeError, match="unexpected keyword argument 'on_epcoh'"):
        trainer.fit(Logging(on_epcoh=True), digits_loaders()[0])
