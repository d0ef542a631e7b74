"""Which Ray cluster ember joins, and how soon it says it cannot: Ray's rule, the same for ember.data's
Ray backend and for TorchTrainer (the Ray initialized in the driver, else RAY_ADDRESS), with a deadline.

Real processes: each driver is a fresh Python; the cluster is the 2-node loopback one of
tests/_ray_cluster.py (stopped by its own PIDs).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from tests._ray_cluster import two_node_ray  # noqa: E402,F401  (the fixture, by name)

READ_ON_RAY = """
import ember, ember.data
ember.data.DataContext.get_current().execution = "ray"
print(ember.data.range(4).take_all())
"""

TRAIN = """
import ember
from ember.train import RunConfig, ScalingConfig, TorchTrainer

def train_func(config):
    import ray
    from ember import train
    train.report({"gcs": ray.get_runtime_context().gcs_address if ray.is_initialized() else "local"})

result = TorchTrainer(train_func, scaling_config=ScalingConfig(num_workers=1),
                      run_config=RunConfig(name="rule", storage_path=%r)).fit()
print("TRAINED ON", result.metrics["gcs"])
"""


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when the with block ends: nothing listens there


def driver(code: str, tmp_path: Path, **env: str) -> tuple[subprocess.CompletedProcess, float]:
    environment = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "RAY_USAGE_STATS_ENABLED": "0",
        **env,
    }
    started = time.monotonic()
    ran = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=170,
    )
    return ran, time.monotonic() - started


def last_line(ran: subprocess.CompletedProcess) -> str:
    return ran.stderr.strip().splitlines()[-1]


@pytest.mark.timeout(200)
@pytest.mark.parametrize("code", [READ_ON_RAY, TRAIN], ids=["ember.data", "TorchTrainer"])
def test_ray_address_where_nothing_listens_is_one_line_within_the_deadline(code, tmp_path):
    port = closed_port()
    script = code % str(tmp_path / "results") if "%r" in code else code
    ran, took = driver(script, tmp_path, RAY_ADDRESS=f"127.0.0.1:{port}", EMBER_RAY_CONNECT_TIMEOUT_S="5")
    assert ran.returncode == 1
    line = last_line(ran)
    assert line.startswith("ember.errors.ServiceError: the Ray cluster at 127.0.0.1:"), ran.stderr[-2000:]
    assert f"127.0.0.1:{port}" in line and "EMBER_RAY_CONNECT_TIMEOUT_S" in line
    assert took < 60  # Ray alone retries for about 3 minutes


@pytest.mark.timeout(120)
def test_a_malformed_ray_address_is_one_line(tmp_path):
    ran, _ = driver(READ_ON_RAY, tmp_path, RAY_ADDRESS="127.0.0.1:abc")
    assert "ember.errors.ConfigError: RAY_ADDRESS='127.0.0.1:abc' is not host:port" in last_line(ran), (
        ran.stderr
    )


@pytest.mark.timeout(120)
def test_execution_ray_without_ray_installed_is_one_line(tmp_path):
    no_ray = "import sys\nsys.modules['ray'] = None  # as if Ray were not installed\n"
    ran, _ = driver(no_ray + READ_ON_RAY, tmp_path)
    assert ran.returncode == 1
    assert last_line(ran) == (
        "ember.errors.ConfigError: execution='ray' needs Ray, which is not installed: "
        "pip install 'ray[data,train]'"
    ), ran.stderr[-2000:]


@pytest.mark.slow  # the 2-node cluster (~20 s to start) and two drivers
@pytest.mark.timeout(400)
def test_training_and_data_join_the_cluster_ray_address_names(two_node_ray, tmp_path):  # noqa: F811
    script = (
        (TRAIN % str(tmp_path / "results"))
        + READ_ON_RAY
        + textwrap.dedent("""
        import ray
        print("DATA ON", ray.get_runtime_context().gcs_address)
    """)
    )
    ran, _ = driver(script, tmp_path, RAY_ADDRESS=two_node_ray.address)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert f"TRAINED ON {two_node_ray.address}" in ran.stdout  # not local processes
    assert f"DATA ON {two_node_ray.address}" in ran.stdout


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_training_runs_on_the_ray_the_driver_initialized(two_node_ray, tmp_path):  # noqa: F811
    script = f"import ray\nray.init(address={two_node_ray.address!r})\n" + TRAIN % str(tmp_path / "results")
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    environment = {**env, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    ran = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert f"TRAINED ON {two_node_ray.address}" in ran.stdout


def refusing_train_func(config):
    from ember.errors import ConfigError

    raise ConfigError("train_loop_config['lr']=-1 must be positive")


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_a_refusal_in_a_ray_worker_is_one_line_at_the_driver(two_node_ray, tmp_path):  # noqa: F811
    import cloudpickle

    from ember.errors import WorkerError
    from ember.train import RunConfig, ScalingConfig, TorchTrainer

    cloudpickle.register_pickle_by_value(
        sys.modules[__name__]
    )  # pytest's module name is not importable on Ray
    trainer = TorchTrainer(
        refusing_train_func,
        scaling_config=ScalingConfig(num_workers=1),
        run_config=RunConfig(name="refuses", storage_path=str(tmp_path), use_ray=True),
    )
    with pytest.raises(WorkerError) as failed:
        trainer.fit()
    assert str(failed.value) == (
        "rank 0 raised ember.errors.ConfigError: train_loop_config['lr']=-1 must be "
        "positive; ember stopped the other 0 workers"
    )
