"""Benchmark 8: TorchTrainer, start to first step: ember.train vs Ray Train, 2 workers on CPU.

The same training function in both (Ray Train's functional API, imports changed): the classic Net on
Fashion-MNIST, a DataLoader of batch 64 through `prepare_data_loader` (a DistributedSampler), the
model through `prepare_model` (DDP), SGD lr 0.01 momentum 0.5, 20 steps; 1 thread per worker
(OMP_NUM_THREADS=1). Each run is a fresh `python bench_torch_trainer.py --child TOOL`; the figure is
seconds from spawning that process to the return of rank 0's first optimizer step: interpreter,
imports, the trainer, starting the 2 workers (ember: 2 local processes that receive the function
pickled; Ray Train: starting a loopback-only Ray instance, its controller and 2 worker actors),
process group, model wrapping, first batch. The issue's goal: ember at most 0.5x Ray Train's.

Cases alternate ember, Ray Train, after an untimed import of everything (warm disk cache).
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

from harness import Bench, alternate, main, new_bench, version

STEPS = 20
TOOLS = {"ember.train TorchTrainer, 2 workers": "ember", "Ray Train TorchTrainer, 2 workers": "Ray Train"}


def run(quick: bool) -> Bench:
    rounds, warmup, limit = (1, 0, 150) if quick else (5, 1, 300)
    from workloads import fashion_arrays

    fashion_arrays()  # decode the data into the cache once, outside any timing
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import torch, ray.train.torch\ntry:\n import ember.train\nexcept ImportError: pass",
        ],
        capture_output=True,
    )
    bench = new_bench(
        "torch_trainer", f"TorchTrainer, 2 workers on CPU: spawn to rank 0's first step ({STEPS} steps)", "s"
    )
    runners: dict[str, Callable[[], float] | None] = {}
    for name, tool in TOOLS.items():
        bench.case(name, version("ember" if tool == "ember" else "ray", tool))
        runners[name] = lambda tool=tool: run_tool(tool, limit)
    bench.compare(*TOOLS)
    alternate(bench, runners, rounds=rounds, warmup=warmup, timeout=limit + 30)
    return bench


def run_tool(tool: str, limit: float) -> float:
    spawned, result = run_child(__file__, [tool], limit, tool)
    return result["first_step"] - spawned


def run_child(script: str, args: list[str], limit: float, what: str) -> tuple[float, dict]:
    """Spawn ``python script --child *args OUT`` in a fresh folder, with 1 thread and no inherited rank or
    cluster; return when it was spawned (time.time()) and the JSON it wrote to OUT."""
    here = str(Path(__file__).resolve().parent)
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "MASTER_ADDR": "127.0.0.1",
        "PYTHONPATH": os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")])),
    }
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_PORT", "RAY_ADDRESS"):
        env.pop(name, None)
    with tempfile.TemporaryDirectory(prefix="ember-bench-tt-") as folder:
        out = Path(folder) / "first_step.json"
        spawned = time.time()
        try:
            done = subprocess.run(
                [sys.executable, script, "--child", *args, str(out)],
                capture_output=True,
                text=True,
                timeout=limit,
                env=env,
                cwd=folder,
                start_new_session=True,
            )
        except subprocess.TimeoutExpired:
            raise TimeoutError(f"{what} ran past {limit:.0f} s") from None
        if done.returncode != 0 or not out.exists():
            tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
            raise RuntimeError(f"child exited {done.returncode}: {tail}")
        return spawned, json.loads(out.read_text())


# --- the child process (and the training function its workers run) -------------------------------------


def train_func(config: dict) -> None:
    """Ray Train's functional loop; `config["api"]` names the module that provides the train API."""
    import importlib

    import torch
    from torch.optim.optimizer import register_optimizer_step_post_hook
    from workloads import Clock, Net, fashion_tensors, hand_written_fit

    api = importlib.import_module(config["api"])
    api_torch = importlib.import_module(config["api"] + ".torch")
    first: list[float] = []
    register_optimizer_step_post_hook(lambda *_: first.append(time.time()) if not first else None)
    torch.manual_seed(0)
    loader = torch.utils.data.DataLoader(fashion_tensors(), batch_size=64, shuffle=True)
    loader = api_torch.prepare_data_loader(loader)
    hand_written_fit(api_torch.prepare_model(Net()), loader, config["steps"], Clock())
    if api.get_context().get_world_rank() == 0:
        Path(config["out"]).write_text(json.dumps({"first_step": first[0]}))


def child(tool: str, out: str) -> None:
    config = {"steps": STEPS, "out": out}
    with tempfile.TemporaryDirectory() as storage:
        if tool == "ember":
            from ember.train import RunConfig, ScalingConfig
            from ember.train.torch import TorchTrainer

            config["api"] = "ember.train"
        else:
            from ray.train import RunConfig, ScalingConfig
            from ray.train.torch import TorchTrainer
            from workloads import start_ray

            start_ray()
            config["api"] = "ray.train"
        TorchTrainer(
            train_func,
            train_loop_config=config,
            scaling_config=ScalingConfig(num_workers=2),
            run_config=RunConfig(storage_path=storage, name="first_step"),
        ).fit()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], sys.argv[3])
    else:
        main(run)
