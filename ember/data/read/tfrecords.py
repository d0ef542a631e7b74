"""TFRecord files of ``tf.train.Example`` records, read and written without TensorFlow.

A TFRecord file is a sequence of records: ``uint64 length``, ``uint32 masked CRC-32C of the length``,
``length`` bytes of data, ``uint32 masked CRC-32C of the data`` (all little-endian). Each record is a
``tf.train.Example`` protocol buffer: a map from feature name to a list of bytes, float32 or int64.
This module decodes that wire format directly (a few dozen lines) instead of importing TensorFlow.

As in Ray: a feature with one value becomes a scalar column (bytes -> binary, float -> float32,
int -> int64), a feature with several values a list column. Both CRCs of every record are checked;
a mismatch is one line naming the file and the record (Ray checks neither).

Example:
    >>> record = encode_example({"label": 3, "score": [0.5, 1.5], "name": b"cat"})
    >>> decode_example(record)
    {'label': 3, 'score': [0.5, 1.5], 'name': b'cat'}
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from ember.errors import DataError

RECORDS_PER_BLOCK = 1024


def _crc_table() -> list[int]:
    table = []
    for n in range(256):
        crc = n
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_TABLE = _crc_table()


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli), the checksum TFRecord uses.

    Example:
        >>> hex(crc32c(b"123456789"))   # the standard check value
        '0xe3069283'
    """
    crc = 0xFFFFFFFF
    table = _TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc(data: bytes) -> int:
    crc = crc32c(data)
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


# ---------------------------------------------------------------- protocol buffer wire format


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise ValueError("truncated varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def _fields(buf: bytes) -> Iterator[tuple[int, int, Any]]:
    """(field number, wire type, value) of each field of one message."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 1:
            value, pos = buf[pos : pos + 8], pos + 8
        elif wire == 2:
            size, pos = _varint(buf, pos)
            value, pos = buf[pos : pos + size], pos + size
        elif wire == 5:
            value, pos = buf[pos : pos + 4], pos + 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
        if pos > len(buf):
            raise ValueError("truncated field")
        yield number, wire, value


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _feature_values(feature: bytes) -> tuple[str, list]:
    """A Feature message: ('bytes' | 'float' | 'int' | 'none', values)."""
    for number, _, body in _fields(feature):
        values: list = []
        if number == 1:
            values = [bytes(v) for n, _, v in _fields(body) if n == 1]
            return "bytes", values
        if number == 2:
            for n, wire, v in _fields(body):
                if n == 1:
                    values.extend(
                        struct.unpack(f"<{len(v) // 4}f", v) if wire == 2 else struct.unpack("<f", v)
                    )
            return "float", values
        if number == 3:
            for n, wire, v in _fields(body):
                if n == 1 and wire == 2:
                    pos = 0
                    while pos < len(v):
                        item, pos = _varint(v, pos)
                        values.append(_signed(item))
                elif n == 1:
                    values.append(_signed(v))
            return "int", values
    return "none", []


def decode_example(record: bytes) -> dict[str, Any]:
    """A serialized ``tf.train.Example`` as {feature: scalar or list} (Ray's row shape)."""
    row: dict[str, Any] = {}
    for number, _, features in _fields(record):
        if number != 1:
            continue
        for n, _, entry in _fields(features):
            if n != 1:
                continue
            name, feature = "", b""
            for k, _, v in _fields(entry):
                if k == 1:
                    name = bytes(v).decode("utf-8")
                elif k == 2:
                    feature = bytes(v)
            kind, values = _feature_values(feature)
            if kind == "float":
                values = [float(np.float32(v)) for v in values]
            row[name] = values[0] if len(values) == 1 else values
    return row


def _key(number: int, wire: int) -> bytes:
    return _encode_varint((number << 3) | wire)


def _encode_varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _delimited(number: int, body: bytes) -> bytes:
    return _key(number, 2) + _encode_varint(len(body)) + body


def _encode_feature(name: str, value: Any) -> bytes:
    values = list(value) if isinstance(value, (list, tuple, np.ndarray)) else [value]
    if all(isinstance(v, (bytes, str)) for v in values) and values:
        body = b"".join(_delimited(1, v.encode() if isinstance(v, str) else v) for v in values)
        feature = _delimited(1, body)
    elif all(isinstance(v, (bool, int, np.integer)) for v in values) and values:
        feature = _delimited(3, _delimited(1, b"".join(_encode_varint(int(v)) for v in values)))
    elif all(isinstance(v, (float, int, np.floating, np.integer)) for v in values) and values:
        feature = _delimited(2, _delimited(1, struct.pack(f"<{len(values)}f", *[float(v) for v in values])))
    elif not values:
        feature = b""
    else:
        raise DataError(
            f"write_tfrecords: column {name!r} holds {type(values[0]).__name__}; a tf.train.Example "
            "feature holds bytes, str, int or float values (or lists of them)"
        )
    return _delimited(1, _delimited(1, name.encode()) + _delimited(2, feature))


def encode_example(row: dict[str, Any]) -> bytes:
    """A row as a serialized ``tf.train.Example`` (None values are left out, as TensorFlow has no null)."""
    return _delimited(1, b"".join(_encode_feature(k, v) for k, v in row.items() if v is not None))


# ---------------------------------------------------------------- record framing


def read_records(f: Any, path: str) -> Iterator[bytes]:
    """The data of each record of an open TFRecord file, CRCs checked."""
    index = 0
    while True:
        header = f.read(12)
        if not header:
            return
        if len(header) < 12:
            raise _corrupt(path, index, "the file ends inside a record header")
        length, length_crc = struct.unpack("<QI", header)
        if masked_crc(header[:8]) != length_crc:
            raise _corrupt(path, index, "the length's CRC does not match")
        data = f.read(length)
        footer = f.read(4)
        if len(data) < length or len(footer) < 4:
            raise _corrupt(path, index, "the file ends inside a record")
        if masked_crc(data) != struct.unpack("<I", footer)[0]:
            raise _corrupt(path, index, "the data's CRC does not match")
        yield data
        index += 1


def _corrupt(path: str, index: int, why: str) -> DataError:
    return DataError(f"read_tfrecords: {path} record {index} is corrupt ({why}); check or rewrite the file")


def frame_record(data: bytes) -> bytes:
    length = struct.pack("<Q", len(data))
    return length + struct.pack("<I", masked_crc(length)) + data + struct.pack("<I", masked_crc(data))


def read_tfrecords_file(filesystem: Any, path: str) -> Iterator[pa.Table]:
    """The Examples of one file, a block per ``RECORDS_PER_BLOCK`` records."""
    from ember.data.block import rows_to_block
    from ember.data.read.paths import open_stream

    rows: list[dict] = []
    with open_stream(filesystem, path) as f:
        for index, record in enumerate(read_records(f, path)):
            try:
                rows.append(decode_example(record))
            except (ValueError, UnicodeDecodeError, struct.error) as e:
                raise DataError(
                    f"read_tfrecords: {path} record {index} is not a tf.train.Example ({e}); check the file"
                ) from None
            if len(rows) == RECORDS_PER_BLOCK:
                yield rows_to_block(rows, "read_tfrecords")
                rows = []
    if rows:
        yield rows_to_block(rows, "read_tfrecords")
