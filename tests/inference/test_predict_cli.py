"""`ember predict`: outputs beside the input's ids, resumable after SIGKILL, clear errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pyarrow.parquet as pq
import pytest

from tests._procs import live_processes
from tests.inference.conftest import PREPROCESS, REPO, ember_cli, reference_predictions


def read_output(folder):
    table = pq.read_table(folder)
    return table["id"].to_numpy(), table["output"].combine_chunks().to_numpy_ndarray()


#: The Module class, named on the command line: a checkpoint's recorded class is never imported unasked.
MODEL = ["--model", "tests.inference._model.ClassicNet"]


def predict_args(ckpt, data, out, *extra, model=MODEL):
    return [
        "predict",
        "--ckpt",
        str(ckpt),
        "--data",
        str(data),
        "--output",
        str(out),
        *model,
        *PREPROCESS,
        *extra,
    ]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory, trained_ckpt, fashion_parquet):
    out = tmp_path_factory.mktemp("uninterrupted")
    done = ember_cli(
        *predict_args(trained_ckpt, fashion_parquet, out, "--workers", "2", "--batch-size", "50")
    )
    assert done.returncode == 0, done.stderr
    return out, done


def test_predict_writes_outputs_beside_the_input_ids(uninterrupted, trained_ckpt, fashion_test):
    out, done = uninterrupted
    assert "wrote 3,000 rows from 12 fragments" in done.stdout
    assert "rows/s" in done.stderr and "ETA" in done.stderr  # progress
    assert sorted(p.name for p in out.iterdir()) == ["_inputs.json", "_manifest.json"] + [
        f"part-{i:05d}.parquet" for i in range(12)
    ]
    manifest = json.loads((out / "_manifest.json").read_text())
    assert manifest["complete"] and manifest["rows"] == 3000
    assert manifest["job"]["model"] == "tests.inference._model.ClassicNet"  # the class --model named
    ids, outputs = read_output(out)
    assert ids.tolist() == list(range(3000))
    images, labels = fashion_test
    np.testing.assert_allclose(outputs, reference_predictions(trained_ckpt, images[:3000]), atol=1e-5)
    assert (outputs.argmax(1) == labels[:3000]).mean() > 0.6


def test_sigkill_mid_run_then_rerun_equals_uninterrupted_without_duplicates(
    uninterrupted, trained_ckpt, fashion_parquet, tmp_path
):
    out = tmp_path / "out"
    args = predict_args(
        trained_ckpt, fashion_parquet, out, "--workers", "2", "--batch-size", "10", "--no-progress"
    )
    child = subprocess.Popen(
        [sys.executable, "-m", "ember.cli", *args],
        cwd=REPO,
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    manifest = out / "_manifest.json"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and child.poll() is None:
        if manifest.exists() and json.loads(manifest.read_text())["fragments"]:
            break
        time.sleep(0.005)
    os.kill(child.pid, signal.SIGKILL)  # the job only: its workers must follow by themselves
    child.wait()
    time.sleep(0.5)
    assert live_processes(group=child.pid) == set(), "workers outlived the killed job"
    first = json.loads(manifest.read_text())
    assert not first["complete"] and 1 <= len(first["fragments"]) < 12, first["fragments"]
    finished = {name: (out / name).stat() for name in os.listdir(out) if name.startswith("part-")}

    again = ember_cli(*args)
    assert again.returncode == 0, again.stderr
    skipped = len(finished)
    assert f"{skipped} already done, skipped" in again.stdout
    assert f"from {12 - skipped} fragments" in again.stdout
    for name, before in finished.items():  # nothing finished was recomputed or rewritten
        after = (out / name).stat()
        assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert not [p for p in os.listdir(out) if ".tmp" in p]
    ids, outputs = read_output(out)
    expected_ids, expected = read_output(uninterrupted[0])
    assert ids.tolist() == expected_ids.tolist() == list(range(3000))  # no duplicate, no missing row
    np.testing.assert_allclose(outputs, expected, atol=1e-5)
    assert json.loads(manifest.read_text())["complete"]


def cli_in_process(capsys, *args):
    """Run `ember ...` in this process: (exit code, stdout, stderr)."""
    from ember.cli import main

    try:
        main(list(args))
        code = 0
    except SystemExit as e:
        code = e.code
    out = capsys.readouterr()
    return code, out.out, out.err


def test_model_from_a_file_and_class_name(trained_ckpt, fashion_parquet, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    code, out, err = cli_in_process(
        capsys,
        *predict_args(
            trained_ckpt,
            fashion_parquet,
            tmp_path / "o",
            "--workers",
            "1",
            model=["--model", "tests/inference/_model.py:ClassicNet"],
        ),
    )
    assert code == 0, err
    assert pq.read_table(tmp_path / "o").num_rows == 3000
    assert json.loads((tmp_path / "o" / "_manifest.json").read_text())["job"]["model"] == (
        f"{REPO / 'tests/inference/_model.py'}:ClassicNet"
    )


def test_errors_are_one_line_and_name_the_fix(trained_ckpt, fashion_parquet, tmp_path, capsys):
    code, _, err = cli_in_process(
        capsys, *predict_args(tmp_path / "nope.ckpt", fashion_parquet, tmp_path / "o")
    )
    assert code == 1
    assert err.startswith(f"ember predict: error: checkpoint {tmp_path / 'nope.ckpt'} does not exist")
    assert len(err.strip().splitlines()) == 1

    # a checkpoint whose class lived in a script: the class cannot be found by name, and no code is unpickled
    import torch

    script_ckpt = tmp_path / "script.ckpt"
    state = torch.load(trained_ckpt, weights_only=True)
    state["module_class"] = "__main__.ClassicNet"
    torch.save(state, script_ckpt)
    code, _, err = cli_in_process(
        capsys, *predict_args(script_ckpt, fashion_parquet, tmp_path / "o", model=[])
    )
    assert code == 2
    assert "saved from __main__.ClassicNet" in err and "pass --model path/to/file.py:Class or --config" in err

    # another job's outputs are never mixed with this one's
    other = tmp_path / "other"
    code, _, err = cli_in_process(
        capsys, *predict_args(trained_ckpt, fashion_parquet, other, "--no-progress")
    )
    assert code == 0, err
    code, _, err = cli_in_process(
        capsys,
        "predict",
        "--ckpt",
        str(trained_ckpt),
        "--data",
        str(fashion_parquet),
        "--output",
        str(other),
        *MODEL,
        "--scale",
        "1/255",
        "--shape",
        "1,28,28",
    )
    assert code == 1
    assert "holds results of a different job (normalize changed)" in err and "--overwrite" in err

    code, _, err = cli_in_process(
        capsys, "predict", "--ckpt", "x", "--data", "y", "--output", "z", "--wrokers", "2"
    )
    assert code == 2 and "unknown option --wrokers" in err
