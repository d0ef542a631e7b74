"""`ember predict` with its input, checkpoint, outputs and manifest on a real S3-compatible server:
SIGKILL mid-run, then a rerun that finishes only what is missing."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pyarrow.parquet as pq
import pytest
from _s3 import keys, s3_client

from tests.inference.conftest import (  # noqa: F401
    PREPROCESS,
    REPO,
    ember_cli,
    fashion_parquet,
    fashion_test,
    reference_predictions,
    trained_ckpt,  # noqa: F401  (fixtures used by name)
)


def _manifest(bucket):
    try:
        return json.loads(s3_client().get_object(Bucket=bucket, Key="out/_manifest.json")["Body"].read())
    except s3_client().exceptions.NoSuchKey:
        return None


def _read(bucket, key):
    return pq.read_table(io.BytesIO(s3_client().get_object(Bucket=bucket, Key=key)["Body"].read()))


@pytest.mark.slow
def test_predict_to_s3_killed_then_resumed(bucket, trained_ckpt, fashion_parquet, fashion_test):  # noqa: F811
    client = s3_client()
    client.upload_file(str(fashion_parquet), bucket, "in/test.parquet")
    client.upload_file(str(trained_ckpt), bucket, "models/last.ckpt")
    args = [
        "predict",
        "--ckpt",
        f"s3://{bucket}/models/last.ckpt",
        "--data",
        f"s3://{bucket}/in",
        "--output",
        f"s3://{bucket}/out",
        "--model",
        "tests.inference._model.ClassicNet",
        *PREPROCESS,
        "--workers",
        "2",
        "--batch-size",
        "10",
        "--no-progress",
    ]
    child = subprocess.Popen(
        [sys.executable, "-m", "ember.cli", *args],
        cwd=REPO,
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and child.poll() is None:
        manifest = _manifest(bucket)
        if manifest and manifest["fragments"]:
            break
        time.sleep(0.02)
    assert child.poll() is None, child.communicate()
    os.killpg(child.pid, signal.SIGKILL)
    child.wait()
    first = _manifest(bucket)
    assert not first["complete"] and 1 <= len(first["fragments"]) < 12, first["fragments"]
    parts = [k for k in keys(bucket, "out/") if k.startswith("out/part-")]
    etags = {k: client.head_object(Bucket=bucket, Key=k)["ETag"] for k in parts}
    for key in parts:  # every visible object is a whole parquet file (never a partial upload)
        assert _read(bucket, key).num_rows == 250

    again = ember_cli(*args)
    assert again.returncode == 0, again.stderr
    done_before = len(first["fragments"])
    assert (
        f"from {12 - done_before} fragments" in again.stdout or f"{done_before} already done" in again.stdout
    ), again.stdout
    for key, etag in etags.items():  # nothing finished was rewritten
        assert client.head_object(Bucket=bucket, Key=key)["ETag"] == etag
    final = _manifest(bucket)
    assert final["complete"] and final["rows"] == 3000
    tables = [_read(bucket, k) for k in keys(bucket, "out/") if k.startswith("out/part-")]
    ids = np.concatenate([t["id"].to_numpy() for t in tables])
    outputs = np.concatenate([t["output"].combine_chunks().to_numpy_ndarray() for t in tables])
    assert ids.tolist() == list(range(3000))  # no duplicate, no missing row
    images, _ = fashion_test
    np.testing.assert_allclose(outputs, reference_predictions(trained_ckpt, images[:3000]), atol=1e-5)
