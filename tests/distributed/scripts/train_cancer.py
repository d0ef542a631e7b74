"""Logistic regression on scikit-learn's breast-cancer CSV with the ember Trainer; the tests run it
as 1 process, 2 processes (ember's launcher) or under torchrun.

    python train_cancer.py OUT_DIR [--devices N] [--batch B] [--rows R] [--epochs E] [--max-steps S]
        [--shuffle] [--data loader|ember] [--shuffle-buffer K] [--random-shuffle] [--seedless-shuffle] [--ckpt
        PATH|last] [--every-n-steps N] [--fail-rank R | --kill-rank R | --sigterm-rank R] [--at-step S]
        [--max-failures K] [--one-process-sampler] [--strategy ddp|fsdp] [--timeout SECONDS] [--accumulate K]
        [--stop-check-every N] [--num-nodes N] [--pause-at-step S] [--rank-weights] [--rows-file TAG]

Rank zero writes OUT_DIR/final.pt at the end: weights, global_step, batches and rows each rank saw, the synced
and per-rank epoch losses, and how many gradient all-reduces rank zero ran. Every rank appends "<global>
<local> <node> <world> <num_nodes>" (the Trainer's view) to OUT_DIR/ranks; with --rank-weights each rank also
writes its final weights to OUT_DIR/weights_rank<R>.pt; with --rows-file TAG each rank writes "<global step>
<row id>" for every row it trained to OUT_DIR/rows_TAG_rank<R>. Every process appends "<rank or driver>
<attempt> <pid>" to OUT_DIR/pids.
"""

import argparse
import datetime
import importlib.util
import os
import signal
import sys
import time
from pathlib import Path

import numpy as np
import torch

import ember
import ember.trainer.participants as participants  # where Trainer.save_checkpoint writes
from ember.runtime.distributed import DDPStrategy

p = argparse.ArgumentParser()
p.add_argument("out")
p.add_argument("--devices", type=int, default=2)
p.add_argument("--batch", type=int, default=32)
p.add_argument("--rows", type=int, default=512)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--max-steps", type=int, default=-1)
p.add_argument("--shuffle", action="store_true")
p.add_argument("--data", choices=["loader", "ember"], default="loader")
p.add_argument("--shuffle-buffer", type=int, default=None)
p.add_argument(
    "--random-shuffle",
    action="store_true",
    help="ember.data: a global random_shuffle(seed=RandomSeedConfig(seed=7)) first, new each epoch",
)
p.add_argument("--seedless-shuffle", action="store_true", help="ember.data: a global random_shuffle() first")
p.add_argument("--ckpt", default=None)
p.add_argument("--every-n-steps", type=int, default=0)
p.add_argument("--fail-rank", type=int, default=-1)
p.add_argument("--kill-rank", type=int, default=-1)
p.add_argument("--sigterm-rank", type=int, default=-1)
p.add_argument("--at-step", type=int, default=3)
p.add_argument("--max-failures", type=int, default=0)
p.add_argument(
    "--one-process-sampler",
    action="store_true",
    help="1 process: DistributedSampler(num_replicas=1), the permutation 2 ranks would split",
)
p.add_argument("--strategy", default="ddp")
p.add_argument("--timeout", type=float, default=60.0, help="collective timeout (s), so a hang fails fast")
p.add_argument("--accumulate", type=int, default=1)
p.add_argument(
    "--stop-check-every", type=int, default=None, help="FSDPStrategy(stop_check_every_n_batches=...)"
)
p.add_argument("--num-nodes", type=int, default=1)
p.add_argument(
    "--pause-at-step",
    type=int,
    default=-1,
    help="first attempt without --ckpt: at this step touch OUT/paused_<rank> and sleep (to be killed)",
)
p.add_argument("--rank-weights", action="store_true")
p.add_argument("--rows-file", default=None)
args = p.parse_args()
out = Path(args.out)
RANK = int(os.environ.get("RANK", 0))
ATTEMPT = int(os.environ.get("EMBER_RESTART_COUNT", os.environ.get("TORCHELASTIC_RESTART_COUNT", 0)))
with (out / "pids").open("a") as f:  # the test checks that every one of these is gone at the end
    f.write(f"{os.environ.get('RANK', 'driver')} {ATTEMPT} {os.getpid()}\n")

