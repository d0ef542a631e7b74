"""Lightning's defaults under Lightning's names (docs/trainer.md, "Defaults"): the same tiny program run on
Lightning 2.6 and on ember writes the same files at the same paths (checkpoint names included), builds the
same default logger, prints the same rank-zero messages, and accepts num_nodes / model_registry where
Lightning does.
"""

from __future__ import annotations

import csv
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import ember
from ember.errors import ConfigError

pl = pytest.importorskip("lightning.pytorch")
pytest.importorskip("tensorboard")

QUIET = {"enable_progress_bar": False, "enable_model_summary": False, "accelerator": "cpu"}


def _module(L, images: bool = False):
    class Tiny(L.LightningModule):
        def __init__(self, lr: float = 0.1):
            super().__init__()
            self.save_hyperparameters()
            self.layer = nn.Linear(4, 1)

        def training_step(self, batch, batch_idx):
            loss = self.layer(batch[0]).pow(2).mean()
            self.log("loss", loss)
            if images:  # Lightning's GAN template: every logger's experiment gets the generated images
                for logger in self.loggers:
                    logger.experiment.add_image("generated_images", torch.rand(3, 4, 4), self.current_epoch)
            return loss

        def validation_step(self, batch, batch_idx):
            self.log("val_loss", self.layer(batch[0]).pow(2).mean())

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)

    return Tiny()


def _data() -> DataLoader:
    return DataLoader(
        TensorDataset(torch.randn(16, 4, generator=torch.Generator().manual_seed(0))), batch_size=4
    )


def _files(root: Path) -> list[str]:
    """Every file under `root`, relative, with TensorBoard's event-file names (host, time) as one name."""
    names = [str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()]
    return sorted(re.sub(r"events\.out\.tfevents\..*", "events.out.tfevents", n) for n in names)


def _both(tmp_path: Path, program) -> tuple[object, object]:
    """Run `program(L, root)` on Lightning and on ember, each in its own folder, which is also the cwd."""
    results = []
    for L, name in ((pl, "lightning"), (ember, "ember")):
        root = tmp_path / name
        root.mkdir()
        cwd = os.getcwd()
        os.chdir(root)
        try:
            results.append(program(L, root))
        finally:
            os.chdir(cwd)
    return results[0], results[1]


def test_the_run_folder_is_lightnings_checkpoint_names_included(tmp_path):
    """Lightning's docs load ./lightning_logs/version_0/checkpoints/<file>: the same files, the same paths."""

    def program(L, root):
        for _ in range(2):  # a second run takes the next version folder
            trainer = L.Trainer(max_epochs=2, **QUIET)
            trainer.fit(_module(L), _data(), _data())
        checkpoint = next((root / "lightning_logs" / "version_0" / "checkpoints").iterdir())
        restored = type(_module(L)).load_from_checkpoint(checkpoint)  # the docs' next line
        return _files(root), os.path.relpath(trainer.log_dir, root), restored.hparams.lr

    theirs, ours = _both(tmp_path, program)
    assert ours == theirs
    assert "lightning_logs/version_0/checkpoints/epoch=1-step=8.ckpt" in ours[0]
    assert ours[1] == "lightning_logs/version_1"


def test_a_tensorboard_logger_folder_is_lightnings(tmp_path):
    """TensorBoardLogger("logs/") writes logs/lightning_logs/version_0, where Lightning's readers look."""

    def program(L, root):
        trainer = L.Trainer(max_epochs=1, logger=L.loggers.TensorBoardLogger("logs/"), **QUIET)
        trainer.fit(_module(L), _data())
        csv_logger = L.loggers.CSVLogger("csv/")
        return _files(root), trainer.logger.log_dir, csv_logger.log_dir, trainer.logger.name, csv_logger.name

    theirs, ours = _both(tmp_path, program)
    assert ours == theirs
    assert (
        "logs/lightning_logs/version_0/hparams.yaml" in ours[0] and ours[1] == "logs/lightning_logs/version_0"
    )


def test_the_default_logger_is_one_tensorboard_logger_and_the_gan_template_runs(tmp_path):
    def program(L, root):
        trainer = L.Trainer(max_epochs=1, **QUIET)
        trainer.fit(_module(L, images=True), _data())
        return [type(logger).__name__ for logger in trainer.loggers], _files(root)

    theirs, ours = _both(tmp_path, program)
    assert ours == theirs == (["TensorBoardLogger"], ours[1])
    assert not any(name.endswith("metrics.csv") for name in ours[1])  # no second logger behind Lightning's


