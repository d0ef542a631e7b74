"""A short 2-rank run that records, from inside rank 0 after the process group is up, every TCP socket
this process listens on (read from /proc: the rendezvous store lives here).

    python listen_check.py OUT_DIR ddp|torchtrainer

Writes OUT_DIR/listening.json: ["127.0.0.1:PORT", ...]. Every process appends "<rank or driver> 0 <pid>"
to OUT_DIR/pids.
"""

import json
import os
import sys
from pathlib import Path

import torch

import ember

out, mode = Path(sys.argv[1]), sys.argv[2]
with (out / "pids").open("a") as f:
    f.write(f"{os.environ.get('RANK', 'driver')} 0 {os.getpid()}\n")


def listening() -> list[str]:
    """host:port of every TCP socket in LISTEN state that this process holds (Linux /proc)."""
    inodes = set()
    for fd in Path("/proc/self/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = []
    for table, width in (("/proc/net/tcp", 8), ("/proc/net/tcp6", 32)):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] != "0A" or fields[9] not in inodes:  # 0A: LISTEN
                continue
            hex_ip, hex_port = fields[1].split(":")
            raw = bytes.fromhex(hex_ip)
            if width == 8:
                ip = ".".join(str(b) for b in raw[::-1])
            else:  # four little-endian 32-bit words
                words = b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))
                import ipaddress

                ip = str(ipaddress.IPv6Address(words))
            found.append(f"{ip}:{int(hex_port, 16)}")
    return sorted(found)


def record() -> None:
    import torch.distributed as dist

    dist.barrier()  # the store has served every rank by now
    if dist.get_rank() == 0:
        (out / "listening.json").write_text(
            json.dumps({"listening": listening(), "port": os.environ["MASTER_PORT"]})
        )
    dist.barrier()


if mode == "ddp":

    class Tiny(ember.Module):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(4, 1)

        def training_step(self, batch, batch_idx):
            if batch_idx == 0:
                record()
            return self.layer(batch).pow(2).mean()

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    trainer = ember.Trainer(
        strategy="ddp",
        devices=2,
        accelerator="cpu",
        max_steps=2,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=out,
    )
    trainer.fit(Tiny(), torch.utils.data.DataLoader(torch.randn(16, 4), batch_size=4))
else:
    from ember.train import RunConfig, ScalingConfig, TorchTrainer

    def loop():
        record()

    TorchTrainer(
        loop,
        scaling_config=ScalingConfig(num_workers=2),
        run_config=RunConfig(storage_path=str(out), name="run"),
    ).fit()
