"""ember.cli.LightningCLI against Lightning 2.6.6's, scenario by scenario (issue 13; the "Configure
hyperparameters from the CLI" pages: basic, intermediate, advanced, expert).

Each scenario is one function of a `Side` — Lightning's `lightning.pytorch.cli` with the models of
tests/cli/lightning_models.py, or `ember.cli` with the same models on ember (tests/cli/ember_models.py) —
that runs the same code and returns what a user observes: parsed values, `cli.config`, the built model,
data and Trainer, the saved config.yaml, printed `--print_config` YAML, help mentions, exit codes. The
test runs every scenario on both and asserts the observations are equal, after writing the two
libraries' class paths the same way (`tests.cli.lightning_models.DemoModel` and
`tests.cli.ember_models.DemoModel` are both `M.DemoModel`).
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import os
import subprocess
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch
import yaml

pytest.importorskip("lightning.pytorch")

REPO = Path(__file__).parents[2]
ONE_PROCESS = Path(__file__).parent / "_one_process.py"
#: Trainer options one library has and the other has not (compared apart, in test_trainer_option_names).
LIGHTNING_ONLY: set[str] = set()
EMBER_ONLY = {"compile", "stop_on_nan"}


@dataclass
class Side:
    name: str
    cli: ModuleType  # lightning.pytorch.cli or ember.cli
    models: ModuleType  # tests.cli.lightning_models or tests.cli.ember_models
    L: ModuleType  # lightning.pytorch or ember
    callbacks: ModuleType
    loggers: ModuleType


def side(name: str) -> Side:
    if name == "lightning":
        return Side(
            name,
            importlib.import_module("lightning.pytorch.cli"),
            importlib.import_module("tests.cli.lightning_models"),
            importlib.import_module("lightning.pytorch"),
            importlib.import_module("lightning.pytorch.callbacks"),
            importlib.import_module("lightning.pytorch.loggers"),
        )
    return Side(
        name,
        importlib.import_module("ember.cli"),
        importlib.import_module("tests.cli.ember_models"),
        importlib.import_module("ember"),
        importlib.import_module("ember.callbacks"),
        importlib.import_module("ember.loggers"),
    )


def normal(value: Any) -> Any:
    """`value` with the two libraries' class paths written the same way, tuples as lists, floats rounded."""
    if isinstance(value, dict) or hasattr(value, "as_dict"):
        value = value.as_dict() if hasattr(value, "as_dict") else value
        return {k: normal(v) for k, v in value.items() if k != "__path__"}
    if isinstance(value, (list, tuple)):
        return [normal(v) for v in value]
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, str):
        value = value.replace(str(Path.cwd()), "ROOT")  # each library's scenario runs in its own folder
        for prefix in ("tests.cli.lightning_models.", "tests.cli.ember_models."):
            value = value.replace(prefix, "M.")
        for package in ("lightning.pytorch.", "ember."):
            for module in ("callbacks.", "loggers.", "cli."):
                value = value.replace(package + module, module)
        return value.replace("lightning_logs", "LOGS")
    return value


def common(config: Any) -> Any:
    """A config as plain data, the Trainer options only one library has left out."""
    config = normal(config)
    for section in [config, *[v for k, v in config.items() if k in ("fit", "validate", "test", "predict")]]:
        if isinstance(section, dict) and isinstance(section.get("trainer"), dict):
            section["trainer"] = {
                k: v for k, v in section["trainer"].items() if k not in LIGHTNING_ONLY | EMBER_ONLY
            }
    config.pop("config", None)
    return config


@dataclass
class Ran:
    cli: Any
    code: int | None  # SystemExit's code; None when the CLI returned
    out: str
    err: str
    error: BaseException | None = None


def run(S: Side, *args: Any, **kwargs: Any) -> Ran:
    """`S.cli.LightningCLI(*args, **kwargs)` with stdout/stderr captured and SystemExit caught."""
    out, err = io.StringIO(), io.StringIO()
    cli, code, error = None, None, None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            cli = S.cli.LightningCLI(*args, **kwargs)
        except SystemExit as e:
            code, error = e.code, e
    return Ran(cli, code, out.getvalue(), err.getvalue(), error)


def quiet(root: Path, *more: str) -> list[str]:
    return [
        "--trainer.default_root_dir",
        str(root),
        "--trainer.enable_progress_bar",
        "false",
        "--trainer.enable_model_summary",
        "false",
        "--trainer.logger",
        "false",
        "--trainer.accelerator",
        "cpu",
        *more,
    ]


