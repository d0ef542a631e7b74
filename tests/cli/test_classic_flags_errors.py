"""The classic script's habits meet one-line answers: its flags without a model say that no model was given
and how to give one; --resume in a folder holding only its model.pth/optimiser.pth names those files and how
to start from them (the user's files untouched)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
import torch
import yaml

REPO = Path(__file__).parents[2]
TINY = {
    "model": {"class_path": "tests._cli_models.DigitsClassifier"},
    "data": {"class_path": "tests._cli_models.DigitsData"},
}


def ember(capsys, *args):
    from ember.cli import main

    try:
        main([str(a) for a in args])
        code = 0
    except SystemExit as e:
        code = e.code
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize(
    "flags", [["--epochs", "1", "--lr", "0.01"], ["--lr=0.01"], ["--momentum", "0.5", "--lr", "1"]]
)
def test_the_classic_flags_without_a_model_say_no_model_was_given(capsys, flags):
    code, _, err = ember(capsys, "fit", *flags)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err
    assert "no model was given" in lines[0] and "--model path/to/model.py:Net" in lines[0]
    assert "--config config.yaml" in lines[0] and "init_args.lr" not in lines[0]


def test_the_classic_flags_with_a_model_in_a_config_still_set_it(capsys, tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(TINY))
    code, out, err = ember(
        capsys, "fit", "--config", config, "--epochs", "1", "--lr", "0.25", "--print_config"
    )
    assert code == 0, err
    assert yaml.safe_load(out)["model"]["init_args"]["lr"] == 0.25


def test_resume_beside_the_classic_scripts_files_names_them_and_how_to_start_from_them(capsys, tmp_path):
    model = torch.nn.Linear(64, 10)
    torch.save(model.state_dict(), tmp_path / "model.pth")
    torch.save(torch.optim.SGD(model.parameters(), lr=0.1).state_dict(), tmp_path / "optimiser.pth")
    before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in tmp_path.iterdir()}
    config = tmp_path / "c.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                **TINY,
                "trainer": {
                    "max_steps": 1,
                    "logger": False,
                    "enable_checkpointing": False,
                    "enable_progress_bar": False,
                    "enable_model_summary": False,
                },
            }
        )
    )
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        code, _, err = ember(capsys, "fit", "--config", config, "--resume", "--root-dir", tmp_path)
    finally:
        os.chdir(cwd)
    assert code == 0, err
    line = next(line for line in err.splitlines() if "starting from scratch" in line)
    assert str(tmp_path / "model.pth") in line and str(tmp_path / "optimiser.pth") in line
    assert "plain state_dicts, not ember checkpoints" in line
    assert f"self.load_state_dict(torch.load('{tmp_path / 'model.pth'}', weights_only=True))" in line
    assert {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in tmp_path.iterdir() if p.name in before
    } == before  # the user's files untouched


def test_resume_without_the_classic_files_says_only_starting_from_scratch(tmp_path, monkeypatch):
    from ember.trainer.resume import classic_files_note

    monkeypatch.chdir(tmp_path)
    assert classic_files_note(tmp_path) == ""
    (tmp_path / "optimiser.pth").write_bytes(b"x")
    assert "cannot resume from an optimizer state alone" in classic_files_note(tmp_path)
