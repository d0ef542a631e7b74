"""EarlyStopping behaves as Lightning 2.6's: same stop epoch,
waits, best score, reason and message on the same run."""

from __future__ import annotations

import logging
import math

import pytest
import torch
from _twin import Body, digits_loaders, fit, lightning, make_module

import ember
from ember.callbacks import EarlyStopping
from ember.callbacks.early_stopping import EarlyStoppingReason
from ember.errors import EmberError


class NanAfterTwo(Body):
    """Also logs `odd`, which turns NaN from epoch 2 on (check_finite)."""

    def validation_step(self, batch, batch_idx):
        super().validation_step(batch, batch_idx)
        self.log("odd", torch.tensor(math.nan if self.current_epoch >= 2 else 1.0 - self.current_epoch / 10))


def _seen(trainer, stop) -> dict:
    return {
        "stopped_epoch": stop.stopped_epoch,
        "wait": stop.wait_count,
        "best": round(float(stop.best_score), 5),
        "reason": stop.stopping_reason.name,
        "message": stop.stopping_reason_message,
        "should_stop": trainer.should_stop,
    }


def _both(tmp_path, body=Body, trainer_args=None, **kwargs) -> tuple[dict, dict]:
    pl = lightning()
    seen = {}
    for library, cls in (("lightning", pl.callbacks.EarlyStopping), ("ember", EarlyStopping)):
        stop = cls(**kwargs)
        trainer = fit(
            library,
            tmp_path / library,
            [stop],
            module=make_module(library, body),
            max_epochs=8,
            **(trainer_args or {}),
        )
        seen[library] = _seen(trainer, stop)
    return seen["lightning"], seen["ember"]


