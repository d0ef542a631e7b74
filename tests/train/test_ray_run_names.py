"""A TorchTrainer run's folders under Ray Train 2.60's names: without `RunConfig(storage_path=, name=)` the
run is `~/ray_results/ray_train_run-<time>/`, each checkpoint `checkpoint_<time.microseconds>/` (what
Result.path / Result.checkpoint.path and a script listing the folder see), and run folders ember wrote
before (`TorchTrainer_<time>/checkpoint_NNNNNN/`) are still read, restored and pruned."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

import pytest
import torch

import ember.train
from ember.train import Checkpoint, CheckpointConfig, Result, RunConfig, ScalingConfig, TorchTrainer
from ember.train.checkpoint_manager import delete_unkept, next_report_index, write_settings
from ember.train.restore import settings_of

RUN_NAME = re.compile(r"ray_train_run-\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d")
CHECKPOINT_NAME = re.compile(r"checkpoint_\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d\.\d{6}")


def test_run_config_chooses_rays_default_name_and_storage_path(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    config = RunConfig()
    assert RUN_NAME.fullmatch(config.name) and config.storage_path == str(tmp_path / "ray_results")
    given = RunConfig(name="exp", storage_path=tmp_path / "runs")  # a Path is kept as its text, as in Ray
    assert (given.name, given.storage_path) == ("exp", str(tmp_path / "runs"))
    ray_train = pytest.importorskip("ray.train")
    theirs = ray_train.RunConfig()
    assert RUN_NAME.fullmatch(theirs.name) and Path(theirs.storage_path).name == "ray_results"


def loop(config):
    for epoch in range(2):
        with tempfile.TemporaryDirectory() as folder:
            torch.save({"epoch": epoch}, Path(folder) / "state.pt")
            ember.train.report({"epoch": epoch}, checkpoint=Checkpoint.from_directory(folder))


@pytest.mark.slow  # a one-worker TorchTrainer run
@pytest.mark.timeout(300)
def test_a_run_without_storage_path_lands_where_ray_puts_it(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    trainer = TorchTrainer(
        loop,
        scaling_config=ScalingConfig(num_workers=1),
        run_config=RunConfig(checkpoint_config=CheckpointConfig(num_to_keep=1)),
    )
    result = trainer.fit()
    run = Path(result.path)
    assert run.parent == tmp_path / "ray_results" and RUN_NAME.fullmatch(run.name)
    kept = Path(result.checkpoint.path)
    assert kept.parent == run and CHECKPOINT_NAME.fullmatch(kept.name)
    assert torch.load(kept / "state.pt")["epoch"] == 1
    assert sorted(p.name for p in run.iterdir() if p.is_dir()) == [kept.name]  # num_to_keep=1 pruned epoch 0
    assert Path(Result.from_path(run).checkpoint.path) == kept  # read back from the folder alone
    assert not (tmp_path / "ember_results").exists()


def _old_ember_run(tmp_path: Path) -> Path:
    """A run folder as ember wrote it before Ray's names: TorchTrainer_<time>/checkpoint_NNNNNN/."""
    run = tmp_path / "ember_results" / "TorchTrainer_2026-01-01_00-00-00"
    run.mkdir(parents=True)
    trainer = TorchTrainer(loop, run_config=RunConfig(checkpoint_config=CheckpointConfig(num_to_keep=1)))
    write_settings(run, settings_of(trainer))
    lines = []
    for index in range(3):
        (run / f"checkpoint_{index:06d}").mkdir()
        (run / f"checkpoint_{index:06d}" / "state.pt").write_text(str(index))
        lines.append(
            json.dumps({"index": index, "metrics": {"epoch": index}, "checkpoint": f"checkpoint_{index:06d}"})
        )
    (run / "result.json").write_text("\n".join(lines) + "\n")
    return run


def test_a_run_folder_ember_wrote_with_numbered_checkpoints_is_still_read_restored_and_pruned(tmp_path):
    run = _old_ember_run(tmp_path)
    result = Result.from_path(run)
    assert Path(result.checkpoint.path) == run / "checkpoint_000002" and result.metrics == {"epoch": 2}
    assert TorchTrainer.can_restore(run)
    restored = TorchTrainer.restore(run, train_loop_per_worker=loop)
    assert (restored.run_config.name, restored.run_config.storage_path) == (run.name, str(run.parent))
    assert next_report_index(run) == 3
    user = run / "checkpoint_notes"  # a folder no record names: never touched
    user.mkdir()
    delete_unkept(run)  # num_to_keep=1: the old-named folders are pruned like new ones
    assert sorted(p.name for p in run.iterdir() if p.is_dir()) == ["checkpoint_000002", "checkpoint_notes"]
