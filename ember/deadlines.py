"""Deadlines on calls to outside services (DESIGN decision 15): Ray, MLflow, object stores, SQL.

Past its deadline a call ends in one line (`ServiceError`) naming the service, the address and the
setting that changes the deadline, never a block for minutes. Each deadline is an environment
variable (seconds) the user may set; docs/safety.md lists them ("Deadlines").

Which Ray cluster ember joins follows Ray's rule (`ray.init` in Ray 2.60), the same for ember.data's
Ray backend and for TorchTrainer: the Ray already initialized in this process; else `RAY_ADDRESS`;
else a new local Ray (ember.data) or ember's local worker processes (TorchTrainer, unless
`RunConfig(use_ray=True)`).
"""

from __future__ import annotations

import os
import socket
import sys
from typing import Any

from ember.errors import ConfigError, EmberError, ServiceError

#: Seconds to reach a Ray cluster (the GCS port of RAY_ADDRESS / ray.init(address=...)).
RAY_CONNECT_TIMEOUT = "EMBER_RAY_CONNECT_TIMEOUT_S"
#: Seconds for one MLflow tracking call (connect and answer), retries included.
MLFLOW_TIMEOUT = "EMBER_MLFLOW_TIMEOUT_S"
#: Seconds for an object store to connect and to answer one read.
STORAGE_TIMEOUT = "EMBER_STORAGE_TIMEOUT_S"

DEFAULTS = {RAY_CONNECT_TIMEOUT: 10.0, MLFLOW_TIMEOUT: 15.0, STORAGE_TIMEOUT: 30.0}


def seconds(setting: str) -> float:
    """The deadline `setting` gives (its environment variable, else ember's default), in seconds.

    Example:
        >>> seconds(RAY_CONNECT_TIMEOUT) > 0
        True
    """
    text = os.environ.get(setting, "").strip()
    if not text:
        return DEFAULTS[setting]
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise ConfigError(f"{setting}={text!r} must be a positive number of seconds")
    return value


def reach(service: str, address: str, host: str, port: int, setting: str) -> None:
    """Open (and close) a TCP connection to `host:port` within `setting`'s deadline, or one line."""
    deadline = seconds(setting)
    try:
        socket.create_connection((host, port), timeout=deadline).close()
    except OSError as exc:
        reason = "no answer" if isinstance(exc, TimeoutError) else (exc.strerror or type(exc).__name__)
        raise ServiceError(
            f"{service} at {address} cannot be reached within {deadline:g} s ({reason}); start it "
            f"or fix the address (the deadline: {setting})"
        ) from None


def host_port(address: str, what: str) -> tuple[str, int]:
    """`host:port` (or `scheme://host:port`) split, a one-line ConfigError when it is not one.

    Example:
        >>> host_port("ray://10.0.0.1:10001", "RAY_ADDRESS")
        ('10.0.0.1', 10001)
    """
    rest = address.split("://", 1)[1] if "://" in address else address
    host, _, port = rest.split("/", 1)[0].rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"{what}={address!r} is not host:port (e.g. 127.0.0.1:6379, or ray://host:10001)")
    return host.strip("[]"), int(port)


# ---- Ray -------------------------------------------------------------------------------------------
def ray_address(address: str | None = None) -> str | None:
    """The cluster to join when Ray is not initialized yet: `address`, else RAY_ADDRESS, else None."""
    return address or os.environ.get("RAY_ADDRESS", "").strip() or None


def wants_ray() -> bool:
    """Does Ray's rule put this process on a cluster: Ray already initialized here, or RAY_ADDRESS set?"""
    ray = sys.modules.get("ray")  # never import Ray just to ask
    return (
        bool(ray is not None and getattr(ray, "is_initialized", lambda: False)()) or ray_address() is not None
    )


def connect_ray(address: str | None = None, what: str = "execution='ray'", **init_kwargs: Any) -> Any:
    """The `ray` module, joined to the cluster Ray's rule picks, within RAY_CONNECT_TIMEOUT's deadline.

    An address that answers nothing is one line in seconds (`ray.init` alone retries for minutes).
    """
    try:
        import ray
    except ImportError:
        raise ConfigError(
            f"{what} needs Ray, which is not installed: pip install 'ray[data,train]'"
        ) from None
    if ray.is_initialized():
        return ray
    target = ray_address(address)
    if target is not None and target not in ("auto", "local"):
        setting = "RAY_ADDRESS" if address is None else "address"
        host, port = host_port(target, setting)
        reach("the Ray cluster", target, host, port, RAY_CONNECT_TIMEOUT)
    try:
        ray.init(address=target, **init_kwargs)
    except ConnectionError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ServiceError(
            f"the Ray cluster at {target or 'this machine'} cannot be joined ({first}); start it "
            f"(ray start --head) or fix RAY_ADDRESS"
        ) from None
    return ray


def ember_refusal(error: BaseException) -> BaseException | None:
    """The ember error (a refusal: DataError, ConfigError, ...) a Ray task raised, out of the RayTaskError
    that carries it to the driver (whose text is the remote traceback); None when it is not ember's."""
    current: BaseException | None = error
    seen = 0
    while current is not None and seen < 8:
        cause = getattr(current, "cause", None)  # RayTaskError: the task's own exception
        if type(current).__module__.startswith("ray.") or isinstance(cause, BaseException):
            current, seen = cause if isinstance(cause, BaseException) else current.__cause__, seen + 1
            continue
        if not isinstance(current, EmberError):
            return None
        if current.args and isinstance(current.args[0], str):  # Ray appends its retry advice to the message
            current.args = (current.args[0].split("\n", 1)[0], *current.args[1:])
        return current
    return None
