"""read_sql: rows of a query, through any DB-API 2 connection (sqlite3, psycopg, ...).

The connection factory is called when the read runs (in the process that runs it), the query is
executed once, and rows are fetched ``ROWS_PER_BLOCK`` at a time with ``cursor.fetchmany``: the
result streams instead of being loaded whole. Column names come from ``cursor.description``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa

from ember.errors import DataError

ROWS_PER_BLOCK = 4096


def connect(connection_factory: Callable[[], Any], what: str) -> Any:
    """``connection_factory()``, or one DataError line when the database cannot be reached. The deadline is
    the driver's own (``connect_timeout=`` in psycopg, ``timeout=`` in sqlite3), set in the factory."""
    try:
        return connection_factory()
    except Exception as e:  # the driver's own error class (OperationalError, ...)
        first = str(e).strip().splitlines()[0][:300] if str(e).strip() else type(e).__name__
        raise DataError(
            f"{what}: connection_factory() could not connect ({type(e).__name__}: {first}); check the "
            "database's address and credentials (a deadline: the driver's connect_timeout=)"
        ) from None


def sql_reader(
    sql: str, connection_factory: Callable[[], Any], params: Any = None
) -> Callable[[], Iterator[pa.Table]]:
    def read() -> Iterator[pa.Table]:
        connection = connect(connection_factory, "read_sql")
        try:
            cursor = connection.cursor()
            try:
                cursor.execute(sql, params) if params is not None else cursor.execute(sql)
            except Exception as e:  # the driver's own error class: one line naming the query
                first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                raise DataError(
                    f"read_sql: the query failed ({type(e).__name__}: {first}); fix the SQL: {sql}"
                ) from None
            if cursor.description is None:
                raise DataError(
                    f"read_sql: the statement returns no rows (it is not a query): {sql}; pass a SELECT"
                )
            names = [d[0] for d in cursor.description]
            if len(set(names)) != len(names):
                raise DataError(
                    f"read_sql: the query returns columns {names} with a repeated name; name each column "
                    "once (SELECT a.x AS a_x, b.x AS b_x ...)"
                )
            yielded = False
            while True:
                rows = cursor.fetchmany(ROWS_PER_BLOCK)
                if not rows:
                    break
                yielded = True
                yield _block(names, rows)
            if not yielded:
                yield pa.table({name: pa.array([], pa.null()) for name in names})
        finally:
            with contextlib.suppress(Exception):
                connection.close()

    return read


def _block(names: list[str], rows: list[tuple]) -> pa.Table:
    columns = list(zip(*rows, strict=True))
    try:
        return pa.table({name: pa.array(list(values)) for name, values in zip(names, columns, strict=True)})
    except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
        raise DataError(f"read_sql: a column mixes value types ({e}); CAST it in the query") from None
