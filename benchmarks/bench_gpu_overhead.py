"""Framework overhead per training step on a GPU, in fp32 and bf16-mixed: nn.Linear(784, 10), batch 64.

A model this small costs a few µs of GPU time a step, so what shows is the Python around the step. Batches
are made on the device up front (no data loading is timed); the clock runs from step W to the last, with a
device synchronisation at both ends. The hand-written loop uses `torch.autocast("cuda", torch.bfloat16)`
for bf16-mixed, which is what a Trainer's bf16-mixed precision does. Rounds alternate the tools, and the
median of the rounds is reported with the ratio to the hand-written loop (issue 30's goal: <= 1.02x).

    python benchmarks/bench_gpu_overhead.py [--steps 3000] [--rounds 3] [--out overhead.json]
    python benchmarks/bench_gpu_overhead.py --device cpu --steps 50 --rounds 1  (a check of the script only)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import tempfile
import time
from typing import Any

import torch
import torch.nn.functional as F

LEAN = {
    "logger": False,
    "enable_progress_bar": False,
    "enable_checkpointing": False,
    "enable_model_summary": False,
    "num_sanity_val_steps": 0,
}


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def make_batches(count: int, device: torch.device) -> list[tuple[torch.Tensor, torch.Tensor]]:
    gen = torch.Generator().manual_seed(0)
    return [
        (
            torch.randn(64, 784, generator=gen).to(device),
            torch.randint(0, 10, (64,), generator=gen).to(device),
        )
        for _ in range(count)
    ]


class Batches:
    def __init__(self, batches: list) -> None:
        self.batches = batches

    def __iter__(self) -> Any:
        return iter(self.batches)

    def __len__(self) -> int:
        return len(self.batches)


def hand_written(batches: list, warm: int, precision: str, device: torch.device) -> float:
    torch.manual_seed(0)
    model = torch.nn.Linear(784, 10).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    autocast = (
        torch.autocast(device.type, torch.bfloat16) if precision == "bf16-mixed" else contextlib.nullcontext()
    )
    start = 0.0
    for step, (x, y) in enumerate(batches):
        if step == warm:
            sync(device)
            start = time.perf_counter()
        with autocast:
            loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    sync(device)
    return (time.perf_counter() - start) / (len(batches) - warm) * 1e6


def with_trainer(tool: str, batches: list, warm: int, precision: str, device: torch.device) -> float:
    if tool == "ember":
        import ember as lib

        base, trainer_cls = lib.Module, lib.Trainer
    else:
        import lightning.pytorch as lib

        base, trainer_cls = lib.LightningModule, lib.Trainer
    clock: dict[str, float] = {}

    class Tiny(base):  # type: ignore[misc, valid-type]
        def __init__(self) -> None:
            super().__init__()
            self.layer = torch.nn.Linear(784, 10)

        def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
            if batch_idx == warm:
                sync(device)
                clock["start"] = time.perf_counter()
            return F.cross_entropy(self.layer(batch[0]), batch[1])

        def on_train_end(self) -> None:
            sync(device)
            clock["end"] = time.perf_counter()

        def configure_optimizers(self) -> Any:
            return torch.optim.SGD(self.parameters(), lr=0.01)

    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as root:
        trainer = trainer_cls(
            max_steps=len(batches),
            accelerator=device.type,
            devices=1,
            precision=precision,
            default_root_dir=root,
            **LEAN,
        )
        trainer.fit(Tiny(), train_dataloaders=Batches(batches))
    return (clock["end"] - clock["start"]) / (len(batches) - warm) * 1e6


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", default="cuda")
    p.add_argument("--steps", type=int, default=3000)
    p.add_argument("--warm", type=int, default=200)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("bench_gpu_overhead needs a CUDA GPU (--device cpu checks the script only)")
    batches = make_batches(args.warm + args.steps, device)
    results: dict[str, dict[str, list[float]]] = {}
    for precision in ("32-true", "bf16-mixed"):
        samples: dict[str, list[float]] = {"hand-written": [], "ember": [], "Lightning": []}
        for _ in range(args.rounds):  # alternating, so a drift of the machine hits every tool alike
            samples["hand-written"].append(hand_written(batches, args.warm, precision, device))
            samples["ember"].append(with_trainer("ember", batches, args.warm, precision, device))
            samples["Lightning"].append(with_trainer("lightning", batches, args.warm, precision, device))
        results[precision] = samples
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    print(
        f"Framework overhead on {name}: nn.Linear(784, 10), batch 64, {args.steps} timed steps, median of "
        f"{args.rounds} alternating rounds"
    )
    print(
        "| precision | hand-written µs/step | ember µs/step | "
        "ember / hand | Lightning µs/step | Lightning / hand |"
    )
    print("|---|---|---|---|---|---|")
    for precision, samples in results.items():
        hand, ours, theirs = (statistics.median(samples[k]) for k in ("hand-written", "ember", "Lightning"))
        print(
            f"| {precision} | {hand:.1f} | {ours:.1f} | "
            f"{ours / hand:.3f}x | {theirs:.1f} | {theirs / hand:.3f}x |"
        )
    if args.out:
        with open(args.out, "w") as f:
            json.dump(
                {"device": name, "torch": torch.__version__, "args": vars(args), "samples_us": results},
                f,
                indent=1,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
