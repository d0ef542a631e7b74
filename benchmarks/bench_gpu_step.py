"""Benchmark 1g: training step time on a CUDA GPU: the classic Net, Fashion-MNIST, batch 64.

bench_train_step's workload on one GPU: batches come from a pinned-memory DataLoader and are copied to the
device by each loop (the hand-written one with ``.cuda(non_blocking=True)``). A small net on a fast GPU
leaves the Python around the step as the cost, so this is where a framework's overhead shows most. Needs
CUDA: run it on a GPU machine (``bash scripts/gpu_checks.sh``); it is not in run.py's registry, which runs
on this project's CPU machine.
"""

from __future__ import annotations

import torch
from bench_train_step import step_time_bench
from harness import Bench, main


def run(quick: bool) -> Bench:
    if not torch.cuda.is_available():
        raise SystemExit("bench_gpu_step needs a CUDA GPU")
    warm, steps, rounds = (10, 100, 2) if quick else (50, 600, 5)
    title = f"Training step on {torch.cuda.get_device_name()}: classic Net, batch 64"
    return step_time_bench("gpu_step", title, "cuda", warm, steps, rounds)


if __name__ == "__main__":
    main(run)
