"""Seedless ``random_shuffle()`` / ``randomize_block_order()`` draw a new order on every execution, as
Ray 2.60's do (an integer seed keeps ember's (seed, epoch) rule), and still resume bitwise: the
execution's seed is in the batch iterable's state (``ember/data/execution_seed.py``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import cloudpickle
import pytest

import ember.data

ROWS = 60


def _ids(batches) -> list[int]:
    return [int(i) for batch in batches for i in batch["id"]]


def _shuffled():
    return ember.data.range(ROWS, override_num_blocks=6).random_shuffle()


def test_one_shot_runs_draw_a_new_order_each_time():
    ds = _shuffled()
    orders = [tuple(r["id"] for r in ds.take_all()) for _ in range(3)]
    assert len(set(orders)) == 3 and all(sorted(o) == list(range(ROWS)) for o in orders)
    blocks = ember.data.range(ROWS, override_num_blocks=6).randomize_block_order()
    assert len({tuple(r["id"] for r in blocks.take_all()) for _ in range(3)}) > 1


def test_each_epoch_of_a_training_loop_gets_its_own_order():
    ds = _shuffled()
    fresh = [_ids(ds.iter_batches(batch_size=8)) for _ in range(3)]  # a new iterable per epoch
    iterator = ds.iterator()
    per_call = [_ids(iterator.iter_batches(batch_size=8)) for _ in range(3)]  # Ray's DataIterator loop
    batches = ds.iter_batches(batch_size=8)
    re_iterated = [_ids(batches) for _ in range(3)]  # one iterable, iterated per epoch
    for orders in (fresh, per_call, re_iterated):
        assert len({tuple(o) for o in orders}) == 3
        assert all(sorted(o) == list(range(ROWS)) for o in orders)


def test_an_integer_seed_keeps_one_order_per_epoch():
    ds = ember.data.range(ROWS, override_num_blocks=6).random_shuffle(seed=4)
    assert (
        ds.take_all()
        == ds.take_all()
        == ember.data.range(ROWS, override_num_blocks=6).random_shuffle(seed=4).take_all()
    )


def test_shards_of_copies_partition_one_order_and_change_per_epoch():
    """What ranks get: each rank a pickled copy of the dataset, then its own streaming_split shard."""
    frozen = cloudpickle.dumps(_shuffled())
    shards = [cloudpickle.loads(frozen).streaming_split(3, equal=True)[rank] for rank in range(3)]
    epochs = [[_ids(shard.iter_batches(batch_size=8)) for shard in shards] for _ in range(2)]
    for epoch in epochs:
        assert sorted(sum(epoch, [])) == list(range(ROWS))  # every row once across the ranks
    assert epochs[0] != epochs[1]


def test_mid_epoch_resume_after_a_seedless_shuffle_continues_bitwise(tmp_path):
    """Process 1 takes 3 batches, saves the state, finishes the epoch; process 2 (a new dataset, so a
    new placeholder seed) loads the state and must give exactly process 1's remaining batches."""
    state, rest = tmp_path / "state.json", tmp_path / "rest.json"
    first = f"""
import json, ember.data
ds = ember.data.range({ROWS}, override_num_blocks=6).random_shuffle()
ds.take_all()  # a run before: the iterable's seed is not the dataset's first
batches = ds.iter_batches(batch_size=7, local_shuffle_buffer_size=10)
_ = [b for b in batches]  # epoch 0
it = iter(batches)
for _ in range(3):
    next(it)
json.dump(batches.state_dict(), open({str(state)!r}, "w"))
json.dump([b["id"].tolist() for b in it], open({str(rest)!r}, "w"))
"""
    second = f"""
import json, ember.data
batches = ember.data.range({ROWS}, override_num_blocks=6).random_shuffle().iter_batches(
    batch_size=7, local_shuffle_buffer_size=10)
batches.load_state_dict(json.load(open({str(state)!r})))
print(json.dumps([b["id"].tolist() for b in batches]))
"""
    subprocess.run([sys.executable, "-c", first], check=True, timeout=120)
    saved = json.loads(state.read_text())
    assert saved["epoch"] == 1 and saved["batches"] == 3 and isinstance(saved["plan_seed"], int)
    out = subprocess.run(
        [sys.executable, "-c", second], check=True, timeout=120, capture_output=True, text=True
    )
    expected = json.loads(rest.read_text())
    assert json.loads(out.stdout) == expected and len(expected) == 6


