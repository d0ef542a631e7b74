"""ember.train's constructors and functions against Ray Train 2.60's: the same argument names in the same
positional order, and every Ray argument either honoured or refused in one line naming it (never accepted
and dropped). The refusals are checked without Ray; the comparison with Ray's signatures needs Ray.
"""

from __future__ import annotations

import enum
import inspect

import pytest
import torch

import ember.train
import ember.train.torch
from ember.errors import ConfigError
from ember.train import (
    Checkpoint,
    CheckpointConfig,
    FailureConfig,
    Result,
    RunConfig,
    ScalingConfig,
)
from ember.train.context import _check_report_arguments

# (ember object, dotted name of Ray's, ember's own keyword-only extras)
SURFACE = [
    (ScalingConfig, "ray.train.ScalingConfig", ()),
    (RunConfig, "ray.train.RunConfig", ("use_ray", "extra")),
    (CheckpointConfig, "ray.train.CheckpointConfig", ()),
    (FailureConfig, "ray.train.FailureConfig", ()),
    (Checkpoint, "ray.train.Checkpoint", ()),
    (Result, "ray.train.Result", ("metrics_history",)),
    (ember.train.report, "ray.train.report", ()),
    (ember.train.get_dataset_shard, "ray.train.get_dataset_shard", ()),
    (ember.train.get_checkpoint, "ray.train.get_checkpoint", ()),
    (ember.train.torch.TorchTrainer, "ray.train.torch.TorchTrainer", ("failure_config",)),
    (ember.train.torch.TorchConfig, "ray.train.torch.TorchConfig", ()),
    (ember.train.DataConfig, "ray.train.DataConfig", ()),
    (ember.train.torch.prepare_model, "ray.train.torch.prepare_model", ()),
    (ember.train.torch.prepare_data_loader, "ray.train.torch.prepare_data_loader", ()),
    (ember.train.torch.enable_reproducibility, "ray.train.torch.enable_reproducibility", ()),
    (ember.train.torch.get_device, "ray.train.torch.get_device", ()),
    (ember.train.torch.get_devices, "ray.train.torch.get_devices", ()),
    (ember.train.torch.prepare_optimizer, "ray.train.torch.prepare_optimizer", ()),
    (ember.train.torch.backward, "ray.train.torch.backward", ()),
    (ember.train.torch.accelerate, "ray.train.torch.accelerate", ()),
    (ember.train.get_all_reported_checkpoints, "ray.train.get_all_reported_checkpoints", ()),
    (ember.train.ReportedCheckpoint, "ray.train.ReportedCheckpoint", ()),
    (ember.train.LoggingConfig, "ray.train.LoggingConfig", ()),
    (ember.train.UserCallback.after_report, "ray.train.UserCallback.after_report", ()),
    (ember.train.UserCallback.after_exception, "ray.train.UserCallback.after_exception", ()),
    (Checkpoint.from_directory, "ray.train.Checkpoint.from_directory", ()),
    (Checkpoint.to_directory, "ray.train.Checkpoint.to_directory", ()),
    (Result.from_path, "ray.train.Result.from_path", ()),
    (Result.get_best_checkpoint, "ray.train.Result.get_best_checkpoint", ()),
]

# Every Ray argument ember carries out (tests elsewhere show each one acting).
HONOURED = {
    "ScalingConfig": {"num_workers", "use_gpu", "resources_per_worker", "placement_strategy"},
    "RunConfig": {
        "name",
        "storage_path",
        "storage_filesystem",
        "failure_config",
        "checkpoint_config",
        "callbacks",
        "worker_runtime_env",
    },
    "CheckpointConfig": {"num_to_keep", "checkpoint_score_attribute", "checkpoint_score_order"},
    "FailureConfig": {"max_failures"},
    "Checkpoint": {"path", "filesystem"},
    "Result": {
        "metrics",
        "checkpoint",
        "error",
        "path",
        "metrics_dataframe",
        "best_checkpoints",
        "_storage_filesystem",
        "return_value",
    },
    "report": {
        "metrics",
        "checkpoint",
        "checkpoint_dir_name",
        "checkpoint_upload_mode",
        "delete_local_checkpoint_after_upload",
    },
}


def _report(**kwargs):
    arguments = {
        "checkpoint": None,
        "dir_name": None,
        "mode": ember.train.CheckpointUploadMode.SYNC,
        "delete_local": None,
        "upload_fn": None,
        "validation": False,
        **kwargs,
    }
    _check_report_arguments(**arguments)


