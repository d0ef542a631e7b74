"""File names of a write: ember's ``part-NNNNN.<ext>``, or a user's ``FilenameProvider`` (Ray's contract).

Ray's ``FilenameProvider`` (``ray.data.datasource.FilenameProvider``; Ray Data does not export it at
``ray.data``) names each write task's file with ``get_filename_for_task(write_uuid, task_index)``;
rows written one file each (``write_images``) get ``{base}_{block_index:06}_{row_index:06}{ext}``
derived from it, and ``write_parquet`` turns ``name.parquet`` into ``name-0.parquet`` (``{i}`` in the
name becomes the file's number within the task), as Ray's ``pyarrow.dataset`` template does. In
ember each output file is one write task: ``task_index`` counts the files of the write from 0.

A provider written for Ray (a ``ray.data.datasource.FilenameProvider``) works unchanged. Ray no
longer calls the deprecated ``get_filename_for_block`` / ``get_filename_for_row``; a provider that
only overrides those would be ignored there in silence, so ember refuses it in one line.
Names must be plain file names (no ``/``; not starting with ``.`` or ``_``, which readers skip),
unique within the write, and new in the folder unless an ``overwrite`` replaces that file; as in Ray,
``write_parquet`` in ``mode="append"`` refuses a name without the write's UUID.

Example:
    >>> FilenameProvider(file_format="csv").get_filename_for_task("ab12", 3)
    'ab12_000003.csv'
    >>> task_file_name(FilenameProvider(file_format="parquet"), "ab12", 3, "parquet", per_row=False)
    'ab12_000003-0.parquet'
"""

from __future__ import annotations

from typing import Any

from ember.errors import ConfigError, DataError


class FilenameProvider:
    """Names the files a ``write_*`` call writes (Ray's ``FilenameProvider``): subclass it and override
    ``get_filename_for_task``; pass it as ``filename_provider=``.

    Example:
        >>> import ember.data, tempfile, os
        >>> class Named(FilenameProvider):
        ...     def get_filename_for_task(self, write_uuid, task_index):
        ...         return f"scores-{write_uuid}-{task_index}.csv"
        >>> out = tempfile.mkdtemp()
        >>> files = ember.data.range(4).write_csv(out, filename_provider=Named(), min_rows_per_file=2)
        >>> sorted(os.path.basename(f).split("-")[2] for f in files)
        ['0.csv', '1.csv']
        >>> ember.data.read_csv(out).count()
        4
    """

    def __init__(self, dataset_uuid: str | None = None, file_format: str | None = None) -> None:
        self.dataset_uuid = dataset_uuid
        self.file_format = file_format

    def get_filename_for_task(self, write_uuid: str, task_index: int) -> str:
        """``[{dataset_uuid}_]{write_uuid}_{task_index:06}[.{file_format}]`` (Ray's default).

        Example:
            >>> FilenameProvider("ds").get_filename_for_task("w", 1)
            'ds_w_000001'
        """
        name = f"{self.dataset_uuid}_" if self.dataset_uuid is not None else ""
        name += f"{write_uuid}_{task_index:06}"
        return f"{name}.{self.file_format}" if self.file_format is not None else name


def check_provider(provider: Any, where: str) -> None:
    """Refuse what is no filename provider, or one whose only overrides Ray no longer calls."""
    if provider is None:
        return
    method = getattr(provider, "get_filename_for_task", None)
    if not callable(method):
        raise ConfigError(
            f"{where}(filename_provider={type(provider).__name__}); pass a FilenameProvider "
            "(ember.data.FilenameProvider or ray.data.datasource.FilenameProvider) with "
            "get_filename_for_task(write_uuid, task_index)"
        )
    overrides = {
        name
        for klass in type(provider).__mro__
        if klass is not object and not _is_base_provider(klass)
        for name in vars(klass)
    }
    deprecated = {"get_filename_for_block", "get_filename_for_row"} & overrides
    if deprecated and "get_filename_for_task" not in overrides:
        raise ConfigError(
            f"{where}: {type(provider).__name__} overrides {sorted(deprecated)[0]}, which Ray no "
            "longer calls; override get_filename_for_task(write_uuid, task_index) instead"
        )


def _is_base_provider(klass: type) -> bool:
    return klass.__name__ == "FilenameProvider" and klass.__module__ in (
        __name__,
        "ray.data.datasource.filename_provider",
    )


def task_file_name(provider: Any, write_uuid: str, task_index: int, extension: str, per_row: bool) -> str:
    """The name of task ``task_index``'s file, by Ray's rules for the writer (see the module's text)."""
    name = provider.get_filename_for_task(write_uuid, task_index)
    if not isinstance(name, str) or not name:
        raise DataError(f"filename provider {type(provider).__name__} returned {name!r}; return a file name")
    if per_row:  # the one row of this file: block 0, row 0 of its task
        base, dot, ext = name.rpartition(".")
        base, ext = (base, f".{ext}") if dot else (name, "")
        return f"{base}_{0:06}_{0:06}{ext}"
    if extension == "parquet":
        return _parquet_template(name).replace("{i}", "0")
    return name


def _parquet_template(name: str) -> str:
    if "{i}" in name:
        return name if "parquet" in name else f"{name}.parquet"
    if "parquet" not in name:
        return f"{name}-{{i}}.parquet"
    stem, _, suffix = name.rpartition(".")
    return f"{stem}-{{i}}.{suffix}"


def check_name(name: str, taken: set[str], where: str) -> None:
    """A provider's name: a plain, visible file name not used by this write (nor, see callers, the folder)."""
    if "/" in name or "\\" in name or name in (".", ".."):
        raise DataError(
            f"{where}: the filename provider returned {name!r}; return a file name without folders"
        )
    if name.startswith((".", "_")):
        raise DataError(
            f"{where}: the filename provider returned {name!r}; names starting with '.' or '_' are "
            "hidden from readers, return another"
        )
    if name in taken:
        raise DataError(
            f"{where}: the filename provider returned {name!r} twice (or a name already in the "
            "folder); include write_uuid and task_index in the names"
        )
