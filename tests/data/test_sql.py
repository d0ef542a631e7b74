"""read_sql / write_sql against SQLite and a real PostgreSQL server (started on 127.0.0.1 by a fixture)."""

from __future__ import annotations

import datetime
import decimal
import sqlite3

import pytest

import ember.data
from ember.errors import DataError
from tests.data._postgres import postgres_server


@pytest.fixture(scope="module")
def postgres():
    with postgres_server() as dsn:
        yield dsn


def _sqlite(path):
    return lambda: sqlite3.connect(path)


def test_sqlite_read_streams_every_row_in_query_order(tmp_path):
    db = str(tmp_path / "a.db")
    with sqlite3.connect(db) as c:
        c.execute("CREATE TABLE t (id INTEGER, name TEXT, score REAL)")
        c.executemany("INSERT INTO t VALUES (?, ?, ?)", [(i, f"n{i}", i / 4) for i in range(10000)])
    ds = ember.data.read_sql("SELECT id, name, score FROM t ORDER BY id DESC", _sqlite(db))
    rows = ds.take_all()
    assert [r["id"] for r in rows] == list(range(9999, -1, -1))
    assert rows[0] == {"id": 9999, "name": "n9999", "score": 9999 / 4}
    assert ds.schema().names == ["id", "name", "score"]
    assert [b.num_rows for b in ds.iter_internal_blocks()] == [4096, 4096, 1808]  # fetched in blocks
    assert ember.data.read_sql("SELECT * FROM t WHERE id < ?", _sqlite(db), sql_params=(3,)).count() == 3


def test_sqlite_errors_are_one_line(tmp_path):
    db = str(tmp_path / "a.db")
    with pytest.raises(
        DataError, match="read_sql: the query failed \\(OperationalError: no such table: nope\\)"
    ):
        ember.data.read_sql("SELECT * FROM nope", _sqlite(db)).take_all()
    with pytest.raises(DataError, match="connection_factory must be a function"):
        ember.data.read_sql("SELECT 1", sqlite3.connect(db))


def test_sqlite_write_is_one_transaction(tmp_path):
    db = str(tmp_path / "a.db")
    with sqlite3.connect(db) as c:
        c.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, sq INTEGER)")
    ds = ember.data.range(100, override_num_blocks=4).map_batches(
        lambda b: {"id": b["id"], "sq": b["id"] ** 2}
    )
    ds.write_sql("INSERT INTO t VALUES (?, ?)", _sqlite(db))
    assert ember.data.read_sql("SELECT * FROM t ORDER BY id", _sqlite(db)).take_all() == ds.take_all()
    # a duplicate key in the last block: nothing of this write is kept, not even the first blocks
    again = ember.data.range(150, override_num_blocks=3).map_batches(
        lambda b: {"id": b["id"] + 100, "sq": b["id"]}
    )
    clash = again.union(ember.data.from_items([{"id": 5, "sq": 0}]))
    with pytest.raises(sqlite3.IntegrityError):
        clash.write_sql("INSERT INTO t VALUES (?, ?)", _sqlite(db))
    assert sqlite3.connect(db).execute("SELECT COUNT(*) FROM t").fetchone() == (100,)


@pytest.mark.slow  # starts a PostgreSQL server (~10 s)
def test_postgres_round_trip_with_real_types(postgres):
    import psycopg

    connect = lambda: psycopg.connect(postgres)  # noqa: E731
    with connect() as c:
        c.execute(
            "CREATE TABLE items (id BIGINT PRIMARY KEY, name TEXT, price NUMERIC(10, 2), day DATE, "
            "ok BOOLEAN)"
        )
    rows = [
        {
            "id": i,
            "name": f"item {i}",
            "price": decimal.Decimal(f"{i}.25"),
            "day": datetime.date(2024, 1, 1 + i % 28),
            "ok": i % 2 == 0,
        }
        for i in range(500)
    ]
    ember.data.from_items(rows).write_sql("INSERT INTO items VALUES (%s, %s, %s, %s, %s)", connect)
    back = ember.data.read_sql("SELECT id, name, price, day, ok FROM items ORDER BY id", connect).take_all()
    assert back == rows
    high = ember.data.read_sql(
        "SELECT id FROM items WHERE price > %s ORDER BY id", connect, sql_params=(decimal.Decimal("497"),)
    )
    assert [r["id"] for r in high.take_all()] == [497, 498, 499]
    with pytest.raises(
        DataError, match='read_sql: the query failed \\(UndefinedTable: relation "nope" does not'
    ):
        ember.data.read_sql("SELECT * FROM nope", connect).take_all()
    with pytest.raises(psycopg.errors.UniqueViolation):  # one transaction: none of the 3 rows stay
        ember.data.from_items([{"id": 1000}, {"id": 1001}, {"id": 0}]).write_sql(
            "INSERT INTO items (id) VALUES (%s)", connect
        )
    assert ember.data.read_sql("SELECT COUNT(*) AS n FROM items", connect).take_all() == [{"n": 500}]
