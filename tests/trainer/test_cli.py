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
    return subprocess.run(
        [sys.executable, "-m", "ember.cli", *args],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=REPO,
        env={**os.environ, "OMP_NUM_THREADS": "2"},
    )


def test_fit_prints_test_accuracy_and_resume_continues(tmp_path):
    short = [
        "--set",
        "trainer.limit_train_batches=40",
        "--set",
        "trainer.limit_val_batches=2",
        "--set",
        "data.init_args.test_batch_size=2000",
        "--root-dir",
        str(tmp_path),
        "--save-interval",
        "15",
    ]
    first = ember_cli("fit", "--config", str(CONFIG), "--epochs", "1", "--lr", "0.05", *short)
    assert first.returncode == 0, first.stderr
    accuracy = float(first.stdout.strip().splitlines()[-1].removeprefix("test accuracy: "))
    assert 0.5 < accuracy < 1.0  # 40 steps of the classic Net on real Fashion-MNIST are well above chance

    folder = tmp_path / "lightning_logs" / "version_0" / "checkpoints"
    assert sorted(p.name for p in folder.glob("*.ckpt")) == ["epoch=0-step=30.ckpt", "last.ckpt"]
    last = ember.checkpoint.load_checkpoint(folder / "last.ckpt")
    assert last["progress"]["global_step"] == 40 and last["hyper_parameters"]["lr"] == 0.05

    resumed = ember_cli("fit", "--config", str(CONFIG), "--epochs", "2", "--lr", "0.05", "--resume", *short)
    assert resumed.returncode == 0, resumed.stderr
    assert not (tmp_path / "lightning_logs" / "version_1").exists()  # the resumed run continues its folder
    assert ember.checkpoint.load_checkpoint(folder / "last.ckpt")["progress"]["global_step"] == 80
    assert "test accuracy: " in resumed.stdout


# ---- one line for every bad config or flag; a class is checked before it is called ----------------
import pytest  # noqa: E402

PAYLOAD = """
import pathlib
class Payload:
    def __init__(self, *args, **kwargs):
        pathlib.Path({marker!r}).write_text("called")
"""


def fit_in_process(capsys, *args):
    """`ember fit ...` in this process: (exit code, stderr)."""
    from ember.cli import main

    try:
        main(["fit", *map(str, args)])
        code = 0
    except SystemExit as e:
        code = e.code
    return code, capsys.readouterr().err


def one_line(err, *parts):
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ember"), err
    for part in parts:
        assert part in lines[0], lines[0]


@pytest.mark.parametrize("section", ["model", "data", "callbacks", "logger"])
def test_a_class_path_of_the_wrong_kind_is_refused_before_it_is_called(section, tmp_path, capsys):
    import yaml

    marker = tmp_path / "payload-ran"
    (tmp_path / "payload.py").write_text(PAYLOAD.format(marker=str(marker)))
    popen = {"class_path": "subprocess.Popen", "init_args": {"args": ["touch", str(marker)]}}
    payload = {"class_path": "payload.py:Payload"}
    model = {"class_path": f"{REPO}/examples/fashion_mnist/model.py:ClassicNet"}
    place = {
        "model": lambda c: {"model": c},
        "data": lambda c: {"model": model, "data": c},
        "callbacks": lambda c: {"model": model, "trainer": {"callbacks": [c]}},
        "logger": lambda c: {"model": model, "trainer": {"logger": c}},
    }[section]
    expected = {
        "model": "not an ember.Module",
        "data": "not an ember.DataModule",
        "callbacks": "not an ember.Callback",
        "logger": "not an ember.loggers.Logger",
    }[section]
    for wrong in (popen, payload):
        (tmp_path / "config.yaml").write_text(yaml.safe_dump(place(wrong)))
        code, err = fit_in_process(capsys, "--config", tmp_path / "config.yaml", "--root-dir", tmp_path)
        assert code == 2
        one_line(err, "subprocess.Popen is" if wrong is popen else "is _ember_user_payload", expected)
    assert not marker.exists(), "the class was called before its kind was checked"


def test_trainer_callbacks_given_by_class_path_are_built(tmp_path, capsys):
    """LightningCLI's form works: trainer.callbacks entries with class_path + init_args become real
    callbacks."""
    from ember.callbacks import EarlyStopping
    from ember.cli import LightningCLI

    (tmp_path / "c.yaml").write_text(
        "trainer:\n  callbacks:\n  - class_path: ember.callbacks.EarlyStopping\n"
        "    init_args: {monitor: val_loss, patience: 2}\n"
    )
    cli = LightningCLI(
        subclass_mode_model=True,
        run=False,
        args=[
            "--config",
            str(tmp_path / "c.yaml"),
            "--model",
            f"{REPO}/examples/fashion_mnist/model.py:ClassicNet",
        ],
    )
    built = [cb for cb in cli.trainer.callbacks if isinstance(cb, EarlyStopping)]
    assert len(built) == 1 and built[0].patience == 2 and built[0].monitor == "val_loss"


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["--lr", "-5"], "argument --lr: -5 is out of range: use a positive number"),
        (["--lr", "fast"], "argument --lr: 'fast' is not a positive number"),
        (["--batch-size", "0"], "argument --batch-size: 0 is out of range: use a positive whole number"),
        (["--epochs", "-1"], "argument --epochs: -1 is out of range"),
        (["--set", "model.init_args.lr=fast"], "model.init_args.lr='fast': expected a float"),
        (["--model.init_args.lr", "fast"], "model.init_args.lr='fast': expected a float"),
        (
            ["--set", "model.init_args.lr=-5"],
            "model.init_args.lr=-5.0: the learning rate must be a positive number",
        ),
        (
            ["--set", "data.init_args.batch_size=0"],
            "data.init_args.batch_size=0: use a positive number of samples",
        ),
    ],
)
def test_bad_flags_are_one_line(flags, expected, tmp_path, capsys):
    code, err = fit_in_process(capsys, "--config", CONFIG, "--root-dir", tmp_path, *flags)
    assert code == 2
    one_line(err, expected)
    assert not (tmp_path / "lightning_logs").exists()  # refused before anything ran


def test_binary_unreadable_or_folder_configs_are_one_line(tmp_path, capsys):
    binary = tmp_path / "model.ckpt"
    binary.write_bytes(bytes(range(256)) * 4)
    code, err = fit_in_process(capsys, "--config", binary)
    assert code == 2
    one_line(err, f"{binary} is not a text file (not UTF-8 YAML)")

    code, err = fit_in_process(capsys, "--config", tmp_path)
    one_line(err, f"config file {tmp_path} is a folder")

    locked = tmp_path / "locked.yaml"
    locked.write_text("model: {}\n")
    locked.chmod(0)
    try:
        command = [sys.executable, "-m", "ember.cli", "fit", "--config", str(locked)]
        if os.geteuid() == 0:  # root reads any file: drop the capabilities that let it (a real process)
            import shutil

            if shutil.which("setpriv") is None:
                pytest.skip(
                    "running as root without setpriv: chmod 0 cannot stop root from reading the config"
                )
            command = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=REPO)
        assert done.returncode == 2
        one_line(done.stderr, f"cannot read config file {locked}: permission denied")
    finally:
        locked.chmod(0o600)