class _S3:  # a pyarrow filesystem other than the local one, as far as ember looks at it
    type_name = "s3"


# Every other Ray argument: a value a Ray program could pass, refused in one line naming the argument.
REFUSED = {
    "ScalingConfig": {
        "trainer_resources": lambda: ScalingConfig(num_workers=2, trainer_resources={"CPU": 1}),
        "accelerator_type": lambda: ScalingConfig(accelerator_type="A100"),
        "label_selector": lambda: ScalingConfig(label_selector={"zone": "a"}),
        "use_tpu": lambda: ScalingConfig(use_tpu=True),
        "topology": lambda: ScalingConfig(topology="2x2"),
        "elastic_resize_monitor_interval_s": lambda: ScalingConfig(elastic_resize_monitor_interval_s=5.0),
    },
    "RunConfig": {
        "logging_config": lambda: RunConfig(logging_config=ember.train.LoggingConfig(log_level="DEBUG")),
        "sync_config": lambda: RunConfig(sync_config=object()),
        "verbose": lambda: RunConfig(verbose=2),
        "stop": lambda: RunConfig(stop={"loss": 0.1}),
        "progress_reporter": lambda: RunConfig(progress_reporter=object()),
        "log_to_file": lambda: RunConfig(log_to_file=True),
        # honoured when empty / local; refused otherwise:
        "callbacks": lambda: RunConfig(callbacks=[object()]),
        "worker_runtime_env": lambda: RunConfig(worker_runtime_env={"pip": ["x"]}),
        "storage_filesystem": lambda: RunConfig(storage_path="bucket/runs", storage_filesystem=_S3()),
    },
    "CheckpointConfig": {
        "checkpoint_frequency": lambda: CheckpointConfig(checkpoint_frequency=1),
        "checkpoint_at_end": lambda: CheckpointConfig(checkpoint_at_end=True),
    },
    "FailureConfig": {
        "fail_fast": lambda: FailureConfig(fail_fast=True),
        "controller_failure_limit": lambda: FailureConfig(controller_failure_limit=3),
        "max_preemption_failures": lambda: FailureConfig(max_preemption_failures=0),
        "relax_collectives_on_preemption": lambda: FailureConfig(relax_collectives_on_preemption=True),
        "preemption_grace_s": lambda: FailureConfig(preemption_grace_s=5.0),
    },
    "Checkpoint": {"filesystem": lambda: Checkpoint("bucket/ckpt", filesystem=_S3())},
    "TorchTrainer": {
        "validation_config": lambda: ember.train.torch.TorchTrainer(print, validation_config=object()),
        "metadata": lambda: ember.train.torch.TorchTrainer(print, metadata={"a": 1}),
    },
    "report": {
        "checkpoint_upload_mode": lambda: _report(mode=ember.train.CheckpointUploadMode.NO_UPLOAD),
        "delete_local_checkpoint_after_upload": lambda: _report(
            checkpoint=Checkpoint("/tmp"), delete_local=True
        ),
        "checkpoint_upload_fn": lambda: _report(upload_fn=lambda c, name: c),
        "validation": lambda: _report(validation=True),
        "checkpoint_dir_name": lambda: _report(dir_name="../elsewhere"),
    },
}


@pytest.mark.parametrize(("owner", "name"), [(o, n) for o, calls in REFUSED.items() for n in calls])
def test_a_ray_argument_ember_does_not_carry_out_is_refused_in_one_line_naming_it(owner, name):
    with pytest.raises(ConfigError) as caught:
        REFUSED[owner][name]()
    message = str(caught.value)
    assert "\n" not in message and name in message


def test_positional_calls_mean_what_they_mean_in_ray():
    # Ray's ScalingConfig starts with trainer_resources: ScalingConfig(2) is refused there and here
    with pytest.raises(ConfigError, match=r"trainer_resources=.*ScalingConfig\(num_workers=\.\.\.\)"):
        ScalingConfig(2)
    run = RunConfig("exp", "/tmp/results", None, FailureConfig(1), CheckpointConfig(2, "acc", "min"))
    assert (run.name, run.storage_path, run.failure_config.max_failures) == ("exp", "/tmp/results", 1)
    assert (run.checkpoint_config.num_to_keep, run.checkpoint_config.checkpoint_score_order) == (2, "min")
    result = Result({"loss": 1.0}, None, None, "/tmp/run", None, [], None, 42)
    assert (result.path, result.error, result.return_value, result.best_checkpoints) == (
        "/tmp/run",
        None,
        42,
        [],
    )


