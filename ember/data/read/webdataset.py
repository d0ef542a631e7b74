"""WebDataset tar shards: files that share a base name (``000123.jpg``, ``000123.cls``) form one sample.

Reading streams each tar in order and never extracts to disk: member names are only split into a
sample key (up to the first ``.`` of the file name) and a suffix (the rest), which becomes the
column name. Members of one sample must be adjacent, as the WebDataset format requires; a key that
comes back after another is refused (Ray 2.60 does the same). Each row also holds ``__key__`` and
``__url__`` (the shard's path).

The default decoder follows Ray's: ``txt``/``text`` -> str, ``cls``/``cls2`` -> int, ``jpg``/``png``/
``ppm``/``pgm``/``pbm``/``pnm`` -> HWC uint8 ndarray, ``json`` -> parsed value, ``npy`` -> ndarray
(never unpickled); other suffixes stay bytes. Pickled members (``pkl``, ``pickle``, ``pt``, ``pth``)
are refused: unpickling runs code; pass ``decoder=`` your own function if you trust the shard.

Example:
    >>> split_name("shard/000123.seg.png")
    ('shard/000123', 'seg.png')
"""

from __future__ import annotations

import io
import json
import tarfile
import uuid
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pyarrow as pa

from ember.errors import DataError

if TYPE_CHECKING:
    from typing_extensions import Self

ROWS_PER_BLOCK = 256
_IMAGES = ("jpg", "jpeg", "png", "ppm", "pgm", "pbm", "pnm")
_PICKLED = ("pkl", "pickle", "pt", "pth")


def split_name(name: str) -> tuple[str, str] | tuple[None, None]:
    """(sample key, suffix) of a member name; (None, None) when the file name has no ``.``."""
    folder, _, base = name.rpartition("/")
    if "." not in base:
        return None, None
    stem, suffix = base.split(".", 1)
    return (f"{folder}/{stem}" if folder else stem), suffix


def _grouped(tar: tarfile.TarFile, path: str, suffixes: Any) -> Iterator[dict[str, Any]]:
    current: dict[str, Any] | None = None
    seen: set[str] = set()
    last = None
    for member in tar:
        last = member.name
        if not member.isreg():
            continue
        key, suffix = split_name(member.name)
        if key is None or suffix is None:  # both or neither
            continue
        if current is None or key != current["__key__"]:
            if current is not None:
                seen.add(current["__key__"])
                if len(current) > 2:
                    yield current
            if key in seen:
                raise DataError(
                    f"read_webdataset: the members of sample {key!r} in {path} are not adjacent; "
                    "write the tar with its members sorted by name (tar --sort=name)"
                )
            current = {"__key__": key, "__url__": path}
        if suffix in current:
            raise DataError(f"read_webdataset: {path} holds {member.name} twice; remove the duplicate")
        if _wanted(suffix, suffixes):  # a member left out is skipped unread, however large
            data = tar.extractfile(member)
            assert data is not None  # a regular file (isreg() above)
            current[suffix] = data.read()
    if getattr(tar, "end_seen", None) != "EOFHeaderError":  # the archive stopped without its end marker
        where = f"after member {last!r}" if last else "before its first member"
        raise DataError(
            f"read_webdataset: {path} ends {where} without the tar end-of-archive marker: the shard "
            "is cut short or damaged, so samples may be missing; copy or write it again"
        )
    if current is not None and len(current) > 2:
        yield current


class _EndRecordingTarInfo(tarfile.TarInfo):
    """Records why the archive's member list ended on the TarFile (``end_seen``): tarfile stops as quietly
    at a file cut after a member (no bytes left) or at a damaged header as at the real end marker (a
    zero block), and only the last is a complete archive."""

    @classmethod
    def fromtarfile(cls, tar: tarfile.TarFile) -> Self:
        try:
            return super().fromtarfile(tar)
        except tarfile.HeaderError as e:
            tar.end_seen = type(e).__name__  # type: ignore[attr-defined]  # our mark on tarfile's object
            raise


def _samples(stream: Any, path: str, suffixes: Any) -> Iterator[dict[str, Any]]:
    # members left out are skipped unread: a seek in a seekable file, else reading forward 1 MiB at a time
    mode: Literal["r:*", "r|*"] = "r:*" if _seekable(stream) else "r|*"
    try:
        with tarfile.open(fileobj=stream, mode=mode, tarinfo=_EndRecordingTarInfo, bufsize=1 << 20) as tar:
            yield from _grouped(tar, path, suffixes)
    except tarfile.TarError as e:
        raise DataError(
            f"read_webdataset: {path} is not a readable tar file ({e}); check or rewrite the shard"
        ) from None


def _seekable(stream: Any) -> bool:
    try:
        return bool(stream.seekable())
    except (AttributeError, OSError, ValueError):
        return False


def _wanted(suffix: str, suffixes: Any) -> bool:
    if suffixes is None:
        return True
    if callable(suffixes):
        return bool(suffixes(suffix))
    return suffix in suffixes


