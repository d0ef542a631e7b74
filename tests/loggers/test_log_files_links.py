"""Files loggers and profilers write are ember's own: never written or read through a planted link, one run
per metrics.csv (a fresh run refuses another run's file, a resumed run continues its own cleanly)."""

from __future__ import annotations

import csv
import os
import pstats

import pytest
import torch

import ember
from ember.demos import BoringModel
from ember.errors import ConfigError, UnsafePathError
from ember.loggers import CSVLogger
from ember.profilers import AdvancedProfiler


class Logging(BoringModel):
    def training_step(self, batch, batch_idx):
        loss = self.step(batch)
        self.log("loss", loss)
        return loss


def fit(root, logger, max_epochs=1, ckpt_path=None, **options):
    torch.manual_seed(0)
    trainer = ember.Trainer(
        default_root_dir=root,
        logger=logger,
        max_epochs=max_epochs,
        limit_train_batches=4,
        limit_val_batches=0,
        log_every_n_steps=1,
        enable_progress_bar=False,
        enable_model_summary=False,
        **options,
    )
    trainer.fit(Logging(), ckpt_path=ckpt_path)
    return trainer


def rows(path):
    with open(path, newline="") as f:
        return list(csv.reader(f))


def test_a_metrics_csv_planted_as_a_link_is_refused_before_training_and_its_target_untouched(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("step,loss\nAWS_SECRET=hunter2\n")
    os.chmod(secret, 0o600)
    run = tmp_path / "logs" / "run" / "version_0"
    run.mkdir(parents=True)
    (run / "metrics.csv").symlink_to(secret)
    with pytest.raises(
        UnsafePathError,
        match=r"metrics.csv is a symbolic link where ember keeps its own "
        r"metrics.csv; ember never writes or reads through a link",
    ):
        fit(tmp_path, CSVLogger(tmp_path / "logs", name="run", version=0))
    assert secret.read_text() == "step,loss\nAWS_SECRET=hunter2\n"
    assert [p.name for p in run.iterdir()] == ["metrics.csv"]  # nothing of the secret copied into a log


def test_a_fresh_run_refuses_another_runs_metrics_csv(tmp_path):
    fit(tmp_path, CSVLogger(tmp_path / "logs", name="run", version=0))
    metrics = tmp_path / "logs" / "run" / "version_0" / "metrics.csv"
    before = metrics.read_text()
    with pytest.raises(
        ConfigError,
        match=r"^CSVLogger: .*metrics.csv already holds the rows of an earlier run, and "
        r"this fit does not resume it; pass version=None for a new version_N "
        r"folder, resume that run with ckpt_path=, or remove the file$",
    ):
        fit(tmp_path, CSVLogger(tmp_path / "logs", name="run", version=0))
    assert metrics.read_text() == before
    fit(tmp_path, CSVLogger(tmp_path / "logs", name="run"))  # version=None: the next version_N folder
    assert (tmp_path / "logs" / "run" / "version_1" / "metrics.csv").exists()


def test_a_resumed_run_cuts_a_torn_last_row_instead_of_gluing_the_next_one_on(tmp_path):
    checkpoints = ember.ModelCheckpoint(dirpath=tmp_path / "ckpts", save_last=True)
    fit(tmp_path, CSVLogger(tmp_path / "logs", name="run", version=0), callbacks=[checkpoints])
    metrics = tmp_path / "logs" / "run" / "version_0" / "metrics.csv"
    header, *first = rows(metrics)
    with open(metrics, "a") as f:
        f.write("0.123,9")  # a writer killed mid-row: no newline
    checkpoints = ember.ModelCheckpoint(dirpath=tmp_path / "ckpts", save_last=True)
    fit(
        tmp_path,
        CSVLogger(tmp_path / "logs", name="run", version=0),
        max_epochs=2,
        ckpt_path=tmp_path / "ckpts" / "last.ckpt",
        callbacks=[checkpoints],
    )
    again_header, *after = rows(metrics)
    assert again_header == header
    assert all(len(row) == len(header) for row in after), after  # no glued row
    assert after[: len(first)] == first and len(after) == 2 * len(first)
    assert "0.123" not in metrics.read_text()


def test_the_default_logger_of_a_resumed_fit_continues_its_own_folder(tmp_path):
    fit(tmp_path, True)
    [checkpoint] = list(
        tmp_path.rglob("epoch=*.ckpt")
    )  # <root>/<logs>/version_0/checkpoints/epoch=0-step=4.ckpt
    fit(tmp_path, True, max_epochs=2, ckpt_path=checkpoint)
    # the default logger (Lightning's: TensorBoard) writes the resumed fit into the same version folder
    version = checkpoint.parents[1]
    assert sorted(p.name for p in version.parent.iterdir()) == ["version_0"]
    assert len(list(version.glob("events.out.tfevents.*"))) == 2


def test_advanced_profiler_dump_stats_replaces_a_planted_link_and_leaves_its_target_alone(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (tmp_path / "fit-adv-training_step.prof").symlink_to(victim)
    profiler = AdvancedProfiler(dirpath=tmp_path, filename="adv", dump_stats=True)
    profiler.setup("fit")
    with profiler.profile("training_step"):
        sum(range(1000))
    profiler.summary()
    assert victim.read_text() == "precious"
    written = tmp_path / "fit-adv-training_step.prof"
    assert not written.is_symlink() and pstats.Stats(str(written)).stats
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fit-adv-training_step.prof", "victim.txt"]


def test_the_profilers_report_refuses_a_planted_link(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (tmp_path / "fit-adv.txt").symlink_to(victim)
    profiler = AdvancedProfiler(dirpath=tmp_path, filename="adv")
    profiler.setup("fit")
    with profiler.profile("training_step"):
        pass
    with pytest.raises(ember.errors.EmberError, match="symbolic link"):
        profiler.describe()
    assert victim.read_text() == "precious"


def test_tensorboards_folder_planted_as_a_link_is_refused_before_its_writer_writes(tmp_path):
    pytest.importorskip("tensorboard")
    from ember.loggers import TensorBoardLogger

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "logs" / "run").mkdir(parents=True)
    (tmp_path / "logs" / "run" / "version_0").symlink_to(elsewhere)
    logger = TensorBoardLogger(tmp_path / "logs", name="run", version=0)
    with pytest.raises(
        UnsafePathError, match=r"version_0 is a symbolic link where ember keeps its own folder"
    ):
        logger.log_metrics({"loss": 1.0}, step=0)
    assert list(elsewhere.iterdir()) == []