def both(scenario, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run `scenario(S, root)` on Lightning and on ember; their observations must be equal."""
    seen = {}
    for name in ("lightning", "ember"):
        for variable in ("PL_GLOBAL_SEED", "EMBER_GLOBAL_SEED"):
            monkeypatch.delenv(variable, raising=False)
        root = tmp_path / name
        root.mkdir()
        monkeypatch.chdir(root)
        seen[name] = scenario(side(name), root)
    assert seen["ember"] == seen["lightning"]


# ---- basic: subcommands, --help, --print_config, --config, overrides, seed, saved config ----------------
def printed_config(S: Side, root: Path) -> Any:
    ran = run(
        S,
        S.models.DemoModel,
        S.models.DemoData,
        args=["fit", "--print_config", "--model.hidden", "8", "--trainer.max_epochs", "3"],
    )
    return ran.code, common(yaml.safe_load(ran.out))


def printed_config_subclass_mode(S: Side, root: Path) -> Any:
    ran = run(
        S,
        args=[
            "fit",
            "--model=OtherModel",
            "--data=BigData",
            "--optimizer=Adam",
            "--optimizer.lr=0.01",
            "--lr_scheduler=StepLR",
            "--lr_scheduler.step_size=2",
            "--print_config",
        ],
    )
    return ran.code, common(yaml.safe_load(ran.out))


def printed_config_skip_null(S: Side, root: Path) -> Any:
    ran = run(S, S.models.DemoModel, args=["validate", "--print_config=skip_null"])
    return ran.code, common(yaml.safe_load(ran.out))


def configs_merge_in_order(S: Side, root: Path) -> Any:
    (root / "a.yaml").write_text("trainer:\n  max_epochs: 5\n  limit_train_batches: 3\nmodel:\n  hidden: 4\n")
    (root / "b.yaml").write_text("trainer:\n  max_epochs: 7\nmodel:\n  learning_rate: 0.5\n")
    ran = run(
        S,
        S.models.DemoModel,
        S.models.DemoData,
        run=False,
        args=["--config", "a.yaml", "--model.hidden", "6", "--config", "b.yaml", "--data.batch_size", "8"],
    )
    config = ran.cli.config
    return (
        config.trainer.max_epochs,
        config.trainer.limit_train_batches,
        normal(config.model),
        normal(config.data),
        ran.cli.trainer.max_epochs,
        ran.cli.datamodule.batch_size,
    )


def config_before_the_subcommand(S: Side, root: Path) -> Any:
    """The docs' "customize arguments by subcommand": `main.py
    --config config.yaml fit` reads its fit: section."""
    (root / "config.yaml").write_text(
        "fit:\n  trainer:\n    max_steps: 100\n  model:\n    hidden: 4\n"
        "test:\n  trainer:\n    max_epochs: 10\n"
    )
    seen = []
    for subcommand in ("fit", "test"):
        ran = run(
            S,
            S.models.DemoModel,
            args=["--config", "config.yaml", subcommand, "--model.learning_rate", "0.3", "--print_config"],
        )
        printed = yaml.safe_load(ran.out)
        seen.append(
            (ran.code, printed["trainer"]["max_steps"], printed["trainer"]["max_epochs"], printed["model"])
        )
    over = run(
        S,
        S.models.DemoModel,
        args=["--config=config.yaml", "fit", "--trainer.max_steps", "7", "--print_config"],
    )
    return seen, yaml.safe_load(over.out)["trainer"]["max_steps"]


def group_configs(S: Side, root: Path) -> Any:
    """The docs' groups of options as their own configs: `fit --trainer trainer.yaml --model model.yaml`."""
    (root / "trainer.yaml").write_text("max_epochs: 4\nlimit_train_batches: 2\n")
    (root / "model.yaml").write_text("hidden: 7\n")
    ran = run(
        S,
        S.models.DemoModel,
        args=[
            "fit",
            "--trainer",
            "trainer.yaml",
            "--model",
            "model.yaml",
            "--trainer",
            '{"max_steps": 3}',
            "--print_config",
        ],
    )
    printed = yaml.safe_load(ran.out)
    return ran.code, common(printed)["trainer"], printed["model"]


def subcommand_config_layout(S: Side, root: Path) -> Any:
    (root / "fit.yaml").write_text(
        "trainer:\n  max_epochs: 1\n  limit_train_batches: 2\n  limit_val_batches: 1\n"
    )
    ran = run(S, S.models.DemoModel, S.models.DemoData, args=["fit", "-c", "fit.yaml", *quiet(root)])
    config = ran.cli.config
    return (
        ran.code,
        config.subcommand,
        sorted(k for k in vars(config) if k != "config"),
        config.fit.trainer.max_epochs,
        ran.cli.trainer.global_step,
        ran.cli.trainer.current_epoch,
    )


def seed_everything(S: Side, root: Path) -> Any:
    seen = []
    for given in (["--seed_everything", "42"], ["--seed_everything", "false"], []):
        ran = run(S, S.models.DemoModel, run=False, args=given)
        seen.append((ran.cli.config.seed_everything, torch.initial_seed() if given[-1:] == ["42"] else None))
    ran = run(S, S.models.DemoModel, run=False, seed_everything_default=7, args=[])
    seen.append(ran.cli.config.seed_everything)
    ran = run(S, S.models.DemoModel, run=False, seed_everything_default=False, args=[])
    seen.append(ran.cli.config.seed_everything)
    return seen


def fit_saves_config(S: Side, root: Path) -> Any:
    args = [
        "fit",
        *quiet(
            root,
            "--trainer.max_epochs",
            "1",
            "--trainer.limit_train_batches",
            "2",
            "--trainer.limit_val_batches",
            "1",
            "--seed_everything",
            "3",
            "--model.hidden",
            "4",
        ),
    ]
    ran = run(S, S.models.DemoModel, S.models.DemoData, args=args)
    saved = yaml.safe_load((Path(ran.cli.trainer.log_dir) / "config.yaml").read_text())
    # a second run into the same folder: refused before it trains, the file untouched
    again = root / "again"
    try:
        S.cli.LightningCLI(S.models.DemoModel, S.models.DemoData, args=[*args, "--model.hidden", "5"])
        refused = None
    except RuntimeError as e:
        refused = "to NOT exist" in str(e) and "overwrite" in str(e)
    kept = yaml.safe_load((Path(ran.cli.trainer.log_dir) / "config.yaml").read_text())["model"]["hidden"]
    run(
        S,
        S.models.DemoModel,
        S.models.DemoData,
        args=[*args, "--model.hidden", "6"],
        save_config_kwargs={"overwrite": True},
    )
    replaced = yaml.safe_load((Path(ran.cli.trainer.log_dir) / "config.yaml").read_text())["model"]["hidden"]
    run(
        S,
        S.models.DemoModel,
        S.models.DemoData,
        args=[*args, "--model.hidden", "7"],
        save_config_callback=None,
        save_config_kwargs={"config_filename": "never.yaml"},
    )
    named = run(
        S,
        S.models.DemoModel,
        S.models.DemoData,
        args=[*quiet(again)[0:0], *args, "--model.hidden", "8", "--trainer.default_root_dir", str(again)],
        save_config_kwargs={"config_filename": "run.yaml"},
    )
    return (
        Path(ran.cli.trainer.log_dir) == root,
        common(saved),
        refused,
        kept,
        replaced,
        sorted(p.name for p in root.iterdir() if p.suffix == ".yaml"),
        sorted(p.name for p in Path(named.cli.trainer.log_dir).iterdir() if p.suffix == ".yaml"),
    )


def save_config_elsewhere(S: Side, root: Path) -> Any:
    """A SaveConfigCallback subclass implementing save_config; save_to_log_dir=False saves nowhere else."""
    saved = []

    class SaveToList(S.cli.SaveConfigCallback):
        def save_config(self, trainer, pl_module, stage):
            saved.append((stage, self.config.model.hidden, type(pl_module).__name__))

    args = [
        "fit",
        *quiet(
            root,
            "--trainer.max_epochs",
            "1",
            "--trainer.limit_train_batches",
            "1",
            "--trainer.limit_val_batches",
            "0",
            "--model.hidden",
            "3",
        ),
    ]
    run(
        S,
        S.models.DemoModel,
        S.models.DemoData,
        save_config_callback=SaveToList,
        save_config_kwargs={"save_to_log_dir": False},
        args=args,
    )
    files = sorted(p.name for p in root.rglob("*.yaml"))
    try:
        S.cli.SaveConfigCallback(None, None, save_to_log_dir=False)
        refused = None
    except ValueError as e:
        refused = "only makes sense when subclassing SaveConfigCallback" in str(e)
    return saved, files, refused


def plateau_scheduler_by_short_name(S: Side, root: Path) -> Any:
    ran = run(
        S,
        S.models.NoOptimModel,
        run=False,
        args=[
            "--optimizer",
            "SGD",
            "--optimizer.lr",
            "0.1",
            "--lr_scheduler",
            "ReduceLROnPlateau",
            "--lr_scheduler.monitor",
            "val_loss",
        ],
    )
    if ran.cli is None:
        return ran.code
    returned = ran.cli.model.configure_optimizers()
    return normal(ran.cli.config.lr_scheduler.class_path), returned["lr_scheduler"]["monitor"]


def no_config_saved_with_fast_dev_run(S: Side, root: Path) -> Any:
    ran = run(
        S, S.models.DemoModel, S.models.DemoData, args=["fit", *quiet(root, "--trainer.fast_dev_run", "true")]
    )
    return ran.code, sorted(p.name for p in root.rglob("*.yaml")), ran.cli.trainer.global_step


def subcommands_run(S: Side, root: Path) -> Any:
    seen = {}
    for subcommand in ("validate", "test", "predict"):
        ran = run(
            S,
            S.models.DemoModel,
            S.models.DemoData,
            save_config_callback=None,
            args=[subcommand, *quiet(root, "--trainer.limit_test_batches", "1")],
        )
        seen[subcommand] = (
            ran.code,
            sorted(ran.cli.trainer.callback_metrics),
            sorted(k for k in vars(ran.cli.config[subcommand]) if k not in ("config", "trainer")),
        )
    return seen


def help_texts(S: Side, root: Path) -> Any:
    top = run(S, S.models.DemoModel, S.models.DemoData, args=["--help"])
    fit = run(S, S.models.DemoModel, S.models.DemoData, args=["fit", "--help"])
    mentioned = [
        "--trainer.max_epochs",
        "--trainer.callbacks",
        "--model.hidden",
        "--model.learning_rate",
        "--data.batch_size",
        "--optimizer",
        "--lr_scheduler",
        "--ckpt_path",
        "--seed_everything",
        "--print_config",
        "--config",
        "--trainer.limit_train_batches",
    ]
    return (
        top.code,
        [name in top.out for name in ("fit", "validate", "test", "predict")],
        fit.code,
        {name: name in fit.out for name in mentioned},
    )


def model_help(S: Side, root: Path) -> Any:
    ran = run(S, args=["fit", "--model.help", "OtherModel"])
    return ran.code, [f"--model.init_args.{n}" in ran.out for n in ("hidden", "learning_rate", "dropout")]


def abbreviated_options(S: Side, root: Path) -> Any:
    """argparse's prefix matching is on in Lightning's parser: an unambiguous prefix names the option."""
    cli = run(S, S.models.DemoModel, run=False, args=["--trainer.max_epoch", "3", "--model.hid", "5"]).cli
    ambiguous = run(S, S.models.DemoModel, run=False, args=["--trainer.limit", "3"])
    return cli.trainer.max_epochs, cli.model.hparams.hidden, ambiguous.code


def refused(S: Side, root: Path) -> Any:
    codes = {}
    for name, args in {
        "unknown option": ["fit", "--model.hiden", "4"],
        "wrong type": ["fit", "--trainer.max_epochs", "many"],
        "unknown subcommand": ["fitt"],
        "no subcommand": [],
        "unknown class": ["fit", "--model", "NoSuchModel"],
        "missing config file": ["fit", "--config", "missing.yaml"],
    }.items():
        ran = run(S, S.models.DemoModel if name != "unknown class" else None, args=args)
        codes[name] = (ran.code, ran.cli is None, bool(ran.err.strip()))
    return codes


# ---- intermediate: classes, subclass mode, dict configs,
# run=False, defaults, env ---------------------------
def run_false_then_fit(S: Side, root: Path) -> Any:
    ran = run(
        S,
        S.models.DemoModel,
        S.models.DemoData,
        run=False,
        trainer_defaults={"max_epochs": 2, "limit_train_batches": 2, "limit_val_batches": 1},
        args=[*quiet(root), "--model.hidden", "4", "--data.batch_size", "8"],
    )
    cli = ran.cli
    cli.trainer.fit(cli.model, datamodule=cli.datamodule)
    return (
        type(cli.model).__name__,
        cli.model.hparams.hidden,
        cli.datamodule.batch_size,
        cli.trainer.max_epochs,
        cli.trainer.global_step,
        cli.config.trainer.max_epochs,
        "subcommand" in cli.config,
        "ckpt_path" in cli.config,
    )


def subclass_mode(S: Side, root: Path) -> Any:
    seen = []
    for model in ("OtherModel", f"{S.models.__name__}.OtherModel"):
        ran = run(
            S,
            run=False,
            args=[f"--model={model}", "--model.dropout", "0.5", "--data=BigData", "--data.batch_size", "4"],
        )
        cli = ran.cli
        seen.append(
            (
                type(cli.model).__name__,
                type(cli.datamodule).__name__,
                cli.datamodule.batch_size,
                normal(cli.config.model),
                normal(cli.config.data),
            )
        )
    ran = run(
        S,
        S.models.DemoModel,
        S.models.DemoData,
        subclass_mode_model=True,
        subclass_mode_data=True,
        run=False,
        args=["--model", "OtherModel", "--data", "BigData"],
    )
    seen.append(
        (type(ran.cli.model).__name__, type(ran.cli.datamodule).__name__, normal(ran.cli.config.model))
    )
    ran = run(S, S.models.DemoModel, subclass_mode_model=True, run=False, args=[])  # the base class itself
    seen.append((ran.code, type(ran.cli.model).__name__ if ran.cli else None))
    return seen


def dict_configs(S: Side, root: Path) -> Any:
    cli = run(
        S,
        S.models.DemoModel,
        S.models.DemoData,
        run=False,
        args={"model": {"hidden": 3}, "trainer": {"max_epochs": 4}, "seed_everything": 5},
    ).cli
    fit = run(
        S,
        S.models.DemoModel,
        S.models.DemoData,
        save_config_callback=None,
        args={
            "fit": {
                "model": {"hidden": 2},
                "trainer": {
                    "max_epochs": 1,
                    "limit_train_batches": 1,
                    "limit_val_batches": 1,
                    "logger": False,
                    "enable_progress_bar": False,
                    "default_root_dir": str(root),
                },
            }
        },
    ).cli
    (root / "model.yaml").write_text("class_path: OtherModel\ninit_args:\n  hidden: 9\n")
    from_file = run(S, run=False, args=["--model", "model.yaml"]).cli
    inline = run(
        S, run=False, args=["--model", '{"class_path": "OtherModel", "init_args": {"dropout": 0.25}}']
    ).cli
    return (
        cli.model.hparams.hidden,
        cli.trainer.max_epochs,
        cli.config.seed_everything,
        fit.config.subcommand,
        fit.model.hparams.hidden,
        fit.trainer.global_step,
        normal(from_file.config.model),
        normal(inline.config.model),
    )


def parser_kwargs_default_config_files(S: Side, root: Path) -> Any:
    (root / "defaults.yaml").write_text("trainer:\n  max_epochs: 9\nmodel:\n  hidden: 5\n")
    run_false = run(
        S,
        S.models.DemoModel,
        run=False,
        parser_kwargs={"default_config_files": ["defaults.yaml"]},
        args=["--model.learning_rate", "0.2"],
    ).cli
    fit = run(
        S,
        S.models.DemoModel,
        parser_kwargs={"fit": {"default_config_files": ["defaults.yaml"]}},
        args=["fit", "--print_config"],
    )
    # the main parser's default configs, with a subcommand: its values under the subcommand's name
    (root / "main_defaults.yaml").write_text(
        "fit:\n  trainer:\n    max_epochs: 11\n  model:\n    hidden: 2\n"
    )
    main = run(
        S,
        S.models.DemoModel,
        parser_kwargs={"default_config_files": ["main_defaults.yaml"]},
        args=["fit", "--model.hidden", "3", "--print_config"],
    )
    return (
        run_false.config.trainer.max_epochs,
        normal(run_false.config.model),
        yaml.safe_load(fit.out)["trainer"]["max_epochs"],
        yaml.safe_load(fit.out)["model"],
        yaml.safe_load(main.out)["trainer"]["max_epochs"],
        yaml.safe_load(main.out)["model"],
    )


def environment_variables(S: Side, root: Path) -> Any:
    os.environ["PL_FIT__TRAINER__MAX_EPOCHS"] = "3"
    os.environ["PL_TRAINER__MAX_EPOCHS"] = "4"
    try:
        fit = run(
            S,
            S.models.DemoModel,
            parser_kwargs={"fit": {"default_env": True}},
            args=["fit", "--print_config"],
        )
        off = run(S, S.models.DemoModel, args=["fit", "--print_config"])
        main = run(S, S.models.DemoModel, parser_kwargs={"default_env": True}, args=["fit", "--print_config"])
        run_false = run(S, S.models.DemoModel, run=False, parser_kwargs={"default_env": True}, args=[]).cli
        given = run(
            S,
            S.models.DemoModel,
            parser_kwargs={"fit": {"default_env": True}},
            args=["fit", "--trainer.max_epochs", "8", "--print_config"],
        )
    finally:
        del os.environ["PL_FIT__TRAINER__MAX_EPOCHS"], os.environ["PL_TRAINER__MAX_EPOCHS"]
    helped = run(S, S.models.DemoModel, parser_kwargs={"default_env": True}, args=["fit", "--help"]).out
    names = ("PL_FIT__TRAINER__MAX_EPOCHS", "PL_FIT__MODEL__HIDDEN", "PL_FIT__CONFIG")
    return (
        [name in helped for name in names],
        yaml.safe_load(fit.out)["trainer"]["max_epochs"],
        yaml.safe_load(off.out)["trainer"]["max_epochs"],
        yaml.safe_load(main.out)["trainer"]["max_epochs"],
        run_false.config.trainer.max_epochs,
        yaml.safe_load(given.out)["trainer"]["max_epochs"],
    )


# ---- advanced / expert: optimizers, links, hooks, parser
# helpers, callbacks and loggers from config ---------
def optimizer_and_scheduler_from_cli(S: Side, root: Path) -> Any:
    seen = []
    for model in (S.models.NoOptimModel, S.models.DemoModel):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            cli = S.cli.LightningCLI(
                model,
                run=False,
                args=[
                    "--optimizer",
                    "Adam",
                    "--optimizer.lr",
                    "0.01",
                    "--lr_scheduler",
                    "StepLR",
                    "--lr_scheduler.step_size",
                    "3",
                ],
            )
        optimizers, schedulers = cli.model.configure_optimizers()
        overridden = [
            str(w.message) for w in caught if "configure_optimizers` will be overridden by" in str(w.message)
        ]
        seen.append(
            (
                type(optimizers[0]).__name__,
                optimizers[0].defaults["lr"],
                type(schedulers[0]).__name__,
                schedulers[0].step_size,
                len(overridden),
                normal(cli.config.optimizer),
            )
        )
    only = run(S, S.models.NoOptimModel, run=False, args=["--optimizer", "SGD", "--optimizer.lr", "0.3"]).cli
    built = only.model.configure_optimizers()
    seen.append((type(built).__name__, built.defaults["lr"]))
    plateau = run(
        S,
        S.models.NoOptimModel,
        run=False,
        args=[
            "--optimizer",
            "SGD",
            "--optimizer.lr",
            "0.3",
            "--lr_scheduler",
            f"{S.cli.__name__}.ReduceLROnPlateau",
            "--lr_scheduler.monitor",
            "val_loss",
            "--lr_scheduler.patience",
            "2",
        ],
    ).cli
    returned = plateau.model.configure_optimizers()
    seen.append(
        (
            sorted(returned),
            returned["lr_scheduler"]["monitor"],
            returned["lr_scheduler"]["scheduler"].patience,
        )
    )
    untouched = run(S, S.models.DemoModel, run=False, args=[]).cli
    seen.append(type(untouched.model.configure_optimizers()).__name__)
    return seen


