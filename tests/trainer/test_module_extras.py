"""The Module API a Lightning user reaches for (issue 13 §3): example_input_array in ModelSummary, all_gather
(one process and DDP), toggle/untoggle_optimizer, clip_gradients in manual optimization, freeze/unfreeze,
print on rank zero, to_torchscript, to_onnx, self.logger / self.loggers — on sklearn's digits."""

from __future__ import annotations

import importlib.util
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
from ember.callbacks import ModelSummary
from ember.errors import ConfigError
from ember.loggers import CSVLogger

_X, _Y = load_digits(return_X_y=True)
DIGITS = TensorDataset(torch.tensor(_X[:256] / 16.0, dtype=torch.float32), torch.tensor(_Y[:256]))
OPTIONS = dict(
    logger=False, enable_progress_bar=False, enable_checkpointing=False, enable_model_summary=False
)


def loader() -> DataLoader:
    return DataLoader(DIGITS, batch_size=32)


class Digits(ember.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.hidden = torch.nn.Linear(64, 32)
        self.head = torch.nn.Linear(32, 10)
        self.example_input_array = torch.zeros(5, 64)

    def forward(self, x):
        return self.head(torch.relu(self.hidden(x)))

    def training_step(self, batch, batch_idx):
        return F.cross_entropy(self(batch[0]), batch[1])

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def test_example_input_array_gives_model_summary_its_in_and_out_sizes(tmp_path, capsys):
    trainer = ember.Trainer(
        max_steps=1,
        default_root_dir=tmp_path,
        callbacks=[ModelSummary()],
        **{**OPTIONS, "enable_model_summary": True},
    )
    trainer.fit(Digits(), loader())
    table = capsys.readouterr().err
    assert "In sizes" in table and "Out sizes" in table
    assert "[5, 64]" in table and "[5, 32]" in table and "[5, 10]" in table


def test_all_gather_in_one_process_returns_the_data_as_is_and_numbers_as_tensors(tmp_path):
    seen = {}

    class Gathering(Digits):
        def training_step(self, batch, batch_idx):
            x = batch[0][:2]
            seen["tensor"], seen["x"] = self.all_gather(x), x
            seen["dict"] = self.all_gather({"a": x, "n": 3})
            return super().training_step(batch, batch_idx)

    ember.Trainer(max_steps=1, default_root_dir=tmp_path, **OPTIONS).fit(Gathering(), loader())
    assert torch.equal(seen["tensor"], seen["x"])
    assert torch.equal(seen["dict"]["a"], seen["x"]) and torch.equal(seen["dict"]["n"], torch.tensor(3))


@pytest.mark.slow
def test_all_gather_and_print_under_two_process_ddp(tmp_path):
    script = Path(__file__).parent / "_extras_ddp.py"
    result = subprocess.run(
        [sys.executable, str(script), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert (tmp_path / "finished").exists()
    for rank in (0, 1):
        gathered = torch.load(tmp_path / f"gathered-{rank}.pt")
        assert torch.equal(gathered["tensor"], torch.tensor([[0.0, 0.0], [1.0, 1.0]]))
        assert torch.equal(gathered["dict"]["r"], torch.tensor([[0.0, 0.0], [10.0, 10.0]]))
        assert torch.equal(gathered["number"], torch.tensor([1, 2]))
    printed = result.stdout + result.stderr
    assert "printed by rank 0" in printed and "printed by rank 1" not in printed


class Alternating(ember.Module):
    """GAN-style manual optimization: two optimizers, each toggled in turn, clip_gradients on one of them."""

    def __init__(self, clip: float | None = None) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.automatic_optimization = False
        self.first, self.second = torch.nn.Linear(64, 10), torch.nn.Linear(64, 10)
        self.clip = clip
        self.flags: list[tuple[bool, bool]] = []

    def training_step(self, batch, batch_idx):
        x, y = batch
        opt_a, opt_b = self.optimizers()
        self.toggle_optimizer(opt_a)
        self.flags.append((self.first.weight.requires_grad, self.second.weight.requires_grad))
        loss = F.cross_entropy(self.first(x) + self.second(x), y)
        opt_a.zero_grad()
        untouched = self.second.weight.grad
        untouched = None if untouched is None else untouched.clone()
        self.manual_backward(loss)
        after = self.second.weight.grad  # frozen while opt_a is toggled: backward leaves its gradient alone
        assert (after is None and untouched is None) or torch.equal(after, untouched)
        if self.clip is not None:
            self.clip_gradients(opt_a, gradient_clip_val=self.clip, gradient_clip_algorithm="norm")
        opt_a.step()
        self.untoggle_optimizer(opt_a)
        self.toggle_optimizer(opt_b)
        self.flags.append((self.first.weight.requires_grad, self.second.weight.requires_grad))
        loss = F.cross_entropy(self.first(x) + self.second(x), y)
        opt_b.zero_grad()
        self.manual_backward(loss)
        opt_b.step()
        self.untoggle_optimizer(opt_b)

    def configure_optimizers(self):
        return torch.optim.SGD(self.first.parameters(), lr=0.1), torch.optim.SGD(
            self.second.parameters(), lr=0.1
        )


def test_toggle_optimizer_freezes_the_other_optimizers_parameters_and_untoggle_restores_them(tmp_path):
    model = Alternating()
    model.second.bias.requires_grad_(False)  # a flag the user set stays as it was
    ember.Trainer(max_steps=4, default_root_dir=tmp_path, **OPTIONS).fit(model, loader())
    assert model.flags == [(True, False), (False, True)] * 2
    assert model.first.weight.requires_grad and model.second.weight.requires_grad
    assert not model.second.bias.requires_grad


def test_clip_gradients_in_manual_optimization_matches_a_hand_written_clipped_loop(tmp_path):
    model = Alternating(clip=0.05)
    ember.Trainer(max_steps=6, default_root_dir=tmp_path, **OPTIONS).fit(model, loader())

    reference = Alternating()
    opt_a, opt_b = reference.configure_optimizers()
    for step, (x, y) in enumerate(loader()):
        if step == 3:
            break
        reference.second.requires_grad_(False)
        opt_a.zero_grad()
        F.cross_entropy(reference.first(x) + reference.second(x), y).backward()
        torch.nn.utils.clip_grad_norm_(list(reference.first.parameters()), 0.05)
        opt_a.step()
        reference.second.requires_grad_(True)
        reference.first.requires_grad_(False)
        opt_b.zero_grad()
        F.cross_entropy(reference.first(x) + reference.second(x), y).backward()
        opt_b.step()
        reference.first.requires_grad_(True)
    for mine, theirs in zip(model.parameters(), reference.parameters(), strict=True):
        assert torch.equal(mine, theirs)


def test_manual_optimization_refuses_the_trainers_clipping(tmp_path):
    model = Alternating(
        clip=0.5
    )  # Lightning refuses Trainer(gradient_clip_val=...) under manual optimization
    with pytest.raises(ConfigError, match="gradient_clip_val=.*manual optimization"):
        ember.Trainer(max_steps=1, gradient_clip_val=0.1, default_root_dir=tmp_path, **OPTIONS).fit(
            model, loader()
        )


def test_freeze_and_unfreeze():
    model = Digits()
    assert model.freeze() is model
    assert not any(p.requires_grad for p in model.parameters()) and not model.training
    assert model.unfreeze() is model
    assert all(p.requires_grad for p in model.parameters()) and model.training


def test_print_prints_on_rank_zero(capsys):
    Digits().print("hello", 3)
    assert capsys.readouterr().out == "hello 3\n"


@pytest.mark.parametrize("method", ["script", "trace"])
def test_to_torchscript_gives_the_modules_outputs_bitwise_and_saves_a_loadable_file(tmp_path, method):
    model = Digits()
    model.train()
    scripted = model.to_torchscript(tmp_path / "model.pt", method=method)
    assert model.training  # the mode is put back
    x = DIGITS.tensors[0][:8]
    with torch.no_grad():
        expected = model(x)
    assert torch.equal(scripted(x), expected)
    assert torch.equal(torch.jit.load(str(tmp_path / "model.pt"))(x), expected)


def test_to_torchscript_trace_needs_an_example(tmp_path):
    model = Digits()
    model.example_input_array = None
    with pytest.raises(ConfigError, match="example_input_array"):
        model.to_torchscript(method="trace")


@pytest.mark.skipif(importlib.util.find_spec("onnx") is not None, reason="checks the refusal without onnx")
def test_to_onnx_without_onnx_is_refused_in_one_line(tmp_path):
    with pytest.raises(ConfigError, match="to_onnx needs the onnx package") as refused:
        Digits().to_onnx(tmp_path / "model.onnx")
    assert "\n" not in str(refused.value)
    assert not (tmp_path / "model.onnx").exists()


@pytest.mark.skipif(importlib.util.find_spec("onnx") is None, reason="onnx is not installed")
def test_to_onnx_writes_a_model_onnx_can_check(tmp_path):
    import onnx

    Digits().to_onnx(tmp_path / "model.onnx")
    onnx.checker.check_model(onnx.load(str(tmp_path / "model.onnx")))


def test_logger_and_loggers_are_the_trainers(tmp_path):
    seen = {}

    class Logging(Digits):
        def on_fit_start(self):
            seen["logger"], seen["loggers"] = self.logger, self.loggers

    model = Logging()
    assert model.logger is None and model.loggers == []
    csv = CSVLogger(tmp_path)
    trainer = ember.Trainer(
        max_steps=1,
        default_root_dir=tmp_path,
        logger=csv,
        enable_progress_bar=False,
        enable_checkpointing=False,
        enable_model_summary=False,
    )
    trainer.fit(model, loader())
    assert seen["logger"] is csv and seen["loggers"] == [csv]
