"""Suite-wide: which tests must run on the same pytest-xdist worker (scripts/test.sh runs the suite with
``-n <workers> --dist loadgroup``; see docs/testing.md).

Each xdist worker is its own pytest process with its own module- and session-scoped fixtures. A fixture
that takes seconds to build (a trained model, a DDP run, a server) would be built once per worker that runs
one of its tests; and the in-process Ray of tests/data/conftest.py and tests/_ray_cluster.py is shared by
the modules that use it one after the other, which only holds while they run in one process, in order.
So every test gets an ``xdist_group`` here:

- ``ray-0`` ... ``ray-<workers-1>``: the tests that use an in-process Ray (``local_ray``, ``two_node_ray``
  and the fixtures built on them), split by module into one share per worker, balanced by the CPU seconds
  measured per module (``RAY_MODULE_SECONDS``). Each worker runs its share in collection order, as a plain
  ``pytest`` run would, so its Ray starts once; a module stays whole and the 2-node cluster's modules stay
  together. (Before, one worker ran every Ray test while the others finished early and idled: 3 workers
  were no faster than one process.)
- tests that share an expensive module-, class- or session-scoped fixture go to one group per set of tests
  linked by such fixtures (a fixture is built once);
- every other test is its own unit of work, balanced over the workers.

Without xdist (``-n 0`` or no ``-n``) the marks change nothing.

And the fast subset for the edit-test loop, ``pytest -n 2 -m "not slow"`` (docs/testing.md): besides the
tests marked ``@pytest.mark.slow`` where they are written, the tests below are marked ``slow`` here: those
of the in-process Ray (its start alone takes 10-15 s; they are also marked ``ray``), those of
``SLOW_FOLDERS`` (each test starts processes), and those of ``MEASURED_SLOW`` (each measured at 1.5 CPU-s
or more with tests/_cost_plugin.py, most of them starting processes or training for several epochs). CI
runs them all.
"""

from __future__ import annotations

import os
import sys

import pytest

# pytest's importlib mode (pyproject.toml) names a test module by its path below tests/ (tests/data/x.py is
# `data.x`), without putting tests/ on the import path. A process that unpickles a test's function by
# reference (ember.data's fresh pool workers where Ray runs, Ray's own workers) imports it under that name,
# so tests/ goes on the path (last: it shadows nothing installed).
if os.path.dirname(os.path.abspath(__file__)) not in sys.path:
    sys.path.append(os.path.dirname(os.path.abspath(__file__)))

# Every Ray the tests start (in this process, in a test's script, on the 2-node cluster) keeps up to 6 idle
# worker processes instead of Ray's default of one per CPU (2 here): Ray Data's shuffles, sorts and actor
# pools start extra workers, and above the default limit Ray killed them after 1 s idle, so the next
# operator started fresh Python processes again (~2 CPU-s each). Measured on tests/data/test_ray_backend.py:
# 185 s -> 47 s. Ray reads its settings from RAY_<name> variables when a node starts; results do not change.
os.environ.setdefault("RAY_num_workers_soft_limit", "6")
# Every Ray the tests start stays on 127.0.0.1. Ray reads this when it is first imported, and a test module
# collected before tests/data (or a plugin) may import it first: so here, before any test module. Without
# it, ray.init(_node_ip_address="127.0.0.1") still advertised the machine's address and listened on all
# interfaces (checked with `ss -ltnp`).
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"


