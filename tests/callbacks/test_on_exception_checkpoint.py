"""OnExceptionCheckpoint: a failing fit leaves a checkpoint
to resume from; a run that ends normally removes it."""

from __future__ import annotations

import pytest
import torch
from _models import DigitsMLP, digits_loaders

import ember
from ember.callbacks import OnExceptionCheckpoint
from ember.errors import ConfigError


class FailsAtStep(DigitsMLP):
    def __init__(self, fail_at: int | None) -> None:
        super().__init__()
        self.fail_at = fail_at

    def training_step(self, batch, batch_idx):
        if self.trainer.global_step == self.fail_at:
            raise RuntimeError("boom at step 5")
        return super().training_step(batch, batch_idx)


def _trainer(tmp_path, callback):
    return ember.Trainer(
        max_epochs=2,
        limit_train_batches=4,
        callbacks=[callback],
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=tmp_path,
    )


def test_a_failing_fit_writes_a_checkpoint_that_resumes_where_it_failed(tmp_path):
    callback = OnExceptionCheckpoint(tmp_path / "crash")
    train, _ = digits_loaders(shuffle=False)
    torch.manual_seed(0)
    model = FailsAtStep(fail_at=5)
    with pytest.raises(RuntimeError, match="boom at step 5"):
        _trainer(tmp_path, callback).fit(model, train)
    path = tmp_path / "crash" / "on_exception.ckpt"
    assert callback.ckpt_path == str(path) and path.is_file()
    saved = torch.load(path, weights_only=True)
    assert saved["global_step"] == 5
    assert all(torch.equal(saved["state_dict"][k], v) for k, v in model.state_dict().items())

    resumed = FailsAtStep(fail_at=None)
    trainer = _trainer(tmp_path, OnExceptionCheckpoint(tmp_path / "crash"))
    trainer.fit(resumed, train, ckpt_path=path)
    assert trainer.global_step == 8
    assert not path.exists()  # the run ended normally: Lightning removes the on-exception file


def test_an_empty_filename_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="filename=''"):
        OnExceptionCheckpoint(tmp_path, filename="")
