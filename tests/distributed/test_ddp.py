"""DDP with real processes on CPU/gloo: parity with one process, torchrun, uneven data, sync_dist,
checkpoints written once, exact mid-epoch resume.

The model is a small MLP (30-8-1) trained as a classifier on scikit-learn's breast-cancer CSV
(read from disk, nothing downloads); see scripts/train_cancer.py.
"""

from __future__ import annotations

import math
import shutil

import pytest
import torch
from _dist import assert_no_orphans, assert_ok, run_ranks

pytestmark = pytest.mark.timeout(120)

# 2 ranks x 32 rows vs 1 process x 64 rows: the all-reduce averages two half-batch gradients while one
# process averages the whole batch, so float32 sums differ in order; after 16 SGD steps the weights
# agree to ~1e-7 (measured), we allow 1e-6 absolute.
PARITY_ATOL = 1e-6


def test_two_processes_equal_one_process_on_the_global_batch(ddp_run, one_process_run):
    two, one = ddp_run.final(), one_process_run.final()
    assert (two["world_size"], one["world_size"]) == (2, 1)
    assert two["global_step"] == one["global_step"] == 16  # 512 rows / 64 per step x 2 epochs
    assert two["rows_per_rank"] == [512, 512] and one["rows_per_rank"] == [1024]
    # each rank saw half the rows each epoch (rank 0's rows: 256 distinct ones per epoch)
    assert len(set(two["rows_seen"][:256])) == 256
    for name, value in one["state_dict"].items():
        torch.testing.assert_close(two["state_dict"][name], value, rtol=0, atol=PARITY_ATOL)
    assert two["metrics"]["train_loss"] < 0.3 < math.log(2)  # it learned (chance is ln 2)
    assert_no_orphans(ddp_run)


def test_sync_dist_reduces_across_ranks(ddp_run, one_process_run):
    final = ddp_run.final()
    local, last = final["local_loss_per_rank"], final["last_loss_per_rank"]
    assert local[0] != pytest.approx(local[1], rel=1e-3)  # the ranks saw different rows
    # on_epoch with sync_dist: the mean of the ranks' epoch means; without: rank zero's own
    assert final["metrics"]["train_loss"] == pytest.approx(sum(local) / 2, rel=1e-6)
    assert final["metrics"]["local_loss"] == pytest.approx(local[0], rel=1e-6)
    # on_step with sync_dist: the last step's loss averaged over the ranks
    assert final["metrics"]["step_loss"] == pytest.approx(sum(last) / 2, rel=1e-6)
    # and the synced epoch loss is what one process over the same rows computes
    assert final["metrics"]["train_loss"] == pytest.approx(
        one_process_run.final()["metrics"]["train_loss"], rel=1e-5
    )


def test_checkpoints_are_written_by_rank_zero_once(ddp_run):
    writes = ddp_run.writes()
    assert writes and {rank for rank, _ in writes} == {"0"}
    periodic = [name for _, name in writes if name != "last.ckpt"]
    assert periodic == [f"epoch={s // 8}-step={s}.ckpt" for s in (3, 6, 9, 12, 15)]  # each once, in order
    assert sorted(periodic + ["last.ckpt"]) == ddp_run.checkpoints()
    assert not (ddp_run.out / "lightning_logs").exists()  # logger=False: no run folder, as Lightning


def test_resume_from_mid_epoch_checkpoint_equals_uninterrupted_run(ddp_run, tmp_path):
    out = tmp_path / "resumed"
    shutil.copytree(ddp_run.out / "checkpoints", out / "checkpoints")
    ckpt = out / "checkpoints" / "epoch=1-step=12.ckpt"  # batch 4 of 8 in epoch 1
    resumed = run_ranks(
        "train_cancer.py", out, "--shuffle", "--every-n-steps", "3", "--ckpt", str(ckpt), ranks=2
    )
    assert_ok(resumed)
    full, part = ddp_run.final(), resumed.final()
    assert part["global_step"] == 16
    assert part["rows_per_rank"] == [128, 128]  # the 4 remaining steps only
    assert part["rows_seen"] == full["rows_seen"][-128:]  # rank 0: the same rows in the same order
    for name, value in full["state_dict"].items():
        assert torch.equal(part["state_dict"][name], value), name  # bitwise
    assert_no_orphans(resumed)