def _share_the_cores_between_workers() -> None:
    """Under N xdist workers, each worker's torch uses cores // N intra-op threads, as ember.data's pools
    share the machine: N workers x all cores would oversubscribe it, and waiting OpenMP threads spin,
    burning CPU the other worker needs. Results are compared within one process, so they do not change."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0"))
    if workers > 1:
        import torch

        torch.set_num_threads(max(1, (os.cpu_count() or 1) // workers))


_share_the_cores_between_workers()

#: What `seed_everything` (ember's and Lightning's) leaves in os.environ for the processes it starts.
SEED_VARIABLES = ("EMBER_GLOBAL_SEED", "PL_GLOBAL_SEED", "EMBER_SEED_WORKERS", "PL_SEED_WORKERS")


@pytest.fixture(autouse=True)
def _no_seed_left_for_later_tests():
    """Each test starts and ends with the seed variables it found. A test that calls `seed_everything` in
    this process leaves EMBER_GLOBAL_SEED / PL_GLOBAL_SEED behind, and every process a later test starts
    inherits it: the parallel strategies reseed from it when they join the process group (as Lightning's
    do), so a later DDP or model-parallel run, or a runner program compared with Ray's, drew different
    random numbers depending on which tests this pytest process (an xdist worker) had run before."""
    before = {name: os.environ.get(name) for name in SEED_VARIABLES}
    yield
    for name, value in before.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


# The in-process Ray fixtures (and the module fixtures that start a Ray of their own in this process).
RAY_FIXTURES = frozenset({"local_ray", "two_node_ray", "loopback_ray", "ray_with_s3"})

# Wider-scoped fixtures that cost next to nothing to build again on another worker (a few small files, an
# environment variable): sharing them is not worth tying their tests to one worker.
CHEAP_SHARED_FIXTURES = frozenset(
    {
        "data_root",
        "simple_images",
        "batoidea",
        "breast_cancer_csv",
        "simple_txt",
        "dataset_cache",
        "fashion_root",
        "fashion_test",
    }
)


# Every test of these folders starts processes (2 ranks, a launcher): seconds each.
SLOW_FOLDERS = ("tests/distributed/",)

# Tests measured at about 3 s or more on the 2-core machine (docs/testing.md: alone, or 10 s and more among
# 3 workers on the loaded machine), not marked where written. A name stands for all its parametrizations.
MEASURED_SLOW = frozenset(
    {
        "tests/callbacks/test_device_stats_monitor.py::test_same_statistics_at_the_same_batches_as_lightning",
        "tests/callbacks/test_early_stopping.py::test_check_finite_stops_on_nan_as_lightning",
        "tests/callbacks/test_early_stopping.py::test_current_epoch_after_an_early_stop_as_lightning",
        "tests/callbacks/test_early_stopping.py::test_resumed_early_stopping_continues_its_count",
        "tests/callbacks/test_early_stopping.py::test_same_stop_as_lightning",
        "tests/callbacks/test_early_stopping.py::test_state_crosses_over_from_a_lightning_run",
        "tests/callbacks/test_early_stopping.py::test_validation_every_second_epoch_checks_after_validation",
        "tests/callbacks/test_early_stopping.py::test_verbose_reports_the_same_lines_as_lightning",
        "tests/callbacks/test_finders.py::test_learning_rate_finder_from_callbacks_sets_the_suggestion",
        "tests/callbacks/test_finetuning.py::test_a_custom_base_finetuning_subclass_runs_its_two_methods",
        "tests/callbacks/test_finetuning.py::test_backbone_trains_from_the_unfreeze_epoch_at_lightnings_lr_schedule",
        "tests/callbacks/test_finetuning.py::test_resume_after_the_unfreeze_rebuilds_the_param_groups_and_is_exact",
        "tests/callbacks/test_finetuning.py::test_should_align_caps_the_backbone_lr_at_the_models",
        "tests/callbacks/test_gradient_accumulation_scheduler.py::test_same_steps_per_epoch_and_weights_as_lightning",
        "tests/callbacks/test_lr_monitor_lightning.py::test_epoch_interval_logs_under_the_scheduler_name",
        "tests/callbacks/test_lr_monitor_lightning.py::test_same_names_and_values_as_lightning",
        "tests/callbacks/test_model_checkpoint_lightning.py::test_epoch_saves_follow_lightnings_validation_schedule",
        "tests/callbacks/test_model_checkpoint_lightning.py::test_the_same_fit_writes_the_same_files_and_keeps_the_same_scores",
        "tests/callbacks/test_model_checkpoint_lightning.py::test_to_yaml_writes_what_lightning_writes",
        "tests/callbacks/test_model_pruning.py::test_same_final_weights_as_lightning",
        "tests/callbacks/test_rich_progress_bar.py::test_refused_in_one_line_without_rich",
        "tests/callbacks/test_spike_detection.py::test_atol_and_no_spike_when_thresholds_are_not_reached",
        "tests/callbacks/test_stochastic_weight_avg.py::test_resumed_swa_ends_with_the_straight_run_weights",
        "tests/callbacks/test_stochastic_weight_avg.py::test_same_weights_and_batch_norm_statistics_as_lightning",
        "tests/callbacks/test_throughput_monitor.py::test_same_names_and_totals_as_lightning",
        "tests/callbacks/test_weight_averaging.py::test_checkpoint_holds_the_average_and_resume_is_bitwise",
        "tests/callbacks/test_weight_averaging.py::test_layers_built_in_configure_model_are_averaged_as_in_lightning",
        "tests/callbacks/test_weight_averaging.py::test_same_weights_and_validation_metrics_as_lightning",
        "tests/cli/test_class_paths_from_files.py::test_a_checkpoints_class_path_is_not_imported",
        "tests/cli/test_class_paths_from_files.py::test_lightnings_instantiator_recorded_in_the_checkpoint_is_ignored",
        "tests/cli/test_class_paths_from_files.py::test_nothing_nested_in_the_hyperparameters_is_imported",
        "tests/cli/test_class_paths_from_files.py::test_the_class_the_user_names_on_the_command_line_loads",
        "tests/cli/test_class_paths_from_files.py::test_trust_is_an_explicit_opt_in",
        "tests/compat/test_module_paths.py::test_every_path_of_the_table_imports_under_embers_name",
        "tests/compat/test_runner.py::test_the_runner_runs_a_module_with_dash_m",
        "tests/compat/test_runner.py::test_the_runner_serves_lightning_and_ray_names_from_ember",
        "tests/compat/test_runner.py::test_without_the_runner_nothing_changes",
        "tests/data/test_execution.py::test_iterating_a_dataset_larger_than_the_memory_bound",
        "tests/data/test_seedless_shuffle.py::test_mid_epoch_resume_after_a_seedless_shuffle_continues_bitwise",
        "tests/data/test_trainer_resume.py::test_sigkilled_training_resumes_exactly",
        "tests/datasets/test_datasets_mnist.py::test_every_split_finds_the_installed_copy_with_or_without_download",
        "tests/datasets/test_datasets_mnist.py::test_import_is_light",
        "tests/fs/test_confinement_properties.py::test_a_url_looking_string_is_a_url_a_one_line_refusal_or_a_plain_local_name",
        "tests/fs/test_s3_data.py::test_bad_credentials_are_one_line",
        "tests/fs/test_s3_trainer.py::test_checkpoint_folder_in_a_missing_bucket_fails_before_training",
        "tests/inference/test_pool.py::test_workers_with_several_threads_after_the_parent_ran_torch_do_not_hang",
        "tests/inference/test_predict_output_errors.py::test_a_file_size_limit_is_one_line_naming_the_output_folder",
        "tests/inference/test_predict_output_errors.py::test_a_full_disk_is_one_line",
        "tests/inference/test_predict_output_errors.py::test_a_read_only_output_folder_is_one_line",
        "tests/loggers/test_import_and_refusals.py::test_importing_ember_and_its_loggers_and_data_loads_no_integration",
        "tests/loggers/test_mlflow.py::test_log_model_other_values_are_refused",
        "tests/loggers/test_mlflow_deadlines.py::test_the_default_store_works_with_this_mlflow_and_stays_in_save_dir",
        "tests/loggers/test_wandb.py::test_an_offline_run_records_what_lightnings_records",
        "tests/test_choke_points_imports.py::test_dynamic_imports_go_through_ember_class_path",
        "tests/test_cli_lightning.py::test_lightning_classes_and_active_lightning_only_options_are_refused_by_name",
        "tests/test_cli_parsing.py::test_import_ember_does_not_import_the_command_line_library",
        "tests/test_code_style.py::test_mypy_passes_over_the_whole_package",
        "tests/test_package.py::test_every_package_of_ember_is_an_attribute_after_a_bare_import",
        "tests/test_trainer_structure.py::test_nothing_outside_module_py_writes_a_modules_private_attributes",
        "tests/trainer/test_cli.py::test_binary_unreadable_or_folder_configs_are_one_line",
        "tests/trainer/test_cli.py::test_fit_prints_test_accuracy_and_resume_continues",
        "tests/trainer/test_features.py::test_bf16_mixed_autocasts_and_learns",
        "tests/trainer/test_features.py::test_compile_opt_in_trains",
        "tests/trainer/test_features.py::test_datamodule_prepare_data_once_and_setup_per_stage",
        "tests/trainer/test_features.py::test_early_stopping_stops_when_the_metric_stalls",
        "tests/trainer/test_features.py::test_gradient_accumulation_equals_the_large_batch",
        "tests/trainer/test_features.py::test_limits_and_validation_schedule",
        "tests/trainer/test_features.py::test_manual_optimization_gan_on_real_digits",
        "tests/trainer/test_features.py::test_max_steps_max_time_and_min_epochs",
        "tests/trainer/test_features.py::test_predict_returns_outputs_in_order",
        "tests/trainer/test_features.py::test_step_and_epoch_logging_with_torchmetrics_and_learning_rates_in_csv",
        "tests/trainer/test_features.py::test_top_k_checkpoints_best_path_and_load_from_checkpoint",
        "tests/trainer/test_import.py::test_import_ember_loads_no_optional_or_heavy_package",
        "tests/trainer/test_lightning_defaults.py::test_rank_zero_info_and_warn_print_as_lightnings",
        "tests/trainer/test_lightning_port.py::test_lightning_module_runs_with_import_lines_changed",
        "tests/trainer/test_lightning_steps.py::test_schedulers_step_where_lightning_steps_them",
        "tests/trainer/test_parity.py::test_classic_net_on_fashion_mnist_matches_hand_written",
        "tests/trainer/test_parity.py::test_default_trainer_matches_hand_written_loop_bitwise",
        "tests/trainer/test_resume.py::test_crash_while_writing_a_checkpoint_leaves_the_previous_one_as_latest",
        "tests/trainer/test_resume.py::test_sigkill_mid_epoch_then_resume_is_bitwise_identical",
        "tests/trainer/test_resume.py::test_sigterm_saves_a_checkpoint_and_resume_is_exact",
        "tests/trainer/test_resume.py::test_truncated_last_checkpoint_is_refused_with_one_line_and_kept",
        "tests/trainer/test_resume.py::test_two_successive_kills_with_dataloader_workers",
        "tests/trainer/test_trainer_options.py::test_max_epochs_minus_one_trains_until_max_steps",
        "tests/trainer/test_trainer_options.py::test_min_steps_holds_early_stopping_back",
        "tests/trainer/test_trust_checkpoints.py::test_a_flipped_bit_in_a_weight_is_a_one_line_error_naming_the_file",
        "tests/trainer/test_trust_checkpoints.py::test_an_unreadable_checkpoint_says_permission_denied",
        "tests/trainer/test_trust_checkpoints.py::test_checkpoints_without_a_checksum_still_load",
        "tests/trainer/test_trust_checkpoints.py::test_last_resolves_within_this_runs_own_checkpoint_folder",
        "tests/trainer/test_trust_checkpoints.py::test_numpy_and_plain_containers_from_on_save_checkpoint_round_trip",
        "tests/trainer/test_trust_checkpoints.py::test_save_top_k_holds_across_resumes",
        "tests/trainer/test_trust_exact.py::test_resume_at_every_boundary_is_bitwise_identical",
        "tests/trainer/test_trust_inputs.py::test_log_dir_after_test_exists",
        "tests/trainer/test_trust_signals.py::test_a_second_ctrl_c_stops_at_once_without_a_checkpoint",
        "tests/trainer/test_trust_signals.py::test_ctrl_c_finishes_the_step_saves_once_and_resume_is_exact",
        "tests/tuner/test_batch_size.py::test_the_fine_tune_subclass_searches_at_its_milestones_and_the_epoch_trains_at_the_size_found",
        "tests/tuner/test_batch_size.py::test_the_size_found_is_lightnings",
        "tests/tuner/test_batch_size_rng.py::test_the_global_rng_after_scale_batch_size_is_lightnings",
        "tests/tuner/test_lr_finder.py::test_the_curve_and_suggestion_are_lightnings",
    }
)


# Parametrizations measured so, where the test's other cases are quick: each name is the start of node ids.
MEASURED_SLOW_CASES = (
    "tests/callbacks/test_spike_detection.py::test_same_spike_and_skip_file_as_lightning[10.0]",
    "tests/train/test_ray_cluster_rule.py::"
    "test_ray_address_where_nothing_listens_is_one_line_within_the_deadline[TorchTrainer]",
    "tests/callbacks/test_lightning_callback_parity.py::test_ember_callback_observes_what_lightnings_observes"
    "[batch_size_finder",
    "tests/callbacks/test_lightning_callback_parity.py::test_ember_callback_observes_what_lightnings_observes"
    "[scale_batch_size",
    "tests/cli/test_lightning_cli_parity.py::test_same_as_lightning[checkpoint_hyperparameters]",
    "tests/data/test_docstrings.py::test_docstring_examples[ember.data.dataset]",
    "tests/data/test_iterate.py::test_save_restore_is_exact_for_every_operator[add_column]",
    "tests/data/test_iterate.py::test_save_restore_is_exact_for_every_operator[filter]",
    "tests/data/test_iterate.py::test_save_restore_is_exact_for_every_operator[flat_map]",
    "tests/data/test_iterate.py::test_save_restore_is_exact_for_every_operator[map]",
    "tests/data/test_iterate.py::test_save_restore_is_exact_for_every_operator[map_batches]",
    "tests/data/test_iterate.py::test_save_restore_is_exact_for_every_operator[map_batches_class]",
    "tests/data/test_ray_defaults_explicit.py::test_every_ray_default_passed_explicitly_changes_nothing[Dataset-_data]",
    "tests/test_trainer_structure.py::test_each_part_of_the_run_has_one_writer[run.data]",
    "tests/trainer/test_lightning_steps.py::test_training_step_returning_none_skips_the_backward_as_lightning[1]",
)


def _is_slow(item: pytest.Item, uses_ray: bool) -> bool:
    nodeid = item.nodeid.split("@")[0]  # (xdist appends "@group" later; not yet, but never count on it)
    return (
        uses_ray
        or nodeid.startswith(SLOW_FOLDERS)
        or nodeid.split("[")[0] in MEASURED_SLOW
        or nodeid.startswith(MEASURED_SLOW_CASES)
    )


class _Groups:
    """Union-find over the names of shared fixtures: tests linked by one of them end in one group."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, key: str) -> str:
        self.parent.setdefault(key, key)
        while self.parent[key] != key:
            self.parent[key] = self.parent[self.parent[key]]
            key = self.parent[key]
        return key

    def union(self, keys: list[str]) -> None:
        roots = sorted({self.find(key) for key in keys})
        for root in roots[1:]:
            self.parent[root] = roots[0]


