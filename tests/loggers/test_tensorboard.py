"""TensorBoardLogger: hyperparameters land in the HParams tab with the metric they are judged by."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("tensorboard", reason="needs the tensorboard extra: pip install 'ember[tensorboard]'")

import torch.nn.functional as F  # noqa: E402
from _models import DigitsMLP, digits_loaders  # noqa: E402
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402
from tensorboard.plugins.hparams import plugin_data_pb2  # noqa: E402

import ember  # noqa: E402
from ember.loggers import TensorBoardLogger  # noqa: E402


def _events(log_dir: str) -> EventAccumulator:
    acc = EventAccumulator(log_dir, size_guidance={"scalars": 0, "tensors": 0})
    acc.Reload()
    return acc


def _hparams_plugin(acc: EventAccumulator) -> dict[str, plugin_data_pb2.HParamsPluginData]:
    """The HParams plugin's records by tag: the experiment (metrics) and the session start (the values)."""
    out = {}
    for tag, content in acc.PluginTagToContent("hparams").items():
        out[tag] = plugin_data_pb2.HParamsPluginData.FromString(content)
    return out


class HpMetricMLP(DigitsMLP):
    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        self.log("val_loss", F.cross_entropy(logits, y))
        self.log("hp_metric", (logits.argmax(1) == y).float().mean())


def test_fit_puts_hyperparameters_in_the_hparams_tab_with_hp_metric(tmp_path):
    train, val = digits_loaders(batch_size=100)
    logger = TensorBoardLogger(tmp_path, name="tb")
    trainer = ember.Trainer(
        max_epochs=2,
        logger=logger,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=tmp_path,
    )
    trainer.fit(HpMetricMLP(lr=0.2, hidden=24), train, val)

    acc = _events(logger.log_dir)
    plugin = _hparams_plugin(acc)
    start = plugin["_hparams_/session_start_info"].session_start_info
    assert {k: v.number_value for k, v in start.hparams.items()} == {"lr": 0.2, "hidden": 24.0}
    experiment = plugin["_hparams_/experiment"].experiment
    assert [m.name.tag for m in experiment.metric_infos] == ["hp_metric"]
    # The placeholder -1 first (at fit start), then the module's own values, one per epoch.
    values = [e.value for e in acc.Scalars("hp_metric")]
    assert values[0] == -1 and len(values) == 3 and all(0.5 < v <= 1 for v in values[1:])


def test_log_hyperparams_with_metrics_records_those_metrics(tmp_path):
    logger = TensorBoardLogger(tmp_path, name="tb", prefix="exp")
    logger.log_hyperparams(
        {"optim": {"name": "sgd", "lr": 0.1}, "layers": [64, 10], "dropout": None},
        {"val_acc": 0.0, "val_loss": 9.0},
    )
    logger.finalize("success")

    acc = _events(logger.log_dir)
    plugin = _hparams_plugin(acc)
    start = plugin["_hparams_/session_start_info"].session_start_info
    assert start.hparams["optim/name"].string_value == "sgd"
    assert start.hparams["optim/lr"].number_value == 0.1
    assert start.hparams["layers"].string_value == "[64, 10]"
    assert start.hparams["dropout"].string_value == "None"
    experiment = plugin["_hparams_/experiment"].experiment
    assert sorted(m.name.tag for m in experiment.metric_infos) == ["val_acc", "val_loss"]
    # Lightning logs the given metric values as scalars, with the prefix like any other metric.
    assert sorted(acc.Tags()["scalars"]) == ["exp-val_acc", "exp-val_loss"]
    assert "hp_metric" not in acc.Tags()["scalars"]


def test_default_hp_metric_false_writes_no_hparams_without_metrics(tmp_path):
    logger = TensorBoardLogger(tmp_path, name="tb", default_hp_metric=False)
    logger.log_hyperparams({"lr": 0.1})
    logger.log_metrics({"loss": 1.0}, step=0)
    logger.finalize("success")

    acc = _events(logger.log_dir)
    with pytest.raises(KeyError):
        acc.PluginTagToContent("hparams")  # no HParams record at all
    assert acc.Tags()["scalars"] == ["loss"]
    assert not [t for t in acc.Tags()["tensors"] if t.startswith("_hparams_")]
    assert Path(logger.log_dir).is_dir()
