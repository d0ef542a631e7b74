"""ModelParallelStrategy's checkpoint folders (save_distributed_checkpoint=True, Lightning's default), with 2
CPU processes on gloo: every rank writes its shards of a 1x2 (tensor parallel) mesh with
torch.distributed.checkpoint and rank 0 the rest to meta.pt; the folder is written aside and swapped in
whole, so a save that fails leaves the previous one intact; the same mesh resumes it bitwise; a 2x1 (data
parallel) mesh and a single process read the same weights and momentum buffers (DCP re-shards); one
process loads it into a plain Module. The swap itself (ember.fs.replace_with_folder) and a save killed
half-way (a real process exiting after its shards were written) are tested in one process.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
from _dist import assert_no_orphans, assert_ok, run_ranks

import ember
from ember.checkpoint import load_checkpoint, save_checkpoint
from ember.errors import ConfigError, UnsafePathError
from ember.fs import is_temporary, make_temporary_folder, replace_with_folder
from ember.runtime.sharded_checkpoint import load_sharded_checkpoint, save_checkpoint_folder

SCRIPT = "train_model_parallel.py"
FOLDERS = ("--folders", "--every", "3")  # a checkpoint folder every 3 steps, the newest kept (save_top_k=1)


@pytest.fixture(scope="module")
def failed_at_step_9(tmp_path_factory):
    """1x2 mesh, 9 steps, folders at steps 3, 6 and 9, where the step-9 save is refused after its shards
    were written (its meta.pt would hold a function): the run fails there."""
    result = run_ranks(
        SCRIPT, tmp_path_factory.mktemp("fail9"), "--mesh", "1", "2", "--steps", "9", *FOLDERS,
        "--unsafe-at", "9", ranks=2, timeout=240,
    )  # fmt: skip
    assert result.returncode != 0, result.stderr[-3000:]
    return result


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """The same run, 9 steps without a failure: the reference an exact resume must equal."""
    result = run_ranks(
        SCRIPT, tmp_path_factory.mktemp("full9"), "--mesh", "1", "2", "--steps", "9", *FOLDERS, ranks=2,
        timeout=240,
    )  # fmt: skip
    assert_ok(result)
    return result


def resume(source, tmp_path: Path, dp: str, tp: str) -> object:
    """Resume `source`'s last.ckpt (step 6) on a dp x tp mesh up to step 9."""
    ckpt = source.out / "checkpoints" / "last.ckpt"
    result = run_ranks(
        SCRIPT, tmp_path, "--mesh", dp, tp, "--steps", "9", *FOLDERS, "--ckpt", str(ckpt),
        ranks=int(dp) * int(tp), timeout=240,
    )  # fmt: skip
    assert_ok(result)
    return result


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_checkpoint_is_a_folder_of_shards_and_meta_pt_and_a_failed_save_leaves_the_previous_intact(
    failed_at_step_9,
):
    out = failed_at_step_9.out
    errors = [(out / f"error.{rank}").read_text() for rank in (0, 1)]  # what each rank raised
    assert "checkpoint key ['not_restorable'] holds a builtins.function" in errors[0], errors[0]
    assert "global rank 0 failed" in errors[1] and "not_restorable" in errors[1], errors[1]
    # step 3's folder went when step 6's was written (save_top_k=1); step 9's never appeared
    assert failed_at_step_9.checkpoints() == ["epoch=0-step=6.ckpt", "last.ckpt"]
    last = out / "checkpoints" / "last.ckpt"
    assert sorted(p.name for p in last.iterdir()) == [".metadata", "__0_0.distcp", "__1_0.distcp", "meta.pt"]
    assert not [p for p in (out / "checkpoints").iterdir() if is_temporary(p.name)]  # the aside folder went
    meta = torch.load(last / "meta.pt", weights_only=True)
    assert meta["global_step"] == 6 and "state_dict" not in meta and "optimizer_states" not in meta
    shards = load_sharded_checkpoint(last)  # the tensors: Lightning's keys, whole in one process
    assert sorted(shards) == ["optimizer_0", "state_dict"]
    assert shards["state_dict"]["block.up.weight"].shape == (16, 6)
    assert set(shards["optimizer_0"]["state"]) == set(shards["state_dict"])  # one momentum buffer per weight
    assert_no_orphans(failed_at_step_9)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_folder_resumed_on_the_same_mesh_ends_bitwise_equal_to_the_uninterrupted_run(
    failed_at_step_9, uninterrupted, tmp_path
):
    resumed = resume(failed_at_step_9, tmp_path, "1", "2").final()
    reference = uninterrupted.final()
    assert resumed["global_step"] == reference["global_step"] == 9
    for name, value in reference["state_dict"].items():
        assert torch.equal(resumed["state_dict"][name], value), name
    assert resumed["losses"] == reference["losses"][6:]
    assert uninterrupted.checkpoints() == ["epoch=0-step=9.ckpt", "last.ckpt"]


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("mesh", [("2", "1"), ("1", "1")], ids=["2x1-mesh", "one-process"])
def test_a_folder_of_a_1x2_mesh_loads_exactly_on_another_mesh(failed_at_step_9, tmp_path, mesh):
    saved = load_sharded_checkpoint(failed_at_step_9.out / "checkpoints" / "last.ckpt")
    final = resume(failed_at_step_9, tmp_path, *mesh).final()
    for name, value in saved["state_dict"].items():  # re-sharded by DCP onto this mesh, gathered back
        assert torch.equal(final["loaded"][name], value), name
        assert torch.equal(
            final["loaded_optimizer"][name], saved["optimizer_0"]["state"][name]["momentum_buffer"]
        )
    assert final["global_step"] == 9 and len(final["losses"]) == 3  # it went on: steps 7, 8 and 9


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.up, self.down = torch.nn.Linear(6, 16), torch.nn.Linear(16, 6)