def _shared_fixture_keys(item: pytest.Item) -> list[str]:
    """One key per expensive fixture of wider than function scope this test uses (``ray`` for the Rays)."""
    names = set(getattr(item, "fixturenames", ()))
    keys = ["ray"] if names & RAY_FIXTURES else []
    name2defs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
    for name in sorted(names - CHEAP_SHARED_FIXTURES - RAY_FIXTURES):
        defs = name2defs.get(name)
        if not defs or defs[-1].scope == "function" or not defs[-1].baseid.startswith("tests"):
            continue  # pytest's and plugins' own fixtures (tmp_path_factory, ...) are cheap
        fixturedef = defs[-1]
        module = item.nodeid.split("::")[0]
        where = fixturedef.baseid if fixturedef.scope in ("session", "package") else module
        keys.append(f"{where}:{name}")
    return keys


# A test's own `@pytest.mark.timeout(s)` was chosen for a run of one test at a time; on an xdist worker the
# test shares the machine's cores with the other workers' tests, so its limit is this many times longer.
XDIST_TIMEOUT_FACTOR = 2


def _lengthen_timeouts(items: list[pytest.Item], factor: float) -> None:
    for item in items:
        marker = item.get_closest_marker("timeout")
        seconds = marker and (marker.args[0] if marker.args else marker.kwargs.get("timeout"))
        if seconds:
            kwargs = {k: v for k, v in marker.kwargs.items() if k != "timeout"}
            item.add_marker(pytest.mark.timeout(seconds * factor, **kwargs), append=False)


