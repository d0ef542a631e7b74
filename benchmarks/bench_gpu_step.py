"""Benchmark 1g: training step time on a CUDA GPU: the classic Net, Fashion-MNIST, batch 64.

The same workload as bench_train_step, on one GPU: batches come from a pinned-memory DataLoader and are
copied to the device by each loop (the hand-written one with ``.cuda(non_blocking=True)``). A small net
on a fast GPU leaves the Python around the step as the cost, so this is where a framework's overhead
shows most. Needs CUDA: run it on a GPU machine (``python benchmarks/bench_gpu_step.py``); it is not
in run.py's registry, which runs on this project's CPU machine.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable

import torch
import torch.nn.functional as F
from harness import Bench, alternate, main, new_bench, quiet, version
from torch.utils.data import DataLoader
from workloads import Clock, Framework, Net, as_framework_module, fashion_tensors, framework

LEAN = {"logger": False, "enable_progress_bar": False, "enable_checkpointing": False, "enable_model_summary": False}


def hand_written_cuda_fit(model: torch.nn.Module, loader: DataLoader, steps: int, clock: Clock) -> None:
    """The classic script's loop with its ``.to(device)`` lines."""
    model.cuda().train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.5)
    step = 0
    while step < steps:
        for x, y in loader:
            clock.tick()
            x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
            optimizer.zero_grad()
            loss = F.nll_loss(model(x), y)
            loss.backward()
            optimizer.step()
            step += 1
            if step == steps:
                torch.cuda.synchronize()
                return


def run(quick: bool) -> Bench:
    if not torch.cuda.is_available():
        raise SystemExit("bench_gpu_step needs a CUDA GPU")
    warm, steps, rounds = (10, 100, 2) if quick else (50, 600, 5)
    data = fashion_tensors(limit=64 * (warm + steps + 1))

    def loader() -> DataLoader:
        return DataLoader(data, batch_size=64, shuffle=True, pin_memory=True,
                          generator=torch.Generator().manual_seed(0))

    def hand_written() -> float:
        torch.manual_seed(0)
        clock = Clock()
        hand_written_cuda_fit(Net(), loader(), warm + steps + 1, clock)
        return clock.per_step(warm) * 1e3

    def fit_with(tool: Framework, **options: object) -> Callable[[], float]:
        def fit() -> float:
            torch.manual_seed(0)
            clock = Clock()
            model = as_framework_module(tool.Module, Net, clock)
            with tempfile.TemporaryDirectory() as root, quiet():
                trainer = tool.Trainer(max_steps=warm + steps + 1, accelerator="cuda", devices=1,
                                       default_root_dir=root, **options)
                trainer.fit(model, train_dataloaders=loader())
            torch.cuda.synchronize()
            return clock.per_step(warm) * 1e3

        return fit

    bench = new_bench("gpu_step", f"Training step on {torch.cuda.get_device_name()}: classic Net, batch 64", "ms/step")
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
