"""Blocks travel between processes as Arrow IPC streams (no pickling of table contents).

Both ends are ember's own processes. A pickled-object column trusted on the sending side
(`ember.data.tensor_types`) is trusted on the receiving side, and only such a column: an untrusted
column (from a file read with pyarrow) stays untrusted in the worker.
"""

from __future__ import annotations

import pyarrow as pa

from ember.data.tensor_types import mark_trust, restore_trust


def block_to_bytes(block: pa.Table) -> pa.Buffer:
    block = mark_trust(block)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, block.schema) as writer:
        writer.write_table(block)
    return sink.getvalue()


def bytes_to_block(data: bytes) -> pa.Table:
    return restore_trust(pa.ipc.open_stream(pa.py_buffer(data)).read_all())
