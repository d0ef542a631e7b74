"""Benchmark 1: training step time of the classic MNIST Net on Fashion-MNIST, batch 64, CPU.

Every loop trains the same Net from the same seed on the same batches with the same optimizer
(SGD, lr 0.01, momentum 0.5). A step is timed from inside ``training_step`` (from the start of
step WARM to the start of the last step), so set-up is left out and everything a step costs is in:
fetching the batch, forward, backward, optimizer, and whatever the framework adds around them.
Frameworks run twice: with the Trainer's defaults (logger, progress bar, checkpointing, summary),
and lean (all four off).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable

import torch
from harness import Bench, alternate, main, new_bench, quiet, version
from torch.utils.data import DataLoader
from workloads import Clock, Framework, Net, as_framework_module, fashion_tensors, framework, hand_written_fit

LEAN = {
    "logger": False,
    "enable_progress_bar": False,
    "enable_checkpointing": False,
    "enable_model_summary": False,
}


def run(quick: bool) -> Bench:
    warm, steps, rounds = (5, 40, 2) if quick else (20, 300, 7)
    data = fashion_tensors(limit=64 * (warm + steps + 1))

    def loader() -> DataLoader:
        return DataLoader(data, batch_size=64, shuffle=True, generator=torch.Generator().manual_seed(0))

    def hand_written() -> float:
        torch.manual_seed(0)
        clock = Clock()
        hand_written_fit(Net(), loader(), warm + steps + 1, clock)
        return clock.per_step(warm) * 1e3

    def fit_with(tool: Framework, **options: object) -> Callable[[], float]:
        def fit() -> float:
            torch.manual_seed(0)
            clock = Clock()
            model = as_framework_module(tool.Module, Net, clock)
            with tempfile.TemporaryDirectory() as root, quiet():
                trainer = tool.Trainer(
                    max_steps=warm + steps + 1, accelerator="cpu", devices=1, default_root_dir=root, **options
                )
                trainer.fit(model, train_dataloaders=loader())
            return clock.per_step(warm) * 1e3

        return fit

    bench = new_bench("train_step", "Training step: classic Net, Fashion-MNIST, batch 64, CPU", "ms/step")
    runners: dict[str, Callable[[], float] | None] = {"hand-written loop": hand_written}
    bench.case("hand-written loop", version("torch"))
    for name in ("ember", "Lightning"):
        tool = framework(name)
        for setting, options in {"defaults": {}, "lean": LEAN}.items():
            label = f"{name} ({setting})"
            bench.case(label, version(name.lower(), name))
            runners[label] = fit_with(tool, **options) if tool else None
    bench.compare("ember (defaults)", "hand-written loop", "Lightning (defaults)")
    bench.compare("ember (lean)", "hand-written loop", "Lightning (lean)")
    alternate(bench, runners, rounds=rounds)
    return bench


if __name__ == "__main__":
    main(run)
