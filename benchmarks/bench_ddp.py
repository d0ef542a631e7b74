"""Benchmark 7: data-parallel training with 2 processes on CPU (gloo): ember DDP, Lightning DDP,
Ray Train's TorchTrainer; and ember with 2 processes against 1.

Every case trains the classic Net on Fashion-MNIST, batch 64 per process (global 128 with 2
processes), shuffled, SGD lr 0.01 momentum 0.5, lean settings (no logger, progress bar,
checkpointing or summary), 1 thread per process (OMP_NUM_THREADS=1, so 2 processes use the 2
cores), rendezvous and gloo on 127.0.0.1. Each run is a fresh `python bench_ddp.py --child TOOL`:

- first step: seconds from spawning that process to the return of rank 0's first optimizer step:
  interpreter, imports, data, launching the workers, process group and model wrapping; for Ray
  Train also starting the (loopback-only) cluster and its 2 workers;
- steady state: ms of rank 0's wall clock per 1,000 training samples (all ranks together), from
  step W to the last step; for "ember, 1 process" the same with one process on batch 64. The ratio
  of ember 2 processes to ember 1 process is the scaling: 0.5 would be perfect on 2 cores.

One child run gives both numbers of its tool (the steady-state case reads what the first-step
case's run measured), so cases alternate tool by tool: ember, Lightning, Ray Train, ember 1 process.
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

from harness import FULL_ONLY, Bench, alternate, main, new_bench, version

PER_PROCESS_BATCH = 64
TOOLS = {  # case name -> (child tool, processes)
    "ember DDP, 2 processes": ("ember", 2),
    "Lightning DDP, 2 processes": ("Lightning", 2),
    "Ray Train, 2 workers": ("Ray Train", 2),
}


def run(quick: bool) -> Bench:
    steps, skip, rounds, warmup, limit = (40, 10, 1, 0, 120) if quick else (150, 20, 5, 1, 300)
    from workloads import fashion_arrays, framework

    fashion_arrays()  # decode the data into the cache once, outside any timing
    warm_disk_cache(quick)
    bench = new_bench(
        "ddp", f"DDP, 2 processes on CPU: first optimizer step, then steps {skip}..{steps}", "s"
    )
    built = framework("ember") is not None
    measured: dict[str, float] = {}  # steady-state value of each tool's latest run

    def first_step(name: str) -> Callable[[], float]:
        tool, processes = TOOLS[name]

        def spawn() -> float:
            result = run_tool(tool, processes, steps, skip, limit)
            measured[name] = result["ms_per_1k_samples"]
            return result["first_step_s"]

        return spawn

    def steady(name: str) -> Callable[[], float]:
        def read() -> float:
            if name not in measured:
                raise RuntimeError("its run did not finish (see the first-step case)")
            return measured.pop(name)

        return read

    def one_process() -> float:
        return run_tool("ember", 1, steps, skip, limit)["ms_per_1k_samples"]

    versions = {"ember": "ember", "Lightning": "lightning", "Ray Train": "ray"}
    runners: dict[str, Callable[[], float] | None] = {}
    for name, (tool, _) in TOOLS.items():
        bench.case(f"first step: {name}", version(versions[tool], tool))
        bench.case(f"steady: {name}", version(versions[tool], tool), unit="ms / 1k samples")
        usable = built or tool != "ember"
        runners[f"first step: {name}"] = first_step(name) if usable else None
        runners[f"steady: {name}"] = steady(name) if usable else None
    bench.case("steady: ember, 1 process", version("ember"), unit="ms / 1k samples")
    runners["steady: ember, 1 process"] = one_process if built else None
    bench.compare(
        "first step: ember DDP, 2 processes",
        "first step: Lightning DDP, 2 processes",
        "first step: Ray Train, 2 workers",
    )
    bench.compare(
        "steady: ember DDP, 2 processes",
        "steady: Lightning DDP, 2 processes",
        "steady: Ray Train, 2 workers",
        "steady: ember, 1 process",
    )
    if quick:  # Ray Train's run takes ~30 s here: more than the quick mode's budget
        for label in ("first step: Ray Train, 2 workers", "steady: Ray Train, 2 workers"):
            runners.pop(label)
            bench.get(label).status = FULL_ONLY
    alternate(bench, runners, rounds=rounds, warmup=warmup, timeout=limit + 30)
    return bench


def run_tool(tool: str, processes: int, steps: int, skip: int, limit: float) -> dict:
    """Spawn one child run; return rank 0's figures (it writes them to a file: under ember's launcher
    the spawned process only supervises, rank 0 is another process)."""
    here = str(Path(__file__).resolve().parent)
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "MASTER_ADDR": "127.0.0.1",
        "PYTHONPATH": os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")])),
    }
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_PORT", "RAY_ADDRESS"):
        env.pop(name, None)
    with tempfile.TemporaryDirectory(prefix="ember-bench-ddp-") as folder:
        out = Path(folder) / "result.json"
        command = [sys.executable, __file__, "--child", tool, str(processes), str(steps), str(out)]
        spawned = time.time()
        try:
            done = subprocess.run(
                command,
                capture_output=True,
                text=True,
                timeout=limit,
                env=env,
                cwd=folder,
                start_new_session=True,
            )
        except subprocess.TimeoutExpired:
            raise TimeoutError(f"{tool} ran past {limit:.0f} s") from None
        if done.returncode != 0 or not out.exists():
            tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
            raise RuntimeError(f"child exited {done.returncode}: {tail}")
        result = json.loads(out.read_text())
    ticks = result["ticks"][skip:]
    seconds_per_step = (ticks[-1] - ticks[0]) / (len(ticks) - 1)
    return {
        "first_step_s": result["first_step"] - spawned,
        "ms_per_1k_samples": 1e6 * seconds_per_step / (PER_PROCESS_BATCH * processes),
    }


def warm_disk_cache(quick: bool) -> None:
    """Import everything once, untimed, so no tool pays for the first read of its files."""
    modules = "torch, lightning.pytorch" + ("" if quick else ", ray.train.torch")  # quick: no Ray Train
    code = f"import {modules}\ntry:\n import ember\nexcept ImportError: pass"
    subprocess.run([sys.executable, "-c", code], capture_output=True)


# --- what runs in the child process (and, re-run by the launchers, in its workers) ------------------


def child(tool: str, processes: int, steps: int, out: str) -> None:
    if tool == "Ray Train":
        return ray_child(steps, out)
    import torch
    from workloads import Clock, Net, as_framework_module, fashion_tensors, framework

    stamp_first_step()
    fw = framework(tool)
    clock = Clock()
    loader = torch.utils.data.DataLoader(fashion_tensors(), batch_size=PER_PROCESS_BATCH, shuffle=True)
    fw.seed_everything(0)
    with tempfile.TemporaryDirectory() as root:
        trainer = fw.Trainer(
            max_steps=steps, accelerator="cpu", devices=processes,
            strategy="ddp" if processes > 1 else "auto", default_root_dir=root, logger=False,
            enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
        )  # fmt: skip
        trainer.fit(as_framework_module(fw.Module, Net, clock, log=False), train_dataloaders=loader)
        if trainer.global_rank == 0:
            write_result(out, clock.ticks)


_FIRST_STEP: list[float] = []


def stamp_first_step() -> None:
    """Remember the wall-clock time when this process's first optimizer step returns."""
    from torch.optim.optimizer import register_optimizer_step_post_hook

    def hook(optimizer: object, args: object, kwargs: object) -> None:
        if not _FIRST_STEP:
            _FIRST_STEP.append(time.time())

    register_optimizer_step_post_hook(hook)