@pytest.mark.slow
def test_trainer_resume_after_seedless_shuffles_is_exact(tmp_path):
    """ember.Trainer SIGKILLed mid-epoch and at the epoch boundary, with seedless global and local
    shuffles: the resumed runs train exactly the batches the first run's seeds give."""
    script = os.path.join(os.path.dirname(__file__), "_trainer_resume_script.py")
    log = tmp_path / "log"
    for kill_at in (3, 10, 14, -1):
        out = subprocess.run(
            [sys.executable, script, str(tmp_path / "ckpt"), str(log), str(kill_at), "seedless"],
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert out.returncode in (0, -9), out.stderr[-3000:]
    expected = (tmp_path / "log.expected").read_text().splitlines()
    trained = log.read_text().splitlines()
    assert trained == expected and len(trained) == 20
    epochs = [
        sorted(int(i) for line in trained[e * 10 : (e + 1) * 10] for i in line.split()) for e in range(2)
    ]
    assert epochs == [list(range(40))] * 2 and trained[:10] != trained[10:]


TORCH_TRAINER = """
import json, os, sys
import ember.data
from ember import train
from ember.train import RunConfig, ScalingConfig, TorchTrainer


def record_shard(config):
    shard = train.get_dataset_shard("train")
    orders = [[int(i) for b in shard.iter_batches(batch_size=5) for i in b["id"]] for _ in range(2)]
    with open(os.path.join(config["out"], f"rank{train.get_context().get_world_rank()}.json"), "w") as f:
        json.dump(orders, f)
    train.report({})


data = ember.data.range(ROWS, override_num_blocks=6).random_shuffle()
TorchTrainer(record_shard, train_loop_config={"out": sys.argv[1]}, datasets={"train": data},
             scaling_config=ScalingConfig(num_workers=2),
             run_config=RunConfig(name="run", storage_path=os.path.join(sys.argv[1], "runs"))).fit()
"""


@pytest.mark.slow
def test_torch_trainer_workers_shard_one_new_order_per_epoch(tmp_path):
    """Each worker iterates its get_dataset_shard once per epoch: the two shards partition one order,
    and the next epoch has another."""
    code = TORCH_TRAINER.replace("ROWS", str(ROWS))
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    for epoch in range(2):
        assert sorted(ranks[0][epoch] + ranks[1][epoch]) == list(range(ROWS))  # one order, split
    assert ranks[0][0] != ranks[0][1]  # and a new one per epoch


@pytest.mark.slow
def test_ddp_ranks_partition_one_seedless_order_per_epoch(tmp_path):
    """ember.Trainer on 2 DDP processes, each building the dataset itself (so each draws its own
    placeholder seed): the ranks still train disjoint halves of one order, a new one each epoch."""
    script = os.path.join(
        os.path.dirname(os.path.dirname(__file__)), "distributed", "scripts", "train_cancer.py"
    )
    out = subprocess.run(
        [
            sys.executable,
            script,
            str(tmp_path),
            "--data",
            "ember",
            "--seedless-shuffle",
            "--rows",
            "128",
            "--batch",
            "16",
            "--epochs",
            "2",
            "--rows-file",
            "seen",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    steps = {}
    for rank in range(2):
        for line in (tmp_path / f"rows_seen_rank{rank}").read_text().splitlines():
            step, row = map(int, line.split())
            steps.setdefault(step // 4, []).append(row)  # 64 rows a rank, 16 a batch: 4 steps an epoch
    assert sorted(steps) == [0, 1]
    for epoch in (0, 1):
        assert sorted(steps[epoch]) == list(range(128))  # every row once across both ranks
    assert steps[0] != steps[1]


def test_a_file_order_drawn_without_a_seed_is_new_on_every_run_and_resumes(tmp_path):
    """shuffle="files" (or FileShuffleConfig() without a seed): Ray draws a new file order every run."""
    for i in range(12):
        (tmp_path / f"{i:02d}.csv").write_text(f"f\n{i}\n")
    ds = ember.data.read_csv(str(tmp_path), shuffle="files")
    assert len({tuple(r["f"] for r in ds.take_all()) for _ in range(3)}) == 3
    seeded = ember.data.read_csv(str(tmp_path), shuffle=ember.data.FileShuffleConfig(seed=7))
    assert seeded.take_all() == seeded.take_all()  # a seed: one order per epoch, as before
    batches = ds.iter_batches(batch_size=4)
    first = iter(batches)
    taken = [next(first)["f"].tolist()]
    rest = [b["f"].tolist() for b in first]
    resumed = ember.data.read_csv(str(tmp_path), shuffle="files").iter_batches(batch_size=4)
    resumed.load_state_dict({**batches.state_dict(), "epoch": 0, "batches": 1})
    assert [b["f"].tolist() for b in resumed] == rest and len(taken + rest) == 3
