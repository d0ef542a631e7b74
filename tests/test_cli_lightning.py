"""A config printed by real Lightning's `LightningCLI --print_config` runs with `ember fit --config`;
`ember.cli.LightningCLI` takes LightningCLI's constructor arguments and saves the run's config."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import ember
from tests._cli_models import LIGHTNING_TWIN, DigitsClassifier, DigitsData

REPO = Path(__file__).parents[1]
ONE_PROCESS = REPO / "tests" / "cli" / "_one_process.py"


def run(*command: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    return subprocess.run(list(command), capture_output=True, text=True, timeout=300, cwd=cwd, env=env)


PRINT_CONFIG = {
    "digits": [
        "fit",
        "--print_config",
        "--model",
        "DigitsClassifier",
        "--data",
        "DigitsData",
        "--model.lr",
        "0.05",
        "--trainer.max_epochs",
        "2",
        "--optimizer",
        "Adam",
        "--optimizer.lr",
        "0.01",
    ],
    "early_stopping": [
        "fit",
        "--print_config",
        "--model",
        "DigitsClassifier",
        "--trainer.callbacks+=EarlyStopping",
        "--trainer.callbacks.monitor",
        "val_acc",
    ],
}


@pytest.fixture(scope="module")
def printed_by_lightning(tmp_path_factory) -> dict[str, subprocess.CompletedProcess]:
    """Real Lightning's `python twin.py fit --print_config ...` for each command line of PRINT_CONFIG, all run
    in one process (tests/cli/_one_process.py: each run as `python twin.py ...` would, its own argv, output
    and exit code), since importing Lightning costs ~8 s of CPU per process; each test reads its own."""
    pytest.importorskip("lightning", reason="Lightning is a test-only dependency: pip install 'ember[dev]'")
    folder = tmp_path_factory.mktemp("lightning_twin")
    (folder / "twin.py").write_text(LIGHTNING_TWIN)
    names = list(PRINT_CONFIG)
    done = run(
        sys.executable,
        str(ONE_PROCESS),
        "twin.py",
        "runs.json",
        json.dumps([PRINT_CONFIG[name] for name in names]),
        cwd=folder,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    ran = json.loads((folder / "runs.json").read_text())
    return {
        name: subprocess.CompletedProcess(["twin.py", *PRINT_CONFIG[name]], code, out, err)
        for name, (code, out, err) in zip(names, ran, strict=True)
    }


@pytest.mark.slow
def test_a_config_printed_by_lightning_runs_with_ember_fit(tmp_path, printed_by_lightning):
    printed = printed_by_lightning["digits"]
    assert printed.returncode == 0, printed.stderr
    config = yaml.safe_load(printed.stdout)
    assert (
        config["seed_everything"] is True and config["trainer"]["barebones"] is False
    )  # Lightning's own layout
    # the one edit: the class paths point at the equivalent ember classes
    config["model"]["class_path"] = "tests._cli_models.DigitsClassifier"
    config["data"]["class_path"] = "tests._cli_models.DigitsData"
    (tmp_path / "ported.yaml").write_text(yaml.safe_dump(config, sort_keys=False))

    done = run(
        sys.executable,
        "-m",
        "ember.cli",
        "fit",
        "--config",
        str(tmp_path / "ported.yaml"),
        "--trainer.default_root_dir",
        str(tmp_path / "runs"),
        "--trainer.enable_progress_bar",
        "false",
    )
    assert done.returncode == 0, done.stderr
    assert "configure_optimizers is replaced by the config's optimizer" in done.stderr  # as Lightning warns

    folder = tmp_path / "runs" / "lightning_logs" / "version_0"
    # Lightning's default checkpoint: one file named by epoch and step (no last.ckpt)
    assert [p.name for p in (folder / "checkpoints").iterdir()] == ["epoch=1-step=48.ckpt"]
    last = ember.checkpoint.load_checkpoint(folder / "checkpoints" / "epoch=1-step=48.ckpt")
    assert last["progress"]["global_step"] == 2 * 24  # 2 epochs of ceil(1500 / 64) batches
    assert last["hyper_parameters"] == {"hidden": 32, "lr": 0.05}
    assert (
        "Adam" in str(last["optimizer_types"])
        and last["optimizer_states"][0]["param_groups"][0]["lr"] == 0.01
    )
    saved = yaml.safe_load((folder / "config.yaml").read_text())
    assert isinstance(
        saved["seed_everything"], int
    )  # true became the seed it drew, so the file reproduces the run
    assert (
        saved["model"]["init_args"]["lr"] == 0.05 and saved["optimizer"]["class_path"] == "torch.optim.Adam"
    )


@pytest.mark.slow
def test_lightning_classes_in_a_printed_config_are_refused_by_name(tmp_path, printed_by_lightning):
    printed = printed_by_lightning["early_stopping"]
    assert printed.returncode == 0, printed.stderr
    config = yaml.safe_load(printed.stdout)
    config["model"]["class_path"] = "tests._cli_models.DigitsClassifier"
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
    done = run(sys.executable, "-m", "ember.cli", "fit", "--config", str(tmp_path / "c.yaml"))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "ember fit: error: trainer.callbacks[0]: lightning.pytorch.callbacks.EarlyStopping is Lightning's "
        "class; write ember.callbacks.EarlyStopping (ember does not import Lightning)"
    ]
    # (every option of Lightning 2.6's Trainer is ember's own now: none is left to refuse by name)


# ---- ember.cli.LightningCLI in a user's script ---------------------------------------------------
def quiet(tmp_path, *more: str) -> list[str]:
    return [
        "--trainer.default_root_dir",
        str(tmp_path),
        "--trainer.enable_progress_bar",
        "false",
        "--trainer.enable_model_summary",
        "false",
        *more,
    ]


def test_lightning_cli_run_false_builds_what_the_arguments_say(tmp_path):
    from ember.cli import LightningCLI

    cli = LightningCLI(
        DigitsClassifier,
        DigitsData,
        run=False,
        seed_everything_default=7,
        trainer_defaults={"max_epochs": 5},
        args=quiet(tmp_path, "--model.lr", "0.3", "--data.batch_size", "16"),
    )
    assert isinstance(cli.model, DigitsClassifier) and cli.model.hparams.lr == 0.3
    assert isinstance(cli.datamodule, DigitsData) and cli.datamodule.batch_size == 16
    assert isinstance(cli.trainer, ember.Trainer) and cli.trainer.max_epochs == 5  # trainer_defaults
    assert cli.config.seed_everything == 7 and cli.config.model.lr == 0.3


def test_lightning_cli_refuses_arguments_it_does_not_take_by_name():
    from ember.cli import LightningCLI

    with pytest.raises(
        ember.ConfigError, match="parser_class=<class 'object'>: pass ember.cli.LightningArgumentParser"
    ):
        LightningCLI(DigitsClassifier, parser_class=object, args=[])
    with pytest.raises(ember.ConfigError, match="did you mean 'subclass_mode_model'"):
        LightningCLI(DigitsClassifier, subclass_mode_modle=True, args=[])


def test_lightning_cli_fit_saves_the_config_and_never_overwrites_it_unasked(tmp_path, capsys):
    from ember.cli import LightningCLI

    # a logger with a fixed version: every fit of this config writes into the same run folder
    logger = [
        "--trainer.logger",
        "ember.loggers.CSVLogger",
        "--trainer.logger.save_dir",
        str(tmp_path),
        "--trainer.logger.version",
        "fixed",
    ]
    args = [
        "fit",
        *quiet(
            tmp_path,
            "--trainer.max_epochs",
            "1",
            "--trainer.limit_train_batches",
            "3",
            "--seed_everything",
            "3",
            *logger,
        ),
    ]
    LightningCLI(DigitsClassifier, DigitsData, args=args)
    saved = tmp_path / "lightning_logs" / "fixed" / "config.yaml"
    first = saved.read_text()
    assert (
        yaml.safe_load(first)["trainer"]["max_epochs"] == 1 and yaml.safe_load(first)["seed_everything"] == 3
    )

    # as Lightning: a config.yaml already there stops the next run before it trains (a RuntimeError)
    for again in (args, [*args, "--model.lr", "0.2"], [*args, "--ckpt_path", "last"]):
        with pytest.raises(RuntimeError, match="config.yaml to NOT exist. Aborting to avoid overwriting"):
            LightningCLI(DigitsClassifier, DigitsData, args=again)
        assert saved.read_text() == first
    # a fresh fit never appends to an earlier run's metrics.csv (docs/safety.md): the user removes it first
    (saved.parent / "metrics.csv").unlink()
    LightningCLI(
        DigitsClassifier,
        DigitsData,
        args=[*args, "--model.lr", "0.2"],
        save_config_kwargs={"overwrite": True},
    )
    assert yaml.safe_load(saved.read_text())["model"]["lr"] == 0.2
