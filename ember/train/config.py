"""The option objects of the functional API, spelled as in Ray Train."""

from __future__ import annotations

import dataclasses
from typing import Any

from ember.errors import ConfigError


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

    def __post_init__(self) -> None:
        if not isinstance(self.num_workers, int) or self.num_workers < 1:
            raise ConfigError(f"ScalingConfig(num_workers={self.num_workers!r}) must be a positive int")

    @property
    def worker_resources(self) -> dict[str, float]:
        """Ray resources of one worker: 1 CPU (and 1 GPU with use_gpu) unless given."""
        given = dict(self.resources_per_worker or {})
        given.setdefault("CPU", 1.0)
        if self.use_gpu:
            given.setdefault("GPU", 1.0)
        return given


@dataclasses.dataclass
class FailureConfig:
    """`max_failures`: restart all workers, resuming from the last reported checkpoint, up to this many times.

    Example:
        >>> FailureConfig(max_failures=1).max_failures
        1
    """

    max_failures: int = 0


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
    use_ray: bool | None = None
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)