def optimizer_trains(S: Side, root: Path) -> Any:
    ran = run(
        S,
        S.models.NoOptimModel,
        S.models.DemoData,
        save_config_callback=None,
        args=[
            "fit",
            *quiet(
                root,
                "--trainer.max_epochs",
                "2",
                "--trainer.limit_val_batches",
                "0",
                "--seed_everything",
                "1",
            ),
            "--optimizer",
            "SGD",
            "--optimizer.lr",
            "0.5",
            "--lr_scheduler",
            "StepLR",
            "--lr_scheduler.step_size",
            "1",
            "--lr_scheduler.gamma",
            "0.5",
        ],
    )
    optimizer = ran.cli.trainer.optimizers[0]
    return ran.code, ran.cli.trainer.global_step, optimizer.param_groups[0]["lr"]


def auto_configure_optimizers_off(S: Side, root: Path) -> Any:
    ran = run(S, S.models.DemoModel, run=False, auto_configure_optimizers=False, args=["--optimizer", "Adam"])
    plain = run(S, S.models.DemoModel, run=False, auto_configure_optimizers=False, args=["--print_config"])
    return ran.code, sorted(yaml.safe_load(plain.out))


def linked_and_custom_arguments(S: Side, root: Path) -> Any:
    import torch

    class MyCLI(S.cli.LightningCLI):
        def add_arguments_to_parser(self, parser):
            parser.link_arguments("data.batch_size", "model.hidden")  # on parse
            parser.link_arguments("data.num_classes", "model.num_classes", apply_on="instantiate")
            parser.add_argument("--notes", default="none")
            parser.add_optimizer_args(torch.optim.Adam)
            parser.add_lr_scheduler_args(torch.optim.lr_scheduler.ExponentialLR)
            parser.add_lightning_class_args(S.callbacks.EarlyStopping, "my_early_stopping")
            parser.set_defaults({"my_early_stopping.monitor": "val_loss", "my_early_stopping.patience": 5})

    ran = run(
        MyCLISide(S, MyCLI),
        S.models.ModelWithEncoder,
        S.models.DataWithClasses,
        run=False,
        args=[
            "--data.batch_size",
            "12",
            "--notes",
            "hello",
            "--optimizer.lr",
            "0.02",
            "--lr_scheduler.gamma",
            "0.9",
            "--my_early_stopping.patience",
            "3",
        ],
    )
    cli = ran.cli
    optimizers, schedulers = cli.model.configure_optimizers()
    stoppers = [c for c in cli.trainer.callbacks if type(c).__name__ == "EarlyStopping"]
    printed = run(
        MyCLISide(S, MyCLI),
        S.models.ModelWithEncoder,
        S.models.DataWithClasses,
        run=False,
        args=["--data.batch_size", "12", "--print_config"],
    )
    return (
        cli.model.hparams.hidden,
        cli.model.hparams.num_classes,
        cli.config.notes,
        type(optimizers[0]).__name__,
        optimizers[0].defaults["lr"],
        schedulers[0].gamma,
        [(s.monitor, s.patience) for s in stoppers],
        normal(cli.config.optimizer),
        sorted(common(yaml.safe_load(printed.out))),
    )


