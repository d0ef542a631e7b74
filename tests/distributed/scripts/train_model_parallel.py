"""A two-layer MLP trained with ModelParallelStrategy (tensor parallel + FSDP2) or FSDPStrategy with
activation checkpointing, on 2 CPU processes (gloo); the tests in test_model_parallel.py run it.

    python train_model_parallel.py OUT_DIR --mesh DP TP [--steps S] [--ckpt PATH] [--load-sharded FOLDER]
        [--save-sharded] [--strategy model_parallel|fsdp_ac] [--folders] [--every N] [--top-k K]
        [--unsafe-at STEP]

--folders: ModelParallelStrategy's default save_distributed_checkpoint=True (checkpoint folders of shards);
without it, save_distributed_checkpoint=False (full-state files). --every N: a checkpoint every N steps
(ModelCheckpoint(every_n_train_steps=N, save_top_k=K)); with --ckpt, final.pt holds the weights and
momentum buffers the run started from ("loaded", "loaded_optimizer"). --unsafe-at STEP: the save at that
step carries a value safe loading could not restore (a function), so its non-tensor part is refused after
the shards were written; each rank writes the error it raised to OUT_DIR/error.<rank>.

Rank zero writes OUT_DIR/final.pt: the full weights, global_step, the placements of the tensor-parallel
weights, the per-step losses, the rows each data-parallel rank trained, and (fsdp_ac) how many times each
checkpointed block ran its forward. Every process appends "<rank or driver> 0 <pid>" to OUT_DIR/pids.
"""

import argparse
import os
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.distributed.checkpoint.state_dict import (
    StateDictOptions,
    get_model_state_dict,
    get_optimizer_state_dict,
)

import ember
from ember.runtime.distributed import FSDPStrategy, ModelParallelStrategy

p = argparse.ArgumentParser()
p.add_argument("out")
p.add_argument("--mesh", type=int, nargs=2, default=[1, 2])
p.add_argument("--steps", type=int, default=6)
p.add_argument("--ckpt", default=None)
p.add_argument("--load-sharded", default=None)
p.add_argument("--save-sharded", action="store_true")
p.add_argument("--strategy", default="model_parallel")
p.add_argument("--folders", action="store_true")
p.add_argument("--every", type=int, default=None)
p.add_argument("--top-k", type=int, default=1)
p.add_argument("--unsafe-at", type=int, default=None)
args = p.parse_args()
out = Path(args.out)
with (out / "pids").open("a") as f:
    f.write(f"{os.environ.get('RANK', 'driver')} 0 {os.getpid()}\n")


class Block(torch.nn.Module):
    """up (column-parallel) -> tanh -> down (row-parallel); counts its forward calls (recomputation shows)."""

    def __init__(self):
        super().__init__()
        self.up, self.down = torch.nn.Linear(6, 16), torch.nn.Linear(16, 6)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return x + self.down(torch.tanh(self.up(x)))


def full_optimizer_state(module):
    """The optimizer's momentum buffers, whole (a collective), keyed by parameter name."""
    options = StateDictOptions(full_state_dict=True, cpu_offload=True)
    state = get_optimizer_state_dict(module, module.trainer.optimizers[0], options=options).get(
        "state", {}
    )  # rank 0 only
    return {name: values["momentum_buffer"].clone() for name, values in state.items()}


class Net(ember.Module):
    def __init__(self):
        super().__init__()
        self.block, self.head = Block(), torch.nn.Linear(6, 1)
        self.losses, self.rows = [], []

    def configure_model(self):
        if args.strategy != "model_parallel":
            return
        from torch.distributed.fsdp import fully_shard
        from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

        mesh = self.device_mesh
        parallelize_module(
            self.block, mesh["tensor_parallel"], {"up": ColwiseParallel(), "down": RowwiseParallel()}
        )
        fully_shard(self, mesh=mesh["data_parallel"])

    def forward(self, x):
        return self.head(self.block(x))

    def training_step(self, batch, batch_idx):
        ids, x, y = batch
        self.rows.extend(ids.tolist())
        loss = F.mse_loss(self(x), y)
        self.losses.append(float(loss))
        self.log("loss", loss, sync_dist=True)
        return loss

    def on_train_start(self):
        if args.load_sharded:  # a folder written on another mesh, read into this one's shards
            self.trainer.strategy.load_sharded_checkpoint(self.trainer, args.load_sharded)
        if args.load_sharded or args.ckpt:  # what this mesh's shards hold now, gathered
            self.loaded = {
                k: (v.full_tensor() if hasattr(v, "full_tensor") else v).clone()  # one rank: a view
                for k, v in self.state_dict().items()
            }
            self.loaded_optimizer = full_optimizer_state(self)

    def on_save_checkpoint(self, checkpoint):
        if self.trainer.global_step == args.unsafe_at:
            checkpoint["not_restorable"] = lambda: None

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05, momentum=0.9)


gen = torch.Generator().manual_seed(0)
x = torch.randn(96, 6, generator=gen)
y = x.sum(1, keepdim=True).tanh()
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.arange(96), x, y), batch_size=8)

if args.strategy == "model_parallel":
    strategy = ModelParallelStrategy(
        data_parallel_size=args.mesh[0],
        tensor_parallel_size=args.mesh[1],
        save_distributed_checkpoint=args.folders,
    )
else:
    strategy = FSDPStrategy(activation_checkpointing_policy={Block})
torch.manual_seed(0)
model = Net()
trainer = ember.Trainer(
    strategy=strategy,
    devices=args.mesh[0] * args.mesh[1],
    accelerator="cpu",
    max_steps=args.steps,
    logger=False,
    enable_progress_bar=False,
    enable_model_summary=False,
    default_root_dir=out,
    num_sanity_val_steps=0,
    callbacks=[
        ember.ModelCheckpoint(
            dirpath=out / "checkpoints", save_last=True, every_n_train_steps=args.every, save_top_k=args.top_k
        )
    ],
)
try:
    trainer.fit(model, loader, ckpt_path=args.ckpt)
except Exception as e:  # --unsafe-at: the refused save, said on every rank
    error_file = out / f"error.{os.environ.get('RANK', 'driver')}"
    error_file.write_text(f"{type(e).__name__}: {e}")
    raise SystemExit(3) from None
if args.save_sharded:
    trainer.strategy.save_sharded_checkpoint(trainer, out / "sharded")
full = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
rows = [None] * trainer.world_size
torch.distributed.all_gather_object(rows, model.rows)
up = model.block.up.weight
if trainer.is_global_zero:
    torch.save(
        {
            "state_dict": full,
            "global_step": trainer.global_step,
            "losses": model.losses,
            "rows": rows,
            "up_placements": [str(pl) for pl in getattr(up, "placements", ())],
            "up_local_shape": list(getattr(up, "to_local", lambda: up)().shape),
            "block_calls": model.block.calls,
            "loaded": getattr(model, "loaded", None),
            "loaded_optimizer": getattr(model, "loaded_optimizer", None),
        },
        out / "final.pt",
    )
