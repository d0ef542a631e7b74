"""A real S3-compatible server (moto's standalone server) on 127.0.0.1, started once for the session.

The tests talk to it exactly as a user's job talks to S3: credentials from AWS_ACCESS_KEY_ID /
AWS_SECRET_ACCESS_KEY, the endpoint from AWS_ENDPOINT_URL (set here for the whole session, so
worker processes and the `ember` CLI inherit them). Buckets are created by the tests with boto3,
never by ember.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_moto(env: dict[str, str] | None = None) -> tuple[subprocess.Popen, str, float]:
    """Start `python -m moto.server` on a free loopback port;
    returns the process, its URL and start-up seconds."""
    pytest.importorskip("moto.server", reason="moto[server] is not installed: pip install -e '.[dev]'")
    port = free_port()
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        env={**os.environ, **(env or {})},
    )
    url = f"http://127.0.0.1:{port}"
    while True:
        try:
            urllib.request.urlopen(f"{url}/moto-api/", timeout=1).close()
            break
        except OSError:
            if process.poll() is not None or time.monotonic() - started > 20:
                stop(process)
                raise RuntimeError(f"moto server did not start on {url}") from None
            time.sleep(0.05)
    return process, url, time.monotonic() - started


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@pytest.fixture(scope="module")
def s3_server():
    """A moto server per test module (stopped after it, so no later test sees its process or its AWS_*
    variables); while it runs, the AWS_* variables point every client (and child process) at it."""
    process, url, seconds = start_moto()
    saved = {
        k: os.environ.get(k)
        for k in (
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_ENDPOINT_URL",
            "AWS_DEFAULT_REGION",
            "AWS_REGION",
            "AWS_ENDPOINT_URL_S3",
        )
    }
    os.environ.update(
        AWS_ACCESS_KEY_ID="ember-test",
        AWS_SECRET_ACCESS_KEY="ember-test-secret",
        AWS_ENDPOINT_URL=url,
        AWS_DEFAULT_REGION="us-east-1",
    )
    for name in ("AWS_REGION", "AWS_ENDPOINT_URL_S3"):
        os.environ.pop(name, None)
    try:
        yield {"url": url, "startup_s": seconds, "pid": process.pid}
    finally:
        stop(process)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def s3_client():
    import boto3

    return boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name="us-east-1")


@pytest.fixture
def bucket(s3_server) -> str:
    """A new, empty bucket for one test."""
    name = f"ember-{uuid.uuid4().hex[:12]}"
    s3_client().create_bucket(Bucket=name)
    return name


def keys(bucket: str, prefix: str = "") -> list[str]:
    """Every object key under `prefix`, as the server lists them (pyarrow's empty folder markers left out)."""
    listed = s3_client().list_objects_v2(Bucket=bucket, Prefix=prefix)
    return sorted(
        o["Key"] for o in listed.get("Contents", []) if not o["Key"].endswith("/")
    )  # not folder markers
