"""A custom Datasource written the way Ray's docs teach (rows of a SQLite table, split into id
ranges), built over either library's base classes: the same code runs on Ray and on ember."""

from __future__ import annotations

import sqlite3


def sqlite_datasource(Datasource, ReadTask, BlockMetadata):  # noqa: N803 - the libraries' class names
    """The SQLite Datasource class over the given library's ``Datasource``, ``ReadTask``,
    ``BlockMetadata``."""

    class SQLiteDatasource(Datasource):
        def __init__(self, path: str, table: str, blocks_as: str = "arrow"):
            super().__init__()
            self.path, self.table, self.blocks_as = path, table, blocks_as
            with sqlite3.connect(path) as connection:
                self.low, self.high, self.rows = connection.execute(
                    f"SELECT MIN(id), MAX(id), COUNT(*) FROM {table}"
                ).fetchone()

        def estimate_inmemory_data_size(self):
            return self.rows * 16

        def get_read_tasks(self, parallelism, per_task_row_limit=None, data_context=None):
            span = self.high - self.low + 1
            edges = [self.low + span * i // parallelism for i in range(parallelism + 1)]
            tasks = []
            for start, stop in zip(edges[:-1], edges[1:], strict=True):
                if stop <= start:
                    continue
                with sqlite3.connect(self.path) as connection:
                    (count,) = connection.execute(
                        f"SELECT COUNT(*) FROM {self.table} WHERE id >= ? AND id < ?", (start, stop)
                    ).fetchone()
                metadata = BlockMetadata(
                    num_rows=count, size_bytes=count * 16, input_files=[self.path], exec_stats=None
                )
                tasks.append(
                    ReadTask(self._reader(start, stop), metadata, per_task_row_limit=per_task_row_limit)
                )
            return tasks

        def _reader(self, start, stop):
            path, table, blocks_as = self.path, self.table, self.blocks_as

            def read():
                import pandas as pd
                import pyarrow as pa

                with sqlite3.connect(path) as connection:
                    rows = connection.execute(
                        f"SELECT id, name FROM {table} WHERE id >= ? AND id < ? ORDER BY id", (start, stop)
                    ).fetchall()
                columns = {"id": [r[0] for r in rows], "name": [r[1] for r in rows]}
                yield pd.DataFrame(columns) if blocks_as == "pandas" else pa.table(columns)

            return read

    return SQLiteDatasource


def make_database(path: str, rows: int = 50) -> str:
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT)")
        connection.executemany(
            "INSERT INTO people VALUES (?, ?)", [(i, f"name-{i}") for i in range(3, rows + 3)]
        )
    return path