def MyCLISide(S: Side, cli_class: type) -> Side:
    """`S` whose LightningCLI is `cli_class` (a user's subclass)."""
    module = ModuleType("custom_cli")
    module.LightningCLI = cli_class
    return Side(S.name, module, S.models, S.L, S.callbacks, S.loggers)


def hooks_in_order(S: Side, root: Path) -> Any:
    calls = []

    class MyCLI(S.cli.LightningCLI):
        def before_instantiate_classes(self):
            calls.append(("before_instantiate_classes", hasattr(self, "model")))

        def after_instantiate_classes(self):
            calls.append(("after_instantiate_classes", type(self.model).__name__))

        def before_fit(self):
            calls.append(("before_fit", self.trainer.global_step))

        def after_fit(self):
            calls.append(("after_fit", self.trainer.global_step))

        def before_validate(self):
            calls.append(("before_validate",))

    run(
        MyCLISide(S, MyCLI),
        S.models.DemoModel,
        S.models.DemoData,
        save_config_callback=None,
        args=[
            "fit",
            *quiet(
                root,
                "--trainer.max_epochs",
                "1",
                "--trainer.limit_train_batches",
                "2",
                "--trainer.limit_val_batches",
                "1",
            ),
        ],
    )
    return calls


def custom_instantiate_and_subcommand_method(S: Side, root: Path) -> Any:
    class MyCLI(S.cli.LightningCLI):
        def instantiate_classes(self):
            super().instantiate_classes()
            self.model.extra = "set in instantiate_classes"

        def fit(self, model, **kwargs):  # runs instead of trainer.fit
            self.fit_called_with = (type(model).__name__, sorted(kwargs))

    cli = run(
        MyCLISide(S, MyCLI),
        S.models.DemoModel,
        S.models.DemoData,
        save_config_callback=None,
        args=["fit", *quiet(root)],
    ).cli
    return cli.model.extra, cli.fit_called_with, cli.trainer.global_step