CASES = {
    "patience_min_delta": dict(monitor="val_loss", patience=1, min_delta=0.05),
    "negative_min_delta_keeps_its_sign": dict(monitor="val_loss", patience=1, min_delta=-0.05),
    "stopping_threshold": dict(monitor="val_loss", stopping_threshold=0.5),
    "divergence_threshold": dict(monitor="val_loss", divergence_threshold=1.0),
    "max_mode_name_with_slash": dict(monitor="val/acc", mode="max", patience=1, min_delta=0.03),
    "on_train_epoch_end": dict(
        monitor="train_loss", patience=2, min_delta=0.02, check_on_train_epoch_end=True
    ),
    "not_strict_missing": dict(monitor="absent", strict=False),
    "verbose_rank_zero": dict(
        monitor="val_loss", patience=1, min_delta=0.05, verbose=True, log_rank_zero_only=True
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_same_stop_as_lightning(tmp_path, case):
    theirs, ours = _both(tmp_path, **CASES[case])
    assert ours == theirs


def test_check_finite_stops_on_nan_as_lightning(tmp_path):
    theirs, ours = _both(tmp_path, NanAfterTwo, monitor="odd", patience=5)
    assert ours == theirs and ours["reason"] == "NON_FINITE_METRIC" and ours["stopped_epoch"] == 2
    theirs, ours = _both(tmp_path / "off", NanAfterTwo, monitor="odd", patience=2, check_finite=False)
    assert ours == theirs and ours["reason"] == "PATIENCE_EXHAUSTED"


def test_validation_every_second_epoch_checks_after_validation(tmp_path):
    """With check_val_every_n_epoch=2 Lightning checks only
    after validations (not on stale train-end metrics)."""
    theirs, ours = _both(
        tmp_path, trainer_args={"check_val_every_n_epoch": 2}, monitor="val_loss", patience=1, min_delta=0.15
    )
    assert ours == theirs


def test_missing_metric_refused_in_one_line(tmp_path):
    with pytest.raises(
        EmberError, match="Early stopping conditioned on metric `absent` which is not available"
    ) as info:
        fit("ember", tmp_path, [EarlyStopping(monitor="absent")], max_epochs=1)
    assert "\n" not in str(info.value) and "`val_loss`" in str(info.value)  # Lightning's message, one line
    assert isinstance(
        info.value, RuntimeError
    )  # what Lightning raises, so `except RuntimeError` still catches it
    with pytest.warns(RuntimeWarning, match="not available"):  # not strict: Lightning warns when verbose
        fit(
            "ember",
            tmp_path / "lax",
            [EarlyStopping(monitor="absent", strict=False, verbose=True)],
            max_epochs=1,
        )
    with pytest.raises(EmberError, match="mode='mean'"):
        EarlyStopping(monitor="val_loss", mode="mean")


def test_resumed_early_stopping_continues_its_count(tmp_path):
    """wait_count/best_score/patience travel in the checkpoint:
    resuming stops at the same epoch as a straight run."""
    straight = EarlyStopping(monitor="val_loss", patience=2, min_delta=0.1)
    fit("ember", tmp_path / "s", [straight], max_epochs=8)
    assert straight.stopped_epoch == 6  # epoch 3 waits, 4 improves, 5 and 6 wait
    ckpt = ember.ModelCheckpoint(dirpath=tmp_path / "c", save_top_k=-1)
    fit(
        "ember",
        tmp_path / "r",
        [EarlyStopping(monitor="val_loss", patience=2, min_delta=0.1), ckpt],
        max_epochs=3,
    )
    resumed = EarlyStopping(monitor="val_loss", patience=2, min_delta=0.1)
    trainer = ember.Trainer(
        max_epochs=8,
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        default_root_dir=tmp_path / "r",
        callbacks=[resumed],
    )
    trainer.fit(make_module("ember"), *digits_loaders(), ckpt_path=ckpt.best_model_path)
    assert (resumed.stopped_epoch, resumed.wait_count, float(resumed.best_score)) == (
        straight.stopped_epoch,
        straight.wait_count,
        float(straight.best_score),
    )
    assert resumed.stopping_reason is EarlyStoppingReason.PATIENCE_EXHAUSTED


def test_fast_dev_run_never_stops(tmp_path):
    stop = EarlyStopping(monitor="val_loss", divergence_threshold=0.0)
    fit("ember", tmp_path, [stop], fast_dev_run=2)
    assert stop.stopping_reason is EarlyStoppingReason.NOT_STOPPED


def test_current_epoch_after_an_early_stop_as_lightning(tmp_path):
    """The stopped epoch counts as run: current_epoch is 1
    after a stop in epoch 0 (also for max_steps mid-epoch)."""
    pl = lightning()
    epochs = {}
    for library, cls in (("lightning", pl.callbacks.EarlyStopping), ("ember", EarlyStopping)):
        trainer = fit(
            library, tmp_path / library, [cls(monitor="val_loss", divergence_threshold=1.0)], max_epochs=3
        )
        in_the_middle = fit(library, tmp_path / f"{library}-steps", [], max_epochs=3, max_steps=5)
        epochs[library] = (trainer.current_epoch, in_the_middle.current_epoch, in_the_middle.global_step)
    assert epochs["ember"] == epochs["lightning"] == (1, 1, 5)


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def test_verbose_reports_the_same_lines_as_lightning(tmp_path, capsys):
    """verbose=True: every improvement and the stop reason,
    word for word as Lightning logs them (on stderr)."""
    pl = lightning()
    lightning_log = logging.getLogger("lightning.pytorch.callbacks.early_stopping")
    handler = _Lines()
    lightning_log.addHandler(handler)
    try:
        fit(
            "lightning",
            tmp_path / "l",
            [pl.callbacks.EarlyStopping(monitor="val_loss", patience=1, min_delta=0.05, verbose=True)],
            max_epochs=8,
        )
    finally:
        lightning_log.removeHandler(handler)
    capsys.readouterr()
    stop = EarlyStopping(monitor="val_loss", patience=1, min_delta=0.05, verbose=True)
    fit("ember", tmp_path / "e", [stop], max_epochs=8)
    printed = capsys.readouterr().err.splitlines()
    assert [line for line in printed if "val_loss" in line] == handler.lines
    assert handler.lines[0].startswith("Metric val_loss improved. New best score:")
    assert (
        handler.lines[-1] == stop.stopping_reason_message
        and "Signaling Trainer to stop." in handler.lines[-1]
    )


def test_state_crosses_over_from_a_lightning_run(tmp_path):
    """A Lightning EarlyStopping's state (tensor best score,
    reason) loads into ember's and goes on from there."""
    pl = lightning()
    theirs = pl.callbacks.EarlyStopping(monitor="val_loss", patience=1, min_delta=0.05)
    fit("lightning", tmp_path, [theirs], max_epochs=8)
    ours = EarlyStopping(monitor="val_loss", patience=5)
    assert ours.state_key == theirs.state_key
    ours.load_state_dict(theirs.state_dict())
    assert (ours.patience, ours.wait_count, ours.stopped_epoch, ours.stopping_reason.name) == (
        1,
        theirs.wait_count,
        theirs.stopped_epoch,
        theirs.stopping_reason.name,
    )
    assert torch.equal(ours.best_score, theirs.best_score)
    assert ours.stopping_reason_message == theirs.stopping_reason_message
    saved = ours.state_dict()
    assert isinstance(
        saved["best_score"], torch.Tensor
    )  # Lightning calls best_score.to(device) on what it loads
    again = pl.callbacks.EarlyStopping(monitor="val_loss")
    again.load_state_dict(saved)
    assert (
        torch.equal(again.best_score, theirs.best_score) and again.stopping_reason is theirs.stopping_reason
    )
