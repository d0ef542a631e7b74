"""read_images, read_numpy and read_binary_files: whole files, a group of files per task."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from ember.data.block import rows_to_block, to_arrow_column
from ember.data.read.partitioning import FileColumns
from ember.data.read.paths import open_input
from ember.data.read.task import ReadTask
from ember.errors import ConfigError, DataError

FILES_PER_TASK = 64
IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp")


def grouped_tasks(
    filesystem: Any, files: list[str], read_one: Callable[[Any, str], dict], cpu_heavy: bool = False
) -> list[ReadTask]:
    """One task per group of files; each file becomes one row."""
    tasks = []
    for start in range(0, len(files), FILES_PER_TASK):
        group = files[start : start + FILES_PER_TASK]
        tasks.append(
            ReadTask(
                read=_group_reader(filesystem, group, read_one),
                description=f"files {group[0]} .. {group[-1]}" if len(group) > 1 else f"file {group[0]}",
                num_rows=len(group),
                cpu_heavy=cpu_heavy,
            )
        )
    return tasks


def _group_reader(filesystem: Any, group: list[str], read_one: Callable[[Any, str], dict]):
    def read() -> Iterator[pa.Table]:
        yield rows_to_block([read_one(filesystem, path) for path in group], "read")

    return read


def _read_bytes(filesystem: Any, path: str) -> bytes:
    with open_input(filesystem, path) as f:
        return f.read()


def check_image_options(size: Any, mode: Any) -> tuple[int, int] | None:
    """``read_images``' ``size`` (height, width) and ``mode`` checked at the call, as Ray checks ``size``
    (a pair of positive integers); ``mode`` must be one of Pillow's modes.

    Example:
        >>> check_image_options([32, 48], "RGB")
        (32, 48)
    """
    if size is not None:
        if (
            isinstance(size, (str, bytes))
            or not hasattr(size, "__len__")
            or len(size) != 2
            or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v > 0 for v in size)
        ):
            raise ConfigError(
                f"read_images(size={size!r}); pass (height, width) as two positive integers, or None "
                "to keep each image's size"
            )
        size = (int(size[0]), int(size[1]))
    if mode is not None:
        from PIL import Image

        if not isinstance(mode, str) or mode not in Image.MODES:
            raise ConfigError(
                f"read_images(mode={mode!r}) is not a Pillow image mode; pass one of "
                f"{', '.join(Image.MODES)}, or None to keep each image's mode"
            )
    return size


def image_reader(
    size: tuple[int, int] | None, mode: str | None, include_paths: bool
) -> Callable[[Any, str], dict]:
    """Decodes one file as Ray does: resized (bilinear) to ``size`` when it differs, then converted to
    ``mode`` when it differs; a file past Pillow's decompression-bomb limit is refused, never decoded."""

    def read_one(filesystem: Any, path: str) -> dict:
        from PIL import Image, UnidentifiedImageError

        try:
            with Image.open(io.BytesIO(_read_bytes(filesystem, path))) as image:
                if size is not None and image.size != (size[1], size[0]):
                    image = image.resize(
                        (size[1], size[0]), resample=Image.Resampling.BILINEAR
                    )  # PIL wants (w, h)
                if mode is not None and image.mode != mode:
                    image = _converted(image, mode, path)
                array = np.asarray(image)
        except Image.DecompressionBombError as e:
            raise DataError(
                f"read_images: {path} is refused as a decompression bomb ({e}); if you trust the file, "
                "raise PIL.Image.MAX_IMAGE_PIXELS before reading"
            ) from None
        except (UnidentifiedImageError, OSError, SyntaxError) as e:
            raise DataError(
                f"read_images: {path} is not a readable image ({e}); remove or replace the file"
            ) from None
        row: dict[str, Any] = {"image": array}
        if include_paths:
            row["path"] = path
        return row

    return read_one


def _converted(image: Any, mode: str, path: str) -> Any:
    try:
        return image.convert(mode)
    except ValueError as e:  # a conversion Pillow has no route for
        raise DataError(
            f"read_images: {path} ({image.mode}) cannot be converted to mode {mode!r} ({e}); pass "
            "another mode= or convert the images in map_batches"
        ) from None


def numpy_file_tasks(
    filesystem: Any, files: list[str], include_paths: bool, allow_pickle: bool = False
) -> list[ReadTask]:
    """A .npy file holds many rows (its first axis): one task per file, column ``data``."""
    return [
        ReadTask(read=_numpy_reader(filesystem, p, include_paths, allow_pickle), description=f"file {p}")
        for p in files
    ]


def _numpy_reader(filesystem: Any, path: str, include_paths: bool, allow_pickle: bool = False):
    def read() -> Iterator[pa.Table]:
        raw = _read_bytes(filesystem, path)
        if not raw:
            raise DataError(
                f"read_numpy: {path} is empty (0 bytes), not a .npy file; save it again with numpy.save "
                "or remove it"
            )
        try:
            data = np.load(io.BytesIO(raw), allow_pickle=allow_pickle)
        except ValueError as e:
            if "allow_pickle" in str(e):
                raise DataError(
                    f"read_numpy: {path} holds pickled Python objects, and unpickling a file can run code; "
                    "pass allow_pickle=True only if you trust the file"
                ) from None
            raise DataError(
                f"read_numpy: {path} is not a readable .npy file ({e}); save it with numpy.save"
            ) from None
        except (EOFError, OSError) as e:
            raise DataError(
                f"read_numpy: {path} is not a readable .npy file ({e}); save it with numpy.save"
            ) from None
        block = pa.table({"data": to_arrow_column(np.atleast_1d(data), "data")})
        if include_paths:
            block = block.append_column("path", to_arrow_column([path] * block.num_rows))
        yield block

    return read


def binary_reader(include_paths: bool) -> Callable[[Any, str], dict]:
    def read_one(filesystem: Any, path: str) -> dict:
        row: dict = {"bytes": _read_bytes(filesystem, path)}
        if include_paths:
            row["path"] = path
        return row

    return read_one


def with_row_columns(
    read_one: Callable[[Any, str], dict], columns: FileColumns
) -> Callable[[Any, str], dict]:
    """``read_one`` whose row also holds the file's ``path`` and partition values (when asked for)."""
    if not columns.include_paths and columns.partitioning is None:
        return read_one

    def read_with_columns(filesystem: Any, path: str) -> dict:
        row = read_one(filesystem, path)
        for name, value in columns.values(path).items():
            row.setdefault(name, value)
        return row

    return read_with_columns