# CPU seconds (the whole machine's, Ray's daemons included) and test count per module of the ray group,
# measured in one serial run (tests/conftest.py's cost measurement, docs/testing.md): only the balance of the
# Ray shares over the workers depends on them; a stale figure never changes what runs.
RAY_MODULE_SECONDS: dict[str, tuple[float, int]] = {
    "tests/compat/test_runner.py": (276.0, 18),
    "tests/data/test_aggregate_functions.py": (41.0, 13),
    "tests/data/test_custom_aggregations.py": (28.0, 4),
    "tests/data/test_dataset_context.py": (5.0, 9),
    "tests/data/test_dataset_names.py": (26.0, 29),
    "tests/data/test_datasource.py": (2.0, 8),
    "tests/data/test_expression_functions.py": (42.0, 12),
    "tests/data/test_expression_namespaces.py": (3.0, 13),
    "tests/data/test_expression_strings.py": (9.0, 35),
    "tests/data/test_file_shuffle.py": (44.0, 17),
    "tests/data/test_iteration_matches_ray.py": (14.0, 69),
    "tests/data/test_iterator_to_torch.py": (32.0, 11),
    "tests/data/test_list_columns.py": (1.0, 11),
    "tests/data/test_mix.py": (4.0, 15),
    "tests/data/test_orc.py": (1.0, 8),
    "tests/data/test_ray_args.py": (1.0, 13),
    "tests/data/test_ray_backend.py": (174.0, 17),
    "tests/data/test_ray_backend_actors.py": (14.0, 3),
    "tests/data/test_ray_backend_cluster.py": (59.0, 3),
    "tests/data/test_ray_backend_native.py": (58.0, 8),
    "tests/data/test_ray_backend_writes.py": (21.0, 20),
    "tests/data/test_ray_backend_writes_cluster.py": (5.0, 3),
    "tests/data/test_ray_docstring_examples.py": (118.0, 109),
    "tests/data/test_ray_parity.py": (34.0, 105),
    "tests/data/test_ray_parity_api_reference.py": (55.0, 119),
    "tests/data/test_ray_parity_guides.py": (122.0, 219),
    "tests/data/test_ray_refusals.py": (1.0, 3),
    "tests/data/test_read_images_open_args.py": (0.0, 2),
    "tests/data/test_read_parquet_args.py": (24.0, 5),
    "tests/data/test_repartition_sort.py": (58.0, 13),
    "tests/data/test_write_args_fn.py": (1.0, 7),
    "tests/data/test_writers_options.py": (4.0, 27),
    "tests/fs/test_s3_ray_writes.py": (16.0, 2),
    "tests/inference/test_pool.py": (9.0, 10),
    "tests/inference/test_predict_cli.py": (15.0, 4),
    "tests/inference/test_ray.py": (41.0, 1),
    "tests/inference/test_trainer_predict.py": (1.0, 3),
    "tests/train/test_ray_cluster.py": (84.0, 4),
    "tests/train/test_ray_cluster_rule.py": (38.0, 7),
}