def write_result(out: str, ticks: list[float]) -> None:
    Path(out).write_text(json.dumps({"first_step": _FIRST_STEP[0], "ticks": ticks}))


def ray_train_loop(config: dict) -> None:
    import ray.train
    import ray.train.torch
    import torch
    from workloads import Clock, Net, fashion_tensors, hand_written_fit

    stamp_first_step()
    clock = Clock()
    torch.manual_seed(0)
    loader = torch.utils.data.DataLoader(fashion_tensors(), batch_size=PER_PROCESS_BATCH, shuffle=True)
    loader = ray.train.torch.prepare_data_loader(loader)
    hand_written_fit(ray.train.torch.prepare_model(Net()), loader, config["steps"], clock)
    if ray.train.get_context().get_world_rank() == 0:
        write_result(config["out"], clock.ticks)


def ray_child(steps: int, out: str) -> None:
    from ray.train import RunConfig, ScalingConfig
    from ray.train.torch import TorchTrainer
    from workloads import start_ray

    start_ray()
    with tempfile.TemporaryDirectory() as storage:
        TorchTrainer(
            ray_train_loop,
            train_loop_config={"steps": steps, "out": out},
            scaling_config=ScalingConfig(num_workers=2, use_gpu=False, resources_per_worker={"CPU": 1}),
            run_config=RunConfig(storage_path=storage, name="ddp"),
        ).fit()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5])
    else:
        main(run)
