"""`ember fit | validate | test` parsing, on jsonargparse: LightningCLI's layout, --print_config, several
--config files, dotted overrides, typos answered with the closest name, one-line errors, a fast --help."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).parents[1]
CONFIG = REPO / "examples" / "fashion_mnist" / "config.yaml"
TINY = {
    "model": {"class_path": "tests._cli_models.DigitsClassifier"},
    "data": {"class_path": "tests._cli_models.DigitsData"},
}


def ember(capsys, *args):
    """`ember ...` in this process: (exit code, stdout, stderr)."""
    from ember.cli import main

    try:
        main([str(a) for a in args])
        code = 0
    except SystemExit as e:
        code = e.code
    out = capsys.readouterr()
    return code, out.out, out.err


def printed(capsys, *args) -> dict:
    code, out, err = ember(capsys, "fit", *args, "--print_config")
    assert code == 0, err
    return yaml.safe_load(out)


def error_line(capsys, *args) -> str:
    code, out, err = ember(capsys, *args)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err
    return lines[0]


def write(path: Path, data: dict) -> Path:
    path.write_text(yaml.safe_dump(data))
    return path


def test_print_config_is_the_full_config_in_lightnings_layout_and_runs_back(tmp_path, capsys):
    config = printed(capsys, "--config", CONFIG)
    assert list(config)[:4] == ["seed_everything", "trainer", "model", "data"]
    assert {"optimizer", "lr_scheduler", "ckpt_path"} <= set(config)
    assert config["seed_everything"] == 1 and config["trainer"]["max_epochs"] == 3
    assert "log_every_n_steps" in config["trainer"]  # defaults included, as Lightning prints them
    assert config["trainer"]["log_every_n_steps"] is None  # Lightning's default (None: every 50 steps)
    assert config["model"] == {
        "class_path": f"{REPO}/examples/fashion_mnist/model.py:ClassicNet",
        "init_args": {"lr": 0.01, "momentum": 0.5},
    }
    assert config["checkpoint"] == {"every_n_train_steps": 200} and config["test_after_fit"] is True
    again = printed(capsys, "--config", write(tmp_path / "printed.yaml", config))
    assert again == config


def test_several_configs_and_dotted_overrides_later_ones_win(tmp_path, capsys):
    first = write(tmp_path / "a.yaml", {**TINY, "trainer": {"max_epochs": 4, "max_steps": 9}})
    second = write(tmp_path / "b.yaml", {"trainer": {"max_epochs": 6}, "model": {"init_args": {"hidden": 8}}})
    config = printed(
        capsys,
        "--config",
        first,
        "--config",
        second,
        "--model.init_args.lr",
        "0.3",
        "--trainer.accumulate_grad_batches",
        "2",
    )
    assert config["trainer"]["max_epochs"] == 6 and config["trainer"]["max_steps"] == 9
    assert config["model"]["init_args"] == {"hidden": 8, "lr": 0.3}
    assert config["trainer"]["accumulate_grad_batches"] == 2
    config = printed(capsys, "--trainer.max_epochs", "2", "--config", first, "--model.lr", "0.1")
    assert (
        config["trainer"]["max_epochs"] == 4
    )  # a config given after an option overrides it, as in Lightning
    assert config["model"]["init_args"]["lr"] == 0.1  # --model.lr: jsonargparse's short form of init_args


def test_the_classic_flags_are_aliases_of_the_dotted_options(capsys):
    config = printed(
        capsys,
        "--config",
        CONFIG,
        "--epochs",
        "2",
        "--lr",
        "0.05",
        "--momentum",
        "0.9",
        "--batch-size",
        "32",
        "--seed",
        "4",
        "--save-interval",
        "15",
        "--no-cuda",
        "--resume",
        "--set",
        "trainer.max_steps=100",
    )
    assert config["trainer"]["max_epochs"] == 2 and config["trainer"]["accelerator"] == "cpu"
    assert config["model"]["init_args"] == {"lr": 0.05, "momentum": 0.9}
    assert config["data"]["init_args"]["batch_size"] == 32 and config["seed_everything"] == 4
    assert config["checkpoint"]["every_n_train_steps"] == 15 and config["ckpt_path"] == "last"
    assert config["trainer"]["max_steps"] == 100


def test_optimizer_and_lr_scheduler_sections(capsys):
    config = printed(
        capsys,
        "--config",
        CONFIG,
        "--optimizer",
        "Adam",
        "--optimizer.lr",
        "0.002",
        "--lr_scheduler",
        "StepLR",
        "--lr_scheduler.step_size",
        "3",
    )
    assert (
        config["optimizer"]["class_path"] == "torch.optim.Adam"
        and config["optimizer"]["init_args"]["lr"] == 0.002
    )
    assert config["lr_scheduler"]["class_path"] == "torch.optim.lr_scheduler.StepLR"
    assert config["lr_scheduler"]["init_args"]["step_size"] == 3


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["--trainer.max_epoch", "3"],
            "unknown option --trainer.max_epoch; did you mean --trainer.max_epochs?",
        ),
        (
            ["--model.init_args.lrr", "3"],
            "model.init_args.lrr: ClassicNet has no argument 'lrr'; did you mean 'lr'?",
        ),
        (["--trainer.max_epochs", "many"], "trainer.max_epochs='many': expected int or null"),
        (
            ["--model", "subprocess.Popen"],
            "model: subprocess.Popen is not an ember.Module subclass; point it at one",
        ),
        (
            ["--trainer.callbacks+=subprocess.Popen"],
            "trainer.callbacks: subprocess.Popen is not an ember.Callback",
        ),
        (["--lr", "-5"], "argument --lr: -5 is out of range: use a positive number"),
    ],
)
def test_mistakes_on_the_command_line_are_one_line_with_the_closest_name(args, expected, capsys):
    assert expected in error_line(capsys, "fit", "--config", CONFIG, *args, "--print_config")


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (
            {**TINY, "trainer": {"max_epoch": 3}},
            "unknown key 'trainer.max_epoch' in the config; did you mean 'trainer.max_epochs'?",
        ),
        (
            {**TINY, "trainr": {"max_epochs": 1}},
            "unknown key 'trainr' in the config; did you mean 'trainer'?",
        ),
        (
            {"model": {"class_path": "tests._cli_models.DigitsClassifier", "init_args": {"hiden": 3}}},
            "model.init_args.hiden: DigitsClassifier has no argument 'hiden'; did you mean 'hidden'?",
        ),
        (
            {**TINY, "trainer": {"logger": {"class_path": "lightning.pytorch.loggers.CSVLogger"}}},
            (
                "trainer.logger: lightning.pytorch.loggers.CSVLogger "
                "is Lightning's class; write ember.loggers.CSVLogger"
            ),
        ),
        ({"seed": 1, "seed_everything": 2, **TINY}, "sets both seed and seed_everything"),
    ],
)
def test_mistakes_in_a_config_are_one_line_with_the_closest_name(config, expected, tmp_path, capsys):
    line = error_line(capsys, "fit", "--config", write(tmp_path / "c.yaml", config), "--print_config")
    assert line.startswith("ember fit: error: ") and expected in line


def test_lightning_only_options_at_lightnings_defaults_are_accepted(tmp_path, capsys):
    inert = {
        "model_registry": None,
        "sync_batchnorm": False,
        "plugins": None,
        "inference_mode": True,
        "precision": None,
        "num_sanity_val_steps": None,
        "log_every_n_steps": None,
        "barebones": False,
        "num_nodes": 1,
    }
    config = printed(capsys, "--config", write(tmp_path / "c.yaml", {**TINY, "trainer": inert}))
    assert config["trainer"]["model_registry"] is None  # ember's own option now (checked when a run starts)
    assert config["trainer"]["sync_batchnorm"] is False  # ember's own option now
    assert config["trainer"]["plugins"] is None  # ember's own option now (a cluster environment plugin)
    # ember's own options now (None = Lightning's default, resolved by the Trainer itself): kept as written
    assert config["trainer"]["barebones"] is False and config["trainer"]["num_nodes"] == 1
    assert config["trainer"]["precision"] is None and config["trainer"]["log_every_n_steps"] is None


def test_lightning_only_options_are_only_those_ember_lacks():
    from ember.cli.trainer_options import LIGHTNING_ONLY_TRAINER_OPTIONS, trainer_options

    assert not set(LIGHTNING_ONLY_TRAINER_OPTIONS) & {option.name for option in trainer_options()}


def test_help_shows_defaults_without_importing_torch():
    script = (
        "import sys, time; t = time.perf_counter(); from ember.cli import main\n"
        "main(['fit', '--help']); print('SECONDS', time.perf_counter() - t)\n"
        "print('TORCH', 'torch' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 0, done.stderr
    assert "TORCH False" in done.stdout  # what makes it fast: no torch, no Trainer import
    assert "--trainer.log_every_n_steps LOG_EVERY_N_STEPS" in done.stdout and "default: null)" in done.stdout
    assert "--epochs N        --trainer.max_epochs N" in done.stdout  # the classic flags, listed
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "ember.cli", "predict", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 0 and "--batch-size N" in done.stdout and "default: 256" in done.stdout
    assert time.perf_counter() - started < 30  # generous: a loaded 2-core machine; the report has the figure


def test_unknown_command_and_no_command(capsys):
    assert "unknown command 'fti'; did you mean 'fit'?" in error_line(capsys, "fti")
    code, out, _ = ember(capsys)
    assert code == 2 and "fit" in out and "predict" in out


def test_import_ember_does_not_import_the_command_line_library():
    script = (
        "import sys, ember; ember.Trainer, ember.Module; "
        "print(sorted(m for m in sys.modules if 'jsonargparse' in m))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stdout + done.stderr