class Net(ember.Module):  # the script's model, plain (no parallelism): one process, no strategy
    def __init__(self):
        super().__init__()
        self.block, self.head = Block(), torch.nn.Linear(6, 1)

    def forward(self, x):
        return self.head(x + self.block.down(torch.tanh(self.block.up(x))))

    def training_step(self, batch, batch_idx):
        ids, x, y = batch
        return torch.nn.functional.mse_loss(self(x), y)

    def on_train_start(self):
        self.started_from = {name: value.clone() for name, value in self.state_dict().items()}

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05, momentum=0.9)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_folder_loads_into_a_plain_module_in_one_process(failed_at_step_9):
    folder = failed_at_step_9.out / "checkpoints" / "last.ckpt"
    model = Net.load_from_checkpoint(folder)
    saved = load_sharded_checkpoint(folder)["state_dict"]
    for name, value in model.state_dict().items():
        assert torch.equal(value, saved[name]), name
    ckpt = load_checkpoint(folder)  # meta.pt's values and the whole tensors, one dict
    assert ckpt["global_step"] == 6 and ckpt["optimizer_states"][0]["param_groups"][0]["lr"] == 0.05


# ---- the swap that makes a folder's save atomic (ember.fs.replace_with_folder), in-process -------------
def new_folder(beside: Path, text: str) -> Path:
    folder = make_temporary_folder(f".{beside.name}.{os.getpid()}.", beside.parent, ".ember-tmp")
    (folder / "weights").write_text(text)
    return folder


@pytest.mark.parametrize("before", ["nothing", "a folder", "a file", "a link"])
def test_a_new_folder_replaces_whatever_held_the_name_and_nothing_else(tmp_path, before):
    final, elsewhere = tmp_path / "last.ckpt", tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "weights").write_text("not ours")
    if before == "a folder":
        final.mkdir()
        (final / "weights").write_text("old")
    elif before == "a file":
        final.write_text("old")
    elif before == "a link":
        final.symlink_to(elsewhere)
    replace_with_folder(new_folder(final, "new"), final)
    assert (final / "weights").read_text() == "new" and not final.is_symlink()
    assert (elsewhere / "weights").read_text() == "not ours"  # a link at the name: only the link went
    assert sorted(p.name for p in tmp_path.iterdir()) == ["elsewhere", "last.ckpt"]
    assert oct(final.stat().st_mode & 0o777) == oct(0o777 & ~_umask())  # as mkdir makes it, not 0700


def test_only_a_temporary_folder_made_beside_the_name_is_swapped_in(tmp_path):
    plain = tmp_path / "mine"
    plain.mkdir()
    with pytest.raises(UnsafePathError, match="not a temporary folder ember made"):
        replace_with_folder(plain, tmp_path / "last.ckpt")
    (tmp_path / "sub").mkdir()
    with pytest.raises(UnsafePathError, match="beside"):
        replace_with_folder(new_folder(tmp_path / "x", "new"), tmp_path / "sub" / "last.ckpt")


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.filterwarnings("ignore:the checkpoint holds the state of callbacks")  # no ModelCheckpoint here
def test_a_folder_resumes_in_a_single_process_trainer_read_whole(failed_at_step_9, tmp_path):
    folder = failed_at_step_9.out / "checkpoints" / "last.ckpt"
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(96, 6, generator=gen)
    data = torch.utils.data.TensorDataset(torch.arange(96), x, x.sum(1, keepdim=True).tanh())
    trainer = ember.Trainer(
        max_steps=9, logger=False, enable_progress_bar=False, enable_model_summary=False,
        enable_checkpointing=False, default_root_dir=tmp_path,
    )  # fmt: skip
    model = Net()
    trainer.fit(model, torch.utils.data.DataLoader(data, batch_size=8), ckpt_path=folder)
    saved = load_sharded_checkpoint(folder)["state_dict"]
    assert trainer.global_step == 9
    assert all(torch.equal(model.started_from[name], value) for name, value in saved.items())


