"""A real Datasink for the write tests, in a module Ray's workers can import (``tests.data._ray_sinks``)."""

from __future__ import annotations

import os
import sqlite3

import ember.data


class SQLiteSink(ember.data.Datasink):
    """A real sink into a SQLite file: a staging table per task, moved into the target on completion."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.started = self.completed = None
        self.failed = None

    def on_write_start(self, schema=None):
        with sqlite3.connect(self.path) as db:
            db.execute("CREATE TABLE IF NOT EXISTS t (id INTEGER, name TEXT)")
        self.started = schema.names if schema is not None else None

    def write(self, blocks, ctx):
        with sqlite3.connect(self.path, timeout=30) as db:
            staged = f"stage_{ctx.kwargs['write_uuid']}_{ctx.task_idx}"
            db.execute(f"CREATE TABLE {staged} (id INTEGER, name TEXT)")
            n = 0
            for block in blocks:
                batch = block.select(["id", "name"]).to_pylist()
                db.executemany(f"INSERT INTO {staged} VALUES (:id, :name)", batch)
                n += len(batch)
        return staged, n, os.getpid()

    def on_write_complete(self, write_result):
        with sqlite3.connect(self.path) as db:
            for staged, _, _ in write_result.write_returns:
                db.execute(f"INSERT INTO t SELECT * FROM {staged}")
                db.execute(f"DROP TABLE {staged}")
        self.completed = write_result

    def on_write_failed(self, error):
        self.failed = error


class NodeRecorder(ember.data.Datasink):
    """Returns, from each write call, the id of the Ray node it ran on (None off Ray)."""

    def __init__(self, distributed: bool) -> None:
        self.distributed = distributed
        self.nodes: list = []

    @property
    def supports_distributed_writes(self) -> bool:
        return self.distributed

    def write(self, blocks, ctx):
        import ray

        return ray.get_runtime_context().get_node_id() if ray.is_initialized() else None

    def on_write_complete(self, write_result):
        self.nodes = write_result.write_returns
