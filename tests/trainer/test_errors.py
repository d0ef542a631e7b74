"""Every user mistake gets one clear line naming the problem and the fix; nothing already written is lost."""

from __future__ import annotations

import pytest
import torch
from _models import DigitsMLP, digits_tensors
from torch.utils.data import DataLoader, TensorDataset

import ember
from ember.cli import main as cli
from ember.errors import CheckpointError, ConfigError, NonFiniteLossError

QUIET = {"logger": False, "enable_progress_bar": False, "enable_model_summary": False}


@pytest.fixture
def data() -> DataLoader:
    x, y = digits_tensors()
    return DataLoader(TensorDataset(x[:256], y[:256]), batch_size=32)


class ReturnsNone(DigitsMLP):
    def training_step(self, batch, batch_idx):
        return None


class ReturnsVector(DigitsMLP):
    def training_step(self, batch, batch_idx):
        return self(batch[0]).sum(1)


class LogsAVector(DigitsMLP):
    def training_step(self, batch, batch_idx):
        self.log("logits", self(batch[0]))
        return self(batch[0]).sum()


class Diverges(DigitsMLP):
    def training_step(self, batch, batch_idx):
        loss = super().training_step(batch, batch_idx)
        return loss * float("nan") if self.global_step >= 5 else loss


class NoOptimizer(ember.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(64, 10)

    def training_step(self, batch, batch_idx):
        return self.layer(batch[0]).sum()


def one_line(error: BaseException) -> str:
    text = str(error)
    assert "\n" not in text, f"error message spans lines: {text!r}"
    return text


def test_a_training_step_returning_none_skips_its_batch(data, tmp_path):
    """Lightning's rule (not an error): no backward, the optimizer steps on no gradients, a warning says
    so."""
    module = ReturnsNone()
    before = {name: value.clone() for name, value in module.state_dict().items()}
    trainer = ember.Trainer(max_steps=2, default_root_dir=tmp_path, **QUIET)
    with pytest.warns(UserWarning, match="training_step returned None: this batch is skipped"):
        trainer.fit(module, data)
    assert trainer.global_step == 2
    assert all(torch.equal(value, module.state_dict()[name]) for name, value in before.items())


@pytest.mark.parametrize(
    ("module", "expected"),
    [
        (ReturnsVector, r"loss of shape \(32,\); reduce it to a scalar \(e.g. loss.mean\(\)\)"),
        (LogsAVector, r"self.log\('logits'\) got a tensor of shape \(32, 10\); log a scalar"),
        (NoOptimizer, "NoOptimizer has no configure_optimizers; define it to return an optimizer"),
    ],
)
def test_wrong_training_step_or_module(module, expected, data, tmp_path):
    with pytest.raises(ConfigError, match=expected) as error:
        ember.Trainer(max_steps=2, default_root_dir=tmp_path, **QUIET).fit(module(), data)
    one_line(error.value)


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"max_epoch": 3}, "Trainer has no option 'max_epoch'; did you mean 'max_epochs'?"),
        ({"precision": "fp8"}, "precision='fp8' is not supported; use '32-true', '16-mixed', 'bf16-mixed'"),
        ({"accelerator": "tpu"}, "accelerator='tpu' is not known; use one of auto, cpu, cuda"),
        ({"gradient_clip_algorithm": "l1"}, "gradient_clip_algorithm='l1' must be 'norm' or 'value'"),
    ],
)
def test_wrong_trainer_options(options, expected):
    with pytest.raises(
        ConfigError, match=expected.replace("(", r"\(").replace(")", r"\)").replace("?", r"\?")
    ):
        ember.Trainer(**options)


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_cuda_requested_without_cuda():
    with pytest.raises(ConfigError, match="CUDA is not available on this machine; use accelerator='cpu'"):
        ember.Trainer(accelerator="cuda")


def test_stages_without_their_step_or_data(data, tmp_path):
    trainer = ember.Trainer(default_root_dir=tmp_path, **QUIET)
    with pytest.raises(
        ConfigError, match=r"trainer.validate needs NoOptimizer.validation_step\(batch, batch_idx\)"
    ):
        trainer.validate(NoOptimizer(), data)
    with pytest.raises(ConfigError, match="fit has no training data; pass trainer.fit"):
        trainer.fit(DigitsMLP())
    with pytest.raises(
        ConfigError, match=r"trainer.test has no data; pass dataloaders=... or define test_dataloader"
    ):
        trainer.test(DigitsMLP())


def test_nan_loss_stops_and_keeps_the_last_good_checkpoint(data, tmp_path):
    checkpoints = ember.ModelCheckpoint(
        dirpath=tmp_path, every_n_train_steps=2, save_top_k=-1, save_last=True
    )
    trainer = ember.Trainer(
        max_steps=20, log_every_n_steps=2, callbacks=[checkpoints], default_root_dir=tmp_path, **QUIET
    )
    with pytest.raises(NonFiniteLossError, match="the training loss is nan at step 6") as error:
        trainer.fit(Diverges(), data)
    assert "last.ckpt" in one_line(error.value)
    last = ember.checkpoint.load_checkpoint(tmp_path / "last.ckpt")
    assert last["progress"]["global_step"] == 4  # the NaN step was never written as a checkpoint
    assert all(torch.isfinite(v).all() for v in last["state_dict"].values())
    assert sorted(p.name for p in tmp_path.glob("*.ckpt")) == [
        "epoch=0-step=2.ckpt",
        "epoch=0-step=4.ckpt",
        "last.ckpt",
    ]


