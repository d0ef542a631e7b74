"""Benchmark 3: start-up. How long before anything happens?

Import: each tool is imported in a fresh process right after ``import torch``; the time above torch
is what the tool itself costs. First step: a fresh process trains the classic Net on Fashion-MNIST
(batch 64, the Trainer's default settings) and stamps the wall clock when the first optimizer step
returns; the time counted is from just before the process is spawned to that stamp: interpreter,
imports, data, Trainer and, for Ray Train, the cluster and its worker.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from harness import FULL_ONLY, Bench, alternate, main, new_bench, run_child, version

IMPORTS = {"ember": "ember", "Lightning": "lightning.pytorch", "Ray Data": "ray.data"}
IMPORT_CHILD = """
import json, time
start = time.perf_counter(); import torch; torch_done = time.perf_counter()
import {module}
if {module!r} == "ember": ember.Trainer  # an empty namespace package is not ember
print(json.dumps({{"torch": torch_done - start, "above": time.perf_counter() - torch_done}}))
"""
FIRST_STEP_TOOLS = {
    "hand-written loop": "torch",
    "ember": "ember",
    "Lightning": "Lightning",
    "Ray Train": "Ray Train",
}


def run(quick: bool) -> Bench:
    rounds, warmup, limit = (1, 0, 60) if quick else (7, 1, 180)
    from workloads import framework  # the parent may import torch: only children are timed

    built = framework("ember") is not None
    warm_disk_cache(quick)
    bench = new_bench("startup", "Start-up: import above torch; process start to first optimizer step", "s")

    def import_time(module: str) -> Callable[[], float]:
        return lambda: run_child(["-c", IMPORT_CHILD.format(module=module)], timeout=limit)["above"]

    def first_step(tool: str) -> Callable[[], float]:
        def spawn() -> float:
            with tempfile.TemporaryDirectory() as folder:
                stamp = Path(folder) / "stamp"
                spawned = time.time()
                run_child([__file__, "--child", tool, str(stamp)], timeout=limit)
                return float(stamp.read_text()) - spawned

        return spawn

    runners: dict[str, Callable[[], float] | None] = {}
    for name, module in IMPORTS.items():
        label = f"import {module}"
        bench.case(
            label,
            version({"Lightning": "lightning", "Ray Data": "ray"}.get(name, "ember"), name),
            unit="s above torch",
        )
        runners[label] = import_time(module) if built or name != "ember" else None
    for label, tool in FIRST_STEP_TOOLS.items():
        bench.case(
            f"first step: {label}",
            version({"Ray Train": "ray", "Lightning": "lightning"}.get(tool, tool.lower()), tool),
        )
        runners[f"first step: {label}"] = first_step(tool) if built or tool != "ember" else None
    bench.compare("import ember", "import lightning.pytorch", "import ray.data")
    bench.compare(
        "first step: ember", "first step: hand-written loop", "first step: Lightning", "first step: Ray Train"
    )
    if quick:  # ~30 s a run here: more than the quick mode's budget
        runners.pop("first step: Ray Train")
        bench.get("first step: Ray Train").status = FULL_ONLY
    alternate(bench, runners, rounds=rounds, warmup=warmup, timeout=limit + 30)
    return bench


def warm_disk_cache(quick: bool) -> None:
    """Import everything once, untimed, so no tool pays for the first read of its files."""
    modules = "torch, lightning.pytorch, ray.data, pyarrow" + ("" if quick else ", ray.train.torch")
    code = f"import {modules}\ntry:\n import ember\nexcept ImportError: pass"
    subprocess.run([sys.executable, "-c", code], capture_output=True)


# --- what runs in the child process -------------------------------------------------------------


def child(tool: str, stamp: str) -> None:
    """Train until the first optimizer step has returned, stamp the clock, then stop."""
    if tool == "Ray Train":
        return ray_train_child(stamp)
    import torch
    from workloads import Clock, Net, as_framework_module, fashion_tensors, framework, hand_written_fit

    stamp_first_step(stamp)
    loader = torch.utils.data.DataLoader(fashion_tensors(), batch_size=64, shuffle=True)
    if tool == "torch":
        return hand_written_fit(Net(), loader, 1, Clock())
    fw = framework(tool)
    with tempfile.TemporaryDirectory() as root:
        trainer = fw.Trainer(max_steps=1, accelerator="cpu", devices=1, default_root_dir=root)
        trainer.fit(as_framework_module(fw.Module, Net, Clock()), train_dataloaders=loader)


def stamp_first_step(path: str) -> None:
    """Write the wall-clock time when any optimizer's step first returns."""
    from torch.optim.optimizer import register_optimizer_step_post_hook

    def hook(optimizer: object, args: object, kwargs: object) -> None:
        if not os.path.exists(path):
            Path(path).write_text(repr(time.time()))

    register_optimizer_step_post_hook(hook)


def ray_train_loop(config: dict) -> None:
    import ray.train.torch
    import torch
    from workloads import Clock, Net, fashion_tensors, hand_written_fit

    stamp_first_step(config["stamp"])
    loader = torch.utils.data.DataLoader(fashion_tensors(), batch_size=64, shuffle=True)
    loader = ray.train.torch.prepare_data_loader(loader)
    hand_written_fit(ray.train.torch.prepare_model(Net()), loader, 1, Clock())


def ray_train_child(stamp: str) -> None:
    from ray.train import RunConfig, ScalingConfig
    from ray.train.torch import TorchTrainer
    from workloads import start_ray

    start_ray()
    with tempfile.TemporaryDirectory() as storage:
        TorchTrainer(
            ray_train_loop,
            train_loop_config={"stamp": stamp},
            scaling_config=ScalingConfig(num_workers=1, use_gpu=False, resources_per_worker={"CPU": 1}),
            run_config=RunConfig(storage_path=storage, name="startup"),
        ).fit()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], sys.argv[3])
        print(json.dumps({"ok": True}))
    else:
        main(run)
