"""Ray Data's extra keyword arguments: which ember.data accepts and ignores, and which it refuses.

ember.data's methods take Ray Data's names so that Ray code runs unchanged. Ray's methods also take
arguments that only steer Ray's scheduler (CPUs per task, memory, runtime_env, ...): ember schedules
its own workers, so it accepts those and ignores them. Every other unknown argument is refused by
name: a typo (``batchsize=``) must not silently fall back to a default, and a Ray option that would
change the result (``stratify=``, ``filename_provider=``) must not be dropped.

The names are Ray Data 2.60's; ``tests/data/test_ray_args.py`` compares them with the installed Ray.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar, overload

from ember.errors import ConfigError, did_you_mean

F = TypeVar("F", bound=Callable[..., Any])

#: Arguments that only change how Ray schedules or sizes its tasks, never what comes out.
SCHEDULING_ONLY = frozenset(
    {
        "accelerator_type",
        "compute",
        "concurrency",
        "fallback_strategy",
        "label_selector",
        "max_calls",
        "memory",
        "num_cpus",
        "num_gpus",
        "override_num_blocks",
        "parallelism",
        "ray_remote_args",
        "ray_remote_args_fn",
        "resources",
        "runtime_env",
        "try_create_dir",
    }
)


#: What Ray passes on to ``ray.remote`` (``map_batches(fn, **ray_remote_args)``): placement and retries of
#: Ray's tasks and actors. ``max_task_retries`` is the one ember uses (a failed batch is retried).
RAY_REMOTE_OPTIONS = frozenset(
    {
        "_actor_generator_backpressure_num_objects",
        "_generator_backpressure_num_objects",
        "_labels",
        "_num_objects_per_yield",
        "allow_out_of_order_execution",
        "concurrency_groups",
        "enable_task_events",
        "enable_tensor_transport",
        "get_if_exists",
        "lifetime",
        "max_concurrency",
        "max_pending_calls",
        "max_restarts",
        "max_retries",
        "max_task_retries",
        "name",
        "namespace",
        "num_returns",
        "object_store_memory",
        "placement_group",
        "placement_group_bundle_index",
        "placement_group_capture_child_tasks",
        "retry_exceptions",
        "scheduling_strategy",
        "udf_modifying_row_count",  # a hint to Ray's planner
    }
)

#: Ray Data arguments that change what comes out and that ember.data refuses by name (in the methods where
#: Ray takes them): refusal() names them as Ray's. ``tests/data/test_ray_args.py`` checks both ways that
#: every name here is refused somewhere Ray accepts it, and that every Ray argument ember refuses is here.
UNSUPPORTED = frozenset(
    {
        "catalog",  # read_parquet / write_parquet: an Iceberg-style catalog Ray registers the table in
        "filerename",  # read_webdataset: Ray renames the files inside each tar
        "fileselect",  # read_webdataset: Ray keeps only the files it selects
        "tf_schema",  # read_tfrecords / write_tfrecords: a TensorFlow metadata schema
        "verbose_open",  # read_webdataset: Ray prints each tar it opens
    }
)


@overload
def ray_compatible(fn: F, *, also: frozenset[str] = ...) -> F: ...
@overload
def ray_compatible(fn: None = None, *, also: frozenset[str] = ...) -> Callable[[F], F]: ...
def ray_compatible(fn: F | None = None, *, also: frozenset[str] = frozenset()) -> Any:
    """Let ``fn`` (which ends in ``**kwargs``) take Ray's scheduling-only arguments (and ``also``), and
    refuse any other unknown one with a one-line error that names the closest real argument.

    Example:
        >>> @ray_compatible
        ... def take(n, **_):
        ...     return n
        >>> take(3, num_cpus=2)
        3
        >>> take(3, nn=2)
        Traceback (most recent call last):
        ...
        ember.errors.ConfigError: take() has no argument 'nn'; did you mean 'n'?
    """
    if fn is None:
        return functools.partial(ray_compatible, also=also)
    own = named_parameters(fn)

    @functools.wraps(fn)
    def checked(*args: Any, **kwargs: Any) -> Any:
        check_options(fn.__qualname__, kwargs, own, also)
        return fn(*args, **kwargs)

    return checked


def check_options(
    where: str, options: dict[str, Any], own: list[str], also: frozenset[str] = frozenset()
) -> None:
    """Refuse, by name, an option that is not one of ``own``, ``also`` or Ray's scheduling-only ones."""
    for name in options:
        if name not in own and name not in SCHEDULING_ONLY and name not in also:
            raise ConfigError(refusal(where, name, own))


def named_parameters(*functions: Callable, but: tuple[str, ...] = ()) -> list[str]:
    """The named parameters of ``functions`` (in order, once each), without ``but``, self, *args and
    **kwargs."""
    names: dict[str, None] = {}
    for fn in functions:
        for name, p in inspect.signature(fn).parameters.items():
            if name != "self" and name not in but and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
                names[name] = None
    return list(names)


#: PyTorch DataLoader arguments people pass to the batch iterators, and ember.data's way to get the same.
DATALOADER = {
    "shuffle": "local_shuffle_buffer_size=<rows> (with local_shuffle_seed=) to shuffle as batches stream, "
    "or ds.random_shuffle(seed=) for a full shuffle",
    "num_workers": "prefetch_batches=<n> to prepare batches ahead (the worker processes that run your "
    "functions are automatic: DataContext.get_current().num_workers sets how many)",
    "prefetch_factor": "prefetch_batches=<n>",
    "persistent_workers": "nothing: class UDFs keep their workers for the whole pass",
    "sampler": "a transform before iterating (filter, random_shuffle(seed=), streaming_split)",
    "batch_sampler": "map_batches before iterating",
}


def refusal(where: str, name: str, own: list[str]) -> str:
    if name in DATALOADER and where.endswith(("iter_batches", "iter_torch_batches", "to_torch")):
        return f"{where}() has no argument {name!r} (a DataLoader argument); use {DATALOADER[name]}"
    if name in UNSUPPORTED:
        return (
            f"{where}() does not support Ray Data's {name}= (it would change the result, so it is refused, "
            "not ignored)"
        )
    hint = did_you_mean(name, own, otherwise="")
    if hint:
        return f"{where}() has no argument {name!r}; {hint}"
    return (
        f"{where}() has no argument {name!r}: it is not one of ember.data's ({', '.join(own)}), and "
        "not one of Ray's scheduling options that ember ignores; ember.data does not support it"
    )
