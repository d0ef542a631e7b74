"""Every bad input to the Trainer gets one line from ember that names the problem and the fix."""

from __future__ import annotations

import pytest
import torch
from _models import DigitsMLP, digits_loaders
from torch.utils.data import DataLoader, TensorDataset

import ember
from ember.errors import ConfigError, DataError

QUIET = {"enable_progress_bar": False, "enable_model_summary": False}


@pytest.mark.parametrize(
    "options, text",
    [
        ({"gradient_clip_val": -1.0}, "gradient_clip_val=-1.0 must be a number >= 0"),
        ({"gradient_clip_val": float("nan")}, "gradient_clip_val=nan must be a number >= 0"),
        ({"devices": "abc"}, "devices='abc' is not a device count"),
        ({"devices": 2.5}, "devices=2.5 is not a device count"),
        ({"max_time": "banana"}, "max_time='banana': use seconds"),
        ({"max_time": "00:01:xx:00"}, "max_time='00:01:xx:00': use seconds"),
        ({"max_time": -5}, "max_time=-5: use seconds"),
        ({"min_epochs": -1}, "min_epochs=-1 must be an int >= 0"),
        ({"num_sanity_val_steps": -2}, "num_sanity_val_steps=-2 must be an int >= -1"),
        ({"log_every_n_steps": -1}, "log_every_n_steps=-1 must be an int >= 0"),
    ],
)
def test_bad_trainer_options_are_one_line_at_construction(options, text):
    with pytest.raises(ConfigError) as caught:
        ember.Trainer(accelerator="cpu", **options)
    assert text in str(caught.value) and "\n" not in str(caught.value)


def test_default_root_dir_that_is_a_file(tmp_path):
    a_file = tmp_path / "notes.txt"
    a_file.write_text("mine")
    with pytest.raises(ConfigError, match="default_root_dir=.*notes.txt' is a file; pass a folder"):
        ember.Trainer(default_root_dir=a_file)
    assert a_file.read_text() == "mine"


def test_negative_clip_would_have_flipped_gradients_but_zero_means_off(tmp_path):
    ember.Trainer(gradient_clip_val=0, default_root_dir=tmp_path)  # Lightning: 0 or None disable clipping


def test_a_path_string_as_data_is_refused(tmp_path):
    trainer = ember.Trainer(max_epochs=1, default_root_dir=tmp_path, **QUIET)
    with pytest.raises(
        ConfigError,
        match=r"is the path 'data.parquet', which would be iterated character by "
        r"character; read it first, e.g. ember.data.read_parquet",
    ):
        trainer.fit(DigitsMLP(), "data.parquet")


def empty_loader() -> DataLoader:
    return DataLoader(TensorDataset(torch.zeros(0, 64), torch.zeros(0, dtype=torch.long)), batch_size=8)


def test_fit_on_zero_batches_is_an_error_not_a_silent_success(tmp_path):
    model = DigitsMLP()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    trainer = ember.Trainer(max_epochs=2, default_root_dir=tmp_path, **QUIET)
    with pytest.raises(
        DataError, match="the training data has no batches .* so fit would return without training"
    ):
        trainer.fit(model, empty_loader())
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in before.items())
    # drop_last with a batch size above the dataset's length: the same silent case
    small = DataLoader(
        TensorDataset(torch.zeros(5, 64), torch.zeros(5, dtype=torch.long)), batch_size=8, drop_last=True
    )
    with pytest.raises(DataError, match="no batches"):
        ember.Trainer(max_epochs=1, default_root_dir=tmp_path, **QUIET).fit(DigitsMLP(), small)
    # limit_train_batches=0 is Lightning's way to skip training on purpose: still allowed
    ember.Trainer(max_epochs=1, limit_train_batches=0, default_root_dir=tmp_path, **QUIET).fit(
        DigitsMLP(), small
    )


def test_validate_and_test_on_zero_batches(tmp_path):
    trainer = ember.Trainer(default_root_dir=tmp_path, **QUIET)
    for run, stage in ((trainer.validate, "validate"), (trainer.test, "test")):
        with pytest.raises(DataError, match=f"the {stage} data has no batches"):
            run(DigitsMLP(), empty_loader())


class DictBatches(DigitsMLP):
    def training_step(self, batch, batch_idx):
        x, y = batch  # the habit from tuple batches
        return torch.nn.functional.cross_entropy(self(x), y)


def test_dict_batch_unpacked_as_a_tuple_gets_a_hint(tmp_path):
    x, y = digits_loaders()[0].dataset.tensors
    batches = [
        {"image": x[i : i + 32], "label": y[i : i + 32], "id": torch.arange(32)} for i in range(0, 96, 32)
    ]
    trainer = ember.Trainer(max_epochs=1, default_root_dir=tmp_path, **QUIET)
    with pytest.raises(DataError) as caught:
        trainer.fit(DictBatches(), batches)
    message = str(caught.value)
    assert "training_step could not unpack the batch (too many values to unpack (expected 2))" in message
    assert "the batch is a dict with keys ['image', 'label', 'id']" in message and "batch['image']" in message


def test_deterministic_flags_are_restored_after_each_run(tmp_path):
    assert not torch.are_deterministic_algorithms_enabled()
    benchmark = torch.backends.cudnn.benchmark
    seen = []

    class Watch(ember.Callback):
        def on_train_start(self, trainer, module):
            seen.append(torch.are_deterministic_algorithms_enabled())

    trainer = ember.Trainer(
        max_epochs=1, deterministic=True, callbacks=[Watch()], default_root_dir=tmp_path, **QUIET
    )
    assert not torch.are_deterministic_algorithms_enabled()  # construction changes nothing global
    trainer.fit(DigitsMLP(), digits_loaders()[0])
    assert seen == [True]  # on during the run
    assert not torch.are_deterministic_algorithms_enabled() and torch.backends.cudnn.benchmark == benchmark
    trainer.test(DigitsMLP(), digits_loaders()[1])
    assert not torch.are_deterministic_algorithms_enabled()


def test_log_dir_after_test_exists(tmp_path):
    trainer = ember.Trainer(default_root_dir=tmp_path, **QUIET)
    trainer.test(DigitsMLP(), digits_loaders()[1], verbose=False)
    assert (tmp_path / "lightning_logs").exists()
    from pathlib import Path

    assert Path(trainer.log_dir).is_dir(), trainer.log_dir
    fitted = ember.Trainer(max_epochs=1, default_root_dir=tmp_path / "b", **QUIET)
    fitted.fit(DigitsMLP(), digits_loaders()[0])
    fitted.test(verbose=False, dataloaders=digits_loaders()[1])
    assert Path(fitted.log_dir).is_dir(), fitted.log_dir
