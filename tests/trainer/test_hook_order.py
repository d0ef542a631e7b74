"""The order in which fit/validate/test call hooks is fixed, documented (docs/hooks.md) and checked here.

2 epochs x 3 training batches, 2 validation batches, sanity check on, a checkpoint every epoch.
Regenerate the golden file after an intended change with:
    EMBER_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/trainer/test_hook_order.py
"""

from __future__ import annotations

import inspect
import os
from pathlib import Path

import torch

import ember

GOLDEN = Path(__file__).parent / "golden" / "hook_order.txt"
BATCH_HOOKS = {
    "on_train_batch_start",
    "on_train_batch_end",
    "on_validation_batch_start",
    "on_validation_batch_end",
    "on_test_batch_start",
    "on_test_batch_end",
}


def _hook_names(cls: type) -> list[str]:
    return [
        n
        for n, _ in inspect.getmembers(cls, inspect.isfunction)
        if n.startswith("on_") or n in ("setup", "teardown")
    ]


def _recording(cls: type, who: str, calls: list[str]) -> type:
    """A subclass of `cls` whose every hook appends `who.hook[args]` to `calls`, then runs the original."""

    def make(name: str):
        original = getattr(cls, name)

        def hook(self, *args, **kwargs):
            detail = ""
            if name in BATCH_HOOKS or name in ("setup", "teardown"):
                last = [*args, *kwargs.values()][-1]  # the batch index, or the stage (Lightning's is an enum)
                detail = f"[{getattr(last, 'value', last)}]"
            calls.append(f"{who}.{name}{detail}")
            return original(self, *args, **kwargs)

        return hook

    return type(f"Recording{cls.__name__}", (cls,), {n: make(n) for n in _hook_names(cls)})


class Tiny(ember.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)

    def training_step(self, batch, batch_idx):
        return self.layer(batch).pow(2).mean()

    def validation_step(self, batch, batch_idx):
        self.log("val_loss", self.layer(batch).pow(2).mean())

    def test_step(self, batch, batch_idx):
        self.log("test_loss", self.layer(batch).pow(2).mean())

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def record_hooks(tmp_path: Path) -> list[str]:
    calls: list[str] = []
    module = _recording(Tiny, "module", calls)()
    callback = _recording(ember.Callback, "callback", calls)()
    data = torch.utils.data.DataLoader(torch.randn(12, 4), batch_size=4)
    val = torch.utils.data.DataLoader(torch.randn(8, 4), batch_size=4)
    trainer = ember.Trainer(
        max_epochs=2,
        default_root_dir=tmp_path,
        callbacks=[callback],
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    calls.append("--- fit")
    trainer.fit(module, data, val)
    calls.append("--- validate")
    trainer.validate(module, val)
    calls.append("--- test")
    trainer.test(module, val, verbose=False)
    return calls


def test_hook_order_matches_golden_file(tmp_path):
    calls = record_hooks(tmp_path)
    text = "\n".join(calls) + "\n"
    if os.environ.get("EMBER_UPDATE_GOLDEN"):
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text(), (
        "hook order changed: update docs/hooks.md and the golden file on purpose"
    )


def test_callbacks_run_before_the_module_for_every_hook(tmp_path):
    calls = record_hooks(tmp_path)
    first = {
        c.split(".", 1)[1]: c.split(".", 1)[0] for c in reversed(calls) if "." in c
    }  # first caller of each
    both = {hook for hook in first if f"callback.{hook}" in calls and f"module.{hook}" in calls}
    assert {
        "on_train_batch_start[0]",
        "on_train_epoch_end",
        "on_validation_epoch_end",
        "on_test_epoch_end",
    } <= both
    assert all(first[hook] == "callback" for hook in both), sorted(h for h in both if first[h] == "module")


def _lightning_tiny(pl):
    class LightningTiny(pl.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.layer = torch.nn.Linear(4, 1)

        training_step, validation_step = Tiny.training_step, Tiny.validation_step
        test_step, configure_optimizers = Tiny.test_step, Tiny.configure_optimizers

    return LightningTiny


def record_lightning_hooks(tmp_path: Path) -> list[str]:
    """The same run as `record_hooks`, under the real Lightning."""
    import pytest

    pl = pytest.importorskip("lightning.pytorch")
    calls: list[str] = []
    module = _recording(_lightning_tiny(pl), "module", calls)()
    callback = _recording(pl.Callback, "callback", calls)()
    data = torch.utils.data.DataLoader(torch.randn(12, 4), batch_size=4)
    val = torch.utils.data.DataLoader(torch.randn(8, 4), batch_size=4)
    trainer = pl.Trainer(
        max_epochs=2,
        default_root_dir=tmp_path,
        callbacks=[callback],
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        accelerator="cpu",
        devices=1,
    )
    calls.append("--- fit")
    trainer.fit(module, data, val)
    calls.append("--- validate")
    trainer.validate(module, val, verbose=False)
    calls.append("--- test")
    trainer.test(module, val, verbose=False)
    return calls


def test_the_recorded_hook_sequence_is_lightnings(tmp_path):
    """Every hook of the Module and a callback, in Lightning 2.6's order, for fit (sanity check, 2 epochs,
    checkpointing), validate and test — compared with the real Lightning running the same module. The one
    difference left is where ModelCheckpoint saves (ember: on_validation_end; Lightning, when validation
    runs at the end of each epoch: on_train_epoch_end), so on_save_checkpoint is compared apart."""
    ours, theirs = record_hooks(tmp_path / "ember"), record_lightning_hooks(tmp_path / "lightning")

    def without_saving(calls: list[str]) -> list[str]:
        return [c for c in calls if not c.endswith(".on_save_checkpoint")]

    assert without_saving(ours) == without_saving(theirs)
    saving = [c for c in ours if c.endswith(".on_save_checkpoint")]
    assert saving == [c for c in theirs if c.endswith(".on_save_checkpoint")]
    assert saving == ["callback.on_save_checkpoint", "module.on_save_checkpoint"] * 2