def callbacks_and_logger_from_config(S: Side, root: Path) -> Any:
    (root / "callbacks.yaml").write_text(
        "trainer:\n  callbacks:\n  - class_path: LearningRateMonitor\n    "
        "init_args:\n      logging_interval: step\n"
    )
    ran = run(
        S,
        S.models.DemoModel,
        S.models.DemoData,
        trainer_defaults={"callbacks": [S.callbacks.ModelCheckpoint(monitor="val_loss")]},
        args=[
            "fit",
            "--config",
            "callbacks.yaml",
            "--trainer.callbacks+=EarlyStopping",
            "--trainer.callbacks.monitor=val_loss",
            "--trainer.callbacks.patience=4",
            "--trainer.logger=CSVLogger",
            "--trainer.logger.save_dir=logs",
            "--trainer.logger.name=exp",
            "--trainer.max_epochs=1",
            "--trainer.limit_train_batches=1",
            "--trainer.limit_val_batches=1",
            "--trainer.enable_progress_bar=false",
            "--trainer.enable_model_summary=false",
        ],
    )
    chosen = {"EarlyStopping", "LearningRateMonitor", "ModelCheckpoint", "SaveConfigCallback"}
    names = [type(c).__name__ for c in ran.cli.trainer.callbacks if type(c).__name__ in chosen]
    stopper = next(c for c in ran.cli.trainer.callbacks if type(c).__name__ == "EarlyStopping")
    logger = ran.cli.trainer.logger  # read after fit: ember's Trainer sets trainer.logger when it runs
    return (
        ran.code,
        names,
        stopper.patience,
        type(logger).__name__,
        logger.name,
        normal(os.path.relpath(ran.cli.trainer.log_dir, root)),
        sorted(p.name for p in Path(ran.cli.trainer.log_dir).iterdir() if p.suffix == ".yaml"),
        normal(ran.cli.config.fit.trainer.callbacks),
        normal(ran.cli.config.fit.trainer.logger),
    )