def test_torchrun_runs_the_same_script_and_checkpoints_once(torchrun_run, ddp_run):
    final = torchrun_run.final()
    assert final["world_size"] == 2 and final["global_step"] == 16 and final["rows_per_rank"] == [512, 512]
    assert sorted(rank for rank, _, _ in torchrun_run.pids()) == [
        "0",
        "1",
    ]  # joined torchrun's group, no spawning
    assert torchrun_run.writes() == [("0", "epoch=0-step=8.ckpt"), ("0", "epoch=1-step=16.ckpt")]
    assert torchrun_run.checkpoints() == ["epoch=0-step=8.ckpt", "epoch=1-step=16.ckpt", "last.ckpt"]
    assert not (torchrun_run.out / "lightning_logs").exists()
    assert final["metrics"]["train_loss"] < 0.3
    assert_no_orphans(torchrun_run)


def _uneven_args(data: str) -> list[str]:
    """569 rows, 2 ranks x 16: not divisible. With ember data: a local shuffle buffer without a seed, and
    a checkpoint every 3 steps (18 steps an epoch) for the unseeded-buffer resume below."""
    args = ["--rows", "569", "--batch", "16", "--shuffle", "--timeout", "30"]
    if data == "ember":
        args += ["--data", "ember", "--shuffle-buffer", "50", "--every-n-steps", "3"]
    return args


@pytest.fixture(scope="module")
def uneven(tmp_path_factory):
    """uneven(data): the uneven-data run for "loader" or "ember", once per kind in the module. The ember
    run is both the uneven-data test's run and the uninterrupted reference of the unseeded-shuffle-buffer
    resume (which resumes from a copy of its checkpoints; neither test writes into its folder)."""
    runs = {}

    def run_of(data: str):
        if data not in runs:
            out = tmp_path_factory.mktemp(f"uneven_{data}")
            runs[data] = run_ranks("train_cancer.py", out, *_uneven_args(data), ranks=2, timeout=60)
        return runs[data]

    return run_of


@pytest.mark.parametrize("data", ["loader", "ember"])
def test_uneven_data_does_not_hang(data, uneven):
    # 569 rows, 2 ranks x 16: not divisible. A DataLoader gets a DistributedSampler (285 rows each, one
    # repeated); an ember Dataset is split with equal=True (284 rows each) and shuffled locally.
    result = uneven(data)
    assert_ok(result)
    final = result.final()
    per_rank = 285 if data == "loader" else 284
    assert final["rows_per_rank"] == [2 * per_rank, 2 * per_rank]
    assert final["global_step"] == 2 * math.ceil(per_rank / 16)  # 18 batches an epoch on both ranks
    assert len(set(final["rows_seen"][:per_rank])) == per_rank
    if data == "ember":
        first_epoch = final["rows_seen"][:per_rank]
        assert sorted(first_epoch) == list(range(284)) and first_epoch != sorted(
            first_epoch
        )  # rank 0's shard, shuffled
    assert_no_orphans(result)


def test_resume_with_an_unseeded_shuffle_buffer_on_ember_data_is_exact(uneven, tmp_path):
    # No local_shuffle_seed: each rank would draw its own, but the checkpoint holds rank 0's state, so
    # ranks share rank 0's seed from the start and a resumed rank 1 shuffles exactly as before. The
    # uninterrupted run is the uneven-data test's ember run (18 steps an epoch, a checkpoint every 3).
    full = uneven("ember")
    assert_ok(full)
    resumed_dir = tmp_path / "resumed"
    shutil.copytree(full.out / "checkpoints", resumed_dir / "checkpoints")
    ckpt = resumed_dir / "checkpoints" / "epoch=1-step=27.ckpt"  # batch 9 of 18 in epoch 1
    resumed = run_ranks("train_cancer.py", resumed_dir, *_uneven_args("ember"), "--ckpt", str(ckpt), ranks=2)
    assert_ok(resumed)
    for name, value in full.final()["state_dict"].items():
        assert torch.equal(resumed.final()["state_dict"][name], value), name  # bitwise, so rank 1 matched too


@pytest.mark.slow
def test_accumulation_skips_the_all_reduce_on_micro_steps_and_equals_one_process(one_process_run, tmp_path):
    # 2 ranks x 2 micro-batches of 16 rows = the one process's 64-row batch, 16 optimizer steps
    result = run_ranks(
        "train_cancer.py", tmp_path, "--shuffle", "--batch", "16", "--accumulate", "2", ranks=2
    )
    assert_ok(result)
    final, one = result.final(), one_process_run.final()
    assert final["global_step"] == 16 and final["rows_per_rank"] == [512, 512]
    assert final["gradient_syncs"] == 16  # one per optimizer step, none on the 16 accumulating micro-steps
    for name, value in one["state_dict"].items():
        torch.testing.assert_close(final["state_dict"][name], value, rtol=0, atol=PARITY_ATOL)
    assert_no_orphans(result)