# The CSV scikit-learn ships (located without importing sklearn, which takes seconds).
CSV = Path(importlib.util.find_spec("sklearn").origin).parent / "datasets" / "data" / "breast_cancer.csv"
table = np.loadtxt(CSV, delimiter=",", skiprows=1, dtype=np.float32)[: args.rows]
features = (table[:, :30] - table[:, :30].mean(0)) / table[:, :30].std(0)
target = table[:, 30:31]
row_id = np.arange(len(table), dtype=np.float32)[:, None]  # not a feature: tells which rows a rank saw


class Classifier(ember.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(30, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
        self.rows_seen = []
        self.row_steps = []

    def training_step(self, batch, batch_idx):
        if isinstance(batch, dict):  # ember.data: one tensor column "data" = [row id, 30 features, target]
            ids, x, y = batch["data"][:, 0], batch["data"][:, 1:31], batch["data"][:, 31:]
        else:
            ids, x, y = batch
        self.rows_seen.extend(ids.flatten().long().tolist())
        step = self.trainer.global_step
        self.row_steps.extend((step, row) for row in ids.flatten().long().tolist())
        if ATTEMPT == 0 and args.fail_rank == RANK and step == args.at_step:
            raise ValueError(f"boom on rank {RANK} at step {step}")
        if ATTEMPT == 0 and args.kill_rank == RANK and step == args.at_step:
            os.kill(os.getpid(), signal.SIGKILL)
        if args.sigterm_rank == RANK and step == args.at_step and not (out / "sigterm_sent").exists():
            (out / "sigterm_sent").touch()
            os.kill(os.getpid(), signal.SIGTERM)
        if args.pause_at_step == step and args.ckpt is None:
            (out / f"paused_{RANK}").touch()
            time.sleep(300)
        loss = torch.nn.functional.binary_cross_entropy_with_logits(self.net(x), y)
        self.log("train_loss", loss, on_step=False, on_epoch=True, sync_dist=True)
        self.log("local_loss", loss, on_step=False, on_epoch=True)
        self.log("step_loss", loss, on_step=True, on_epoch=False, sync_dist=True)
        self.last_loss = loss.detach()
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(
            self.parameters(), lr=0.2, momentum=0.9
        )  # momentum: optimizer state to checkpoint


# Record every checkpoint file write (which rank, which
# file): the tests check each is written once, by rank 0.
_write = participants.save_checkpoint


def _recording_write(state, path):
    with (out / "writes").open("a") as f:
        f.write(f"{RANK} {Path(path).name}\n")
    return _write(state, path)


participants.save_checkpoint = _recording_write

# Count the gradient all-reduces (the only ones as large as the model: 257 parameters, + DDP's stop flag).
_all_reduce, gradient_syncs = torch.distributed.all_reduce, []


def _counting_all_reduce(tensor, *a, **k):
    if tensor.numel() >= 257:
        gradient_syncs.append(tensor.numel())
    return _all_reduce(tensor, *a, **k)


torch.distributed.all_reduce = _counting_all_reduce
ember.seed_everything(7)
if args.data == "ember":
    data = ember.data.from_numpy(np.concatenate([row_id, features, target], axis=1))
    if args.random_shuffle:
        data = data.random_shuffle(seed=ember.data.RandomSeedConfig(seed=7))
    if args.seedless_shuffle:  # each rank process draws its own placeholder: the Trainer must agree them
        data = data.random_shuffle()
    loader = data.iter_torch_batches(
        batch_size=args.batch,
        local_shuffle_buffer_size=args.shuffle_buffer,
        local_shuffle_seed=None if args.shuffle_buffer else 0,
    )
else:
    dataset = torch.utils.data.TensorDataset(
        torch.from_numpy(row_id), torch.from_numpy(features), torch.from_numpy(target)
    )
    if args.one_process_sampler:
        sampler = torch.utils.data.DistributedSampler(
            dataset, num_replicas=1, rank=0, shuffle=args.shuffle, seed=7
        )
        loader = torch.utils.data.DataLoader(dataset, batch_size=args.batch, sampler=sampler)
    else:
        loader = torch.utils.data.DataLoader(dataset, batch_size=args.batch, shuffle=args.shuffle)
model = Classifier()
callbacks = [
    ember.callbacks.ModelCheckpoint(
        every_n_train_steps=args.every_n_steps or None, save_top_k=-1, save_last=True
    )
]
distributed = args.devices > 1 or "WORLD_SIZE" in os.environ
timeout = datetime.timedelta(seconds=args.timeout)
if args.strategy == "ddp" and distributed:
    strategy = DDPStrategy(max_failures=args.max_failures, timeout=timeout)
elif args.strategy == "fsdp":
    from ember.runtime.distributed import FSDPStrategy

    every = {"stop_check_every_n_batches": args.stop_check_every} if args.stop_check_every else {}
    strategy = FSDPStrategy(max_failures=args.max_failures, timeout=timeout, **every)
else:
    strategy = "auto"
trainer = ember.Trainer(
    accelerator="cpu",
    devices=args.devices,
    num_nodes=args.num_nodes,
    strategy=strategy,
    max_epochs=args.epochs,
    max_steps=args.max_steps,
    default_root_dir=out,
    enable_progress_bar=False,
    enable_model_summary=False,
    logger=False,
    callbacks=callbacks,
    num_sanity_val_steps=0,
    log_every_n_steps=1,
    accumulate_grad_batches=args.accumulate,
)
with (out / "ranks").open("a") as f:
    f.write(
        f"{trainer.global_rank} {trainer.local_rank} "
        f"{trainer.node_rank} {trainer.world_size} {trainer.num_nodes}\n"
    )
trainer.fit(model, loader, ckpt_path=args.ckpt)
if args.strategy == "fsdp":  # one shard per rank, torch.distributed.checkpoint format
    trainer.strategy.save_sharded_checkpoint(trainer, out / "sharded")

metrics = {k: float(v) for k, v in trainer.callback_metrics.items()}
local_numel = sum(
    (p.to_local() if hasattr(p, "to_local") else p).numel() for p in model.parameters()
)  # FSDP: a shard
counts = torch.tensor(
    [float(len(model.rows_seen)), metrics["local_loss"], float(model.last_loss), float(local_numel)]
)
per_rank = trainer.strategy.all_gather(counts) if trainer.world_size > 1 else counts[None]
state = {k: v.detach().clone() for k, v in trainer.strategy.module_state_dict(model).items()}
if args.rows_file:
    (out / f"rows_{args.rows_file}_rank{trainer.global_rank}").write_text(
        "".join(f"{s} {r}\n" for s, r in model.row_steps)
    )
if args.rank_weights:
    torch.save(state, out / f"weights_rank{trainer.global_rank}.pt")
if trainer.is_global_zero:
    torch.save(
        {
            "state_dict": state,
            "global_step": trainer.global_step,
            "world_size": trainer.world_size,
            "rows_per_rank": per_rank[:, 0].long().tolist(),
            "local_loss_per_rank": per_rank[:, 1].tolist(),
            "last_loss_per_rank": per_rank[:, 2].tolist(),
            "parameters_per_rank": per_rank[:, 3].long().tolist(),
            "metrics": metrics,
            "rows_seen": model.rows_seen,
            "gradient_syncs": len(gradient_syncs),
        },
        out / "final.pt",
    )
print(f"rank {trainer.global_rank} done at step {trainer.global_step}", file=sys.stderr)