def _worker_count(config: pytest.Config) -> int:
    workerinput = getattr(config, "workerinput", None)  # set by xdist on its workers
    return int(workerinput["workercount"]) if workerinput else 1


def _mark_ray_shares(ray_items: list[pytest.Item], workers: int) -> None:
    """Mark the tests of the ``ray`` group with one xdist group per worker, ``ray-0`` ... ``ray-<n-1>``.

    Each worker then starts its own in-process Ray once and runs its share of the Ray modules in a row (in
    collection order, so tests/data/conftest.py's shared Ray still starts once per worker), instead of one
    worker running every Ray test while the others idle. A module stays whole (its module fixtures are built
    once), and the modules of the 2-node cluster stay together (the cluster is started once). Shares are
    balanced by the CPU seconds measured per module (``RAY_MODULE_SECONDS``), longest first onto the least
    loaded worker; a module not in the table counts one second a test.
    """
    units: dict[str, list[pytest.Item]] = {}
    for item in ray_items:
        key = "two_node_ray" if "two_node_ray" in getattr(item, "fixturenames", ()) else str(item.path)
        units.setdefault(key, []).append(item)
    costs = {key: sum(map(_measured_seconds, unit)) for key, unit in units.items()}
    loads = [0.0] * workers
    for key in sorted(units, key=lambda key: (-costs[key], key)):
        share = loads.index(min(loads))
        loads[share] += costs[key]
        for item in units[key]:
            item.add_marker(pytest.mark.xdist_group(f"ray-{share}"))


