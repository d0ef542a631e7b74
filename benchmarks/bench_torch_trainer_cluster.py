"""Benchmark 8b: TorchTrainer across a 2-node Ray cluster, start to first step: ember.train vs Ray Train.

The same training function as benchmark 8 (bench_torch_trainer.py: the classic Net on Fashion-MNIST through
`prepare_data_loader`/`prepare_model`, 20 steps, 1 thread per worker), now with its two workers on two nodes
of one running Ray cluster: node A and node B on 127.0.0.1 (``ray.cluster_utils.Cluster``, loopback only,
checked), 2 CPUs each, started once and not timed, as a user's cluster is already up when they submit.
Each run is a fresh driver process, ``python bench_torch_trainer_cluster.py --child TOOL ADDRESS OUT``, that
connects with ``ray.init(address=...)`` and fits a TorchTrainer with
``ScalingConfig(num_workers=2, resources_per_worker={"CPU": 1}, placement_strategy="STRICT_SPREAD")``
(one worker per node). The figure is seconds from spawning that driver to the return of rank 0's first
optimizer step: interpreter, imports, connecting, placing the workers (ember: 2 Ray actors; Ray Train:
its controller and 2 worker actors), process group, model wrapping, first batch. Each run also checks that
its two workers ran on two different nodes. Goal (issue 16): ember at most 0.5x Ray Train's.

Cases alternate ember, Ray Train, after a warm-up of each (warm disk cache, worker processes the cluster
already started for earlier runs are reused by both tools alike).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

import harness  # noqa: F401  (Ray's environment before Ray is imported: loopback cluster, no reporting)
from bench_torch_trainer import run_child
from harness import Bench, alternate, main, new_bench, version

STEPS = 20
NODE_CPUS = 2
HERE = Path(__file__).resolve().parent
TOOLS = {"ember.train TorchTrainer, 2 nodes": "ember", "Ray Train TorchTrainer, 2 nodes": "Ray Train"}


def run(quick: bool) -> Bench:
    rounds, warmup, limit = (1, 0, 240) if quick else (5, 1, 300)
    from workloads import fashion_arrays

    fashion_arrays()  # decode the data into the cache once, outside any timing
    bench = new_bench(
        "torch_trainer_cluster",
        "TorchTrainer, 2 workers on a 2-node loopback Ray cluster: "
        f"driver spawn to rank 0's first step ({STEPS} steps)",
        "s",
    )
    # The cluster's worker processes import the training function's module by name.
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))
    cluster = start_cluster()
    try:
        runners = {}
        for name, tool in TOOLS.items():
            bench.case(name, version("ember" if tool == "ember" else "ray", tool))
            runners[name] = lambda tool=tool: run_driver(tool, cluster.address, limit)
        bench.compare(*TOOLS)
        alternate(bench, runners, rounds=rounds, warmup=warmup, timeout=limit + 30)
    finally:
        cluster.shutdown()  # stops the processes it started, by their PIDs
    return bench


def start_cluster():
    """Node A (head) and node B on 127.0.0.1, ``NODE_CPUS`` each; this process is not a driver of it."""
    from ray.cluster_utils import Cluster

    node = {
        "node_ip_address": "127.0.0.1",
        "num_cpus": NODE_CPUS,
        "object_store_memory": 256 * 1024 * 1024,
        "include_dashboard": False,
    }
    cluster = Cluster(initialize_head=True, head_node_args=node)
    try:
        cluster.add_node(**node)
        cluster.wait_for_nodes()
    except BaseException:
        cluster.shutdown()
        raise
    return cluster


def run_driver(tool: str, address: str, limit: float) -> float:
    spawned, result = run_child(__file__, [tool, address], limit, tool)
    if len(set(result["nodes"])) != 2:
        raise AssertionError(f"{tool}: the 2 workers ran on {len(set(result['nodes']))} node(s), not 2")
    return result["first_step"] - spawned


# --- the driver process (and the training function its workers run) -------------------------------------


def train_func(config: dict) -> None:
    """Benchmark 8's loop, then rank 0 adds both workers' node ids to what it wrote."""
    import importlib

    import ray
    import torch.distributed as dist
    from bench_torch_trainer import train_func as timed_loop

    timed_loop(config)
    api = importlib.import_module(config["api"])
    nodes = [None] * api.get_context().get_world_size()
    dist.all_gather_object(nodes, ray.get_runtime_context().get_node_id())
    if api.get_context().get_world_rank() == 0:
        out = Path(config["out"])
        out.write_text(json.dumps({**json.loads(out.read_text()), "nodes": nodes}))


def child(tool: str, address: str, out: str) -> None:
    import ray

    ray.init(address=address, _node_ip_address="127.0.0.1", log_to_driver=False)
    addresses = {node["NodeManagerAddress"] for node in ray.nodes() if node["Alive"]}
    if addresses != {"127.0.0.1"}:
        raise RuntimeError(f"the benchmark cluster must be loopback-only, got {sorted(addresses)}")
    config = {"steps": STEPS, "out": out}
    with tempfile.TemporaryDirectory() as storage:
        if tool == "ember":
            from ember.train import RunConfig, ScalingConfig
            from ember.train.torch import TorchTrainer

            config["api"] = "ember.train"
        else:
            from ray.train import RunConfig, ScalingConfig
            from ray.train.torch import TorchTrainer

            config["api"] = "ray.train"
        scaling = ScalingConfig(
            num_workers=2, resources_per_worker={"CPU": 1}, placement_strategy="STRICT_SPREAD"
        )
        TorchTrainer(
            train_func,
            train_loop_config=config,
            scaling_config=scaling,
            run_config=RunConfig(storage_path=storage, name="first_step"),
        ).fit()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(*sys.argv[2:5])
    else:
        main(run)
