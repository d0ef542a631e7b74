"""Files of one read must agree on their columns: Arrow would otherwise promote or null-fill them in silence.

Checked once per file, before its rows are used (parquet: from metadata when the read is planned;
CSV and JSON: the first file's inferred schema is compared with each file's as it is opened).
Column order may differ (blocks are joined by name), and a column that is all-null in one file
agrees with any type.

Example:
    >>> import pyarrow as pa
    >>> check_same_schema("read_csv", ("a.csv", pa.schema([("x", pa.int64())])),
    ...                   ("b.csv", pa.schema([("x", pa.string())])), "fix it")
    Traceback (most recent call last):
    ...
    ember.errors.DataError: read_csv: column 'x' is int64 in a.csv but string in b.csv; fix it
"""

from __future__ import annotations

import pyarrow as pa

from ember.data.schema import format_type
from ember.errors import DataError


def check_same_schema(
    source: str,
    first: tuple[str, pa.Schema],
    other: tuple[str, pa.Schema],
    fix: str,
    allow_missing: bool = False,
) -> None:
    """Refuse ``other`` when a column's type differs from ``first``'s, or (unless ``allow_missing``) is
    missing."""
    (path_a, a), (path_b, b) = first, other
    if a.equals(b):
        return
    for name in dict.fromkeys(a.names + b.names):
        type_a = a.field(name).type if name in a.names else None
        type_b = b.field(name).type if name in b.names else None
        if type_a is None or type_b is None:
            if allow_missing:
                continue
        elif type_a == type_b or pa.types.is_null(type_a) or pa.types.is_null(type_b):
            continue
        shown_a = format_type(type_a) if type_a is not None else "missing"
        shown_b = format_type(type_b) if type_b is not None else "missing"
        raise DataError(
            f"{source}: column {name!r} is {shown_a} in {path_a} but {shown_b} in {path_b}; {fix}"
        )
