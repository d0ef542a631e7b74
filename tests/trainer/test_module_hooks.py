"""Lightning's optimization and batch hooks, overridden by a Module (or DataModule), are called at Lightning's
point with Lightning's arguments — checked on a real small classifier of sklearn's digits.

Lightning 2.6 (loops/optimization/automatic.py, core/module.py): once per accumulation window
`optimizer_step(epoch, batch_idx, optimizer, optimizer_closure)`; the closure runs training_step, then (first
micro-batch of a window) `on_before_zero_grad` and `optimizer_zero_grad(epoch, batch_idx, optimizer)`, then
`backward(loss)`; `optimizer.step(closure=...)` runs it, calls `on_before_optimizer_step` and
`configure_gradient_clipping(optimizer, gradient_clip_val, gradient_clip_algorithm)`, then steps.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from sklearn.datasets import load_digits
from torch.utils.data import DataLoader, TensorDataset

import ember
from ember.errors import ConfigError

_X, _Y = load_digits(return_X_y=True)
DIGITS = TensorDataset(torch.tensor(_X[:256] / 16.0, dtype=torch.float32), torch.tensor(_Y[:256]))
OPTIONS = dict(
    logger=False, enable_progress_bar=False, enable_checkpointing=False, enable_model_summary=False
)


def loader(batch_size: int = 32) -> DataLoader:
    return DataLoader(DIGITS, batch_size=batch_size)


class Digits(ember.Module):
    def __init__(self, lr: float = 0.1) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.lr = lr
        self.layer = torch.nn.Linear(64, 10)
        self.events: list[tuple] = []

    def forward(self, x):
        return self.layer(x)

    def training_step(self, batch, batch_idx):
        self.events.append(("training_step", batch_idx))
        x, y = batch
        return F.cross_entropy(self.layer(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.lr)


def _weights(module: torch.nn.Module) -> list[torch.Tensor]:
    return [p.detach().clone() for p in module.parameters()]


def test_optimizer_step_that_skips_odd_steps_leaves_the_weights_unchanged_on_them(tmp_path):
    class SkipOdd(Digits):
        def on_train_batch_start(self, batch, batch_idx):
            self.before = _weights(self)

        def optimizer_step(self, epoch, batch_idx, optimizer, optimizer_closure):
            self.events.append(("optimizer_step", epoch, batch_idx, type(optimizer).__name__))
            if batch_idx % 2:
                optimizer_closure()  # training_step and backward run; the weights must not move
            else:
                optimizer.step(closure=optimizer_closure)

        def on_train_batch_end(self, outputs, batch, batch_idx):
            after = _weights(self)
            unchanged = all(torch.equal(a, b) for a, b in zip(self.before, after, strict=True))
            assert unchanged == bool(batch_idx % 2), batch_idx

    model = SkipOdd()
    ember.Trainer(max_epochs=1, default_root_dir=tmp_path, **OPTIONS).fit(model, loader())
    steps = [e for e in model.events if e[0] == "optimizer_step"]
    assert [e[2] for e in steps] == list(range(8))
    assert all(e[1] == 0 for e in steps)
    assert [e for e in model.events if e[0] == "training_step"] == [("training_step", i) for i in range(8)]
    assert model.trainer.global_step == 8  # Lightning counts the step once optimizer_step returns


def test_learning_rate_warm_up_in_optimizer_step_matches_a_hand_written_loop(tmp_path):
    class WarmUp(Digits):
        def optimizer_step(self, epoch, batch_idx, optimizer, optimizer_closure):
            optimizer.step(closure=optimizer_closure)
            for group in optimizer.param_groups:
                group["lr"] = self.lr * min(1.0, (self.trainer.global_step + 2) / 4)

    model = WarmUp()
    ember.Trainer(max_epochs=1, default_root_dir=tmp_path, **OPTIONS).fit(model, loader())

    reference = Digits()
    optimizer = torch.optim.SGD(reference.parameters(), lr=reference.lr)
    for step, (x, y) in enumerate(loader()):

        def closure(x=x, y=y):
            optimizer.zero_grad()
            loss = F.cross_entropy(reference.layer(x), y)
            loss.backward()
            return loss

        optimizer.step(closure)
        for group in optimizer.param_groups:
            group["lr"] = reference.lr * min(1.0, (step + 2) / 4)
    for mine, theirs in zip(model.parameters(), reference.parameters(), strict=True):
        assert torch.equal(mine, theirs)


def test_optimizer_step_that_never_runs_the_closure_is_refused_in_one_line(tmp_path):
    class Forgetful(Digits):
        def optimizer_step(self, epoch, batch_idx, optimizer, optimizer_closure):
            pass

    with pytest.raises(ConfigError, match="did not run optimizer_closure") as refused:
        ember.Trainer(max_epochs=1, default_root_dir=tmp_path, **OPTIONS).fit(Forgetful(), loader())
    assert "\n" not in str(refused.value)


def test_zero_grad_backward_and_clipping_hooks_run_in_lightnings_order_with_accumulation(tmp_path):
    class Recording(Digits):
        def on_before_zero_grad(self, optimizer):
            self.events.append(("on_before_zero_grad", type(optimizer).__name__))

        def optimizer_zero_grad(self, epoch, batch_idx, optimizer):
            self.events.append(("optimizer_zero_grad", epoch, batch_idx))
            optimizer.zero_grad()

        def backward(self, loss, *args, **kwargs):
            self.events.append(("backward", round(float(loss.detach()), 6)))
            loss.backward(*args, **kwargs)

        def on_before_optimizer_step(self, optimizer):
            self.events.append(("on_before_optimizer_step",))

        def configure_gradient_clipping(
            self, optimizer, gradient_clip_val=None, gradient_clip_algorithm=None
        ):
            self.events.append(("configure_gradient_clipping", gradient_clip_val, gradient_clip_algorithm))
            self.clip_gradients(optimizer, gradient_clip_val, gradient_clip_algorithm)

        def optimizer_step(self, epoch, batch_idx, optimizer, optimizer_closure):
            self.events.append(("optimizer_step", batch_idx))
            optimizer.step(closure=optimizer_closure)

    model = Recording()
    trainer = ember.Trainer(
        max_epochs=1,
        limit_train_batches=4,
        accumulate_grad_batches=2,
        gradient_clip_val=0.5,
        default_root_dir=tmp_path,
        **OPTIONS,
    )
    trainer.fit(model, loader())
    names = [e[0] for e in model.events]
    # first micro-batch alone (accumulating): training_step, zero_grad, backward; second: inside
    # optimizer_step
    assert (
        names
        == (
            ["training_step", "on_before_zero_grad", "optimizer_zero_grad", "backward"]
            + [
                "optimizer_step",
                "training_step",
                "backward",
                "on_before_optimizer_step",
                "configure_gradient_clipping",
            ]
        )
        * 2
    )
    assert ("optimizer_zero_grad", 0, 0) in model.events and ("optimizer_zero_grad", 0, 2) in model.events
    assert ("configure_gradient_clipping", 0.5, "norm") in model.events
    assert [e[1] for e in model.events if e[0] == "optimizer_step"] == [1, 3]
    assert trainer.global_step == 2


def test_overridden_backward_receives_the_accumulation_normalised_loss(tmp_path):
    losses: list[torch.Tensor] = []

    class Halving(Digits):
        def training_step(self, batch, batch_idx):
            loss = super().training_step(batch, batch_idx)
            losses.append(loss.detach())
            return loss

        def backward(self, loss, *args, **kwargs):
            losses.append(loss.detach())
            loss.backward()

    ember.Trainer(
        max_epochs=1, limit_train_batches=2, accumulate_grad_batches=2, default_root_dir=tmp_path, **OPTIONS
    ).fit(Halving(), loader())
    assert torch.equal(losses[1], losses[0] / 2) and torch.equal(losses[3], losses[2] / 2)


def test_the_default_step_and_a_default_optimizer_step_override_give_bitwise_the_same_weights(tmp_path):
    class Delegating(Digits):
        def optimizer_step(self, epoch, batch_idx, optimizer, optimizer_closure):
            super().optimizer_step(epoch, batch_idx, optimizer, optimizer_closure)

    plain, hooked = Digits(), Delegating()
    for model in (plain, hooked):
        ember.Trainer(
            max_epochs=2,
            gradient_clip_val=0.3,
            accumulate_grad_batches=3,
            default_root_dir=tmp_path,
            **OPTIONS,
        ).fit(model, loader())
    for a, b in zip(plain.parameters(), hooked.parameters(), strict=True):
        assert torch.equal(a, b)


def test_configure_gradient_clipping_override_replaces_the_trainer_clipping(tmp_path):
    class NoClip(Digits):
        def configure_gradient_clipping(
            self, optimizer, gradient_clip_val=None, gradient_clip_algorithm=None
        ):
            pass  # clipping switched off by the override

    clipped, unclipped, reference = Digits(), NoClip(), Digits()
    for model, clip in ((clipped, 1e-3), (unclipped, 1e-3), (reference, None)):
        ember.Trainer(
            max_epochs=1, limit_train_batches=3, gradient_clip_val=clip, default_root_dir=tmp_path, **OPTIONS
        ).fit(model, loader())
    assert all(torch.equal(a, b) for a, b in zip(unclipped.parameters(), reference.parameters(), strict=True))
    assert not torch.equal(clipped.layer.weight, reference.layer.weight)


def test_lr_scheduler_step_override_is_called_with_the_scheduler_and_the_monitored_metric(tmp_path):
    calls: list[tuple] = []

    class Plateau(Digits):
        def validation_step(self, batch, batch_idx):
            self.log("val_loss", F.cross_entropy(self.layer(batch[0]), batch[1]))

        def configure_optimizers(self):
            optimizer = self.optimizer = torch.optim.SGD(self.parameters(), lr=self.lr)
            step = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
            plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer)
            return [optimizer], [
                {"scheduler": step, "interval": "step"},
                {"scheduler": plateau, "monitor": "val_loss"},
            ]

        def lr_scheduler_step(self, scheduler, metric):
            calls.append((type(scheduler).__name__, None if metric is None else float(metric)))
            super().lr_scheduler_step(scheduler, metric)

    model = Plateau()
    trainer = ember.Trainer(
        max_epochs=1,
        limit_train_batches=3,
        limit_val_batches=2,
        num_sanity_val_steps=0,
        default_root_dir=tmp_path,
        **OPTIONS,
    )
    trainer.fit(model, loader(), loader())
    assert calls[:3] == [("StepLR", None)] * 3
    assert calls[3][0] == "ReduceLROnPlateau"
    assert calls[3][1] == pytest.approx(float(trainer.callback_metrics["val_loss"]))
    assert model.optimizer.param_groups[0]["lr"] == pytest.approx(0.1 * 0.5**3)


def test_manual_backward_calls_an_overridden_backward(tmp_path):
    class Manual(Digits):
        def __init__(self):
            super().__init__()
            self.automatic_optimization = False

        def training_step(self, batch, batch_idx):
            opt = self.optimizers()
            opt.zero_grad()
            self.manual_backward(F.cross_entropy(self.layer(batch[0]), batch[1]))
            opt.step()

        def backward(self, loss, *args, **kwargs):
            self.events.append(("backward",))
            loss.backward(*args, **kwargs)

    model = Manual()
    ember.Trainer(max_epochs=1, limit_train_batches=3, default_root_dir=tmp_path, **OPTIONS).fit(
        model, loader()
    )
    assert model.events == [("backward",)] * 3


# ---- batch transfer (Lightning: on_before_batch_transfer → transfer_batch_to_device →
# on_after_batch_transfer,
# ---- before on_*_batch_start; a DataModule's override wins over the Module's)
# -------------------------------
class Scaling(Digits):
    """The data arrive as raw pixel values 0..16: on_after_batch_transfer scales them (a GPU-side
    augmentation)."""

    def on_before_batch_transfer(self, batch, dataloader_idx):
        self.events.append(("before", dataloader_idx, float(batch[0].max())))
        return batch

    def transfer_batch_to_device(self, batch, device, dataloader_idx):
        self.events.append(("transfer", str(device), dataloader_idx))
        return [t.to(device) for t in batch]

    def on_after_batch_transfer(self, batch, dataloader_idx):
        self.events.append(("after", dataloader_idx))
        return [batch[0] / 16.0, batch[1]]

    def on_train_batch_start(self, batch, batch_idx):
        self.events.append(("on_train_batch_start", float(batch[0].max())))

    def validation_step(self, batch, batch_idx, dataloader_idx=0):
        self.events.append(("validation_step", dataloader_idx, float(batch[0].max())))

    def test_step(self, batch, batch_idx):
        self.events.append(("test_step", float(batch[0].max())))

    def predict_step(self, batch, batch_idx, dataloader_idx=0):
        return self.layer(batch[0])


RAW = TensorDataset(torch.tensor(_X[:64], dtype=torch.float32), torch.tensor(_Y[:64]))


def test_module_batch_transfer_hooks_run_in_order_for_train_validate_test_and_predict(tmp_path):
    model = Scaling()
    raw = DataLoader(RAW, batch_size=32)
    trainer = ember.Trainer(max_epochs=1, num_sanity_val_steps=0, default_root_dir=tmp_path, **OPTIONS)
    trainer.fit(model, raw, [raw, raw])
    first = model.events[:5]
    assert first == [
        ("before", 0, 16.0),
        ("transfer", "cpu", 0),
        ("after", 0),
        ("on_train_batch_start", 1.0),
        ("training_step", 0),
    ]
    validation = [e for e in model.events if e[0] in ("validation_step", "transfer")][-4:]
    assert validation == [("transfer", "cpu", 1), ("validation_step", 1, 1.0)] * 2
    model.events.clear()
    trainer.test(model, raw, verbose=False)
    assert ("test_step", 1.0) in model.events and ("before", 0, 16.0) in model.events
    scaled = trainer.predict(model, raw)
    reference = model.layer(torch.tensor(_X[:32], dtype=torch.float32) / 16.0)
    assert torch.equal(scaled[0], reference)


def test_a_datamodule_batch_transfer_hook_wins_over_the_modules(tmp_path):
    class Data(ember.DataModule):
        def train_dataloader(self):
            return DataLoader(RAW, batch_size=32)

        def on_after_batch_transfer(self, batch, dataloader_idx):
            return [batch[0] / 8.0, batch[1]]

    model = Scaling()
    with pytest.warns(UserWarning, match="DataModule's runs"):
        ember.Trainer(max_epochs=1, default_root_dir=tmp_path, **OPTIONS).fit(model, datamodule=Data())
    assert ("on_train_batch_start", 2.0) in model.events  # the DataModule's /8, not the Module's /16
    assert ("after", 0) not in model.events and ("before", 0, 16.0) in model.events


def test_configure_model_builds_layers_at_the_start_of_every_stage_and_runs_once_per_stage(tmp_path):
    class Lazy(Digits):
        def __init__(self):
            super().__init__()
            del self.layer
            self.layer = None
            self.configured = 0

        def configure_model(self):
            self.configured += 1
            if self.layer is None:  # idempotent, as Lightning asks
                torch.manual_seed(0)
                self.layer = torch.nn.Linear(64, 10)

        def configure_optimizers(self):
            return torch.optim.SGD(self.layer.parameters(), lr=0.1)

    model = Lazy()
    trainer = ember.Trainer(max_epochs=1, default_root_dir=tmp_path, **OPTIONS)
    trainer.fit(model, loader())
    trained = model.layer.weight.detach().clone()
    trainer.predict(model, loader())
    assert model.configured == 2 and torch.equal(model.layer.weight, trained)
    reference = Digits()
    ember.Trainer(max_epochs=1, default_root_dir=tmp_path, **OPTIONS).fit(reference, loader())
    assert torch.equal(trained, reference.layer.weight)


def test_model_eval_and_train_hooks_replace_ember_switching_modes(tmp_path):
    class KeepDropoutOn(Digits):
        def __init__(self):
            super().__init__()
            self.dropout = torch.nn.Dropout(0.5)
            self.seen: list[tuple] = []

        def validation_step(self, batch, batch_idx):
            self.seen.append(("validation", self.dropout.training))

        def predict_step(self, batch, batch_idx, dataloader_idx=0):
            self.seen.append(("predict", self.dropout.training))

        def on_validation_model_eval(self):
            self.seen.append(("on_validation_model_eval",))
            self.eval()
            self.dropout.train()  # Monte-Carlo dropout in validation

        def on_validation_model_train(self):
            self.seen.append(("on_validation_model_train",))
            self.train()

        def on_validation_model_zero_grad(self):
            self.seen.append(("on_validation_model_zero_grad",))

        def on_predict_model_eval(self):
            self.eval()
            self.dropout.train()

    model = KeepDropoutOn()
    trainer = ember.Trainer(
        max_epochs=1, limit_val_batches=1, num_sanity_val_steps=0, default_root_dir=tmp_path, **OPTIONS
    )
    trainer.fit(model, loader(), loader())
    assert model.seen == [
        ("on_validation_model_zero_grad",),
        ("on_validation_model_eval",),
        ("validation", True),
        ("on_validation_model_train",),
    ]
    trainer.predict(model, loader())
    assert model.seen[-1] == ("predict", True)


def test_datamodule_on_exception_is_called_after_the_callbacks(tmp_path):
    order: list[str] = []

    class Data(ember.DataModule):
        def train_dataloader(self):
            return loader()

        def on_exception(self, exception):
            order.append(f"datamodule:{exception}")

    class Watcher(ember.Callback):
        def on_exception(self, trainer, module, exception):
            order.append("callback")

    class Failing(Digits):
        def training_step(self, batch, batch_idx):
            raise RuntimeError("planned")

    with pytest.raises(RuntimeError, match="planned"):
        ember.Trainer(max_epochs=1, callbacks=[Watcher()], default_root_dir=tmp_path, **OPTIONS).fit(
            Failing(), datamodule=Data()
        )
    assert order == ["callback", "datamodule:planned"]


def test_a_delegating_optimizer_step_under_bf16_mixed_gives_the_default_steps_weights_bitwise(tmp_path):
    class Delegating(Digits):
        def optimizer_step(self, epoch, batch_idx, optimizer, optimizer_closure):
            super().optimizer_step(epoch, batch_idx, optimizer, optimizer_closure)

    plain, hooked = Digits(), Delegating()
    for model in (plain, hooked):
        ember.Trainer(
            max_epochs=1,
            precision="bf16-mixed",
            accumulate_grad_batches=2,
            default_root_dir=tmp_path,
            **OPTIONS,
        ).fit(model, loader())
    assert not torch.equal(plain.layer.weight, Digits().layer.weight)  # it trained
    for a, b in zip(plain.parameters(), hooked.parameters(), strict=True):
        assert torch.equal(a, b)


@pytest.mark.slow
def test_a_delegating_optimizer_step_under_two_process_ddp_with_accumulation_matches_the_default(tmp_path):
    script = Path(__file__).parent / "_hooked_ddp.py"
    for variant in ("default", "hooked"):
        result = subprocess.run(
            [sys.executable, str(script), str(tmp_path), variant],
            capture_output=True,
            text=True,
            timeout=300,
            env=dict(os.environ),
        )
        assert result.returncode == 0, result.stderr[-2000:]
    default, hooked = (torch.load(tmp_path / f"weights-{v}.pt") for v in ("default", "hooked"))
    assert default.keys() == hooked.keys()
    assert all(torch.equal(default[k], hooked[k]) for k in default)
    assert not torch.equal(default["layer.weight"], Digits().layer.weight)