def test_csv_logger_experiment_is_lightnings_writer(tmp_path):
    """`logger.experiment` of a CSVLogger: log_metrics (tensors as numbers, written on save), log_hparams,
    save."""

    def program(L, root):
        logger = L.loggers.CSVLogger("runs", name="gan", version=0)
        trainer = L.Trainer(max_epochs=1, logger=logger, log_every_n_steps=1, **QUIET)
        trainer.fit(_module(L), _data())
        writer = logger.experiment
        writer.log_metrics({"d_loss": torch.tensor(0.25), "g_loss": 0.5}, step=100)
        pending = [dict(row) for row in writer.metrics]
        writer.log_hparams({"latent_dim": 16})
        writer.save()
        with open(writer.metrics_file_path, newline="") as f:
            rows = list(csv.DictReader(f))
        hparams = (Path(writer.log_dir) / "hparams.yaml").read_text()
        return (
            pending,
            os.path.relpath(writer.metrics_file_path, root),
            rows[-1]["d_loss"],
            rows[-1]["step"],
            "latent_dim: 16" in hparams,
            writer.metrics,
        )

    theirs, ours = _both(tmp_path, program)
    assert ours == theirs
    assert ours[:4] == (
        [{"d_loss": 0.25, "g_loss": 0.5, "step": 100}],
        "runs/gan/version_0/metrics.csv",
        "0.25",
        "100",
    )


RANK_ZERO_PROGRAM = textwrap.dedent("""
    import sys
    if sys.argv[1] == "lightning":
        import lightning.pytorch as L
        from lightning.pytorch.utilities import rank_zero_info, rank_zero_warn
    else:
        import ember as L
        from ember.utilities import rank_zero_info, rank_zero_warn
    rank_zero_info("Finetuning: unfreezing the backbone")  # Lightning's fine-tuning example prints this way
    rank_zero_warn("check your data")
    L.seed_everything(7)
""")


def test_rank_zero_info_and_warn_print_as_lightnings(tmp_path):
    script = tmp_path / "messages.py"
    script.write_text(RANK_ZERO_PROGRAM)
    env = {**os.environ, "PYTHONWARNINGS": "default"}

    def stderr(library: str) -> str:
        done = subprocess.run(
            [sys.executable, str(script), library],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
            check=True,
        )
        return done.stderr

    ours, theirs = stderr("ember"), stderr("lightning")
    assert ours == theirs
    assert "Finetuning: unfreezing the backbone" in ours and "Seed set to 7" in ours
    assert re.search(
        r"messages\.py:10: UserWarning: check your data", ours
    )  # the caller's line, as Lightning's


def test_num_nodes_is_accepted_at_construction_and_checked_when_the_run_starts(monkeypatch):
    for name in (
        "RANK",
        "LOCAL_RANK",
        "WORLD_SIZE",
        "LOCAL_WORLD_SIZE",
        "GROUP_RANK",
        "SLURM_NTASKS",
        "SLURM_PROCID",
    ):
        monkeypatch.delenv(name, raising=False)
    lightning_trainer = pl.Trainer(num_nodes=8, logger=False, **QUIET)
    trainer = ember.Trainer(num_nodes=8, logger=False, **QUIET)
    assert trainer.num_nodes == lightning_trainer.num_nodes == 8
    with pytest.raises(ConfigError) as error:
        trainer.fit(ember.demos.BoringModel())
    assert str(error.value).startswith("num_nodes=8 but no multi-node launcher started this process")
    assert "\n" not in str(error.value)


def test_model_registry_is_accepted_and_said_to_upload_nothing(tmp_path):
    trainer = ember.Trainer(model_registry="my-model:v2", max_steps=1, default_root_dir=tmp_path, **QUIET)
    pl.Trainer(model_registry="my-model:v2", **QUIET)  # accepted by Lightning too
    with pytest.warns(
        UserWarning, match=r"^Trainer\(model_registry='my-model'\): ember uploads no checkpoints"
    ):
        trainer.fit(_module(ember), _data())
    assert trainer.global_step == 1 and list(
        tmp_path.rglob("*.ckpt")
    )  # the run went on, checkpoints as files
    with pytest.raises(
        ConfigError, match=r"^ckpt_path='registry:my-model' reads Lightning's cloud model registry"
    ):
        trainer.fit(_module(ember), _data(), ckpt_path="registry:my-model")