def checkpoint_hyperparameters(S: Side, root: Path) -> Any:
    """`test --ckpt_path FILE` rebuilds the model with the arguments saved in the checkpoint."""
    seen = []
    for given in ([], ["--model=OtherModel"]):
        fit = run(
            S,
            S.models.DemoModel,
            S.models.DemoData,
            subclass_mode_model=bool(given),
            save_config_callback=None,
            args=[
                "fit",
                *quiet(
                    root / str(len(given)),
                    "--trainer.max_epochs",
                    "1",
                    "--trainer.limit_train_batches",
                    "2",
                    "--trainer.limit_val_batches",
                    "1",
                ),
                *given,
                "--model.hidden",
                "6",
            ],
        )
        ckpt = fit.cli.trainer.checkpoint_callback.best_model_path
        test = run(
            S,
            S.models.DemoModel,
            S.models.DemoData,
            subclass_mode_model=bool(given),
            save_config_callback=None,
            args=["test", *quiet(root / "test"), *given, "--ckpt_path", ckpt],
        )
        seen.append(
            (
                test.code,
                type(test.cli.model).__name__,
                test.cli.model.hparams.hidden,
                test.cli.model.net[0].out_features,
                sorted(test.cli.trainer.callback_metrics),
                test.cli.config.test.model.get("hidden", None) or test.cli.config.test.model.init_args.hidden,
            )
        )
    return seen


