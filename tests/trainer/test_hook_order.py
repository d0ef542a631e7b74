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
BATCH_HOOKS = {"on_train_batch_start", "on_train_batch_end", "on_validation_batch_start", "on_validation_batch_end",
               "on_test_batch_start", "on_test_batch_end"}


def _hook_names(cls: type) -> list[str]:
    return [n for n, _ in inspect.getmembers(cls, inspect.isfunction) if n.startswith("on_") or n in ("setup", "teardown")]


def _recording(cls: type, who: str, calls: list[str]) -> type:
    """A subclass of `cls` whose every hook appends `who.hook[args]` to `calls`, then runs the original."""

    def make(name: str):
        original = getattr(cls, name)

        def hook(self, *args, **kwargs):
            detail = ""
            if name in BATCH_HOOKS or name in ("setup", "teardown"):
                detail = f"[{args[-1]}]"  # the batch index, or the stage
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
        max_epochs=2, default_root_dir=tmp_path, callbacks=[callback], logger=False,
        enable_progress_bar=False, enable_model_summary=False,
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
    assert text == GOLDEN.read_text(), "hook order changed: update docs/hooks.md and the golden file on purpose"


def test_callbacks_run_before_the_module_except_at_epoch_end(tmp_path):
    calls = record_hooks(tmp_path)
    first = {c.split(".", 1)[1]: c.split(".", 1)[0] for c in reversed(calls) if "." in c}  # first caller of each
    assert first["on_train_batch_start[0]"] == "callback"
    assert first["on_train_epoch_end"] == "module"  # the module logs epoch metrics before callbacks read them
    assert first["on_validation_epoch_end"] == "module"