def test_honoured_defaults_and_empty_values_are_accepted():
    import pyarrow.fs

    run = RunConfig(
        storage_path="/tmp/r",
        storage_filesystem=pyarrow.fs.LocalFileSystem(),
        callbacks=[],
        worker_runtime_env={},
    )
    assert run.storage_path == "/tmp/r" and run.callbacks == [] and run.worker_runtime_env == {}
    assert CheckpointConfig().checkpoint_frequency == "DEPRECATED"  # Ray's marker default, as in Ray
    assert ScalingConfig(num_workers=3, use_gpu=True).total_resources == {"GPU": 3.0}  # Ray's: no CPU then
    assert ScalingConfig(
        num_workers=2, resources_per_worker={"CPU": 2, "custom": 1}
    ).additional_resources_per_worker == {"custom": 1.0}
    with pytest.raises(ConfigError, match="elastic"):
        ScalingConfig(num_workers=(1, 4))
    with pytest.raises(ConfigError, match="Ray Tune"):
        ScalingConfig().as_placement_group_factory()
    with pytest.raises(ConfigError, match="deprecated in Ray 2.60 too"):
        _ = Result({}, None, None, "/tmp").config


def test_checkpoint_metadata_is_a_file_in_the_folder(tmp_path):
    checkpoint = Checkpoint.from_directory(tmp_path)
    assert checkpoint.get_metadata() == {}
    checkpoint.set_metadata({"epoch": 3, "tags": ["a"]})
    checkpoint.update_metadata({"loss": 0.25})
    assert Checkpoint(tmp_path).get_metadata() == {"epoch": 3, "tags": ["a"], "loss": 0.25}
    assert sorted(p.name for p in tmp_path.iterdir()) == [".metadata.json"]
    with pytest.raises(TypeError):
        checkpoint.set_metadata({"bad": object()})
    assert Checkpoint(tmp_path).get_metadata()["epoch"] == 3  # a failed write leaves the old metadata
    assert checkpoint.filesystem.type_name == "local"


def test_enable_reproducibility_seeds_as_ray_does():
    import random

    import numpy as np

    try:
        ember.train.torch.enable_reproducibility(5)
        first = (torch.rand(3), random.random(), np.random.rand())
        ember.train.torch.enable_reproducibility(5)
        assert torch.equal(first[0], torch.rand(3)) and first[1:] == (random.random(), np.random.rand())
        assert torch.are_deterministic_algorithms_enabled() and not torch.backends.cudnn.benchmark
    finally:
        torch.use_deterministic_algorithms(False)


# ---- against the installed Ray ---------------------------------------------------------------------------
def _ray_object(dotted: str):
    import importlib

    module_name, _, rest = dotted.partition(".train")
    module = importlib.import_module("ray.train" + (".torch" if rest.startswith(".torch.") else ""))
    obj = module
    for part in rest.removeprefix(".torch").lstrip(".").split("."):
        obj = getattr(obj, part)
    return obj


def _parameters(obj, extras=()):
    params = inspect.signature(obj).parameters.values()
    return [
        (p.name, p.kind)
        for p in params
        if p.name not in ("self", "cls", *extras) and p.kind is not inspect.Parameter.VAR_KEYWORD
    ]


@pytest.mark.parametrize(("ours", "theirs", "extras"), SURFACE, ids=[s[1] for s in SURFACE])
def test_same_names_in_the_same_positional_order_as_ray(ours, theirs, extras):
    pytest.importorskip("ray.train")
    ray_obj = _ray_object(theirs)
    ray_params = _parameters(ray_obj)
    if ray_params and ray_params[0][1] is inspect.Parameter.VAR_POSITIONAL:
        pytest.skip(f"{theirs} takes *args in Ray 2.60")
    assert _parameters(ours, extras) == ray_params
    for name in extras:  # ember's own arguments never take a positional place
        assert inspect.signature(ours).parameters[name].kind is inspect.Parameter.KEYWORD_ONLY


