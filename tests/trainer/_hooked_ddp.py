"""A 2-rank CPU DDP fit with gradient accumulation, for test_module_hooks: the default step, or a Module whose
optimizer_step override delegates to the default (Lightning's closure path, gradient sync skipped inside a
window). Rank 0 saves the final weights to OUT_DIR/weights-<variant>.pt.

    python _hooked_ddp.py OUT_DIR default|hooked
"""

import os
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

import ember

sys.path.insert(0, str(Path(__file__).parent))
from _models import digits_tensors  # noqa: E402  (load_digits' data without importing scikit-learn)

out, variant = Path(sys.argv[1]), sys.argv[2]
x, y = digits_tensors()
data = TensorDataset(x[:256], y[:256])


class Digits(ember.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.layer = torch.nn.Linear(64, 10)

    def training_step(self, batch, batch_idx):
        return F.cross_entropy(self.layer(batch[0]), batch[1])

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


class Hooked(Digits):
    def optimizer_step(self, epoch, batch_idx, optimizer, optimizer_closure):
        super().optimizer_step(epoch, batch_idx, optimizer, optimizer_closure)


model = Hooked() if variant == "hooked" else Digits()
trainer = ember.Trainer(
    strategy="ddp",
    devices=2,
    accelerator="cpu",
    max_epochs=1,
    accumulate_grad_batches=2,
    gradient_clip_val=0.5,
    logger=False,
    enable_checkpointing=False,
    enable_progress_bar=False,
    enable_model_summary=False,
    default_root_dir=out,
)
trainer.fit(model, DataLoader(data, batch_size=16))
if os.environ.get("RANK", "0") == "0":
    torch.save({k: v.detach().clone() for k, v in model.state_dict().items()}, out / f"weights-{variant}.pt")