def test_nan_loss_can_be_allowed(data, tmp_path):
    trainer = ember.Trainer(
        max_steps=8, log_every_n_steps=2, stop_on_nan=False, default_root_dir=tmp_path, **QUIET
    )
    with pytest.warns(UserWarning, match="the training loss is nan"):
        trainer.fit(Diverges(), data)
    assert trainer.global_step == 8


def test_checkpoint_of_another_model_names_the_keys(data, tmp_path):
    trainer = ember.Trainer(max_steps=2, default_root_dir=tmp_path, **QUIET)
    trainer.fit(DigitsMLP(), data)
    last = trainer.checkpoint_callback.best_model_path  # (Lightning's default callback keeps no last.ckpt)
    with pytest.raises(
        CheckpointError,
        match=r"saved from .*DigitsMLP, which does not fit NoOptimizer: missing keys "
        r"\[layer.weight, layer.bias\]",
    ):
        NoOptimizer.load_from_checkpoint(last)
    with pytest.raises(CheckpointError, match=r"shape mismatches \[net.0.weight \(32, 64\) vs \(16, 64\)"):
        DigitsMLP.load_from_checkpoint(last, hidden=16)
    with pytest.raises(CheckpointError, match=r"does not exist; pass an existing file or ckpt_path='last'"):
        ember.Trainer(max_steps=2, default_root_dir=tmp_path, **QUIET).fit(
            DigitsMLP(), data, ckpt_path=tmp_path / "x.ckpt"
        )


def test_a_pickled_object_in_a_checkpoint_is_refused_without_running_it(tmp_path):
    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return (open, (str(marker), "w"))  # what a malicious file would do on unpickling

    torch.save({"state_dict": {}, "payload": Payload()}, tmp_path / "evil.ckpt")
    with pytest.raises(CheckpointError, match="evil.ckpt") as error:
        ember.checkpoint.load_checkpoint(tmp_path / "evil.ckpt")
    assert "open" in one_line(error.value)  # names the refused global
    assert not marker.exists()


def test_resume_last_with_nothing_saved_starts_from_scratch(data, tmp_path, capsys):
    trainer = ember.Trainer(max_steps=3, default_root_dir=tmp_path, **QUIET)
    trainer.fit(DigitsMLP(), data, ckpt_path="last")
    assert trainer.global_step == 3
    assert "there is no last.ckpt in" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["--set", "trainer.max_epoch=1"],
            "unknown option --trainer.max_epoch; did you mean --trainer.max_epochs?",
        ),
        (["--set", "modle.lr=1"], "unknown option --modle.lr; did you mean --model?"),
        # (a root without the files now falls back to the system copy, so a typo stands for the data's
        # mistakes)
        (
            ["--set", "data.init_args.batch_sise=1"],
            "has no argument 'batch_sise'; did you mean 'batch_size'?",
        ),
    ],
)
def test_cli_errors_are_one_line_with_exit_code(argv, expected, capsys, tmp_path):
    with pytest.raises(SystemExit) as exit_:
        cli(["fit", "--config", "examples/fashion_mnist/config.yaml", "--root-dir", str(tmp_path), *argv])
    assert exit_.value.code in (1, 2)
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("ember fit: error: ") and expected in err[-1]


def test_cli_unknown_flag_and_missing_config(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli(["fit", "--config", "examples/fashion_mnist/config.yaml", "--learning-rate", "0.1"])
    assert (
        exit_.value.code == 2
        and "unknown option --learning-rate; run with --help for the options" in capsys.readouterr().err
    )
    with pytest.raises(SystemExit):
        cli(["fit", "--config", "nope.yaml"])
    assert "config file nope.yaml does not exist; pass --config" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("class_path", "expected"),
    [
        ("nowhere.py:Net", "model 'nowhere.py:Net': file nowhere.py does not exist"),
        ("model.py:Nett", "model 'model.py:Nett': model.py has no class 'Nett'"),
        # jsonargparse's wording for a name it cannot resolve (LightningCLI's too): less specific than ember's
        # was
        ("no_such_package.Net", "'no_such_package.Net'}\": expected ember.module.Module or null"),
        ("NoSuchNetAnywhere", "'NoSuchNetAnywhere'}\": expected ember.module.Module or null"),
    ],
)
def test_cli_class_path_errors(class_path, expected, tmp_path, capsys):
    (tmp_path / "model.py").write_text("class Net:\n    pass\n")
    (tmp_path / "config.yaml").write_text(f"model:\n  class_path: {class_path}\n")
    with pytest.raises(SystemExit) as exit_:
        cli(["fit", "--config", str(tmp_path / "config.yaml")])
    assert exit_.value.code == 2
    assert expected in capsys.readouterr().err.strip().splitlines()[-1]