@pytest.mark.parametrize("owner", sorted(HONOURED))
def test_every_ray_argument_is_honoured_or_refused(owner):
    pytest.importorskip("ray.train")
    import ray.train

    ray_names = {name for name, _ in _parameters(getattr(ray.train, owner))}
    refused = set(REFUSED.get(owner, {}))
    assert ray_names <= HONOURED[owner] | refused, sorted(ray_names - HONOURED[owner] - refused)


@pytest.mark.parametrize(
    "owner",
    [
        "ScalingConfig",
        "RunConfig",
        "CheckpointConfig",
        "FailureConfig",
        "Checkpoint",
        "Result",
        "TrainContext",
    ],
)
def test_every_public_field_and_method_of_rays_class_exists(owner):
    pytest.importorskip("ray.train")
    import ray.train

    theirs = {n for n in dir(getattr(ray.train, owner)) if not n.startswith("_")}
    ours = getattr(ember.train, owner)
    missing = sorted(
        n for n in theirs if not (hasattr(ours, n) or n in getattr(ours, "__dataclass_fields__", {}))
    )
    assert not missing


def test_checkpoint_upload_modes_are_rays():
    pytest.importorskip("ray.train")
    import ray.train

    assert [m.value for m in ember.train.CheckpointUploadMode] == [
        m.value for m in ray.train.CheckpointUploadMode
    ]
    assert issubclass(ember.train.CheckpointUploadMode, enum.Enum)


@pytest.mark.parametrize(
    "method",
    ["get_metadata", "get_trial_name", "get_trial_id", "get_trial_resources", "get_trial_dir", "get_storage"],
)
def test_train_context_methods_ray_refuses_are_refused_in_one_line(method, tmp_path):
    context = ember.train.TrainContext(
        world_rank=0,
        world_size=1,
        local_rank=0,
        local_world_size=1,
        node_rank=0,
        run_dir=tmp_path,
        device=torch.device("cpu"),
        datasets={},
    )
    with pytest.raises(ConfigError, match=rf"^TrainContext\.{method}\(\)") as caught:
        getattr(context, method)()
    assert "\n" not in str(caught.value)


def test_rays_other_public_names_import_and_refuse_their_use():
    import pyarrow.fs  # noqa: F401

    assert ember.train.TRAIN_DATASET_KEY == "train"
    assert issubclass(ember.train.TrainingFailedError, Exception)
    assert (
        ember.train.WorkerGroupError is ember.train.TrainingFailedError
    )  # what fit() raises, by either name
    assert RunConfig(logging_config=ember.train.LoggingConfig()).logging_config.log_level == "INFO"

    class Printer(ember.train.UserCallback):
        def after_report(self, run_context, metrics, checkpoint):
            print(metrics)

    with pytest.raises(ConfigError, match=r"^RunConfig\(callbacks=\.\.\.\)"):
        RunConfig(callbacks=[Printer()])
    with pytest.raises(ConfigError, match="^SyncConfig is deprecated in Ray 2.60 too"):
        ember.train.SyncConfig(sync_period=10)
    for refused in (ember.train.torch.prepare_optimizer, ember.train.torch.backward):
        with pytest.raises(ConfigError, match="deprecated in Ray 2.60 too"):
            refused(None)


@pytest.mark.parametrize("module", ["train", "train.torch"])
def test_every_public_name_of_rays_module_exists_or_is_listed_as_absent(module):
    pytest.importorskip("ray.train")
    import importlib

    theirs = importlib.import_module(f"ray.{module}")
    ours = importlib.import_module(f"ember.{module}")
    absent = {  # Ray's own submodules and packages it imports, Ray internals, and what ember lacks by design
        "train": {
            "backend",
            "base_trainer",
            "constants",
            "data_parallel_trainer",
            "error",
            "fsspec",
            "pandas",
            "pyarrow",
            "pydantic",
            "requests",
            "trainer",
            "utils",
            "v2",
            "is_v2_enabled",
            "BackendConfig",
            "NCCLHangError",
            "PreemptionError",
            "PreemptionInfo",
            "get_preemption_info",
            "ValidationConfig",
            "ValidationFn",
            "ValidationTaskConfig",
        },
        "train.torch": {
            "config",
            "torch_checkpoint",
            "torch_trainer",
            "train_loop_utils",
            "is_v2_enabled",
            "TorchCheckpoint",
        },
    }[module]
    missing = sorted(
        n for n in dir(theirs) if not n.startswith("_") and not hasattr(ours, n) and n not in absent
    )
    assert not missing
