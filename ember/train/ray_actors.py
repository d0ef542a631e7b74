"""TorchTrainer on a Ray cluster: one actor per worker, the same loop runner as local processes.

Ray is optional and imported here only. ember Datasets are converted to `ray.data` (materialized
through Arrow on the driver) and `ray.data` Datasets are split with `streaming_split(n, equal=True)`,
so each actor iterates a `ray.data.DataIterator` with the same number of rows.
The run folder (checkpoints, result.json) must be on storage every node can reach; on one machine
that is any local folder.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ember.errors import ConfigError, WorkerError
from ember.train.result import Result

_PLACEMENT_TIMEOUT_S = 120.0  # Ray would wait forever for resources the cluster lacks


class _TrainWorker:
    """One Ray actor = one rank."""

    def address(self) -> tuple[str, int]:
        import ray

        from ember.runtime.launch import free_port

        return ray.util.get_node_ip_address(), free_port()

    def run(
        self,
        env: dict[str, str],
        train_loop: Any,
        config: Any,
        shards: dict[str, Any],
        run_dir: str,
        use_gpu: bool,
        resume: Any,
        torch_config: Any,
    ) -> Any:
        from ember.runner import install_from_environment
        from ember.train.worker import run_train_loop

        os.environ.update(env)
        # under `python -m ember script.py`, the loop's own imports map as the driver's
        install_from_environment()
        return run_train_loop(train_loop, config, shards, Path(run_dir), use_gpu, resume, torch_config)


def fit_on_ray(trainer: Any, run_dir: Path) -> Result:
    """Start the actors, run the loop on all of them, restart up to max_failures times."""
    from ember.deadlines import connect_ray

    ray = connect_ray(what="TorchTrainer on Ray")  # the cluster Ray's rule picks, as ember.data joins it
    n = trainer.scaling.num_workers
    for attempt in range(trainer.failure.max_failures + 1):
        error = _attempt(ray, trainer, run_dir, n, attempt)
        if isinstance(error, _Finished):
            result = Result.from_path(run_dir)
            result.return_value = error.returned
            return result
        if attempt == trainer.failure.max_failures:
            raise error
        print(
            f"ember: {error.args[0].splitlines()[0]}; restarting {n} Ray workers from the last checkpoint",
            flush=True,
        )
    raise AssertionError("unreachable")


class _Finished:
    """An attempt in which every rank finished: rank zero's return value."""

    def __init__(self, returned: Any) -> None:
        self.returned = returned


def _attempt(ray: Any, trainer: Any, run_dir: Path, n: int, attempt: int) -> WorkerError | _Finished:
    from ray.util.placement_group import placement_group, remove_placement_group
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    shards = _shards(
        ray, trainer.datasets, n, trainer.dataset_config
    )  # first: converting needs Ray tasks, which the group's CPUs would starve
    resources = dict(trainer.scaling.worker_resources)
    # One bundle per worker, placed as ScalingConfig(placement_strategy) says (Ray Train's way: "SPREAD"
    # puts the workers on different nodes where it can, "PACK" on as few as it can).
    group = placement_group([resources] * n, strategy=trainer.scaling.placement_strategy)
    try:
        ray.get(group.ready(), timeout=_PLACEMENT_TIMEOUT_S)
    except ray.exceptions.GetTimeoutError:
        remove_placement_group(group)
        raise ConfigError(
            f"Ray could not place {n} workers of {resources} ({trainer.scaling.placement_strategy}) "
            f"in {_PLACEMENT_TIMEOUT_S:.0f} s; the cluster has {ray.available_resources()} free: lower "
            "num_workers or resources_per_worker"
        ) from None
    cpus, gpus = resources.pop("CPU", 0.0), resources.pop("GPU", 0.0)  # as the bundle: no CPU unless asked
    actor_class = ray.remote(num_cpus=cpus, num_gpus=gpus, resources=resources or None)(_TrainWorker)
    actors = [
        actor_class.options(
            scheduling_strategy=PlacementGroupSchedulingStrategy(group, bundle_index)
        ).remote()
        for bundle_index in range(n)
    ]
    try:
        addresses = ray.get([a.address.remote() for a in actors])
        master_addr, master_port = addresses[0]
        refs = []
        for rank, actor in enumerate(actors):
            node = addresses[rank][0]
            same_node = [r for r, (ip, _) in enumerate(addresses) if ip == node]
            env = {
                "RANK": str(rank),
                "WORLD_SIZE": str(n),
                "LOCAL_RANK": str(same_node.index(rank)),
                "LOCAL_WORLD_SIZE": str(len(same_node)),
                "MASTER_ADDR": master_addr,
                "MASTER_PORT": str(master_port),
                "EMBER_RESTART_COUNT": str(attempt),
            }
            if os.environ.get("EMBER_RUNNER") == "1":  # the zero-change runner's mapping reaches the actors
                env["EMBER_RUNNER"] = "1"
            if master_addr == "127.0.0.1":
                env["GLOO_SOCKET_IFNAME"] = os.environ.get("GLOO_SOCKET_IFNAME", "lo")
            refs.append(
                actor.run.remote(
                    env,
                    trainer.train_loop,
                    trainer.config,
                    {name: parts[rank] for name, parts in shards.items()},
                    str(run_dir),
                    trainer.scaling.use_gpu,
                    trainer.resume_from_checkpoint,
                    trainer.torch_config,
                )
            )
        error = _wait(ray, refs)
        return error if error is not None else _Finished(ray.get(refs[0]))  # rank zero's return value
    finally:
        for actor in actors:
            ray.kill(actor)
        remove_placement_group(group)


def _wait(ray: Any, refs: list[Any]) -> WorkerError | None:
    """Wait for all ranks; on the first failure, name its rank (the actors are killed by the caller)."""
    pending = list(refs)
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        try:
            ray.get(done[0])
        except Exception as exc:  # RayTaskError (the loop raised) or RayActorError (the actor died)
            from ember.deadlines import ember_refusal

            rank, refusal = refs.index(done[0]), ember_refusal(exc)
            if (
                refusal is not None
            ):  # ember's one line, as local workers report it, not Ray's remote traceback
                kind = f"{type(refusal).__module__}.{type(refusal).__qualname__}"
                return WorkerError(
                    f"rank {rank} raised {kind}: {refusal}; ember stopped the other {len(refs) - 1} workers"
                )
            return WorkerError(
                f"rank {rank} failed on Ray: {type(exc).__name__}; ember stopped the other "
                f"{len(refs) - 1} workers\n--- rank {rank} ---\n{exc}"
            )
    return None


def _shards(ray: Any, datasets: dict[str, Any], n: int, data_config: Any) -> dict[str, list[Any]]:
    """Per-rank iterators of each dataset: equal row counts, or the whole dataset for every rank where
    `DataConfig(datasets_to_split=...)` leaves it out (as Ray Train's DataConfig)."""
    out = {}
    for name, data in datasets.items():
        if not type(data).__module__.startswith("ray."):
            data = ray.data.from_arrow(data.to_arrow())  # an ember Dataset: hand Ray its rows
        out[name] = (
            data.streaming_split(n, equal=True)
            if data_config.splits(name)
            else [data.iterator() for _ in range(n)]
        )
    return out
