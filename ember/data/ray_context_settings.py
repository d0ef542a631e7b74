"""Ray Data's ``DataContext`` settings that ember accepts without effect, and the one-line refusal of the
rest.

Ray's "Execution configurations" guide sets options on ``DataContext.get_current()``. Those that only
change what Ray displays or how its scheduler places work (progress bars, shuffle strategy, resource
reservation, ...) leave every result the same, so ember accepts them, keeps the value (reading it back
gives it, else Ray 2.60's default) and ignores it, as it does Ray's scheduling-only method arguments
(``ember.data.ray_args``). Any other name, a Ray setting that would change a result
(``target_max_block_size`` changes the blocks) or a typo, is refused in one line: before, it was
stored on the context and silently ignored.
"""

from __future__ import annotations

import enum
from typing import Any


class ShuffleStrategy(str, enum.Enum):
    """Ray's ``ray.data.context.ShuffleStrategy`` (importable from ``ember.data.context``): which shuffle Ray
    runs. Setting ``DataContext.shuffle_strategy`` changes nothing here: ember has one shuffle, with the
    same rows (docs/data.md "Ray's extra arguments").

    Example:
        >>> from ember.data.context import DataContext, ShuffleStrategy
        >>> ctx = DataContext()
        >>> ctx.shuffle_strategy = ShuffleStrategy.HASH_SHUFFLE
        >>> ctx.shuffle_strategy.value
        'hash_shuffle'
    """

    SORT_SHUFFLE_PULL_BASED = "sort_shuffle_pull_based"
    SORT_SHUFFLE_PUSH_BASED = "sort_shuffle_push_based"
    HASH_SHUFFLE = "hash_shuffle"
    SHUFFLE_V2 = "shuffle_v2"
    GPU_SHUFFLE = "gpu_shuffle"


#: Ray 2.60 settings without effect on results here, with Ray's defaults (None where Ray's default is one
#: of its own objects).
NO_EFFECT_DEFAULTS: dict[str, Any] = {
    # what Ray prints
    "enable_progress_bars": True,
    "enable_operator_progress_bars": True,
    "enable_progress_bar_name_truncation": True,
    "enable_rich_progress_bars": False,
    "use_ray_tqdm": True,
    "print_on_execution_start": True,
    "enable_auto_log_stats": False,
    "verbose_stats_logs": False,
    "log_internal_stack_trace": False,
    "warn_on_driver_memory_usage_bytes": 2 * 1024**3,
    "issue_detectors_config": None,
    "execution_no_progress_timeout_s": 1800,
    # what Ray measures
    "enable_get_object_locations_for_metrics": False,
    "enable_per_node_metrics": False,
    "enable_stats_summary_collection": False,
    "memory_usage_poll_interval_s": 1,
    "trace_allocations": False,
    "accurate_map_phase_timing": False,
    "per_stage_map_timing": False,
    # how Ray's scheduler and shuffles run (the rows are the same)
    "shuffle_strategy": ShuffleStrategy.SHUFFLE_V2,
    "use_push_based_shuffle": False,
    "pipeline_push_based_shuffle_reduce_tasks": True,
    "shuffle_compression": "zstd",
    "max_hash_shuffle_aggregators": None,
    "default_hash_shuffle_parallelism": 200,
    "scheduling_strategy": "SPREAD",
    "scheduling_strategy_large_args": "DEFAULT",
    "large_args_threshold": 50 * 1024**2,
    "actor_prefetcher_enabled": False,
    "op_resource_reservation_enabled": True,
    "op_resource_reservation_ratio": 0.5,
    "wait_for_min_actors_s": -1,
    "max_tasks_in_flight_per_actor": None,
    "use_polars": False,
    "use_polars_sort": False,
    "streaming_read_buffer_size": 32 * 1024**2,
    "override_object_store_memory_limit_fraction": None,
    "isolate_read_workers": False,
    "enable_dynamic_output_queue_size_backpressure": False,
}

#: What to use instead, for the Ray settings that would change a result.
_INSTEAD = {
    "target_max_block_size": "ember sizes blocks in rows: set DataContext.target_rows_per_block",
    "target_min_block_size": "ember sizes blocks in rows: set DataContext.target_rows_per_block",
    "read_op_min_num_blocks": "pass override_num_blocks= to the read",
    "min_parallelism": "pass override_num_blocks= to the read",
    "max_errored_blocks": "ember fails on the first failing block; filter bad rows in the UDF",
    "max_map_retries": "pass ray_remote_args={'max_task_retries': n} to map_batches",
    "retried_map_errors": "pass ray_remote_args={'max_task_retries': n} to map_batches",
    "enable_arrow_backed_pandas_conversion": "ember's pandas batches keep numpy dtypes (docs/data.md)",
}


def refusal(name: str) -> str:
    """The one line refusing ``DataContext.<name>``.

    Example:
        >>> from ember.data.ray_context_settings import refusal
        >>> print(refusal("target_max_block_size"))
        DataContext has no setting 'target_max_block_size'; ember sizes blocks in rows: set
        DataContext.target_rows_per_block
    """
    instead = _INSTEAD.get(name, "see ember.data.DataContext for the settings")
    return f"DataContext has no setting {name!r}; {instead}"
