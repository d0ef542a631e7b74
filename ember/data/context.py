"""DataContext: execution settings, named after Ray Data's: one process-wide context, and each
dataset's own (``Dataset.context``, a ``DatasetScopedContext``).

As in Ray, a dataset made by a read (``read_*``, ``from_*``, ``range``) takes a copy of the
process-wide context's Ray settings as they are then (``execution_options.preserve_order`` and
``.verbose_progress``): setting them on ``DataContext.get_current()`` afterwards changes the datasets
made afterwards, not that one. Datasets derived from it share its context (``ds.context.x = ...``
changes that dataset, the datasets derived from it and the one it came from, never another read's),
and ``union``/``mix``/``split`` take a copy of the first input's; a dataset runs with its own.

ember's own settings, which Ray does not have (``execution``, ``num_workers``, the memory budgets,
``scratch_dir``, ...), are read from the process-wide context when the dataset runs, unless set on
the dataset itself: they say where and with what resources a plan runs, as Ray's cluster does, not
what the dataset is.
"""

from __future__ import annotations

import copy
import dataclasses
import numbers
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ember.data.ray_context_settings import NO_EFFECT_DEFAULTS, refusal
from ember.data.ray_context_settings import ShuffleStrategy as ShuffleStrategy  # at Ray's path
from ember.data.system_memory import system_memory
from ember.errors import ConfigError


