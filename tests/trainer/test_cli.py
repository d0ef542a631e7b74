"""`ember fit` on the main job's config: the classic script's flags, the test accuracy, --resume."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import ember

REPO = Path(__file__).parents[2]
CONFIG = REPO / "examples" / "fashion_mnist" / "config.yaml"


def ember_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ember.cli", *args], capture_output=True, text=True, timeout=240,
                          cwd=REPO, env={**os.environ, "OMP_NUM_THREADS": "2"})


def test_fit_prints_test_accuracy_and_resume_continues(tmp_path):
    short = ["--set", "trainer.limit_train_batches=40", "--set", "trainer.limit_val_batches=2",
             "--set", "data.init_args.test_batch_size=2000", "--root-dir", str(tmp_path), "--save-interval", "15"]
    first = ember_cli("fit", "--config", str(CONFIG), "--epochs", "1", "--lr", "0.05", *short)
    assert first.returncode == 0, first.stderr
    accuracy = float(first.stdout.strip().splitlines()[-1].removeprefix("test accuracy: "))
    assert 0.5 < accuracy < 1.0  # 40 steps of the classic Net on real Fashion-MNIST are well above chance

    folder = tmp_path / "ember_logs" / "version_0" / "checkpoints"
    assert sorted(p.name for p in folder.glob("*.ckpt")) == ["epoch=0-step=30.ckpt", "last.ckpt"]
    last = ember.checkpoint.load_checkpoint(folder / "last.ckpt")
    assert last["progress"]["global_step"] == 40 and last["hyper_parameters"]["lr"] == 0.05

    resumed = ember_cli("fit", "--config", str(CONFIG), "--epochs", "2", "--lr", "0.05", "--resume", *short)
    assert resumed.returncode == 0, resumed.stderr
    assert not (tmp_path / "ember_logs" / "version_1").exists()  # the resumed run continues its folder
    assert ember.checkpoint.load_checkpoint(folder / "last.ckpt")["progress"]["global_step"] == 80
    assert "test accuracy: " in resumed.stdout
