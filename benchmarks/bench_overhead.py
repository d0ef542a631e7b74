"""Benchmark 2: what a framework adds to every training step, on a model too small to hide it.

nn.Linear(784, 10) on batches of 64 costs tens of microseconds per step, so the time a Trainer
spends around the step (hooks, logging, progress, bookkeeping) shows. The batches are made up
front and fed from a plain iterable, so no data loading is timed either. Each run's framework
step time minus the hand-written loop's step time of the same round is the overhead. torch runs
one intra-op thread here: a framework's overhead is single-threaded Python, and two threads on
such tiny ops only add scheduling noise (on a busy 2-core machine, a lot of it).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator

import torch
from harness import Bench, alternate, main, new_bench, quiet, version
from workloads import (
    Clock,
    Framework,
    Tiny,
    as_framework_module,
    fashion_tensors,
    framework,
    hand_written_fit,
)

LEAN = {
    "logger": False,
    "enable_progress_bar": False,
    "enable_checkpointing": False,
    "enable_model_summary": False,
}


class Batches:
    """A fixed list of batches behind an iterable (a bare list would read as many loaders)."""

    def __init__(self, batches: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
        self.batches = batches

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        return iter(self.batches)

    def __len__(self) -> int:
        return len(self.batches)


def run(quick: bool) -> Bench:
    warm, steps, rounds = (20, 400, 3) if quick else (200, 3000, 7)
    torch.set_num_threads(1)
    x, y = fashion_tensors(limit=64 * (warm + steps + 1)).tensors
    batches = Batches(list(zip(x.split(64), y.split(64), strict=True)))

    def hand_written() -> float:
        torch.manual_seed(0)
        clock = Clock()
        hand_written_fit(Tiny(), batches, warm + steps + 1, clock)
        return clock.per_step(warm) * 1e6

    def fit_with(tool: Framework, **options: object) -> Callable[[], float]:
        def fit() -> float:
            torch.manual_seed(0)
            clock = Clock()
            model = as_framework_module(tool.Module, Tiny, clock)
            with tempfile.TemporaryDirectory() as root, quiet():
                trainer = tool.Trainer(
                    max_steps=warm + steps + 1, accelerator="cpu", devices=1, default_root_dir=root, **options
                )
                trainer.fit(model, train_dataloaders=batches)
            return clock.per_step(warm) * 1e6

        return fit

    bench = new_bench(
        "overhead", "Framework overhead per step: nn.Linear(784, 10), batch 64", "µs/step above hand-written"
    )
    bench.case("hand-written loop", version("torch"), unit="µs/step")
    runners: dict[str, Callable[[], float] | None] = {"hand-written loop": hand_written}
    for setting, options in {"lean": LEAN, "defaults": {}}.items():
        for name in ("ember", "Lightning"):
            tool = framework(name)
            bench.case(f"{name} ({setting})", version(name.lower(), name))
            runners[f"{name} ({setting})"] = fit_with(tool, **options) if tool else None
    bench.compare("ember (lean)", "Lightning (lean)")
    bench.compare("ember (defaults)", "Lightning (defaults)")
    alternate(bench, runners, rounds=rounds)

    hand = bench.get("hand-written loop").samples  # step times -> time above the hand-written loop
    for case in bench.cases[1:]:
        case.samples = [step - base for step, base in zip(case.samples, hand, strict=False)]
    bench.save()
    return bench


if __name__ == "__main__":
    main(run)
