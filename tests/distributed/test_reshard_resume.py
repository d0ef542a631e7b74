"""Resuming mid-epoch on a different number of processes (2 -> 1, 1 -> 2, 2 -> 3, and again from a checkpoint
written inside such a resumed epoch): every remaining row of the epoch is trained exactly once across the new
ranks, for a shuffled DataLoader (DistributedSampler) and for shuffled ember.data batches
(random_shuffle(seed), equal shards). Real processes (forked as torchrun starts them: _dist.run_ranks;
launcher), real checkpoints; each rank records the rows it trained.

40 rows, 4 a batch, a checkpoint every 2 steps: the first run stops after 2 steps (2 processes: 16 rows
done, 1 process: 8). The rest (24 or 32 rows) divides evenly except 32 rows on 3 ranks: there, as
DistributedSampler pads an epoch, the rest's first row is dealt once more so every rank holds 11.
"""

from __future__ import annotations

import collections
import shutil

import pytest
import torch
from _dist import assert_no_orphans, assert_ok, run_ranks

from ember.runtime import reshard

pytestmark = pytest.mark.timeout(240)

ROWS, BATCH = 40, 4
COMMON = ("--rows", str(ROWS), "--batch", str(BATCH), "--epochs", "1", "--shuffle", "--every-n-steps", "2")


def _data(kind: str) -> tuple[str, ...]:
    """The script's arguments for a shuffled DataLoader or shuffled ember.data batches."""
    return ("--data", kind, "--random-shuffle") if kind == "ember" else ("--data", kind)


def _rows(out, tag: str, before_step: int | None = None) -> list[int]:
    """Every row the ranks of run `tag` trained (optionally only in steps before `before_step`)."""
    rows = []
    for path in sorted(out.glob(f"rows_{tag}_rank*")):
        for line in path.read_text().splitlines():
            step, row = (int(word) for word in line.split())
            if before_step is None or step < before_step:
                rows.append(row)
    return rows


def _checkpoint(out, step: int):
    return out / "checkpoints" / f"epoch=0-step={step}.ckpt"  # logger=False: default_root_dir/checkpoints


@pytest.fixture(
    scope="module",
    params=[(2, "loader"), (1, "loader"), (2, "ember"), (1, "ember")],
    ids=["from_2", "from_1", "ember_data_from_2", "ember_data_from_1"],
)
def stopped(request, tmp_path_factory):
    """A run with `devices` processes that stopped after 2 steps, mid-epoch, with its checkpoint."""
    devices, data = request.param
    out = tmp_path_factory.mktemp(f"stopped_{devices}_{data}")
    result = run_ranks(
        "train_cancer.py",
        out,
        *COMMON,
        *_data(data),
        "--devices",
        str(devices),
        "--max-steps",
        "2",
        "--rows-file",
        "before",
        ranks=devices,
    )
    assert_ok(result)
    assert len(_rows(out, "before")) == 2 * BATCH * devices
    return devices, data, out


@pytest.fixture(scope="module")
def resume(tmp_path_factory):
    """resume(stopped, new_devices): the stopped run resumed from its step-2 checkpoint on `new_devices`
    processes (rows tag "after"), run once per (stopped run, new_devices) in the module. The 2 -> 1 resume
    is both a test of the rest of the epoch and the middle of the 2 -> 1 -> 2 chain (which resumes from its
    step-4 checkpoint): the same command, so one run serves both; neither test writes into its folder."""
    runs = {}

    def resumed(stopped, new_devices: int):
        devices, data, before = stopped
        if (devices, data, new_devices) not in runs:
            out = tmp_path_factory.mktemp(f"resumed_{devices}_{data}_on_{new_devices}")
            shutil.copytree(before / "checkpoints", out / "checkpoints")
            runs[devices, data, new_devices] = run_ranks(
                "train_cancer.py",
                out,
                *COMMON,
                *_data(data),
                "--devices",
                str(new_devices),
                "--ckpt",
                str(_checkpoint(out, 2)),
                "--rows-file",
                "after",
                ranks=new_devices,
            )
        return runs[devices, data, new_devices]

    return resumed


