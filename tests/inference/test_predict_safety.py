"""`ember predict` never runs code a file chose, never deletes or mixes what the user has, and says what is
wrong in one line: real CLI processes, real files, marker files proving a payload never ran."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from ember.checkpoint import save_checkpoint
from tests.inference.conftest import REPO
from tests.inference.test_gpu import Tiny

TINY = ["--model", "tests.inference.test_gpu.Tiny"]


def cli(*args, env=None):
    """`ember ...` as a real process, from the repository (so `tests.` is importable)."""
    return subprocess.run(
        [sys.executable, "-m", "ember.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture()
def run_ember(capsys, monkeypatch):
    """`ember ...` run in this process (the worker pool still forks real processes): a CompletedProcess."""
    from ember.cli import main

    monkeypatch.chdir(REPO)

    def run(*args):
        try:
            main([str(a) for a in args])
            code = 0
        except SystemExit as e:
            code = e.code
        out = capsys.readouterr()
        return subprocess.CompletedProcess(args, code, out.out, out.err)

    return run


def one_line_error(done, *parts):
    assert done.returncode != 0, done.stdout
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ember"), done.stderr
    for part in parts:
        assert part in lines[0], lines[0]
    return lines[0]


@pytest.fixture()
def tiny(tmp_path):
    """A real checkpoint of a small Module and a folder of two parquet files (its input)."""
    torch.manual_seed(0)
    ckpt = tmp_path / "tiny.ckpt"
    save_checkpoint(
        {
            "module_class": "tests.inference.test_gpu.Tiny",
            "state_dict": Tiny().state_dict(),
            "hyper_parameters": {},
        },
        ckpt,
    )
    data = tmp_path / "data"
    data.mkdir()
    rng = np.random.default_rng(0)
    for i in range(2):
        x = rng.standard_normal((40, 16)).astype(np.float32)
        pq.write_table(
            pa.table({"id": np.arange(40) + 40 * i, "x": pa.FixedShapeTensorArray.from_numpy_ndarray(x)}),
            data / f"in-{i}.parquet",
        )
    return ckpt, data


def snapshot(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


# ---- section 1: no code from a file ------------------------------------------------------------
@pytest.mark.slow  # two CLI processes (~10 s each on a loaded machine)
def test_the_class_recorded_in_a_checkpoint_is_not_imported_without_an_opt_in(tiny, tmp_path):
    ckpt, data = tiny
    marker = tmp_path / "payload-ran"
    (tmp_path / "evil_pkg.py").write_text(
        f"import pathlib\npathlib.Path({str(marker)!r}).write_text('imported')\n"
        "from tests.inference.test_gpu import Tiny as Payload\n"
    )
    crafted = tmp_path / "crafted.ckpt"
    state = torch.load(ckpt, weights_only=True)
    state["module_class"] = "evil_pkg.Payload"
    save_checkpoint(state, crafted)
    env = {"PYTHONPATH": f"{REPO}{os.pathsep}{tmp_path}"}

    done = cli("predict", "--ckpt", crafted, "--data", data, "--output", tmp_path / "out", env=env)
    line = one_line_error(
        done, "--model path/to/file.py:Class", "'evil_pkg.Payload'", "--trust-checkpoint-class"
    )
    assert "running its code" in line
    assert not marker.exists(), "the module named inside the checkpoint was imported"
    assert not (tmp_path / "out").exists()

    # the opt-in, by name, does import it (the user said they trust the file)
    done = cli(
        "predict",
        "--ckpt",
        crafted,
        "--data",
        data,
        "--output",
        tmp_path / "out",
        "--trust-checkpoint-class",
        "--no-progress",
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert marker.exists() and pq.read_table(tmp_path / "out").num_rows == 80


def test_a_checkpoint_of_a_config_file_class_gets_the_hint_not_an_import_error(tiny, tmp_path, run_ember):
    """`ember fit --config` loads model.py as `_ember_user_model_<n>`: the hint names --model / --config."""
    ckpt, data = tiny
    state = torch.load(ckpt, weights_only=True)
    state["module_class"] = "_ember_user_model_12345678.ClassicNet"
    save_checkpoint(state, tmp_path / "fit.ckpt")
    for extra in ([], ["--trust-checkpoint-class"]):
        done = run_ember(
            "predict", "--ckpt", tmp_path / "fit.ckpt", "--data", data, "--output", tmp_path / "o", *extra
        )
        one_line_error(
            done, "defined in a script or config file", "pass --model path/to/file.py:Class or --config"
        )


@pytest.mark.slow  # two CLI processes
def test_model_that_is_not_a_module_is_refused_before_it_is_called(tiny, tmp_path):
    ckpt, data = tiny
    marker = tmp_path / "constructed"
    (tmp_path / "not_a_module.py").write_text(
        f"import pathlib\nclass Payload:\n    def __init__(self, *a, **k):\n"
        f"        pathlib.Path({str(marker)!r}).write_text('called')\n"
        "    @classmethod\n    def load_from_checkpoint(cls, *a, **k):\n        return cls()\n"
    )
    for model in (f"{tmp_path / 'not_a_module.py'}:Payload", "subprocess.Popen"):
        done = cli("predict", "--ckpt", ckpt, "--data", data, "--output", tmp_path / "o", "--model", model)
        one_line_error(done, f"model {model!r} is", "not an ember.Module")
    assert not marker.exists()


# ---- section 2: nothing of the user's lost or mixed --------------------------------------------
def test_overwrite_into_the_data_folder_deletes_nothing(tiny, run_ember):
    ckpt, data = tiny
    before = snapshot(data)
    done = run_ember("predict", "--ckpt", ckpt, "--data", data, "--output", data, *TINY, "--overwrite")
    one_line_error(done, "is inside --data", "pick an output folder outside")
    assert snapshot(data) == before


def test_overwrite_removes_only_what_ember_wrote(tiny, run_ember, tmp_path):
    ckpt, data = tiny
    out = tmp_path / "out"
    assert (
        run_ember(
            "predict", "--ckpt", ckpt, "--data", data, "--output", out, *TINY, "--no-progress"
        ).returncode
        == 0
    )
    (out / "notes.txt").write_text("the user's own file")
    (out / "part-00007.parquet").write_bytes(
        (data / "in-0.parquet").read_bytes()
    )  # theirs, with ember's name
    before = snapshot(out)
    done = run_ember("predict", "--ckpt", ckpt, "--data", data, "--output", out, *TINY, "--overwrite")
    one_line_error(
        done, "holds files ember did not write ('notes.txt' and 1 more)", "never deletes anything else"
    )
    assert snapshot(out) == before

    (out / "notes.txt").unlink()
    (out / "part-00007.parquet").unlink()
    done = run_ember(
        "predict", "--ckpt", ckpt, "--data", data, "--output", out, *TINY, "--overwrite", "--no-progress"
    )
    assert done.returncode == 0, done.stderr
    assert "wrote 80 rows from 2 fragments" in done.stdout  # started over: nothing skipped


def test_resume_after_the_input_files_changed_is_refused(tiny, run_ember, tmp_path):
    ckpt, data = tiny
    out = tmp_path / "out"
    assert (
        run_ember(
            "predict", "--ckpt", ckpt, "--data", data, "--output", out, *TINY, "--no-progress"
        ).returncode
        == 0
    )
    outputs = snapshot(out)
    x = np.ones((10, 16), np.float32)  # the user replaces one input file with other rows
    pq.write_table(
        pa.table({"id": np.arange(10), "x": pa.FixedShapeTensorArray.from_numpy_ndarray(x)}),
        data / "in-1.parquet",
    )
    done = run_ember("predict", "--ckpt", ckpt, "--data", data, "--output", out, *TINY)
    one_line_error(done, "the input files changed since", "in-1.parquet changed size", "--overwrite")
    assert snapshot(out) == outputs

    (data / "in-2.parquet").write_bytes((data / "in-0.parquet").read_bytes())  # a new file is a change too
    done = run_ember("predict", "--ckpt", ckpt, "--data", data, "--output", out, *TINY)
    one_line_error(done, "the input files changed since")

    done = run_ember(
        "predict", "--ckpt", ckpt, "--data", data, "--output", out, *TINY, "--overwrite", "--no-progress"
    )
    assert done.returncode == 0, done.stderr
    assert pq.read_table(out)["id"].to_pylist() == [*range(40), *range(10), *range(40)]
    assert json.loads((out / "_manifest.json").read_text())["complete"]


# ---- section 4: one line for each bad option ---------------------------------------------------
@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["--workers", "0"], "--workers: 0 is out of range: use a positive whole number"),
        (["--batch-size", "0"], "--batch-size: 0 is out of range"),
        (["--threads", "-1"], "--threads: -1 is out of range"),
        (
            ["--shape", "3,3"],
            "--shape 3,3 holds 9 values a row, but input column 'x' has 16 (16); use a shape of 16",
        ),
        (["--shape", "0,16"], "--shape 0,16: every size must be a positive number"),
        (["--shape", "a,b"], "--shape 'a,b': write comma-separated numbers"),
        (["--input-column", "nope"], "--input-column 'nope': no such column"),
    ],
)
def test_bad_options_are_one_line(tiny, run_ember, tmp_path, flags, expected):
    ckpt, data = tiny
    done = run_ember("predict", "--ckpt", ckpt, "--data", data, "--output", tmp_path / "o", *TINY, *flags)
    one_line_error(done, expected)
    assert not (tmp_path / "o").exists()


def test_output_that_is_a_file_is_one_line_and_untouched(tiny, run_ember, tmp_path):
    ckpt, data = tiny
    target = tmp_path / "results.parquet"
    target.write_bytes(b"the user's file")
    done = run_ember("predict", "--ckpt", ckpt, "--data", data, "--output", target, *TINY)
    one_line_error(done, f"--output {target} is a file; pass a folder")
    assert target.read_bytes() == b"the user's file"
