"""strategy="fsdp" (FSDP2 `fully_shard`) with 2 CPU processes on gloo: same result as DDP and as one
process, parameters really sharded, full checkpoints and sharded (torch.distributed.checkpoint) ones
that a single process loads, exact mid-epoch resume."""

from __future__ import annotations

import shutil

import pytest
import torch
from _dist import assert_no_orphans, assert_ok, run_ranks, run_script

from ember.runtime.distributed import load_sharded_checkpoint

pytestmark = pytest.mark.timeout(120)
PARAMETERS = 30 * 8 + 8 + 8 + 1  # the MLP 30-8-1


def test_fsdp_shards_parameters_and_matches_ddp_and_one_process(fsdp_run, ddp_run, one_process_run):
    fsdp, ddp, one = fsdp_run.final(), ddp_run.final(), one_process_run.final()
    assert fsdp["global_step"] == 16 and fsdp["rows_per_rank"] == [512, 512]
    assert ddp["parameters_per_rank"] == [PARAMETERS, PARAMETERS]
    assert (
        sum(fsdp["parameters_per_rank"]) == PARAMETERS and max(fsdp["parameters_per_rank"]) < 140
    )  # ~half each
    for name, value in one["state_dict"].items():
        torch.testing.assert_close(fsdp["state_dict"][name], value, rtol=0, atol=1e-6)  # same bound as DDP
        torch.testing.assert_close(fsdp["state_dict"][name], ddp["state_dict"][name], rtol=0, atol=1e-6)
    assert fsdp["metrics"]["train_loss"] == pytest.approx(ddp["metrics"]["train_loss"], rel=1e-5)
    assert_no_orphans(fsdp_run)


def test_fsdp_checkpoints_load_in_one_process(fsdp_run):
    final = fsdp_run.final()
    assert {rank for rank, _ in fsdp_run.writes()} == {"0"}
    # the Trainer's checkpoint: full plain tensors (gathered), loadable with torch.load alone
    ckpt = torch.load(fsdp_run.out / "checkpoints" / "last.ckpt", weights_only=True)
    assert ckpt["global_step"] == 16
    for name, value in final["state_dict"].items():
        assert type(ckpt["state_dict"][name]) is torch.Tensor and torch.equal(ckpt["state_dict"][name], value)
    assert set(ckpt["optimizer_states"][0]["state"]) == set(
        final["state_dict"]
    )  # momentum, by parameter name
    # the sharded checkpoint: one file per rank, read back in this (single, no process group) process
    folder = fsdp_run.out / "sharded"
    assert sorted(p.name for p in folder.iterdir()) == [".metadata", "__0_0.distcp", "__1_0.distcp"]
    state = load_sharded_checkpoint(folder)
    assert state["global_step"] == 16
    for name, value in final["state_dict"].items():
        assert torch.equal(state["state_dict"][name], value), name
    model = torch.nn.Sequential(torch.nn.Linear(30, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    model.load_state_dict({k.removeprefix("net."): v for k, v in state["state_dict"].items()})


def test_fsdp_resume_from_mid_epoch_checkpoint_equals_uninterrupted_run(fsdp_run, tmp_path):
    out = tmp_path / "resumed"
    shutil.copytree(fsdp_run.out / "checkpoints", out / "checkpoints")
    ckpt = out / "checkpoints" / "epoch=1-step=12.ckpt"
    resumed = run_ranks(
        "train_cancer.py",
        out,
        *("--shuffle", "--every-n-steps", "3", "--strategy", "fsdp", "--ckpt", str(ckpt)),
        ranks=2,
    )
    assert_ok(resumed)
    full, part = fsdp_run.final(), resumed.final()
    assert part["global_step"] == 16 and part["rows_per_rank"] == [128, 128]
    for name, value in full["state_dict"].items():
        assert torch.equal(part["state_dict"][name], value), (
            name
        )  # bitwise, momentum restored into the shards
    assert_no_orphans(resumed)


@pytest.mark.slow
def test_fsdp_sigterm_to_one_rank_stops_both_at_the_next_stop_check_then_resumes_exactly(fsdp_run, tmp_path):
    # SIGTERM reaches rank 1 in step 2; the ranks compare flags every 4th step, so both stop after step 4
    args = ["--shuffle", "--every-n-steps", "3", "--strategy", "fsdp", "--stop-check-every", "4"]
    stopped = run_script("train_cancer.py", tmp_path, *args, "--sigterm-rank", "1", "--at-step", "1")
    assert stopped.returncode != 0
    assert stopped.stderr.count("ember: SIGTERM received at epoch 0, step 4; checkpoint saved to") == 2
    assert stopped.stderr.strip().endswith("run the script again with fit(..., ckpt_path='last') to resume")
    ckpt = torch.load(tmp_path / "checkpoints" / "last.ckpt", weights_only=True)
    assert ckpt["global_step"] == 4
    assert_no_orphans(stopped)

    resumed = run_script("train_cancer.py", tmp_path, *args, "--ckpt", "last")
    assert_ok(resumed)
    for name, value in fsdp_run.final()["state_dict"].items():
        assert torch.equal(resumed.final()["state_dict"][name], value), name  # bitwise: as if never stopped
    assert_no_orphans(resumed)
