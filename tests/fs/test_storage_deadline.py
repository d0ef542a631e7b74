"""An object store that accepts the connection and then never answers: one StorageError line within the
deadline EMBER_STORAGE_TIMEOUT_S sets (a real listening socket that never replies), naming the setting."""

from __future__ import annotations

import socket
import time

import pytest

import ember.data
from ember.errors import StorageError


@pytest.fixture
def silent_endpoint():
    """A TCP server on 127.0.0.1 whose backlog accepts connections and which never sends a byte."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    yield f"http://127.0.0.1:{server.getsockname()[1]}"
    server.close()


def test_a_silent_endpoint_is_one_line_within_the_deadline(silent_endpoint, monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", silent_endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "y")
    monkeypatch.setenv("EMBER_STORAGE_TIMEOUT_S", "1")
    started = time.monotonic()
    with pytest.raises(StorageError) as error:
        ember.data.read_parquet("s3://quiet/data")
    took = time.monotonic() - started
    message = str(error.value)
    assert message.startswith(f"s3://quiet/data: the endpoint {silent_endpoint} did not answer"), message
    assert "EMBER_STORAGE_TIMEOUT_S" in message and "\n" not in message
    assert took < 20  # 3 tries of 1 s and the backoff between them


def test_a_deadline_that_is_not_a_number_is_one_line(monkeypatch):
    monkeypatch.setenv("EMBER_STORAGE_TIMEOUT_S", "soon")
    with pytest.raises(
        StorageError, match=r"^EMBER_STORAGE_TIMEOUT_S='soon' must be a positive number of seconds$"
    ):
        ember.data.read_parquet("s3://quiet/data")