def optimizer_as_a_callable(S: Side, root: Path) -> Any:
    cli = run(
        S,
        S.models.InjectedModel,
        run=False,
        args=["--model.optimizer", "Adam", "--model.optimizer.lr", "0.02"],
    ).cli
    built = cli.model.configure_optimizers()
    default = run(S, S.models.InjectedModel, run=False, args=[]).cli.model.configure_optimizers()
    printed = run(S, S.models.InjectedModel, args=["fit", "--model.optimizer", "Adam", "--print_config"])
    return (
        type(built).__name__,
        built.defaults["lr"],
        type(default).__name__,
        normal(cli.config.model),
        yaml.safe_load(printed.out)["model"],
    )


def optimizers_linked_to_the_model(S: Side, root: Path) -> Any:
    import torch

    class MyCLI(S.cli.LightningCLI):
        def add_arguments_to_parser(self, parser):
            parser.add_optimizer_args(
                torch.optim.Adam, nested_key="gen_optimizer", link_to="model.optimizer1_init"
            )
            parser.add_optimizer_args(
                (torch.optim.SGD, torch.optim.Adam),
                nested_key="disc_optimizer",
                link_to="model.optimizer2_init",
            )

    cli = run(
        MyCLISide(S, MyCLI),
        S.models.TwoOptimizerModel,
        run=False,
        args=["--gen_optimizer.lr", "0.01", "--disc_optimizer", "SGD", "--disc_optimizer.lr", "0.2"],
    ).cli
    return (
        normal(cli.model.optimizer1_init),
        normal(cli.model.optimizer2_init),
        type(cli.model.configure_optimizers()).__name__,
        sorted(k for k in vars(cli.config) if k != "config"),
    )


def trainer_subclass_and_model_function(S: Side, root: Path) -> Any:
    """trainer_class=a Trainer subclass taking **kwargs
    (its parent's options stay), model_class=a function."""

    class MyTrainer(S.L.Trainer):
        def __init__(self, my_arg: int = 1, **kwargs):
            super().__init__(**kwargs)
            self.my_arg = my_arg

    def make_model(hidden: int = 3):
        return S.models.DemoModel(hidden=hidden)

    # real types (this file's annotations are strings): the return type says which class the function builds
    make_model.__annotations__ = {"hidden": int, "return": S.models.DemoModel}

    cli = run(
        S,
        make_model,
        trainer_class=MyTrainer,
        run=False,
        args=["--trainer.my_arg", "5", "--trainer.max_epochs", "3", "--model.hidden", "5"],
    ).cli
    default = run(S, make_model, trainer_class=MyTrainer, run=False, args=[]).cli
    return (
        type(cli.trainer).__name__,
        cli.trainer.my_arg,
        cli.trainer.max_epochs,
        type(cli.model).__name__,
        cli.model.hparams.hidden,
        default.trainer.my_arg,
        default.model.hparams.hidden,
    )


def argument_parser_alone(S: Side, root: Path) -> Any:
    import torch

    parser = S.cli.LightningArgumentParser(exit_on_error=False)
    parser.add_lightning_class_args(S.models.DemoModel, "model")
    parser.add_optimizer_args((torch.optim.SGD, torch.optim.Adam))
    parser.add_lr_scheduler_args()
    config = parser.parse_args(
        [
            "--model.hidden",
            "3",
            "--optimizer",
            "SGD",
            "--optimizer.lr",
            "0.4",
            "--lr_scheduler",
            "StepLR",
            "--lr_scheduler.step_size",
            "2",
        ]
    )
    init = parser.instantiate_classes(config)
    optimizer = S.cli.instantiate_class(init.model.parameters(), init.optimizer)
    scheduler = S.cli.instantiate_class(optimizer, init.lr_scheduler)
    return (
        type(init.model).__name__,
        init.model.hparams.hidden,
        normal(config.optimizer),
        type(optimizer).__name__,
        optimizer.defaults["lr"],
        scheduler.step_size,
        parser.description,
    )


