"""One output file of a write: its pieces of blocks, written atomically, on the driver or in a Ray task.

A `FileJob` holds everything but the blocks (the path, which rows of which block, the format's
write function, the filesystem, Ray's ``arrow_open_stream_args``), so a Ray task receives the
blocks as its own arguments (Ray resolves them where the task runs, and places the task near
them) and the driver never holds the data. The file appears under its name only complete
(`ember.fs.atomic_write`), so a retried or killed task leaves nothing that looks finished.

``arrow_open_stream_args`` are what Ray passes to ``filesystem.open_output_stream``: ``compression``
(default ``"detect"``: gzip for ``.gz``, bz2, lz4, zstd for ``.bz2``, ``.lz4``, ``.zst`` names, as
pyarrow does) and ``buffer_size`` (buffering only: the bytes are the same). ``metadata`` (object
store metadata) is refused: ember's atomic rename on an object store does not carry it.

Example:
    >>> import tempfile, pyarrow as pa
    >>> out = tempfile.mkdtemp() + "/a.json.gz"
    >>> job = FileJob(out, [(0, 1, 2)], lambda block, f: f.write(str(block.num_rows).encode()), None, {})
    >>> job([pa.table({"x": [1, 2, 3]})])
    2
    >>> import gzip; gzip.open(out).read()
    b'2'
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ember.errors import ConfigError

#: pyarrow's ``compression="detect"``: the codec a file name's extension implies.
_BY_EXTENSION = {"gz": "gzip", "bz2": "bz2", "lz4": "lz4", "zst": "zstd"}


@dataclass
class FileJob:
    """Write rows ``pieces`` (``(block index, start, rows)``) of the blocks it is called with to ``path``."""

    path: str
    pieces: list[tuple[int, int, int]]
    write_file: Callable[[Any, Any], None]
    filesystem: Any = None
    open_args: dict[str, Any] = field(default_factory=dict)

    def __call__(self, blocks: list[Any]) -> int:
        """Write the file; returns its row count."""
        from ember.data.block import concat_blocks
        from ember.fs import atomic_write

        table = concat_blocks([blocks[i].slice(start, rows) for i, start, rows in self.pieces])
        codec = compression_for(self.open_args, self.path)
        with atomic_write(self.path, "wb", filesystem=self.filesystem) as f:
            if codec is None:
                self.write_file(table, f)
            else:
                f.write(_compressed(lambda out: self.write_file(table, out), codec))
        return table.num_rows


def _compressed(write: Callable[[Any], None], codec: str) -> bytes:
    import pyarrow as pa

    buffer = pa.BufferOutputStream()
    with pa.CompressedOutputStream(buffer, codec) as out:
        write(out)
    return buffer.getvalue().to_pybytes()


def compression_for(open_args: dict[str, Any], path: str) -> str | None:
    """The codec a file is written with (None: as it is)."""
    compression = open_args.get("compression", "detect")
    if compression == "detect":
        return _BY_EXTENSION.get(path.rsplit(".", 1)[-1]) if "." in path.rsplit("/", 1)[-1] else None
    return compression


def check_open_args(args: Any, where: str) -> dict[str, Any]:
    """Ray's ``arrow_open_stream_args`` as ember honours them; anything else refused in one line.

    Example:
        >>> check_open_args({"compression": "gzip"}, "Dataset.write_csv")
        {'compression': 'gzip'}
    """
    if args is None:
        return {}
    if not isinstance(args, dict):
        raise ConfigError(
            f"{where}(arrow_open_stream_args={args!r}); pass a dict of open_output_stream arguments"
        )
    unknown = sorted(set(args) - {"compression", "buffer_size"})
    if unknown:
        raise ConfigError(
            f"{where}(arrow_open_stream_args={{{unknown[0]!r}: ...}}) is not supported: ember honours "
            "'compression' and 'buffer_size' (object metadata does not survive its atomic rename)"
        )
    compression = args.get("compression", "detect")
    if compression not in (None, "detect"):
        import pyarrow as pa

        if not isinstance(compression, str) or not _available(pa, compression):
            raise ConfigError(
                f"{where}(arrow_open_stream_args={{'compression': {compression!r}}}); use 'gzip', "
                "'bz2', 'lz4', 'zstd', 'brotli', 'detect' or None"
            )
    size = args.get("buffer_size")
    if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 0):
        raise ConfigError(f"{where}(arrow_open_stream_args={{'buffer_size': {size!r}}}); use a byte count")
    return dict(args)


def _available(pa: Any, codec: str) -> bool:
    try:
        return pa.Codec.is_available(codec)
    except ValueError:  # a name pyarrow does not know at all
        return False
