"""The strategy protocol: every strategy implements all of it (so no caller probes with getattr), with the
protocol's parameter names; what one process does where a collective would be; the one-line refusals."""

from __future__ import annotations

import inspect
import signal

import pytest
import torch

from ember.errors import ConfigError
from ember.runtime.strategies import (
    DDPStrategy,
    FSDPStrategy,
    ModelParallelStrategy,
    SingleDeviceStrategy,
    Strategy,
)
from ember.runtime.strategies.protocol import Strategy as ProtocolClass

STRATEGIES = [SingleDeviceStrategy, DDPStrategy, FSDPStrategy, ModelParallelStrategy]
MEMBERS = sorted(name for name in dir(ProtocolClass) if not name.startswith("_")) + ["name"]


def _build(cls):
    if cls is ModelParallelStrategy:
        return cls(save_distributed_checkpoint=False)
    return cls(torch.device("cpu")) if cls is SingleDeviceStrategy else cls()


def test_the_protocol_names_every_method_the_trainer_uses():
    expected = {
        "setup_environment",
        "setup_module",
        "training_step",
        "process_dataloader",
        "reduce",
        "all_gather",
        "broadcast",
        "barrier",
        "any_rank",
        "module_state_dict",
        "load_module_state_dict",
        "optimizer_state_dict",
        "load_optimizer_state_dict",
        "save_sharded_checkpoint",
        "write_checkpoint",
        "loads_checkpoint_folders",
        "set_stop_callback",
        "on_signal",
        "configure",
        "teardown",
        "world_size",
        "global_rank",
        "local_rank",
        "node_rank",
        "is_global_zero",
        "root_device",
        "launcher",
        "name",
        "device_mesh",
        "distributed_sampler_kwargs",
    }
    assert set(MEMBERS) == expected


@pytest.mark.parametrize("cls", STRATEGIES, ids=lambda c: c.__name__)
def test_every_strategy_implements_the_whole_protocol_with_its_parameter_names(cls):
    strategy = _build(cls)
    assert isinstance(strategy, Strategy)
    for name in MEMBERS:
        assert hasattr(strategy, name), f"{cls.__name__} lacks {name}"
        wanted = getattr(ProtocolClass, name, None)
        if inspect.isfunction(wanted):
            have = [p for p in inspect.signature(getattr(cls, name)).parameters]
            assert have == list(inspect.signature(wanted).parameters), f"{cls.__name__}.{name}"


def test_one_process_collectives_are_the_identity_and_a_signal_is_agreed_at_once():
    strategy = SingleDeviceStrategy(torch.device("cpu"))
    module = strategy.setup_module(torch.nn.Linear(2, 1))
    value = torch.tensor([1.0, 2.0])
    assert strategy.reduce(value) is value and strategy.all_gather(value).shape == (1, 2)
    assert strategy.broadcast({"a": 1}) == {"a": 1} and strategy.any_rank(False) is False
    assert strategy.launcher is None and strategy.world_size == 1 and strategy.is_global_zero
    state = strategy.optimizer_state_dict(torch.optim.SGD(module.parameters(), lr=0.1))
    assert state["param_groups"][0]["lr"] == 0.1
    agreed = []
    strategy.on_signal(signal.SIGTERM, agreed.append)
    assert agreed == [signal.SIGTERM]


@pytest.mark.parametrize("cls", STRATEGIES, ids=lambda c: c.__name__)
def test_sharded_checkpoints_are_refused_outside_fsdp_in_one_line(cls, tmp_path):
    if cls in (FSDPStrategy, ModelParallelStrategy):  # both write shards
        return
    with pytest.raises(ConfigError, match="save_sharded_checkpoint .*needs strategy='fsdp'"):
        _build(cls).save_sharded_checkpoint(None, tmp_path / "sharded")
    assert not (tmp_path / "sharded").exists()


def test_strategy_arguments_are_checked_at_construction():
    with pytest.raises(ConfigError, match="max_failures=-1 must be a non-negative int"):
        DDPStrategy(max_failures=-1)
    with pytest.raises(ConfigError, match="stop_check_every_n_batches=0 must be a positive int"):
        FSDPStrategy(stop_check_every_n_batches=0)
    with pytest.raises(ConfigError, match="FSDPStrategy has no argument 'find_unused_parameters'"):
        FSDPStrategy(find_unused_parameters=True)  # a DDP option: it used to be accepted and ignored


def test_outside_a_launched_process_the_parallel_strategies_say_how_to_start_one(monkeypatch):
    for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(
        ConfigError, match="strategy='ddp' needs RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT"
    ):
        DDPStrategy().setup_environment()
