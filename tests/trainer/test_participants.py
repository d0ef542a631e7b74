"""Resume state as participants: every participant in ember/trainer/participants.py round-trips.

Run A trains without interruption; a callback writes `resume.ckpt` at the end of batch K (inside an
accumulation window, mid-epoch) and a probe checkpoint at the start of batch K+1. Run B, a fresh
Trainer and Module, resumes from `resume.ckpt` and writes its probe at the start of batch K+1 too.
Each participant's state in the two probes must be identical (torch.equal for tensors): a
participant that is not saved, not restored, or restored at the wrong moment differs. Both runs then
finish, and their weights and epoch metrics are compared bitwise.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from _models import digits_tensors, seeded

import ember
from ember.checkpoint import load_checkpoint
from ember.loggers import CSVLogger
from ember.trainer import participants

RESUME_AT = 13  # the end of batch 13 (0-based 12) of epoch 1: mid-epoch, inside a 2-batch window
BATCHES_PER_EPOCH = 24  # 760 rows, batch 32 (the last batch is short: 24 rows)
SCENARIOS = ("dataloader", "ember_data")
# What a fit's checkpoint holds besides METADATA; a participant added to the registry must be listed
# in one of the scenarios' expectations (train_data only exists for a stateful iterable).
EXPECTED = {
    "dataloader": {
        "state_dict",
        "optimizer_states",
        "lr_schedulers",
        "precision",
        "progress",
        "optimization",
        "metrics",
        "callbacks",
        "rng",
        "epoch_start_rng",
        "data_layout",
        "datamodule",
        "loggers",
    },
}
EXPECTED["ember_data"] = EXPECTED["dataloader"] | {"train_data"}


class Net(ember.Module):
    def __init__(self, lr: float = 0.01) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Dropout(0.3), torch.nn.Linear(32, 10)
        )

    def training_step(self, batch, batch_idx):
        x, y = (batch["x"], batch["y"]) if isinstance(batch, dict) else batch
        loss = F.cross_entropy(self.net(x), y)
        self.log("train_loss", loss, on_step=True, on_epoch=True, prog_bar=True)
        self.log("noise", torch.rand(()), on_step=False, on_epoch=True)  # draws from the RNG streams
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = (batch["x"], batch["y"]) if isinstance(batch, dict) else batch
        self.log("val_loss", F.cross_entropy(self.net(x), y))

    def configure_optimizers(self):
        optimizer = torch.optim.Adam(self.parameters(), lr=self.hparams.lr)
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=4, gamma=0.9)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}


class Counting(ember.Callback):
    """A stateful callback: counts the batches it has seen."""

    def __init__(self) -> None:
        self.seen = 0

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
        self.seen += 1

    def state_dict(self) -> dict[str, Any]:
        return {"seen": self.seen}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.seen = state_dict["seen"]


class Probe(ember.Callback):
    """Writes `resume.ckpt` after batch RESUME_AT of epoch 1 (run A only) and `probe.ckpt` at the start
    of the next batch (both runs)."""

    def __init__(self, folder: Path, write_resume: bool) -> None:
        self.folder, self.write_resume = folder, write_resume

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
        if self.write_resume and trainer.current_epoch == 1 and batch_idx + 1 == RESUME_AT:
            trainer.save_checkpoint(self.folder / "resume.ckpt")

    def on_train_batch_start(self, trainer, module, batch, batch_idx):
        if trainer.current_epoch == 1 and batch_idx == RESUME_AT:
            trainer.save_checkpoint(self.folder / "probe.ckpt")


class Numbers(ember.DataModule):
    """A stateful datamodule (its state: how often setup ran) serving the training data."""

    def __init__(self, make_train) -> None:
        super().__init__()
        self.make_train, self.setups = make_train, 0

    def setup(self, stage: str) -> None:
        self.setups += 1

    def train_dataloader(self):
        return self.make_train()

    def state_dict(self) -> dict[str, Any]:
        return {"setups": self.setups}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.setups = state["setups"]


def _train_data(kind: str):
    x, y = digits_tensors()
    x, y = x[:760], y[:760]
    if kind == "dataloader":
        return lambda: torch.utils.data.DataLoader(
            torch.utils.data.TensorDataset(x, y), batch_size=32, shuffle=True
        )
    import ember.data

    dataset = ember.data.from_items(
        [{"x": a, "y": int(b)} for a, b in zip(x.numpy(), y.numpy(), strict=True)]
    )
    return lambda: dataset.iter_torch_batches(
        batch_size=32, local_shuffle_buffer_size=64, dtypes={"x": torch.float32}
    )


def _fit(
    kind: str, folder: Path, logs: Path, write_resume: bool, ckpt_path: Path | None
) -> tuple[ember.Trainer, Net]:
    seeded(3)
    model = Net()
    x, y = digits_tensors()
    val = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x[1500:], y[1500:]), batch_size=100)
    trainer = ember.Trainer(
        max_epochs=2,
        accumulate_grad_batches=2,
        log_every_n_steps=5,
        val_check_interval=10,
        default_root_dir=folder,
        enable_progress_bar=False,
        enable_model_summary=False,
        logger=CSVLogger(logs, name="run", version=0),
        callbacks=[
            Counting(),
            Probe(folder, write_resume),
            ember.EarlyStopping("val_loss", patience=50),
            ember.ModelCheckpoint(dirpath=logs / "checkpoints", every_n_epochs=1, save_top_k=-1),
        ],
    )
    trainer.fit(model, val_dataloaders=val, datamodule=Numbers(_train_data(kind)), ckpt_path=ckpt_path)
    return trainer, model


pytestmark = pytest.mark.slow  # four short fits (about 20 s on a quiet 2-core machine)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, dict[str, Any]]:
    out = {}
    for kind in SCENARIOS:
        root = tmp_path_factory.mktemp(kind)
        a_dir, b_dir = root / "a", root / "b"
        a_dir.mkdir(), b_dir.mkdir()
        # One logs folder: the loggers' and ModelCheckpoint's states name their folders, which must agree.
        a, a_model = _fit(kind, a_dir, root / "logs", write_resume=True, ckpt_path=None)
        b, b_model = _fit(kind, b_dir, root / "logs", write_resume=False, ckpt_path=a_dir / "resume.ckpt")
        out[kind] = {
            "resume": load_checkpoint(a_dir / "resume.ckpt"),
            "a": load_checkpoint(a_dir / "probe.ckpt"),
            "b": load_checkpoint(b_dir / "probe.ckpt"),
            "weights": (a_model.state_dict(), b_model.state_dict()),
            "metrics": (dict(a.logged_metrics), dict(b.logged_metrics)),
            "steps": (a.global_step, b.global_step),
        }
    return out


def assert_same(a: Any, b: Any, where: str) -> None:
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        assert isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor), where
        assert a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b), f"{where} differs"
    elif isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        assert np.array_equal(a, b), f"{where} differs"
    elif isinstance(a, dict):
        assert isinstance(b, dict) and sorted(map(str, a)) == sorted(map(str, b)), (
            f"{where}: keys {list(a)} vs {list(b)}"
        )
        for key in a:
            assert_same(a[key], b[key], f"{where}[{key!r}]")
    elif isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple)) and len(a) == len(b), f"{where}: lengths differ"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{where}[{i}]")
    else:
        assert a == b or (a != a and b != b), f"{where}: {a!r} != {b!r}"


@pytest.mark.parametrize("kind", SCENARIOS)
def test_the_checkpoint_is_the_collection_of_the_registered_participants(runs, kind):
    ckpt = runs[kind]["resume"]
    saved = set(ckpt) - set(participants.METADATA) - {"checksum"}
    assert saved == EXPECTED[kind]
    assert ckpt["optimization"]["micro_step"] == 1  # written inside an accumulation window
    assert ckpt["progress"]["batch_idx"] == RESUME_AT and ckpt["progress"]["epoch"] == 1


@pytest.mark.parametrize("key", sorted(EXPECTED["ember_data"]))
@pytest.mark.parametrize("kind", SCENARIOS)
def test_every_participant_round_trips(runs, kind, key):
    """At the first batch after the resume point, the resumed run's state equals the uninterrupted one's."""
    if key not in EXPECTED[kind]:
        pytest.skip(f"{kind} has no {key} participant (only a stateful iterable has train_data)")
    a, b = runs[kind]["a"], runs[kind]["b"]
    assert key in a and key in b
    assert_same(a[key], b[key], key)


@pytest.mark.parametrize("kind", SCENARIOS)
def test_the_resumed_run_ends_bitwise_equal(runs, kind):
    """Mid-epoch, mid-accumulation-window: weights, step count and the logged epoch means all agree."""
    (a_weights, b_weights), (a_metrics, b_metrics) = runs[kind]["weights"], runs[kind]["metrics"]
    assert runs[kind]["steps"][0] == runs[kind]["steps"][1] == 2 * BATCHES_PER_EPOCH // 2
    assert_same(a_weights, b_weights, "weights")
    for name in ("train_loss_epoch", "noise", "val_loss"):
        assert a_metrics[name] == b_metrics[name], name
