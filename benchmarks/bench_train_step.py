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
from collections.abc import Callable, Iterator

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
    title = "Training step: classic Net, Fashion-MNIST, batch 64, CPU"
    return step_time_bench("train_step", title, "cpu", warm, steps, rounds)


class OnDevice:
    """A loader whose batches the hand-written loop copies to the GPU, as the classic script's ``.to(device)``
    lines do (inside the timed step: the loop's next() is between two ticks)."""

    def __init__(self, loader: DataLoader) -> None:
        self.loader = loader

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        for x, y in self.loader:
            yield x.cuda(non_blocking=True), y.cuda(non_blocking=True)


def step_time_bench(name: str, title: str, accelerator: str, warm: int, steps: int, rounds: int) -> Bench:
    """ms per step of the classic Net for the hand-written loop and each framework, defaults and lean, on
    ``accelerator`` ("cpu", or "cuda": batches from pinned memory); bench_gpu_step.py uses it for the GPU."""
    data = fashion_tensors(limit=64 * (warm + steps + 1))
    cuda = accelerator == "cuda"

    def loader() -> DataLoader:
        return DataLoader(
            data, batch_size=64, shuffle=True, pin_memory=cuda, generator=torch.Generator().manual_seed(0)
        )

    def hand_written() -> float:
        torch.manual_seed(0)
        clock = Clock()
        if cuda:
            hand_written_fit(Net().cuda(), OnDevice(loader()), warm + steps + 1, clock)
            torch.cuda.synchronize()
        else:
            hand_written_fit(Net(), loader(), warm + steps + 1, clock)
        return clock.per_step(warm) * 1e3

    def fit_with(tool: Framework, **options: object) -> Callable[[], float]:
        def fit() -> float:
            torch.manual_seed(0)
            clock = Clock()
            model = as_framework_module(tool.Module, Net, clock)
            with tempfile.TemporaryDirectory() as root, quiet():
                trainer = tool.Trainer(
                    max_steps=warm + steps + 1,
                    accelerator=accelerator,
                    devices=1,
                    default_root_dir=root,
                    **options,
                )
                trainer.fit(model, train_dataloaders=loader())
            if cuda:
                torch.cuda.synchronize()
            return clock.per_step(warm) * 1e3

        return fit

    bench = new_bench(name, title, "ms/step")
    runners: dict[str, Callable[[], float] | None] = {"hand-written loop": hand_written}
    bench.case("hand-written loop", version("torch"))
    for tool_name in ("ember", "Lightning"):
        tool = framework(tool_name)
        for setting, options in {"defaults": {}, "lean": LEAN}.items():
            label = f"{tool_name} ({setting})"
            bench.case(label, version(tool_name.lower(), tool_name))
            runners[label] = fit_with(tool, **options) if tool else None
    bench.compare("ember (defaults)", "hand-written loop", "Lightning (defaults)")
    bench.compare("ember (lean)", "hand-written loop", "Lightning (lean)")
    alternate(bench, runners, rounds=rounds)
    return bench


if __name__ == "__main__":
    main(run)
