"""read_sql / write_sql when the database cannot be reached: one DataError line naming the call and what the
driver said, at once (real drivers: sqlite3 on a path that cannot exist, psycopg on a port nothing listens
on)."""

from __future__ import annotations

import functools
import socket
import sqlite3
import time

import pytest

import ember.data
from ember.errors import DataError


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def factories(tmp_path):
    missing = str(tmp_path / "no" / "such" / "folder" / "db.sqlite")
    yield (
        "sqlite3",
        functools.partial(sqlite3.connect, missing),
        "OperationalError: unable to open database file",
    )
    psycopg = pytest.importorskip("psycopg")
    url = f"host=127.0.0.1 port={closed_port()} user=x dbname=x connect_timeout=3"
    yield "psycopg", functools.partial(psycopg.connect, url), "OperationalError: "


@pytest.mark.parametrize("driver", ["sqlite3", "psycopg"])
def test_read_sql_that_cannot_connect_is_one_line(driver, tmp_path):
    _, factory, said = next(f for f in factories(tmp_path) if f[0] == driver)
    started = time.monotonic()
    with pytest.raises(DataError) as refused:
        ember.data.read_sql("SELECT 1 AS x", factory).take_all()
    message = str(refused.value)
    assert f"read_sql: connection_factory() could not connect ({said}" in message, message
    assert "\n" not in message and "connect_timeout" in message
    assert time.monotonic() - started < 15


def test_write_sql_that_cannot_connect_is_one_line(tmp_path):
    _, factory, said = next(factories(tmp_path))
    with pytest.raises(DataError) as refused:
        ember.data.from_items([{"x": 1}]).write_sql("INSERT INTO t VALUES (?)", factory)
    assert f"write_sql: connection_factory() could not connect ({said}" in str(refused.value)
    assert not (tmp_path / "no").exists()  # nothing created on the way
