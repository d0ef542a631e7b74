"""Blocks travel between processes as Arrow IPC streams (no pickling of table contents)."""

from __future__ import annotations

import pyarrow as pa


def block_to_bytes(block: pa.Table) -> pa.Buffer:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, block.schema) as writer:
        writer.write_table(block)
    return sink.getvalue()


def bytes_to_block(data: bytes) -> pa.Table:
    return pa.ipc.open_stream(pa.py_buffer(data)).read_all()
