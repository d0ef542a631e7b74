"""Launcher variables that cannot describe a real launch, and ranks holding different numbers of batches
of unknown count: one line at once, never a process group waiting forever.

Each case is a real `python script.py` with the variables in its environment (the helpers of _dist.py:
a hard timeout, no RANK/MASTER_PORT of the outer run leaking in).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from _dist import REPO, Run, assert_no_orphans, worker_env

SCRIPT = """
import sys, torch, ember
from torch.utils.data import DataLoader, IterableDataset, TensorDataset

class Stream(IterableDataset):  # a user-sharded stream: rank r holds 4 + 4 r rows, ember cannot count it
    def __init__(self, rows):
        self.rows = rows
    def __iter__(self):
        return (torch.full((2,), float(i)) for i in range(self.rows))

class Model(ember.Module):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(2, 1)
    def training_step(self, batch, batch_idx):
        x = batch[0] if isinstance(batch, (list, tuple)) else batch
        return self.layer(x).pow(2).mean()
    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)
    def train_dataloader(self):
        if sys.argv[2] == "uneven-stream":
            return DataLoader(Stream(4 + 4 * self.global_rank), batch_size=2)
        return DataLoader(TensorDataset(torch.randn(8, 2)), batch_size=2)

ember.Trainer(devices=2, accelerator="cpu", max_epochs=2, logger=False, enable_checkpointing=False,
              enable_progress_bar=False, enable_model_summary=False).fit(Model())
(__import__("pathlib").Path(sys.argv[1]) / "finished").write_text("")
"""

TORCHRUN_REST = {"LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "2", "GROUP_RANK": "0", "MASTER_ADDR": "127.0.0.1"}


def run_fit(tmp_path, case: str, **env: str) -> Run:
    """`python fit.py` with `env` added after worker_env's clean-up (which removes RANK, MASTER_PORT...)."""
    script = tmp_path / "fit.py"
    script.write_text(SCRIPT)
    start = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, str(script), str(tmp_path), case],
        cwd=REPO,
        env={**worker_env(), **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        pytest.fail(f"{case} did not finish in 120 s (a hang)\n{stderr[-3000:]}")
    return Run(tmp_path, proc.returncode, stdout, stderr, time.monotonic() - start)


def one_line(result) -> str:
    return result.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize(
    "env",
    [
        {"RANK": "5", "WORLD_SIZE": "2"},
        {"RANK": "5", "WORLD_SIZE": "2", "MASTER_PORT": "29511", **TORCHRUN_REST},
    ],
    ids=["rank-and-world-only", "all-torchrun-variables"],
)
def test_a_rank_past_the_world_size_is_one_line_at_once(env, tmp_path):
    result = run_fit(tmp_path, "even", **env)
    assert result.returncode == 1 and not (tmp_path / "finished").exists()
    assert one_line(result) == (
        "ember.errors.ConfigError: RANK=5 but WORLD_SIZE=2 in the environment: a rank is "
        "0..1; fix the launch command (torchrun sets both), or unset both to let ember start "
        "the processes"
    ), result.stderr[-3000:]
    assert result.seconds < 60  # before: a rendezvous waiting for rank 5 until the timeout


def test_master_port_that_is_not_a_number_is_one_line(tmp_path):
    result = run_fit(tmp_path, "even", RANK="0", WORLD_SIZE="2", MASTER_PORT="abc", **TORCHRUN_REST)
    assert result.returncode == 1
    assert one_line(result) == (
        "ember.errors.ConfigError: MASTER_PORT='abc' in the environment is not a port "
        "(1..65535); set it to a free port of the rank-0 machine, e.g. MASTER_PORT=29500"
    )


def test_a_slurm_task_without_slurm_procid_is_one_line(tmp_path):
    result = run_fit(tmp_path, "even", SLURM_NTASKS="2", SLURM_JOB_NAME="train", SLURM_LOCALID="0")
    assert result.returncode == 1
    assert one_line(result) == (
        "ember.errors.ConfigError: SLURM_PROCID is not set, though SLURM_NTASKS='2' says "
        "this is a SLURM task; start the script with srun (a shell in the allocation: "
        "SLURM_JOB_NAME=interactive)"
    ), result.stderr[-3000:]


def test_ranks_with_streams_of_different_lengths_stop_together_in_one_line(tmp_path):
    result = run_fit(tmp_path, "uneven-stream")
    assert result.returncode != 0 and not (tmp_path / "finished").exists()
    error = next(line for line in result.stderr.splitlines() if line.startswith("ember.errors.WorkerError"))
    assert (
        "raised ember.errors.ConfigError: the ranks hold different numbers of training batches in epoch 0 "
        "(rank 0: 2, rank 1: more than 2); DDP needs the same number on every rank" in error
    ), result.stderr[-3000:]
    assert "gloo" not in error and "Connection closed" not in result.stderr
    assert_no_orphans(result)
