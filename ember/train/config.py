"""The option objects of the functional API, spelled as in Ray Train."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any, TypeVar

from ember.errors import ConfigError

_T = TypeVar("_T")


def _refusing(**ray_only: str) -> Callable[[type[_T]], type[_T]]:
    """Ray Train arguments of this class that ember does not implement: refused by name, with what to do
    instead (never accepted and ignored)."""

    def wrap(cls: type[_T]) -> type[_T]:
        init = cls.__init__

        @functools.wraps(init)
        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            for name in kwargs:
                if name in ray_only:
                    raise ConfigError(f"{cls.__name__}({name}=...) is a Ray Train option ember does not implement; "
                                      f"{ray_only[name]}")
            init(self, *args, **kwargs)

        cls.__init__ = __init__  # type: ignore[misc]
        return cls

    return wrap


@_refusing(trainer_resources="the driver needs no resources of its own in ember; leave it out",
           accelerator_type="use resources_per_worker={'GPU': 1, ...} with a custom Ray resource",
           use_tpu="ember trains on CPU or CUDA", topology="ember trains on CPU or CUDA",
           label_selector="use resources_per_worker with a custom Ray resource on the nodes you want")
@dataclasses.dataclass
class ScalingConfig:
    """How many workers, and what each one gets.

    Example:
        >>> ScalingConfig(num_workers=2).num_workers
        2
    """

    num_workers: int = 1
    use_gpu: bool = False
    resources_per_worker: dict[str, float] | None = None
    #: Ray placement group strategy of the workers' bundles: "PACK" (Ray's default), "SPREAD" (different
    #: nodes where possible), "STRICT_PACK", "STRICT_SPREAD". Local workers all run on this machine.
    placement_strategy: str = "PACK"

    def __post_init__(self) -> None:
        if not isinstance(self.num_workers, int) or self.num_workers < 1:
            raise ConfigError(f"ScalingConfig(num_workers={self.num_workers!r}) must be a positive int")
        if self.placement_strategy not in _PLACEMENT_STRATEGIES:
            raise ConfigError(f"ScalingConfig(placement_strategy={self.placement_strategy!r}): use one of "
                              f"{', '.join(_PLACEMENT_STRATEGIES)} (Ray's placement group strategies)")

    @property
    def worker_resources(self) -> dict[str, float]:
        """Ray resources of one worker: 1 CPU (and 1 GPU with use_gpu) unless given."""
        given = dict(self.resources_per_worker or {})
        given.setdefault("CPU", 1.0)
        if self.use_gpu:
            given.setdefault("GPU", 1.0)
        return given


_PLACEMENT_STRATEGIES = ("PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD")


@_refusing(checkpoint_frequency="deprecated in Ray 2.60 too: call ember.train.report(..., checkpoint=) when you "
                                "want a checkpoint", checkpoint_at_end="deprecated in Ray 2.60 too: report a checkpoint "
                                "at the end of train_loop_per_worker")
@dataclasses.dataclass
class CheckpointConfig:
    """Which reported checkpoints to keep (Ray Train's CheckpointConfig).

    All by default. With `num_to_keep=k`, after each report only the best k remain — the most recent k
    without `checkpoint_score_attribute`, else the k with the highest ("max") or lowest ("min") value of
    that metric — and, as in Ray, the latest checkpoint is never deleted, even when it is not among them
    (so a restarted run resumes from it). A checkpoint whose metrics lack the attribute scores lowest.

    Example:
        >>> CheckpointConfig(num_to_keep=2, checkpoint_score_attribute="accuracy").checkpoint_score_order
        'max'
    """

    num_to_keep: int | None = None
    checkpoint_score_attribute: str | None = None
    checkpoint_score_order: str = "max"

    def __post_init__(self) -> None:
        if self.num_to_keep is not None and (not isinstance(self.num_to_keep, int) or self.num_to_keep < 1):
            raise ConfigError(f"CheckpointConfig(num_to_keep={self.num_to_keep!r}) must be None (keep all) or an "
                              "int >= 1")
        if self.checkpoint_score_order not in ("max", "min"):
            raise ConfigError(f"CheckpointConfig(checkpoint_score_order={self.checkpoint_score_order!r}) must be "
                              "'max' or 'min'")


@_refusing(fail_fast="deprecated in Ray 2.60 too; use max_failures=0",
           controller_failure_limit="ember's driver is your process: restart it and use TorchTrainer.restore",
           max_preemption_failures="ember counts every failure in max_failures",
           relax_collectives_on_preemption="ember restarts all workers from the last checkpoint",
           preemption_grace_s="ember restarts all workers from the last checkpoint")
@dataclasses.dataclass
class FailureConfig:
    """`max_failures`: restart all workers, resuming from the last reported checkpoint, up to this many times.

    Example:
        >>> FailureConfig(max_failures=1).max_failures
        1
    """

    max_failures: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.max_failures, int) or self.max_failures < 0:
            raise ConfigError(f"FailureConfig(max_failures={self.max_failures!r}) must be an int >= 0 "
                              "(ember does not retry forever: Ray's -1 is refused)")


@_refusing(storage_filesystem="pass an s3:// or gs:// storage_path (credentials from the environment)",
           callbacks="Ray Train's UserCallback is not implemented; act on Result after fit()",
           worker_runtime_env="local workers inherit the driver's environment; on Ray use ray.init(runtime_env=...)",
           logging_config="workers' output goes to the driver's stdout/stderr",
           sync_config="deprecated in Ray 2.60 too", verbose="deprecated in Ray 2.60 too",
           stop="deprecated in Ray 2.60 too", progress_reporter="deprecated in Ray 2.60 too",
           log_to_file="deprecated in Ray 2.60 too")
@dataclasses.dataclass
class RunConfig:
    """Where results go: `storage_path/name` (default ~/ember_results/TorchTrainer_<time>).

    Set `use_ray=True` to run the workers on Ray even if `ray.init` was not called yet
    (`use_ray=False` keeps local processes even when Ray is initialized).

    Example:
        >>> RunConfig(name="exp", storage_path="/tmp/results").name
        'exp'
    """

    name: str | None = None
    storage_path: str | None = None
    failure_config: FailureConfig | None = None
    checkpoint_config: CheckpointConfig | None = None
    use_ray: bool | None = None
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)


_INIT_METHODS = ("env", "tcp")


@dataclasses.dataclass
class TorchConfig:
    """How the workers' process group is formed (Ray Train's `ray.train.torch.TorchConfig`).

    `backend`: the torch.distributed backend; None picks nccl with `ScalingConfig(use_gpu=True)`, else gloo
    (Ray's rule). `timeout_s`: the group's collective timeout (Ray's default 1800 s; without a TorchConfig
    ember's workers use 600 s). `init_method`: how the ranks find each other, "env" or "tcp"; both give the
    same group (ember binds the rendezvous to the master address either way).

    Example:
        >>> TorchConfig(timeout_s=60).backend_for(use_gpu=False)
        'gloo'
    """

    backend: str | None = None
    init_method: str = "env"
    timeout_s: int = 1800

    def __post_init__(self) -> None:
        if self.init_method not in _INIT_METHODS:
            raise ConfigError(f"TorchConfig(init_method={self.init_method!r}): use 'env' or 'tcp'")
        if not isinstance(self.timeout_s, (int, float)) or isinstance(self.timeout_s, bool) or self.timeout_s <= 0:
            raise ConfigError(f"TorchConfig(timeout_s={self.timeout_s!r}) must be a positive number of seconds")
        if self.backend is not None and self.backend not in ("gloo", "nccl", "mpi"):
            raise ConfigError(f"TorchConfig(backend={self.backend!r}): ember's workers form a torch.distributed "
                              "group with 'gloo', 'nccl' or 'mpi' (None picks nccl on GPUs, else gloo)")

    def backend_for(self, use_gpu: bool) -> str:
        """The backend the workers use: the one given, else nccl on GPUs and gloo on CPUs."""
        return self.backend or ("nccl" if use_gpu else "gloo")


@dataclasses.dataclass
class DataConfig:
    """Which of TorchTrainer's `datasets` are split across the workers (Ray Train's `ray.train.DataConfig`).

    `datasets_to_split="all"` (the default) gives every worker an equal, disjoint shard of each dataset
    (`streaming_split(num_workers, equal=True)`); with a list of names, only those are split and every
    worker reads each other dataset whole (a validation set every rank evaluates, say).
    `enable_shard_locality` is a Ray scheduling hint, accepted. `execution_options` (Ray Data options for
    the shards) is refused: set `ember.data.DataContext.get_current().execution_options` in the training
    function instead.

    Example:
        >>> DataConfig(datasets_to_split=["train"]).splits("valid")
        False
    """

    datasets_to_split: str | list[str] = "all"
    execution_options: Any = None
    enable_shard_locality: bool = True

    def __post_init__(self) -> None:
        split = self.datasets_to_split
        if not (split == "all" or (isinstance(split, list) and all(isinstance(name, str) for name in split))):
            raise ConfigError(f"DataConfig(datasets_to_split={split!r}) must be 'all' or a list of dataset names")
        if self.execution_options is not None:
            raise ConfigError("DataConfig(execution_options=...) is not implemented by ember; set "
                              "ember.data.DataContext.get_current().execution_options inside the training function")

    def splits(self, name: str) -> bool:
        """Is dataset `name` split across the workers (else each worker reads all of it)?"""
        return self.datasets_to_split == "all" or name in self.datasets_to_split

    def unsplit(self, names: list[str]) -> list[str]:
        """The names among `names` every worker reads whole."""
        return [name for name in names if not self.splits(name)]