@pytest.mark.slow
@pytest.mark.parametrize("new_devices", [1, 2, 3])
def test_the_rest_of_the_epoch_is_trained_exactly_once_on_the_new_ranks(stopped, new_devices, resume):
    devices, data, before = stopped
    if new_devices == devices:
        pytest.skip("same world size: covered by test_ddp's exact resume")
    result = resume(stopped, new_devices)
    assert_ok(result)
    after = _rows(result.out, "after")
    seen = collections.Counter(_rows(before, "before") + after)
    rest = ROWS - 2 * BATCH * devices
    padding = -rest % new_devices
    if padding == 0:
        assert seen == collections.Counter(
            range(ROWS)
        )  # each row of the epoch exactly once: none repeated, none skipped
    else:  # none skipped; the rest's first `padding` rows (what rank 0 trains first) once more
        assert set(seen) == set(range(ROWS)) and seen - collections.Counter(
            range(ROWS)
        ) == collections.Counter(after[:padding])
    per_rank = [len(p.read_text().splitlines()) for p in sorted(result.out.glob("rows_after_rank*"))]
    assert per_rank == [-(-rest // new_devices)] * new_devices  # dealt evenly
    final = torch.load(result.out / "final.pt", weights_only=True)
    assert final["global_step"] == 2 + -(-per_rank[0] // BATCH)  # the step count (and optimizer) continue
    assert_no_orphans(result)


@pytest.mark.slow
def test_a_checkpoint_inside_a_resharded_epoch_resumes_exactly_on_yet_another_world_size(
    stopped, resume, tmp_path
):
    devices, data, before = stopped
    if devices != 2:
        pytest.skip("one chain per kind of data is enough: 2 -> 1 -> 2")
    middle = resume(stopped, 1)  # the 2 -> 1 resume (shared with the test above)
    assert_ok(middle)  # 24 rows left on 1 process: steps 3..8, a checkpoint at step 4 (mid-epoch)
    again = tmp_path / "again"
    shutil.copytree(middle.out / "checkpoints", again / "checkpoints")
    last = run_ranks(
        "train_cancer.py",
        again,
        *COMMON,
        *_data(data),
        "--devices",
        "2",
        "--ckpt",
        str(_checkpoint(again, 4)),
        "--rows-file",
        "last",
        ranks=2,
    )
    assert_ok(last)
    seen = collections.Counter(
        _rows(before, "before") + _rows(middle.out, "after", before_step=4) + _rows(again, "last")
    )
    assert seen == collections.Counter(range(ROWS))


def test_ember_data_with_a_local_shuffle_buffer_on_another_world_size_is_refused_in_one_line(tmp_path):
    # A shuffle buffer draws rows from ahead: what was trained is no prefix of each shard, so no exact rest.
    common = ("--rows", "64", "--batch", "8", "--epochs", "1", "--data", "ember", "--shuffle-buffer", "16")
    before = run_ranks(
        "train_cancer.py",
        tmp_path,
        *common,
        "--every-n-steps",
        "1",
        "--devices",
        "1",
        "--max-steps",
        "1",
        ranks=1,
    )
    assert_ok(before)
    after = run_ranks(
        "train_cancer.py",
        tmp_path,
        *common,
        "--devices",
        "2",
        "--ckpt",
        str(_checkpoint(tmp_path, 1)),
        ranks=2,
    )
    assert after.returncode != 0
    assert "the checkpoint was written mid-epoch by 1 processes and this run has 2" in after.stderr
    assert_no_orphans(after)


def test_the_rest_is_dealt_as_distributed_sampler_deals_an_epoch():
    assert reshard.deal(list(range(6)), 3, 0) == [0, 3] and reshard.deal(list(range(6)), 3, 2) == [2, 5]
    # 5 rows on 2 ranks: the first row is dealt again so both ranks hold 3 (torch pads an epoch the same way)
    assert reshard.deal([7, 8, 9, 10, 11], 2, 0) == [7, 9, 11] and reshard.deal([7, 8, 9, 10, 11], 2, 1) == [
        8,
        10,
        7,
    ]
    # done positions: a prefix of W x k x B, capped at the epoch (a padded last batch is all done)
    assert reshard.remaining_positions(total=40, world_size=2, batch_size=4, batches_done=2) == 16
    assert reshard.remaining_positions(total=10, world_size=3, batch_size=4, batches_done=1) == 10
