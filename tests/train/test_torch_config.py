"""Ray Train's TorchConfig and DataConfig on TorchTrainer: honoured, never accepted and ignored.

`TorchConfig(backend, timeout_s)` forms the workers' group; `DataConfig(datasets_to_split=[...])` splits
only the named datasets and gives every worker the others whole; both are kept for `TorchTrainer.restore`.
`metadata=` is refused as Ray Train 2.60 refuses it.
"""

from __future__ import annotations

import json
import sys

import pytest
from _dist import SCRIPTS, assert_no_orphans, assert_ok, run

from ember.errors import ConfigError
from ember.train import DataConfig, RunConfig, ScalingConfig, TorchTrainer
from ember.train.torch import TorchConfig


@pytest.mark.slow  # a 2-worker run (~10 s)
@pytest.mark.timeout(120)
def test_the_group_has_the_configured_backend_and_timeout_and_only_named_datasets_are_split(tmp_path):
    result = run([sys.executable, str(SCRIPTS / "train_func_configs.py"), str(tmp_path)], tmp_path)
    assert_ok(result)
    ranks = [json.loads((tmp_path / f"rank_{r}.json").read_text()) for r in (0, 1)]
    assert [r["backend"] for r in ranks] == ["gloo", "gloo"]
    assert [r["timeout_s"] for r in ranks] == [42.0, 42.0]
    train = [r["seen"]["train"] for r in ranks]
    assert len(train[0]) == len(train[1]) == 5 and sorted(train[0] + train[1]) == list(range(10))  # split
    assert [r["seen"]["valid"] for r in ranks] == [
        list(range(6))
    ] * 2  # not named: every worker reads it whole
    assert_no_orphans(result)


def test_a_restored_trainer_keeps_the_torch_and_data_configs(tmp_path):
    from ember.train.checkpoint_manager import write_settings
    from ember.train.restore import settings_of

    def train_func():
        pass

    first = TorchTrainer(
        train_func,
        datasets={"train": [1]},
        scaling_config=ScalingConfig(num_workers=2),
        torch_config=TorchConfig(timeout_s=42),
        dataset_config=DataConfig(datasets_to_split=[]),
        run_config=RunConfig(name="run", storage_path=str(tmp_path)),
    )
    write_settings(first._run_dir(), settings_of(first))
    again = TorchTrainer.restore(tmp_path / "run", train_loop_per_worker=train_func, datasets={"train": [1]})
    assert again.torch_config == TorchConfig(timeout_s=42)
    assert again.dataset_config == DataConfig(datasets_to_split=[])


def test_without_a_torch_config_the_group_keeps_embers_defaults_and_every_dataset_is_split():
    trainer = TorchTrainer(lambda: None)
    assert trainer.torch_config is None
    assert trainer.dataset_config.splits("anything")
    assert (
        TorchConfig().backend_for(use_gpu=True) == "nccl" and TorchConfig().timeout_s == 1800
    )  # Ray's defaults


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda: TorchTrainer(lambda: None, metadata={"a": 1}),
            r"^TorchTrainer\(metadata=\.\.\.\): Ray Train 2\.60 refuses it too \(deprecated\); pass such "
            r"values in "
            r"train_loop_config$",
        ),
        (
            lambda: TorchTrainer(lambda: None, validation_config=object()),
            r"^TorchTrainer\(validation_config=\.\.\.\)",
        ),
        (
            lambda: TorchTrainer(lambda: None, torch_config=object()),
            (
                r"^TorchTrainer\(torch_config=\.\.\.\) takes "
                r"ember\.train\.torch\.TorchConfig, not builtins\.object$"
            ),
        ),
        (
            lambda: TorchTrainer(lambda: None, dataset_config={"datasets_to_split": "all"}),
            r"^TorchTrainer\(dataset_config=\.\.\.\) takes ember\.train\.DataConfig, not builtins\.dict$",
        ),
        (lambda: TorchConfig(init_method="file"), r"^TorchConfig\(init_method='file'\): use 'env' or 'tcp'$"),
        (lambda: TorchConfig(backend="hccl"), r"^TorchConfig\(backend='hccl'\)"),
        (
            lambda: TorchConfig(timeout_s=0),
            r"^TorchConfig\(timeout_s=0\) must be a positive number of seconds$",
        ),
        (
            lambda: DataConfig(datasets_to_split="train"),
            r"^DataConfig\(datasets_to_split='train'\) must be 'all' or a list",
        ),
        (
            lambda: DataConfig(execution_options=object()),
            r"^DataConfig\(execution_options=\.\.\.\) is not implemented",
        ),
    ],
)
def test_what_ember_does_not_honour_is_refused_in_one_line(make, message):
    with pytest.raises(ConfigError, match=message):
        make()
