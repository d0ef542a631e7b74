"""read_csv, read_json (JSON lines or one JSON array) and read_text: one task per file.

Files whose names end in .gz, .bz2, .zst, .lz4 or .br are decompressed as they are read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from ember.data.block import to_arrow_column
from ember.data.read.paths import open_stream
from ember.data.read.schemas import check_same_schema
from ember.data.read.task import ReadTask
from ember.errors import DataError


def file_tasks(
    filesystem: Any, files: list[str], read_file: Callable[[Any, str], Iterator[pa.Table]]
) -> list[ReadTask]:
    """One ReadTask per file, each calling ``read_file(filesystem, path)``."""
    return [ReadTask(read=_bind(read_file, filesystem, path), description=f"file {path}") for path in files]


def _bind(read_file: Callable, filesystem: Any, path: str) -> Callable[[], Iterator[pa.Table]]:
    return lambda: read_file(filesystem, path)


def csv_tasks(filesystem: Any, files: list[str], options: dict) -> list[ReadTask]:
    """One task per CSV file; every file's columns must agree with the first file's (checked as it opens)."""
    first = (files[0], _csv_schema(filesystem, files[0], options)) if len(files) > 1 else None
    return file_tasks(filesystem, files, lambda f, p: read_csv_file(f, p, first, **options))


def _csv_schema(filesystem: Any, path: str, options: dict) -> pa.Schema:
    """The schema pyarrow infers for a CSV file (from its first block only)."""
    return next(read_csv_file(filesystem, path, None, schema_only=True, **options)).schema


def read_csv_file(
    filesystem: Any,
    path: str,
    first: tuple[str, pa.Schema] | None = None,
    schema_only: bool = False,
    **options: Any,
) -> Iterator[pa.Table]:
    import pyarrow.csv as pacsv

    try:
        with open_stream(filesystem, path) as f:
            reader = pacsv.open_csv(f, **options)
            _check_text(path, reader.schema, options)
            if schema_only:
                yield reader.schema.empty_table()
                return
            if first is not None:
                check_same_schema(
                    "read_csv",
                    first,
                    (path, reader.schema),
                    "read the files separately, or pass "
                    "convert_options=pyarrow.csv.ConvertOptions(column_types={...}) to give every file "
                    "the same types",
                )
            for batch in reader:
                yield pa.Table.from_batches([batch])
    except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
        if "utf8" in str(e).lower():
            raise _not_utf8(path, None, _encoding(options)) from None
        raise DataError(
            f"read_csv: {path} is not valid CSV ({_first_line(e)}); fix the file or pass parse options"
        ) from None


def _encoding(options: dict) -> str:
    read_options = options.get("read_options")
    return getattr(read_options, "encoding", None) or "utf8"


def _check_text(path: str, schema: pa.Schema, options: dict) -> None:
    """pyarrow reads text that is not valid in the encoding as bytes, silently; refuse that, once per file."""
    convert = options.get("convert_options")
    asked = set(getattr(convert, "column_types", None) or {})
    for field in schema:
        if pa.types.is_binary(field.type) and field.name not in asked:
            raise _not_utf8(path, field.name, _encoding(options))


def _not_utf8(path: str, column: str | None, encoding: str) -> DataError:
    where = f"column {column!r} of {path}" if column is not None else path
    return DataError(
        f"read_csv: {where} is not valid {encoding} text; pass its encoding, e.g. "
        "read_options=pyarrow.csv.ReadOptions(encoding='latin-1') (or convert_options column_types={...: "
        "pyarrow.binary()} to keep bytes)"
    )


def read_json_file(filesystem: Any, path: str, **options: Any) -> Iterator[pa.Table]:
    """JSON lines (pyarrow's reader), or a file holding one JSON array of objects (or one object), as Ray
    reads."""
    import pyarrow.json as pajson

    with open_stream(filesystem, path) as f:
        raw = f.read()
    if not raw.strip():
        return
    if raw.lstrip()[:1] == b"[":
        yield _json_document(path, raw)
        return
    try:
        yield pajson.read_json(pa.BufferReader(raw), **options)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
        try:
            yield _json_document(path, raw)
        except DataError:
            raise DataError(
                f"read_json: {path} is not valid JSON lines or a JSON array ({_first_line(e)}); write one "
                "JSON object per line, or one array of objects"
            ) from None


def _json_document(path: str, raw: bytes) -> pa.Table:
    import json

    try:
        document = json.loads(raw)
    except ValueError as e:
        raise DataError(
            f"read_json: {path} is not valid JSON ({e}); write one JSON object per line, or one array "
            "of objects"
        ) from None
    rows = document if isinstance(document, list) else [document]
    if not all(isinstance(row, dict) for row in rows):
        raise DataError(
            f"read_json: {path} holds a JSON array of non-objects; each item must be an object "
            '({"column": value, ...})'
        )
    try:
        return pa.Table.from_pylist(rows)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
        raise DataError(
            f"read_json: {path}: values of one key have different types ({_first_line(e)}); make each "
            "key hold one type"
        ) from None


def read_text_file(
    filesystem: Any, path: str, encoding: str = "utf-8", drop_empty_lines: bool = True
) -> Iterator[pa.Table]:
    with open_stream(filesystem, path) as f:
        try:
            lines = f.read().decode(encoding).splitlines()
        except UnicodeDecodeError as e:
            raise DataError(f"read_text: {path} is not {encoding} text ({e}); pass encoding=") from None
    if drop_empty_lines:
        lines = [line for line in lines if line.strip()]
    yield pa.table({"text": to_arrow_column(np.array(lines, dtype=str) if lines else [], "text")})


def _first_line(e: Exception) -> str:
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
