"""ModelParallelStrategy (tensor parallel + FSDP2 on a 2-D mesh) and FSDPStrategy's activation checkpointing,
with 2 CPU processes on gloo: the Module parallelizes itself in configure_model with `self.device_mesh`; a
1x2 mesh (tensor parallel) trains as one process would; its checkpoint file resumes on a 2x1 mesh (data
parallel) and its per-rank shards load there too; checkpointed blocks run their forward again in backward."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from _dist import assert_no_orphans, assert_ok, run_ranks

import ember
from ember.errors import ConfigError
from ember.runtime.distributed import FSDPStrategy, ModelParallelStrategy

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]
SCRIPT = "train_model_parallel.py"


@pytest.fixture(scope="module")
def tensor_parallel_run(tmp_path_factory):
    """6 steps on a 1x2 mesh (both ranks one tensor-parallel group), then its per-rank shards saved."""
    result = run_ranks(
        SCRIPT, tmp_path_factory.mktemp("tp"), "--mesh", "1", "2", "--save-sharded", ranks=2, timeout=240
    )
    assert_ok(result)
    return result


def one_process_reference(steps: int) -> dict[str, torch.Tensor]:
    """The script's model and data trained by hand in one process (no parallelism), for `steps` steps."""
    torch.manual_seed(0)
    up, down, head = torch.nn.Linear(6, 16), torch.nn.Linear(16, 6), torch.nn.Linear(6, 1)
    params = [*up.parameters(), *down.parameters(), *head.parameters()]
    optimizer = torch.optim.SGD(params, lr=0.05, momentum=0.9)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(96, 6, generator=gen)
    y = x.sum(1, keepdim=True).tanh()
    for step in range(steps):
        xb, yb = x[step * 8 : (step + 1) * 8], y[step * 8 : (step + 1) * 8]
        loss = F.mse_loss(head(xb + down(torch.tanh(up(xb)))), yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    names = [
        "block.up.weight",
        "block.up.bias",
        "block.down.weight",
        "block.down.bias",
        "head.weight",
        "head.bias",
    ]
    return dict(zip(names, (p.detach() for p in params), strict=True))


def test_tensor_parallel_with_fsdp_shards_weights_and_trains_as_one_process(tensor_parallel_run):
    final = tensor_parallel_run.final()
    assert final["global_step"] == 6
    assert final["up_placements"][1] == "S(0)" and final["up_local_shape"] == [
        8,
        6,
    ]  # half the rows of up per rank
    assert (
        final["rows"][0] == final["rows"][1] == list(range(48))
    )  # one tensor-parallel group: the same batches
    for name, value in one_process_reference(6).items():
        torch.testing.assert_close(final["state_dict"][name], value, rtol=1e-5, atol=1e-6)
    ckpt = torch.load(tensor_parallel_run.out / "checkpoints" / "last.ckpt", weights_only=True)
    assert ckpt["state_dict"]["block.up.weight"].shape == (16, 6)  # the file holds full tensors
    assert sorted(p.name for p in (tensor_parallel_run.out / "sharded").iterdir()) == [
        ".metadata",
        "__0_0.distcp",
        "__1_0.distcp",
    ]
    assert_no_orphans(tensor_parallel_run)


def test_checkpoint_and_shards_of_a_1x2_mesh_load_on_a_2x1_mesh(tensor_parallel_run, tmp_path):
    saved = tensor_parallel_run.final()["state_dict"]
    ckpt = tensor_parallel_run.out / "checkpoints" / "last.ckpt"
    resumed = run_ranks(
        SCRIPT,
        tmp_path,
        "--mesh",
        "2",
        "1",
        "--steps",
        "9",
        "--ckpt",
        str(ckpt),
        "--load-sharded",
        str(tensor_parallel_run.out / "sharded"),
        ranks=2,
        timeout=240,
    )
    assert_ok(resumed)
    final = resumed.final()
    for name, value in saved.items():  # the per-rank shards of 1x2, re-sharded by DCP onto 2x1
        assert torch.equal(final["loaded"][name], value), name
    assert final["global_step"] == 9
    rank0, rank1 = final[
        "rows"
    ]  # the next epoch (max_steps ended the first), split over 2 data-parallel ranks
    # (the training sampler shuffles, as Lightning's: two disjoint shards of the 96 rows, not the first 48
    # in order)
    assert (
        len(rank0) == len(rank1) == 24
        and not set(rank0) & set(rank1)
        and set(rank0 + rank1) <= set(range(96))
    )
    assert all(loss < 1.0 for loss in final["losses"]), final["losses"]  # it went on from the trained weights


def test_activation_checkpointing_recomputes_the_blocks_forward_in_backward(tmp_path):
    result = run_ranks(
        SCRIPT, tmp_path, "--mesh", "2", "1", "--steps", "4", "--strategy", "fsdp_ac", ranks=2, timeout=240
    )
    assert_ok(result)
    final = result.final()
    assert (
        final["global_step"] == 4 and final["block_calls"] == 8
    )  # each step: forward, then again in backward
    assert set(final["state_dict"]) == set(one_process_reference(0))  # names unchanged by checkpointing


def test_auto_mesh_is_nodes_by_devices_and_a_mesh_must_fill_the_world(monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "4")  # 2 nodes x 2 devices
    auto = ModelParallelStrategy(save_distributed_checkpoint=False).configure("cpu", [0, 1])
    assert auto.mesh_shape() == (
        2,
        2,
    )  # Lightning's "auto": data parallel over nodes, tensor parallel within one
    explicit = ModelParallelStrategy(
        data_parallel_size=4, tensor_parallel_size=1, save_distributed_checkpoint=False
    )
    assert explicit.configure("cpu", [0, 1]).mesh_shape() == (4, 1)
    with pytest.raises(
        ConfigError, match="data_parallel_size=2 x tensor_parallel_size=1 must equal .* \\(4\\)"
    ):
        ModelParallelStrategy(tensor_parallel_size=1, save_distributed_checkpoint=False).configure(
            "cpu", [0, 1]
        ).mesh_shape()


def test_model_parallel_and_fsdp_options_are_checked_at_construction():
    assert ModelParallelStrategy().save_distributed_checkpoint is True  # Lightning's default: folders

    class NoParallelism(ember.Module):  # nothing parallelizes it: Lightning refuses this too
        pass

    with pytest.raises(ConfigError, match="NoParallelism.configure_model to parallelize"):
        ModelParallelStrategy(save_distributed_checkpoint=False).setup_module(NoParallelism())
    with pytest.raises(ConfigError, match="tensor_parallel_size=0"):
        ModelParallelStrategy(tensor_parallel_size=0, save_distributed_checkpoint=False)
    with pytest.raises(ConfigError, match="a set of layer classes"):
        FSDPStrategy(activation_checkpointing_policy=lambda module, recurse, numel: True)
    from torch.distributed.fsdp import CPUOffloadPolicy, MixedPrecision, MixedPrecisionPolicy

    fsdp = FSDPStrategy(
        mixed_precision=MixedPrecision(param_dtype=torch.bfloat16, reduce_dtype=torch.float32),
        cpu_offload=True,
    )
    assert fsdp.mixed_precision == MixedPrecisionPolicy(
        param_dtype=torch.bfloat16, reduce_dtype=torch.float32
    )
    assert isinstance(fsdp.cpu_offload, CPUOffloadPolicy)
    with pytest.raises(ConfigError, match="FSDP2 does not cast buffers"):
        FSDPStrategy(mixed_precision=MixedPrecision(buffer_dtype=torch.bfloat16))