@dataclass
class DataContext:
    """Execution settings shared by every Dataset in this process.

    Example:
        >>> import ember.data
        >>> ctx = ember.data.DataContext.get_current()
        >>> ctx.max_inflight_bytes = 256 * 1024**2   # stream with at most ~256 MiB in flight
    """

    #: Upper bound on the bytes of task outputs produced but not yet consumed. The executor stops
    #: submitting tasks while it is over the bound, so a dataset larger than memory streams.
    max_inflight_bytes: int = 512 * 1024**2
    #: Rows per block for in-memory sources (range, from_items, from_numpy, ...).
    target_rows_per_block: int = 4096
    #: Worker processes for Python UDFs (None: all cores).
    num_workers: int | None = None
    #: "auto" runs plans with Python UDFs in worker processes and cheap plans in-process;
    #: "inline" runs everything in-process (debugging); "processes" always uses workers;
    #: "ray" runs plans as Ray Data operations on the Ray cluster (``ember.data.execute.ray_backend``).
    execution: str = field(default_factory=lambda: os.environ.get("EMBER_DATA_EXECUTION", "auto"))
    #: torch intra-op threads per worker (None: cores // workers, so workers do not oversubscribe).
    worker_torch_threads: int | None = None
    #: Deliver blocks in a deterministic order (needed for exact resume).
    preserve_order: bool = True
    #: Seconds a closing pool waits for a worker before killing it.
    worker_shutdown_timeout_s: float = 2.0
    #: Bytes the all-to-all operators (random_shuffle, sort, groupby, repartition, join) may hold
    #: in memory; past it they spill to ``scratch_dir``. Default: a quarter of the memory this process
    #: may use: the machine's RAM, or the container's limit when lower (cgroup v1/v2, ``system_memory.py``).
    memory_budget_bytes: int = field(default_factory=lambda: system_memory() // 4)
    #: Folder for spill files (a private subfolder per run, removed at the end; None: the system
    #: temporary folder). Leftovers of a killed run are removed when the next run starts spilling.
    scratch_dir: str | None = None
    #: Print one line per operator as it finishes (rows, blocks, time, peak memory).
    verbose_progress: bool = False
    _extra: dict[str, Any] = field(default_factory=dict, repr=False)

    _current: ClassVar[DataContext | None] = None

    def __setattr__(self, name: str, value: Any) -> None:
        """A setting of its own or a Ray setting without effect here (kept, see ray_context_settings);
        any other name is refused in one line rather than stored and ignored.

        Example:
            >>> ctx = ember.data.DataContext()
            >>> ctx.enable_progress_bars = False   # Ray's display setting: nothing to display here
            >>> ctx.enable_progress_bars
            False
            >>> ctx.target_max_block_size = 1024
            Traceback (most recent call last):
            ...
            ember.errors.ConfigError: DataContext has no setting 'target_max_block_size'; ember sizes blocks
            in rows: set DataContext.target_rows_per_block
        """
        if name in NO_EFFECT_DEFAULTS:
            self._extra[name] = value
        elif name in _FIELDS or name.startswith("_") or isinstance(getattr(type(self), name, None), property):
            object.__setattr__(self, name, checked_setting(name, value))
        else:
            raise ConfigError(refusal(name))

    def __getattr__(self, name: str) -> Any:
        # only reached for names that are not attributes: Ray's settings without effect here read back
        # as set, else as Ray's default
        if name in NO_EFFECT_DEFAULTS:
            return self.__dict__.get("_extra", {}).get(name, NO_EFFECT_DEFAULTS[name])
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @classmethod
    def get_current(cls) -> DataContext:
        """The process-wide context (created on first use).

        Example:
            >>> ember.data.DataContext.get_current().execution
            'auto'
        """
        if cls._current is None:
            cls._current = DataContext()
        return cls._current

    def copy(self) -> DataContext:
        """An independent copy (Ray's ``DataContext.copy``).

        Example:
            >>> ctx = ember.data.DataContext(num_workers=2)
            >>> twin = ctx.copy(); twin.num_workers = 3
            >>> ctx.num_workers, twin.num_workers
            (2, 3)
        """
        return copy.deepcopy(self)

    def scratch_root(self) -> str:
        """Where spill folders go.

        Example:
            >>> import os
            >>> os.path.isdir(ember.data.DataContext.get_current().scratch_root())
            True
        """
        return self.scratch_dir or tempfile.gettempdir()

    def workers(self) -> int:
        """Number of worker processes to use for Python UDFs."""
        return max(1, self.num_workers or os.cpu_count() or 1)

    @property
    def execution_options(self) -> ExecutionOptions:
        """Ray's ``ExecutionOptions`` view of this context: setting ``preserve_order`` or
        ``verbose_progress`` on it sets this context's fields; assigning an ``ExecutionOptions``
        copies both.

        Example:
            >>> ctx = ember.data.DataContext()
            >>> ctx.execution_options.verbose_progress = True
            >>> ctx.verbose_progress
            True
            >>> ctx.execution_options = ember.data.ExecutionOptions(preserve_order=False,
            ...     verbose_progress=False)
            >>> ctx.preserve_order, ctx.verbose_progress
            (False, False)
        """
        return ExecutionOptions(_context=self)

    @execution_options.setter
    def execution_options(self, options: ExecutionOptions) -> None:
        if not isinstance(options, ExecutionOptions):
            raise ConfigError(
                f"DataContext.execution_options = {options!r}; assign an ember.data.ExecutionOptions"
            )
        self.preserve_order, self.verbose_progress = options.preserve_order, options.verbose_progress


_FIELDS = frozenset(f.name for f in dataclasses.fields(DataContext))

#: ember's own settings and what each takes: (check, what to pass); refused where they are set, in one
#: line, so a wrong value never runs (a string budget was a TypeError deep in a shuffle, -5 became 1 byte)
_SETTING_CHECKS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "max_inflight_bytes": (
        lambda v: _is_int(v) and v > 0,
        "a positive integer number of bytes, e.g. 512 * 1024**2",
    ),
    "memory_budget_bytes": (
        lambda v: _is_int(v) and v > 0,
        "a positive integer number of bytes, e.g. 2 * 1024**3",
    ),
    "target_rows_per_block": (lambda v: _is_int(v) and v > 0, "a positive integer number of rows"),
    "num_workers": (
        lambda v: v is None or (_is_int(v) and v > 0),
        "a positive integer, or None for all cores",
    ),
    "worker_torch_threads": (
        lambda v: v is None or (_is_int(v) and v > 0),
        "a positive integer, or None for cores // workers",
    ),
    "worker_shutdown_timeout_s": (
        lambda v: _is_real(v) and v >= 0,
        "a number of seconds >= 0",
    ),
    "preserve_order": (lambda v: isinstance(v, bool), "True or False"),
    "verbose_progress": (lambda v: isinstance(v, bool), "True or False"),
    "scratch_dir": (
        lambda v: v is None or isinstance(v, (str, os.PathLike)),
        "a folder path, or None for the system temporary folder",
    ),
    "execution": (
        lambda v: v in ("auto", "inline", "processes", "ray"),
        "'auto', 'inline', 'processes' or 'ray' (EMBER_DATA_EXECUTION sets the default)",
    ),
}


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _is_real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def checked_setting(name: str, value: Any) -> Any:
    """``value`` for setting ``name`` when it is one the setting takes, else a one-line ConfigError.

    Example:
        >>> checked_setting("memory_budget_bytes", -5)
        Traceback (most recent call last):
        ...
        ember.errors.ConfigError: DataContext.memory_budget_bytes = -5; use a positive integer number of
        bytes, e.g. 2 * 1024**3
    """
    check = _SETTING_CHECKS.get(name)
    if check is None or check[0](value):
        return int(value) if _is_int(value) else value
    raise ConfigError(f"DataContext.{name} = {value!r}; use {check[1]}")