SCENARIOS = [
    printed_config,
    printed_config_subclass_mode,
    printed_config_skip_null,
    configs_merge_in_order,
    config_before_the_subcommand,
    group_configs,
    subcommand_config_layout,
    seed_everything,
    fit_saves_config,
    save_config_elsewhere,
    plateau_scheduler_by_short_name,
    no_config_saved_with_fast_dev_run,
    subcommands_run,
    help_texts,
    model_help,
    abbreviated_options,
    refused,
    run_false_then_fit,
    subclass_mode,
    dict_configs,
    parser_kwargs_default_config_files,
    environment_variables,
    optimizer_and_scheduler_from_cli,
    optimizer_trains,
    auto_configure_optimizers_off,
    linked_and_custom_arguments,
    hooks_in_order,
    custom_instantiate_and_subcommand_method,
    callbacks_and_logger_from_config,
    checkpoint_hyperparameters,
    optimizer_as_a_callable,
    optimizers_linked_to_the_model,
    trainer_subclass_and_model_function,
    argument_parser_alone,
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.__name__ for s in SCENARIOS])
def test_same_as_lightning(scenario, tmp_path, monkeypatch):
    monkeypatch.setattr(
        sys, "argv", ["main.py"]
    )  # Lightning warns when args= and sys.argv both have arguments
    both(scenario, tmp_path, monkeypatch)


def test_main_default_config_files_without_subcommand_sections_are_refused(tmp_path, monkeypatch, capsys):
    """Lightning's main parser silently reads nothing from such a file; ember says so in one line."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "flat.yaml").write_text("trainer:\n  max_epochs: 9\n")
    S = side("ember")
    with pytest.raises(SystemExit) as exited:
        S.cli.LightningCLI(
            S.models.DemoModel, parser_kwargs={"default_config_files": ["flat.yaml"]}, args=["fit"]
        )
    assert exited.value.code == 2
    assert (
        "flat.yaml: a config for the main parser (before the subcommand, or its default_config_files) holds "
        "subcommand sections" in capsys.readouterr().err
    )


def test_trainer_option_names(tmp_path):
    """The options one Trainer has and the other lacks are exactly the ones the comparisons leave out."""
    printed = {}
    for name in ("lightning", "ember"):
        S = side(name)
        ran = run(S, S.models.DemoModel, args=["fit", "--print_config"])
        printed[name] = set(yaml.safe_load(ran.out)["trainer"])
    assert printed["lightning"] - printed["ember"] == LIGHTNING_ONLY
    assert printed["ember"] - printed["lightning"] == EMBER_ONLY


# ---- `python main.py fit ...`, as the docs run it
# ------------------------------------------------------------
MAIN = """
import sys
from {package} import LightningCLI
from tests.cli.{models} import DemoModel, DemoData

if __name__ == "__main__":
    cli = LightningCLI(DemoModel, DemoData)
    print("global_step", cli.trainer.global_step)
"""


@pytest.mark.slow
def test_python_main_py_fit_as_the_docs_run_it(tmp_path):
    commands = {
        "fit": [
            "fit",
            "--trainer.max_epochs",
            "1",
            "--trainer.limit_train_batches",
            "3",
            "--trainer.enable_progress_bar",
            "false",
            "--trainer.logger",
            "false",
            "--model.hidden",
            "4",
        ],
        "bad": ["fit", "--trainer.max_epocs", "1"],
        "help": ["fit", "--help"],
    }
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    for name in ("EMBER_GLOBAL_SEED", "PL_GLOBAL_SEED", "EMBER_SEED_WORKERS", "PL_SEED_WORKERS"):
        env.pop(
            name, None
        )  # left by an earlier test's seed_everything in this process: not in a user's shell
    for name, package, models in (
        ("lightning", "lightning.pytorch.cli", "lightning_models"),
        ("ember", "ember.cli", "ember_models"),
    ):
        (tmp_path / name).mkdir()
        (tmp_path / name / "main.py").write_text(MAIN.format(package=package, models=models))
    # ember: `python main.py ...` once per command, as the docs run it (all started at once: each is mostly
    # interpreter and import start-up). Lightning, the reference: its three runs of main.py in one process
    # (tests/cli/_one_process.py: each run as `python main.py ...` would, with its own argv, output and exit
    # code; fit last), since importing Lightning costs ~8 s of CPU per process
    running = {
        what: subprocess.Popen(
            [sys.executable, "main.py", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path / "ember",
            env=env,
        )
        for what, args in commands.items()
    }
    order = ["help", "bad", "fit"]
    reference = subprocess.run(
        [sys.executable, str(ONE_PROCESS), "main.py", "runs.json", json.dumps([commands[w] for w in order])],
        capture_output=True,
        text=True,
        cwd=tmp_path / "lightning",
        env=env,
        timeout=300,
    )
    assert reference.returncode == 0, reference.stdout + reference.stderr
    ran = json.loads((tmp_path / "lightning" / "runs.json").read_text())
    (tmp_path / "lightning" / "runs.json").unlink()
    done = {("lightning", what): tuple(result) for what, result in zip(order, ran, strict=True)}
    for what, proc in running.items():
        out, err = proc.communicate(timeout=300)
        done["ember", what] = (proc.returncode, out, err)
    seen = {}
    for name in ("lightning", "ember"):
        (fit_code, fit_out, _), (bad_code, _, bad_err), (help_code, help_out, _) = (
            done[name, what] for what in commands
        )
        saved_file = tmp_path / name / "config.yaml"
        saved = yaml.safe_load(saved_file.read_text()) if saved_file.exists() else None
        seen[name] = (
            fit_code,
            fit_out.strip().splitlines()[-1:],
            common(saved),
            bad_code,
            "max_epocs" in bad_err,
            help_code,
            "--trainer.max_epochs" in help_out,
        )
    assert seen["ember"] == seen["lightning"]
