"""TorchTrainer.restore on a run folder whose trainer.json is damaged: one line naming the file, never a raw
JSONDecodeError, KeyError or TypeError (and can_restore says False)."""

from __future__ import annotations

import json

import pytest

from ember.errors import ConfigError
from ember.train import RunConfig, ScalingConfig, TorchTrainer
from ember.train.checkpoint_manager import SETTINGS_FILE, write_settings
from ember.train.restore import settings_of


def train_func(config):
    pass


def run_folder(tmp_path):
    """A run folder holding the trainer.json a real TorchTrainer records (no fit needed to write it)."""
    trainer = TorchTrainer(
        train_func,
        train_loop_config={"lr": 0.1},
        scaling_config=ScalingConfig(num_workers=2),
        run_config=RunConfig(name="run", storage_path=str(tmp_path)),
    )
    folder = tmp_path / "run"
    folder.mkdir()
    write_settings(folder, settings_of(trainer))
    return folder


def damage(folder, change) -> None:
    path = folder / SETTINGS_FILE
    settings = json.loads(path.read_text())
    change(settings)
    path.write_text(json.dumps(settings))


def test_an_intact_trainer_json_restores(tmp_path):
    folder = run_folder(tmp_path)
    restored = TorchTrainer.restore(str(folder), train_loop_per_worker=train_func)
    assert restored.scaling.num_workers == 2 and restored.config == {"lr": 0.1}


@pytest.mark.parametrize(
    "change, expected",
    [
        (lambda s: s.pop("scaling_config"), "trainer.json's 'scaling_config' is missing"),
        (lambda s: s.update(datasets=5), "trainer.json's 'datasets' is int '5'"),
        (lambda s: s.update(datasets=[1]), "trainer.json's 'datasets' is list '[1]'"),
        (
            lambda s: s.update(train_loop_config_saved="yes"),
            "trainer.json's 'train_loop_config_saved' is str 'yes'",
        ),
        (lambda s: s["checkpoint_config"].update(bogus=1), "trainer.json does not describe a run ("),
        (lambda s: s["scaling_config"].update(num_workers="two"), "trainer.json does not describe a run ("),
    ],
    ids=["missing", "wrong-type", "wrong-item-type", "wrong-bool", "unknown-key", "wrong-value"],
)
def test_a_damaged_field_is_one_line(change, expected, tmp_path):
    folder = run_folder(tmp_path)
    damage(folder, change)
    with pytest.raises(ConfigError) as refused:
        TorchTrainer.restore(str(folder), train_loop_per_worker=train_func)
    message = str(refused.value)
    assert expected in message and "\n" not in message, message
    assert message.startswith("TorchTrainer.restore: ") and "the file is damaged" in message


@pytest.mark.parametrize(
    "content", [b"{not json", b"\xff\xfe\x00garbage", b""], ids=["not-json", "not-text", "empty"]
)
def test_a_file_that_is_not_json_is_one_line(content, tmp_path):
    folder = run_folder(tmp_path)
    (folder / SETTINGS_FILE).write_bytes(content)
    with pytest.raises(
        ConfigError,
        match=r"trainer\.json is not valid JSON \(.*\); the run folder's trainer\.json "
        r"is damaged",
    ) as refused:
        TorchTrainer.restore(str(folder), train_loop_per_worker=train_func)
    assert "\n" not in str(refused.value)
    assert TorchTrainer.can_restore(str(folder)) is False
