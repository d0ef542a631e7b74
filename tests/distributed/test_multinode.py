"""Trainer(num_nodes=N) across "nodes": two real torchrun launchers on loopback (one per node), SLURM's
variables, and the one-line refusals when the arguments and the environment disagree.

Each launcher runs in its own process group; the tests kill both groups (and every worker by the pid it
recorded) on teardown, so nothing outlives a test.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from _dist import SCRIPTS, assert_no_orphans, assert_ok, processes_mentioning, worker_env

import ember
from ember.errors import ConfigError
from ember.runtime import cluster
from ember.runtime.launch import free_port

pytestmark = pytest.mark.timeout(180)

PARITY_ATOL = 1e-6  # as in test_ddp: two half-batch gradients averaged vs one whole-batch gradient
TWO_NODE_ARGS = ("--devices", "1", "--num-nodes", "2", "--shuffle", "--every-n-steps", "3", "--rank-weights")


class TwoNodes:
    """Two `torchrun --nnodes=2 --node_rank=0/1` launchers on 127.0.0.1 running train_cancer.py into `out`."""

    def __init__(self, out: Path, *args: str) -> None:
        out.mkdir(parents=True, exist_ok=True)
        self.out, port = out, free_port()
        self.launchers = []
        for node in (0, 1):
            command = [
                sys.executable,
                "-m",
                "torch.distributed.run",
                "--nnodes=2",
                "--nproc_per_node=1",
                f"--node_rank={node}",
                "--master_addr=127.0.0.1",
                f"--master_port={port}",
                "--local-addr=127.0.0.1",
                str(SCRIPTS / "train_cancer.py"),
                str(out),
                *args,
            ]
            log = (out / f"launcher_{node}.log").open("ab")
            self.launchers.append(
                subprocess.Popen(
                    command, env=worker_env(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True
                )
            )

    def wait(self, timeout: float = 90) -> list[int]:
        deadline = time.monotonic() + timeout
        try:
            return [proc.wait(timeout=max(0.1, deadline - time.monotonic())) for proc in self.launchers]
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"the two launchers did not finish in {timeout}s (a hang?)\n{self.logs()}")

    def kill(self) -> None:
        """SIGKILL both launchers' groups and every worker the script recorded (torchrun may give its
        workers their own session), then reap the launchers."""
        pids = [proc.pid for proc in self.launchers]
        pids_file = self.out / "pids"
        if pids_file.exists():
            words = pids_file.read_text().split()
            pids += [int(words[i + 2]) for i in range(0, len(words), 3)]
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        for proc in self.launchers:
            proc.wait(timeout=10)

    def logs(self) -> str:
        return "\n".join((self.out / f"launcher_{n}.log").read_text(errors="replace")[-3000:] for n in (0, 1))

    def weights(self, rank: int) -> dict[str, torch.Tensor]:
        return torch.load(self.out / f"weights_rank{rank}.pt", weights_only=True)

    def final(self) -> dict:
        return torch.load(self.out / "final.pt", weights_only=True)


@contextlib.contextmanager
def two_nodes(out: Path, *args: str):
    nodes = TwoNodes(out, *args)
    try:
        yield nodes
    finally:
        nodes.kill()


@pytest.fixture(scope="module")
def two_node_run(tmp_path_factory):
    """2 nodes x 1 process, shuffled, a checkpoint every 3 steps (8 steps an epoch, 2 epochs)."""
    out = tmp_path_factory.mktemp("two_nodes")
    with two_nodes(out, *TWO_NODE_ARGS) as nodes:
        assert nodes.wait() == [0, 0], nodes.logs()
    return nodes


@pytest.mark.slow
def test_two_torchrun_nodes_agree_with_each_other_and_with_one_process(two_node_run, one_process_run):
    ranks = sorted(line.split() for line in (two_node_run.out / "ranks").read_text().splitlines())
    # global, local, node rank, world size, num_nodes, as the Trainer reports them on each node
    assert ranks == [["0", "0", "0", "2", "2"], ["1", "0", "1", "2", "2"]]
    zero, one = two_node_run.weights(0), two_node_run.weights(1)
    for name, value in zero.items():
        assert torch.equal(one[name], value), name  # DDP: the two nodes hold the same weights, bitwise
    final, reference = two_node_run.final(), one_process_run.final()
    assert final["global_step"] == reference["global_step"] == 16 and final["rows_per_rank"] == [512, 512]
    for name, value in reference["state_dict"].items():
        torch.testing.assert_close(zero[name], value, rtol=0, atol=PARITY_ATOL)
    # only global rank 0 (node 0) writes checkpoints (logger=False:
    # to default_root_dir/checkpoints, as Lightning)
    writes = [line.split() for line in (two_node_run.out / "writes").read_text().splitlines()]
    assert writes and {rank for rank, _ in writes} == {"0"}
    assert (two_node_run.out / "checkpoints").is_dir() and not (two_node_run.out / "lightning_logs").exists()
    _assert_nothing_left(two_node_run.out)


@pytest.mark.slow
def test_both_nodes_killed_mid_run_resume_bitwise_equal_to_the_uninterrupted_run(two_node_run, tmp_path):
    with two_nodes(tmp_path, *TWO_NODE_ARGS, "--pause-at-step", "5") as nodes:
        deadline = time.monotonic() + 60
        while not all((tmp_path / f"paused_{rank}").exists() for rank in (0, 1)):
            assert time.monotonic() < deadline and all(p.poll() is None for p in nodes.launchers), (
                nodes.logs()
            )
            time.sleep(0.1)
        nodes.kill()  # SIGKILL: no chance to write anything more
    last = tmp_path / "checkpoints" / "last.ckpt"
    assert torch.load(last, weights_only=True)["global_step"] == 3
    with two_nodes(tmp_path, *TWO_NODE_ARGS, "--ckpt", "last") as resumed:
        assert resumed.wait() == [0, 0], resumed.logs()
    full, part = two_node_run.final(), resumed.final()
    assert part["global_step"] == 16
    for rank in (0, 1):
        for name, value in two_node_run.weights(rank).items():
            assert torch.equal(resumed.weights(rank)[name], value), (rank, name)  # bitwise
    assert (
        part["rows_seen"] == full["rows_seen"][-len(part["rows_seen"]) :]
    )  # rank 0: the same rows, same order
    _assert_nothing_left(tmp_path)


def _assert_nothing_left(out: Path) -> None:
    deadline = time.monotonic() + 10
    while processes_mentioning(str(out)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_mentioning(str(out)) == []


_LAUNCH_VARIABLES = (
    "RANK",
    "LOCAL_RANK",
    "WORLD_SIZE",
    "LOCAL_WORLD_SIZE",
    "GROUP_RANK",
    "MASTER_ADDR",
    "MASTER_PORT",
    "SLURM_NTASKS",
)


def _clear_launch_variables(monkeypatch) -> None:
    """Remove the launch variables so that teardown removes them again: the Trainer under test writes
    torch's variables into os.environ (as Lightning's SLURMEnvironment does), and monkeypatch only
    restores a name it recorded — delenv(raising=False) of an absent name records nothing, and the
    leaked RANK/WORLD_SIZE made later in-process tests wait for a process group that never forms."""
    for name in _LAUNCH_VARIABLES:
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)


def _slurm_env(ntasks: int, procid: int, nodes: int = 1, **extra: str) -> dict[str, str]:
    return {
        "SLURM_NTASKS": str(ntasks),
        "SLURM_PROCID": str(procid),
        "SLURM_LOCALID": str(procid % (ntasks // nodes)),
        "SLURM_NODEID": str(procid // (ntasks // nodes)),
        "SLURM_JOB_NUM_NODES": str(nodes),
        "SLURM_NTASKS_PER_NODE": str(ntasks // nodes),
        "SLURM_NODELIST": "127.0.0.1",
        "SLURM_JOB_ID": "4242",
        "SLURM_JOB_NAME": "train",
        **extra,
    }


@pytest.mark.slow
def test_slurm_tasks_read_their_ranks_from_slurm_and_train_together(tmp_path):
    """The test plays srun: two tasks of a 1-node job, told only SLURM's variables (and a free port)."""
    port = str(free_port())
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                str(SCRIPTS / "train_cancer.py"),
                str(tmp_path),
                "--devices",
                "2",
                "--max-steps",
                "2",
            ],
            env=worker_env(**_slurm_env(2, task), MASTER_PORT=port),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        for task in (0, 1)
    ]
    try:
        outputs = [proc.communicate(timeout=90)[0].decode(errors="replace") for proc in procs]
    finally:
        for proc in procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
    assert [proc.returncode for proc in procs] == [0, 0], outputs
    ranks = sorted(line.split() for line in (tmp_path / "ranks").read_text().splitlines())
    assert ranks == [["0", "0", "0", "2", "1"], ["1", "1", "0", "2", "1"]]  # no driver: srun started both
    assert torch.load(tmp_path / "final.pt", weights_only=True)["world_size"] == 2