def test_a_checkpoint_folder_on_an_object_store_is_refused_in_one_line():
    with pytest.raises(ConfigError, match="writes a folder of shards on a local or shared file system"):
        save_checkpoint_folder(
            {"state_dict": {}},
            "s3://bucket/last.ckpt",
            is_global_zero=True,
            broadcast=None,
            write_metadata=None,
        )


# ---- a save killed half-way, in one process (DCP writes without a process group there) ----------------
KILLED_SAVE = """
import os, sys, torch
from ember.runtime.sharded_checkpoint import save_checkpoint_folder

def killed(state, path):  # the shards are written; the process dies before meta.pt and the swap
    os._exit(9)

state = {"state_dict": {"w": torch.full((4,), 6.0)}, "optimizer_states": [], "global_step": 6}
save_checkpoint_folder(state, sys.argv[1], is_global_zero=True, broadcast=lambda v: v, write_metadata=killed)
"""


def save_here(final: Path, step: int) -> None:
    """A one-process save (no process group: DCP writes without one)."""
    state = {"state_dict": {"w": torch.full((4,), float(step))}, "optimizer_states": [], "global_step": step}
    save_checkpoint_folder(
        state, final, is_global_zero=True, broadcast=lambda v: v, write_metadata=save_checkpoint
    )


@pytest.mark.filterwarnings("ignore:torch.distributed is disabled")  # one process, on purpose
def test_a_save_killed_half_way_leaves_the_previous_folder_and_the_next_save_clears_its_leftover(tmp_path):
    import subprocess
    import sys

    final = tmp_path / "last.ckpt"
    save_here(final, 3)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_PORT"):
        env.pop(name, None)
    killed = subprocess.run([sys.executable, "-c", KILLED_SAVE, str(final)], env=env, timeout=120)
    assert killed.returncode == 9
    leftovers = [p for p in tmp_path.iterdir() if is_temporary(p.name)]
    assert len(leftovers) == 1 and (leftovers[0] / ".metadata").is_file()  # step 6's shards, never swapped in
    ckpt = load_checkpoint(final)
    assert ckpt["global_step"] == 3 and torch.equal(ckpt["state_dict"]["w"], torch.full((4,), 3.0))
    save_here(final, 9)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["last.ckpt"]  # the killed writer's folder went
    assert load_checkpoint(final)["global_step"] == 9


@pytest.mark.filterwarnings("ignore:torch.distributed is disabled")
def test_ckpt_path_last_finds_a_checkpoint_folder_as_it_finds_a_file(tmp_path):
    from ember.checkpoint import find_last_checkpoint
    from ember.trainer.resume import resolve_ckpt_path

    folder = tmp_path / "checkpoints"
    save_here(folder / "last.ckpt", 3)
    assert find_last_checkpoint(folder) == folder / "last.ckpt"
    found = resolve_ckpt_path("last", [folder], tmp_path, best="", is_global_zero=True)
    assert found == folder / "last.ckpt" and load_checkpoint(found)["global_step"] == 3
    # no optimizer in it (as a weights-only save): no optimizer_states, whole or as placeholders for shards
    assert "optimizer_states" not in load_checkpoint(found)
    placeholders = load_checkpoint(found, into_shards=True)
    assert "optimizer_states" not in placeholders and placeholders["state_dict"]["w"].is_meta


@pytest.mark.filterwarnings("ignore:torch.distributed is disabled")
def test_a_full_state_file_replaces_a_checkpoint_folder_of_its_name_in_one_step(tmp_path):
    # save_distributed_checkpoint=False after a run that wrote folders: Lightning replaces the folder too
    from ember.runtime.sharded_checkpoint import save_checkpoint_file_over_folder

    final = tmp_path / "last.ckpt"
    save_here(final, 3)
    state = {"state_dict": {"w": torch.full((4,), 6.0)}, "optimizer_states": [], "global_step": 6}
    save_checkpoint_file_over_folder(state, final, save_checkpoint)
    assert final.is_file() and sorted(p.name for p in tmp_path.iterdir()) == ["last.ckpt"]
    assert torch.equal(load_checkpoint(final)["state_dict"]["w"], torch.full((4,), 6.0))
    save_checkpoint_file_over_folder({**state, "global_step": 9}, final, save_checkpoint)  # a file: as ever
    assert load_checkpoint(final)["global_step"] == 9