def _measured_seconds(item: pytest.Item) -> float:
    seconds, tests = RAY_MODULE_SECONDS.get(item.nodeid.split("::")[0], (1.0, 1))
    return seconds / tests


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "PYTEST_XDIST_WORKER" in os.environ:
        _lengthen_timeouts(items, XDIST_TIMEOUT_FACTOR)
    groups = _Groups()
    keys = {item.nodeid: _shared_fixture_keys(item) for item in items}
    for item_keys in keys.values():
        if item_keys:
            groups.union(item_keys)
    ray_root = groups.find("ray")
    ray_items = [
        item for item in items if keys[item.nodeid] and groups.find(keys[item.nodeid][0]) == ray_root
    ]
    _mark_ray_shares(ray_items, _worker_count(config))
    for item in items:
        group = groups.find(keys[item.nodeid][0]) if keys[item.nodeid] else None
        uses_ray = group is not None and group == groups.find("ray")
        if group is not None and not uses_ray:
            item.add_marker(pytest.mark.xdist_group(group))
        if uses_ray:
            item.add_marker(pytest.mark.ray)
        if _is_slow(item, uses_ray):
            item.add_marker(pytest.mark.slow)


@pytest.hookimpl(tryfirst=True)  # before the module fixtures are finalized by pytest's own teardown
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """The shared 2-node Ray cluster stays up only if the next test this process runs uses it."""
    from tests._ray_cluster import note_next_item

    note_next_item(nextitem)
