"""The errors ember raises for user mistakes.

Every message is one line that names what is wrong and how to fix it. Internal bugs raise
ordinary Python exceptions; these classes are for things the user can act on.
"""

from __future__ import annotations

from collections.abc import Iterable


def did_you_mean(name: str, known: Iterable[str], otherwise: str) -> str:
    """The hint ending an unknown-name message: the closest known name, or ``otherwise``.

    Example:
        >>> did_you_mean("max_epoch", ["max_epochs", "max_steps"], "see the docs")
        "did you mean 'max_epochs'?"
    """
    import difflib  # only when a message is being built: ember.errors is imported with ember

    close = difflib.get_close_matches(name, list(known), n=1)
    return f"did you mean {close[0]!r}?" if close else otherwise


class EmberError(Exception):
    """Base class of every error ember raises for something the user can fix."""


class ConfigError(EmberError, ValueError):
    """A Trainer option, CLI flag, config key or method return value is wrong."""


class DataError(EmberError):
    """Input data is missing, malformed, or a user function failed on it."""


class CheckpointError(EmberError):
    """A checkpoint is missing, truncated, or belongs to another model."""


class StorageError(EmberError):
    """An object store or remote filesystem refused or did not answer (bucket, credentials, endpoint)."""


class ServiceError(EmberError, ConnectionError):
    """An outside service (Ray, MLflow, an object store, a database) did not answer within its deadline."""


class WorkerError(EmberError):
    """A worker process (data, inference or training rank) raised or died."""


class NonFiniteLossError(EmberError):
    """The training loss became NaN or infinite."""


class NotAttachedError(EmberError, RuntimeError):
    """A Module's trainer was read before the Module was
    given to a Trainer (a RuntimeError, as Lightning's)."""


class MetricNotFoundError(ConfigError, RuntimeError):
    """A callback monitors a metric that was never logged (a RuntimeError too, as Lightning raises)."""


class UnsupportedCombinationError(ConfigError, RuntimeError):
    """A callback cannot work with the module or Trainer it
    was given (a RuntimeError too, as Lightning raises)."""


class TrainingInterrupted(SystemExit):
    """Training stopped on SIGTERM after writing a checkpoint.

    A `SystemExit` whose code is the one-line message: a script that does not catch it exits
    non-zero printing that line and no traceback, which is what a batch scheduler expects.
    """


class UnsafePathError(EmberError, ValueError):
    """A path read from a file, a key or a setting leaves its root (``..``, an absolute part, a link out)
    or is a link where ember writes: refused instead of written, followed or deleted."""


class MalformedURLError(ConfigError):
    """A string that looks like a URL but is not one ember can use (``s3:/bucket``, ``foo://x``)."""
