"""A class named by a file ember reads is never imported on the file's word.

The worst case: a checkpoint whose `hyper_parameters` name `somemodule.Thing`, with `somemodule.py`
importable from the working folder and writing a marker file when imported. `test --ckpt_path` and
`fit --ckpt_path` (LightningCLI, as a user's main.py runs it) and `Module.load_from_checkpoint` must
refuse in one line (or ignore the name) and the marker must never appear; the user naming the class,
or `EMBER_TRUST_CLASS_PATHS=1`, is what lets it load.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests._fork_server import ForkServer

PAYLOAD = """\
import pathlib
pathlib.Path("PAYLOAD_RAN").write_text("the module's code ran")
import ember

class Thing(ember.Module):
    def __init__(self, **kwargs):
        super().__init__()

def make(*args, **kwargs):
    return None
"""

MAIN = """\
from typing import Callable, Optional

import torch

import ember
from ember.cli import LightningCLI


class Mine(ember.Module):
    def __init__(
        self, hidden: int = 2, act: Optional[Callable] = None, sub: Optional[torch.nn.Module] = None
    ):
        super().__init__()
        self.layer = torch.nn.Linear(hidden, 1)


if __name__ == "__main__":
    LightningCLI(ember.Module, ember.DataModule, subclass_mode_model=True, subclass_mode_data=True,
                 save_config_callback=None)
"""


def planted(tmp_path: Path, hyper_parameters: dict) -> Path:
    """A working folder holding the payload module, a user's main.py and a crafted checkpoint."""
    (tmp_path / "somemodule.py").write_text(PAYLOAD)
    (tmp_path / "main.py").write_text(MAIN)
    torch.save(
        {"state_dict": {}, "hyper_parameters": hyper_parameters, "epoch": 0, "global_step": 0},
        tmp_path / "x.ckpt",
    )
    return tmp_path


# what a run of MAIN imports, found by listing sys.modules after one
PRELOAD = ["torch", "torch._dynamo", "jsonargparse", "ember", "ember.cli.lightning_cli", "ember.trainer"]


@pytest.fixture(scope="module")
def fork_server(tmp_path_factory):
    """The runs of a user's main.py forked from one process that imported torch and ember once
    (tests/_fork_server.py): each run is still a process of its own, started in its folder with the
    folder first on sys.path, which imports what it imports; the server itself imports nothing any test
    plants (somemodule, antigravity), so what a run imports is the run's doing."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[2]), os.environ.get("PYTHONPATH", "")]),
    }
    env.pop("EMBER_TRUST_CLASS_PATHS", None)
    server = ForkServer(tmp_path_factory.mktemp("fork_server"), env, PRELOAD)
    yield server
    server.close()


@pytest.fixture
def run_main(fork_server):
    """`python main.py ARGS... --trainer.logger=false ...` in `folder` (EMBER_TRUST_CLASS_PATHS=1 with
    trust=True, unset otherwise): (exit code, stdout, stderr)."""

    def run(folder: Path, *args: str, trust: bool = False) -> subprocess.CompletedProcess:
        return fork_server.run(
            "main.py",
            *args,
            "--trainer.logger=false",
            "--trainer.enable_progress_bar=false",
            "--trainer.enable_model_summary=false",
            cwd=folder,
            env={"EMBER_TRUST_CLASS_PATHS": "1"} if trust else None,
            timeout=240,
        )

    return run


@pytest.mark.parametrize("subcommand", ["test", "fit"])
def test_a_checkpoints_class_path_is_not_imported(subcommand, tmp_path, run_main):
    folder = planted(tmp_path, {"_class_path": "somemodule.Thing", "hidden": 2})
    ran = run_main(folder, subcommand, "--model", "__main__.Mine", "--ckpt_path", "x.ckpt")
    assert ran.returncode == 2, ran.stderr
    assert not (folder / "PAYLOAD_RAN").exists()
    error = ran.stderr.strip().splitlines()
    assert len(error) == 1, ran.stderr
    assert (
        "x.ckpt (its hyper_parameters) names the class 'somemodule.Thing', which is not imported" in error[0]
    )
    assert "EMBER_TRUST_CLASS_PATHS=1" in error[0]


@pytest.mark.parametrize(
    "hyper_parameters, named",
    [
        (
            {"hidden": 2, "sub": {"class_path": "somemodule.Thing", "init_args": {}}},
            "somemodule",
        ),  # nested class_path
        ({"hidden": 2, "act": "somemodule.make"}, "somemodule"),  # a callable's name
        ({"hidden": 2, "act": "antigravity.fly"}, "antigravity"),  # a standard module with effects on import
    ],
    ids=["nested-class-path", "callable", "stdlib-callable"],
)
def test_nothing_nested_in_the_hyperparameters_is_imported(hyper_parameters, named, tmp_path, run_main):
    folder = planted(tmp_path, hyper_parameters)
    ran = run_main(folder, "test", "--model", "__main__.Mine", "--ckpt_path", "x.ckpt")
    assert not (folder / "PAYLOAD_RAN").exists()
    assert ran.returncode == 2, ran.stderr
    error = ran.stderr.strip().splitlines()
    assert len(error) == 1 and "x.ckpt (its hyper_parameters) names" in error[0], ran.stderr
    assert named in error[0] and "EMBER_TRUST_CLASS_PATHS=1" in error[0]


def test_lightnings_instantiator_recorded_in_the_checkpoint_is_ignored(tmp_path, run_main):
    folder = planted(tmp_path, {"hidden": 2, "_instantiator": "somemodule.make"})
    ran = run_main(folder, "test", "--model", "__main__.Mine", "--ckpt_path", "x.ckpt")
    assert not (folder / "PAYLOAD_RAN").exists()
    assert "Mine.test_step" in ran.stderr  # the user's class was built; the instantiator never looked up


def test_the_class_the_user_names_on_the_command_line_loads(tmp_path, run_main):
    folder = planted(tmp_path, {"_class_path": "somemodule.Thing"})
    ran = run_main(folder, "test", "--model", "somemodule.Thing", "--ckpt_path", "x.ckpt")
    assert (
        folder / "PAYLOAD_RAN"
    ).exists()  # the user's word imports it (Thing has no test_step: refused later)
    assert "Thing.test_step" in ran.stderr


def test_trust_is_an_explicit_opt_in(tmp_path, run_main):
    folder = planted(tmp_path, {"_class_path": "somemodule.Thing"})
    ran = run_main(folder, "test", "--model", "__main__.Mine", "--ckpt_path", "x.ckpt", trust=True)
    assert (folder / "PAYLOAD_RAN").exists()
    assert "Thing.test_step" in ran.stderr  # the checkpoint's class was built, as Lightning does


def test_load_from_checkpoint_imports_nothing_the_file_names(tmp_path, monkeypatch):
    import ember

    folder = planted(
        tmp_path, {"_class_path": "somemodule.Thing", "_instantiator": "somemodule.make", "hidden": 3}
    )
    monkeypatch.chdir(folder)
    monkeypatch.syspath_prepend(str(folder))

    class Small(ember.Module):
        def __init__(self, hidden: int = 2):
            super().__init__()
            self.save_hyperparameters()

    model = Small.load_from_checkpoint(folder / "x.ckpt")
    assert model.hparams.hidden == 3
    assert "somemodule" not in sys.modules and not (folder / "PAYLOAD_RAN").exists()