#: Ray's settings (reached as ``execution_options.*``): a read copies them, as Ray copies its context.
_COPIED_AT_READ = frozenset({"preserve_order", "verbose_progress"})


class DatasetScopedContext(DataContext):
    """``Dataset.context``: a copy of the process-wide Ray settings taken when the dataset was read, and
    what was set on it since (shared with the datasets derived from it), over the process-wide context
    for ember's own settings; see the module docstring.

    Example:
        >>> ds = ember.data.range(4)
        >>> ds.context.preserve_order = False
        >>> ds.context.preserve_order, ember.data.DataContext.get_current().preserve_order
        (False, True)
        >>> ds.map(lambda r: r).context.preserve_order  # derived: the same context
        False
        >>> ember.data.range(4).context.preserve_order  # another read: its own
        True
    """

    def __init__(self, overrides: dict[str, Any] | None = None) -> None:  # noqa: D107
        object.__setattr__(self, "_overrides", {} if overrides is None else overrides)

    def __getattribute__(self, name: str) -> Any:
        if name in _FIELDS or name in NO_EFFECT_DEFAULTS:
            overrides = object.__getattribute__(self, "_overrides")
            return overrides[name] if name in overrides else getattr(DataContext.get_current(), name)
        return object.__getattribute__(self, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in NO_EFFECT_DEFAULTS:
            self._overrides[name] = value
            return
        if name not in _FIELDS and not isinstance(getattr(type(self), name, None), property):
            raise ConfigError(refusal(name))
        if name in _FIELDS:
            self._overrides[name] = checked_setting(name, value)
        else:
            object.__setattr__(self, name, value)

    @classmethod
    def of_current(cls) -> DatasetScopedContext:
        """A copy of the process-wide Ray settings now (what a read gives its dataset, as Ray's
        ``DataContext.get_current().copy()``); ember's own settings are read when the dataset runs.

        Example:
            >>> current = ember.data.DataContext.get_current()
            >>> frozen = DatasetScopedContext.of_current()
            >>> current.execution_options.preserve_order = False
            >>> frozen.preserve_order, DatasetScopedContext.of_current().preserve_order
            (True, False)
            >>> current.execution_options.preserve_order = True
        """
        current = DataContext.get_current()
        return cls({name: copy.deepcopy(getattr(current, name)) for name in _COPIED_AT_READ})

    def copy(self) -> DatasetScopedContext:
        """A view with its own copy of the settings set so far (what ``union``/``mix``/``split`` take).

        Example:
            >>> ds = ember.data.range(1); ds.context.num_workers = 1
            >>> other = ds.context.copy(); other.num_workers = 2
            >>> ds.context.num_workers, other.num_workers
            (1, 2)
        """
        return DatasetScopedContext(copy.deepcopy(self._overrides))

    def resolved(self) -> DataContext:
        """A plain DataContext: the process-wide settings now, with this dataset's on top.

        Example:
            >>> ds = ember.data.range(1); ds.context.num_workers = 1
            >>> type(ds.context.resolved()).__name__, ds.context.resolved().num_workers
            ('DataContext', 1)
        """
        settings = {name: value for name, value in self._overrides.items() if name in _FIELDS}
        current = DataContext.get_current()
        # its own copy of the Ray settings without effect (replace would share the dict)
        resolved = dataclasses.replace(current, **settings, _extra=dict(current._extra))
        for name in self._overrides.keys() - settings.keys():  # Ray's settings without effect
            setattr(resolved, name, self._overrides[name])
        return resolved


#: Ray's older name, still exported by Ray Data 2.60.
DatasetContext = DataContext


class ExecutionOptions:
    """How datasets execute (Ray Data's ``ExecutionOptions``): ``preserve_order`` (deliver blocks in
    order; ember's own default is True, needed for exact resume, Ray's constructor default is False)
    and ``verbose_progress`` (one line per operator as it finishes; None: Ray's
    ``RAY_DATA_VERBOSE_PROGRESS``, on by default).

    ember has no cluster resources to limit or select: ``resource_limits``, ``exclude_resources``
    and ``label_selector`` are refused unless left unset (bound memory and workers with
    ``DataContext.max_inflight_bytes``, ``memory_budget_bytes`` and ``num_workers``).
    ``actor_locality_enabled`` (deprecated in Ray) only steers placement and is accepted.

    Example:
        >>> options = ember.data.ExecutionOptions(preserve_order=True)
        >>> options.preserve_order, options.verbose_progress
        (True, True)
        >>> ember.data.ExecutionOptions(resource_limits=object())
        Traceback (most recent call last):
        ...
        ember.errors.ConfigError: ExecutionOptions(resource_limits=...): ember has no cluster resources to
        limit; bound memory with DataContext.max_inflight_bytes / memory_budget_bytes and workers with
        DataContext.num_workers
    """

    def __init__(
        self,
        resource_limits: object = None,
        exclude_resources: object = None,
        preserve_order: bool = False,
        actor_locality_enabled: bool = True,
        verbose_progress: bool | None = None,
        label_selector: dict[str, str] | None = None,
        *,
        _context: DataContext | None = None,
    ) -> None:
        for name, value in (
            ("resource_limits", resource_limits),
            ("exclude_resources", exclude_resources),
            ("label_selector", label_selector),
        ):
            if value is not None:
                raise ConfigError(_no_resources(name))
        self.actor_locality_enabled = bool(actor_locality_enabled)
        self._context = _context
        if _context is None:
            if verbose_progress is None:
                verbose_progress = bool(int(os.environ.get("RAY_DATA_VERBOSE_PROGRESS", "1")))
            self._own = {"preserve_order": bool(preserve_order), "verbose_progress": bool(verbose_progress)}

    def _get(self, name: str) -> bool:
        return getattr(self._context, name) if self._context is not None else self._own[name]

    def _set(self, name: str, value: bool) -> None:
        if self._context is not None:
            setattr(self._context, name, bool(value))
        else:
            self._own[name] = bool(value)

    @property
    def preserve_order(self) -> bool:
        """Deliver blocks in a deterministic order."""
        return self._get("preserve_order")

    @preserve_order.setter
    def preserve_order(self, value: bool) -> None:
        self._set("preserve_order", value)

    @property
    def verbose_progress(self) -> bool:
        """Print one line per operator as it finishes."""
        return self._get("verbose_progress")

    @verbose_progress.setter
    def verbose_progress(self, value: bool) -> None:
        self._set("verbose_progress", value)

    @property
    def resource_limits(self) -> None:
        """Refused: ember has no cluster resources to limit (see the class docstring)."""
        raise ConfigError(_no_resources("resource_limits"))

    @resource_limits.setter
    def resource_limits(self, value: object) -> None:
        if value is not None:
            raise ConfigError(_no_resources("resource_limits"))

    def __repr__(self) -> str:
        return (
            f"ExecutionOptions(preserve_order={self.preserve_order}, "
            f"verbose_progress={self.verbose_progress})"
        )


def _no_resources(name: str) -> str:
    return (
        f"ExecutionOptions({name}=...): ember has no cluster resources to limit; bound memory with "
        "DataContext.max_inflight_bytes / memory_budget_bytes and workers with DataContext.num_workers"
    )
