"""DDP gives Lightning 2.6's numbers: the same script, run once with ember and once with Lightning on 2 CPU
processes, sees the same samples on each rank in the same order, draws the same dropout masks and ends with
bitwise-equal weights.

What this holds ember to (each one was a divergence): the DistributedSampler Lightning's Trainer adds to a
*training* DataLoader shuffles even when the loader is sequential, seeded with seed_everything's seed; and its
parallel strategies re-seed (`reset_seed`) when they join the process group, after the model was built.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from _dist import worker_env

SCRIPT = """
import json, sys
import torch
from torch.utils.data import DataLoader, Dataset

if sys.argv[1] == "ember":
    import ember as pl
else:
    import lightning.pytorch as pl


class Indexed(Dataset):
    def __init__(self):
        self.x = torch.randn(40, 4, generator=torch.Generator().manual_seed(1))
    def __len__(self):
        return len(self.x)
    def __getitem__(self, i):
        return i, self.x[i], self.x[i].sum(dim=0, keepdim=True)


class Net(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Dropout(0.3), torch.nn.Linear(8, 1))
        self.seen = []
    def training_step(self, batch, batch_idx):
        index, x, y = batch
        self.seen.append(index.tolist())
        return torch.nn.functional.mse_loss(self.net(x), y)
    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)


pl.seed_everything(7)
model = Net()  # built before the strategy re-seeds: Lightning's order
trainer = pl.Trainer(accelerator="cpu", devices=2, strategy="ddp", max_epochs=2, logger=False,
                     enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
trainer.fit(model, DataLoader(Indexed(), batch_size=6))  # 40 samples: rank shards of 20 (padding not needed)
# one write per line (print writes the text and the newline apart): both ranks share this stdout
weights = [p.detach().flatten().tolist() for p in model.parameters()]
result = {"rank": trainer.global_rank, "seen": model.seen, "weights": weights}
sys.stdout.write("RESULT " + json.dumps(result) + "\\n")
sys.stdout.flush()
"""


def _results(framework: str, tmp_path: Path) -> dict[int, dict]:
    folder = tmp_path / framework
    folder.mkdir()
    script = folder / "parity.py"
    script.write_text(SCRIPT)
    done = subprocess.run(
        [sys.executable, str(script), framework],
        cwd=folder,
        env=worker_env(HOME=str(folder)),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [
        json.loads(line[len("RESULT ") :]) for line in done.stdout.splitlines() if line.startswith("RESULT ")
    ]
    return {line["rank"]: line for line in lines}


@pytest.mark.slow
@pytest.mark.timeout(600)  # two 2-process runs, each starting its framework
def test_ddp_ranks_see_lightnings_data_order_and_end_with_its_weights(tmp_path):
    pytest.importorskip("lightning")
    ours, theirs = _results("ember", tmp_path), _results("lightning", tmp_path)
    assert sorted(ours) == sorted(theirs) == [0, 1]
    for rank in (0, 1):
        assert ours[rank]["seen"] == theirs[rank]["seen"]  # per rank, per step: the same sample indices
    # the training loader was shuffled (Lightning shuffles it even though the DataLoader is sequential)
    assert ours[0]["seen"][0] != [0, 2, 4, 6, 8, 10]
    assert ours[0]["seen"][:4] != ours[0]["seen"][4:8]  # a new order each epoch (set_epoch)
    # same data, same dropout masks (the RNG re-seeded where Lightning re-seeds), gradients averaged alike
    assert ours[0]["weights"] == theirs[0]["weights"] == ours[1]["weights"]