def default_decoder(sample: dict[str, Any]) -> dict[str, Any]:
    """Decode the values of one sample by suffix (see the module docstring)."""
    out = dict(sample)
    for key, value in sample.items():
        if key.startswith("__") or not isinstance(value, bytes):
            continue
        extension = key.rsplit(".", 1)[-1].lower()
        if extension in ("txt", "text"):
            out[key] = value.decode("utf-8")
        elif extension in ("cls", "cls2"):
            out[key] = int(value.decode("utf-8"))
        elif extension in _IMAGES:
            from PIL import Image

            with Image.open(io.BytesIO(value)) as image:
                out[key] = np.asarray(image)
        elif extension == "json":
            out[key] = json.loads(value)
        elif extension == "npy":
            out[key] = np.load(io.BytesIO(value), allow_pickle=False)
        elif extension in _PICKLED:
            raise DataError(
                f"read_webdataset: member {key!r} of sample {sample.get('__key__')!r} is pickled, and "
                "unpickling can run code; pass decoder= a function that decodes it if you trust the "
                "shard, or suffixes= to leave it out"
            )
    return out


def _decoders(decoder: Any) -> list[Callable[[dict], dict]]:
    if decoder is None or decoder is False:
        return []
    if decoder is True:
        return [default_decoder]
    if callable(decoder):
        return [decoder]
    if isinstance(decoder, (list, tuple)):
        return [d for item in decoder for d in _decoders(item)]
    raise DataError(
        f"read_webdataset(decoder={decoder!r}); pass True (default decoding), False (bytes), a "
        "function of a sample dict, or a list of them"
    )


def webdataset_reader(
    decoder: Any, suffixes: Any, expand_json: bool
) -> Callable[[Any, str], Iterator[pa.Table]]:
    decoders = _decoders(decoder)

    def read(filesystem: Any, path: str) -> Iterator[pa.Table]:
        from ember.data.block import rows_to_block
        from ember.data.read.paths import open_stream

        rows = []
        with open_stream(filesystem, path) as stream:
            for sample in _samples(stream, path, suffixes):
                for decode in decoders:
                    sample = _decode(decode, sample, path)
                if expand_json and isinstance(sample.get("json"), dict):
                    sample = {**sample, **{k: v for k, v in sample["json"].items() if k not in sample}}
                rows.append(sample)
                if len(rows) == ROWS_PER_BLOCK:
                    yield rows_to_block(rows, "read_webdataset")
                    rows = []
        if rows:
            yield rows_to_block(rows, "read_webdataset")

    return read


def _decode(decode: Callable[[dict], dict], sample: dict, path: str) -> dict:
    try:
        return decode(sample)
    except DataError:
        raise
    except Exception as e:  # a member that does not decode (a broken image, bad JSON)
        raise DataError(
            f"read_webdataset: sample {sample.get('__key__')!r} of {path} does not decode "
            f"({type(e).__name__}: {e}); fix the shard or pass decoder="
        ) from None


# ---------------------------------------------------------------- writing


def default_encoder(sample: dict[str, Any]) -> dict[str, bytes]:
    """Encode the values of one row by column suffix (the inverse of `default_decoder`)."""
    out: dict[str, Any] = {}
    for key, value in sample.items():
        if key.startswith("__") or value is None:
            continue
        extension = key.rsplit(".", 1)[-1].lower()
        if isinstance(value, bytes):
            out[key] = value
        elif extension in ("txt", "text") or isinstance(value, str):
            out[key] = str(value).encode("utf-8")
        elif extension in ("cls", "cls2"):
            out[key] = str(int(value)).encode("utf-8")
        elif extension in _IMAGES:
            from PIL import Image

            buffer = io.BytesIO()
            Image.fromarray(np.asarray(value)).save(
                buffer, format="jpeg" if extension == "jpg" else extension
            )
            out[key] = buffer.getvalue()
        elif extension == "json":
            out[key] = json.dumps(_plain(value)).encode("utf-8")
        elif extension == "npy":
            buffer = io.BytesIO()
            np.save(buffer, np.asarray(value), allow_pickle=False)
            out[key] = buffer.getvalue()
        else:
            raise DataError(
                f"write_webdataset: column {key!r} holds {type(value).__name__}, and its suffix "
                f"{extension!r} names no encoding; name it e.g. '{key}.npy' or '{key}.json', or pass encoder="
            )
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def webdataset_writer(encoder: Any) -> Callable[[pa.Table, Any], None]:
    """Writes one block as a tar shard: each row's encoded columns as ``<__key__>.<column>`` members."""
    encoders = [default_encoder] if encoder is True else _decoders(encoder) if encoder else []

    def write(block: pa.Table, f: Any) -> None:
        from ember.data.block import block_to_rows

        with tarfile.open(fileobj=f, mode="w|") as tar:
            for row in block_to_rows(block):
                key = str(row.get("__key__") or uuid.uuid4().hex)
                for encode in encoders:
                    row = encode(row)
                for column, data in row.items():
                    if column.startswith("__") or data is None:
                        continue
                    if not isinstance(data, bytes):
                        raise DataError(
                            f"write_webdataset: column {column!r} is {type(data).__name__} after "
                            "encoding; an encoder must turn every value into bytes"
                        )
                    info = tarfile.TarInfo(f"{key}.{column}")
                    info.size = len(data)
                    info.mtime = 0  # the same rows give the same bytes
                    tar.addfile(info, io.BytesIO(data))

    return write