def test_slurm_variables_give_the_ranks_and_torch_variables(monkeypatch):
    _clear_launch_variables(monkeypatch)
    for name, value in _slurm_env(4, 3, nodes=2, SLURM_NODELIST="gpu[07-08]").items():
        monkeypatch.setenv(name, value)
    trainer = ember.Trainer(
        accelerator="cpu", devices=2, num_nodes=2, logger=False, enable_progress_bar=False
    )
    assert (trainer.global_rank, trainer.local_rank, trainer.node_rank) == (3, 1, 1)
    assert (trainer.world_size, trainer.num_nodes, trainer.strategy.name) == (4, 2, "ddp")
    assert (os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"]) == (
        "gpu07",
        "15242",
    )  # Lightning's defaults


def test_an_interactive_slurm_shell_is_not_a_slurm_launch():
    assert (
        cluster.detect(_slurm_env(4, 0, SLURM_JOB_NAME="bash")) is None
    )  # salloc's shell: Lightning's rule too
    assert cluster.detect(_slurm_env(4, 0)).world_size == 4


@pytest.mark.parametrize(
    "env, kwargs, expected",
    [
        (
            {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "4", "LOCAL_WORLD_SIZE": "2", "GROUP_RANK": "0"},
            {"devices": 2, "num_nodes": 1},
            "Trainer(num_nodes=1, devices=2) asks for 1 x 2 = 2 processes, but torchrun started 4 processes "
            "on 2 nodes (2 per node); pass num_nodes=2, devices=2",
        ),
        (
            {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "1", "GROUP_RANK": "0"},
            {"devices": 2, "num_nodes": 2},
            (
                "asks for 2 x 2 = 4 processes, but torchrun started 2 "
                "processes on 2 nodes (1 per node); pass num_nodes=2, devices=1"
            ),
        ),
        ({}, {"devices": 1, "num_nodes": 2}, "num_nodes=2 but no multi-node launcher started this process"),
        ({}, {"devices": 1, "num_nodes": 0}, "num_nodes=0 must be a positive integer"),
    ],
)
def test_arguments_that_disagree_with_the_environment_are_one_line(monkeypatch, env, kwargs, expected):
    _clear_launch_variables(monkeypatch)
    for name, value in {**env, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(
        ConfigError
    ) as error:  # a bad value at construction; a launch that disagrees at the run
        trainer = ember.Trainer(
            accelerator="cpu", logger=False, **kwargs
        )  # (Lightning accepts num_nodes=8 here)
        trainer.fit(ember.demos.BoringModel())
    assert expected in str(error.value) and "\n" not in str(error.value)


def test_devices_auto_takes_the_processes_per_node_from_the_launcher(monkeypatch):
    _clear_launch_variables(monkeypatch)
    for name, value in {
        "RANK": "1",
        "LOCAL_RANK": "1",
        "WORLD_SIZE": "4",
        "LOCAL_WORLD_SIZE": "2",
        "GROUP_RANK": "0",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": "29500",
    }.items():
        monkeypatch.setenv(name, value)
    trainer = ember.Trainer(accelerator="cpu", num_nodes=2, logger=False)
    assert (trainer.world_size, trainer.global_rank, trainer.node_rank, trainer.num_nodes) == (4, 1, 0, 2)


def test_one_process_without_a_launcher_is_one_node(one_process_run):
    # conftest's session run: `python train_cancer.py OUT --devices 1 ...`, no launcher (one line in ranks)
    result = one_process_run
    assert_ok(result)
    assert (result.out / "ranks").read_text().split() == ["0", "0", "0", "1", "1"]
    assert_no_orphans(result)
