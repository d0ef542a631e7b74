"""Joining and leaving the torch.distributed process group, and the one cross-rank yes/no question.

The one place both training APIs join a group: the Trainer's DDP/FSDP strategies
(`runtime/strategies/`) and the TorchTrainer's workers (`ember/train/worker.py`) call `join`, and
ask "is this true on any rank?" with `any_rank`. Starting the processes is `runtime/launch.py`.

Example (in a worker whose RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT are set):
    >>> join(torch.device("cpu"))  # doctest: +SKIP
    >>> any_rank(False, torch.device("cpu"))  # doctest: +SKIP
    False
"""

from __future__ import annotations

import atexit
import contextlib
import datetime
import os
import time

import torch
import torch.distributed as dist

from ember.errors import ConfigError
from ember.runtime.launch import install_error_report

#: Default collective timeout: long enough for a slow checkpoint write, short enough to surface a hang.
DEFAULT_TIMEOUT = datetime.timedelta(minutes=10)


def join(
    device: torch.device, backend: str | None = None, timeout: datetime.timedelta = DEFAULT_TIMEOUT
) -> None:
    """Join the group the environment describes (ember's launcher, torchrun, SLURM, Ray actors), once.

    Also: this rank's uncaught errors are reported to ember's launcher, a CUDA rank uses its own
    device, and the group is left at process exit (test/predict may follow fit, so not earlier).
    `backend` defaults to nccl on CUDA, gloo otherwise.
    """
    install_error_report()
    if device.type == "cuda":
        torch.cuda.set_device(device)
    if dist.is_initialized():
        return
    join_process_group(backend or ("nccl" if device.type == "cuda" else "gloo"), timeout)
    atexit.register(leave_process_group)


def any_rank(flag: bool, device: torch.device) -> bool:
    """True if `flag` is true on any rank (a one-element all-reduce, MAX); `flag` itself without a group.

    Every rank must call it, so it doubles as a barrier.
    """
    if not dist.is_initialized():
        return flag
    value = torch.tensor([1.0 if flag else 0.0], device=device)
    dist.all_reduce(value, op=dist.ReduceOp.MAX)
    return bool(value.item())


def join_process_group(backend: str, timeout: datetime.timedelta) -> None:
    """`dist.init_process_group` from RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT, the rendezvous store bound
    to MASTER_ADDR rather than to every interface.

    torch's env:// rendezvous makes rank 0 a TCPStore server listening on *all* interfaces, whatever
    MASTER_ADDR says, so any host that can reach the machine could talk to a local run's store. ember
    binds the listening socket itself and hands it to the store (`master_listen_fd`): a loopback
    MASTER_ADDR (ember's own launcher uses 127.0.0.1) listens on loopback only, an IP address on that
    address only. A host *name* keeps torch's behaviour (a name can resolve to 127.0.1.1 on the master
    while the other nodes reach it by its network address), as does torchrun, whose agent owns the store.
    """
    address = _store_bind_address()
    if address is None:
        dist.init_process_group(backend, timeout=timeout)
        return
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    port = int(os.environ["MASTER_PORT"])
    if rank == 0:
        store = dist.TCPStore(
            os.environ["MASTER_ADDR"],
            port,
            world,
            True,
            timeout=timeout,
            wait_for_workers=False,
            master_listen_fd=_listening_socket(address, port),
        )
    else:
        store = dist.TCPStore(os.environ["MASTER_ADDR"], port, world, False, timeout=timeout)
    dist.init_process_group(backend, store=store, rank=rank, world_size=world, timeout=timeout)


def _store_bind_address() -> str | None:
    """The IP the rendezvous store should listen on, or None to leave it to torch (see join_process_group)."""
    import ipaddress

    if os.environ.get("TORCHELASTIC_USE_AGENT_STORE", "").lower() == "true":
        return None  # torchrun's agent already serves the store; the ranks are its clients
    host = os.environ.get("MASTER_ADDR", "")
    if host == "localhost":
        return "127.0.0.1"
    try:
        return str(ipaddress.ip_address(host.strip("[]")))
    except ValueError:
        return None


def _listening_socket(address: str, port: int) -> int:
    """A socket listening on exactly (address, port); its descriptor is handed over to the TCPStore."""
    import socket

    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((address, port))
        sock.listen(socket.SOMAXCONN)
    except OSError as e:
        sock.close()
        raise ConfigError(
            f"rank 0 cannot listen on MASTER_ADDR={address} MASTER_PORT={port} ({e.strerror or e}); "
            "set MASTER_ADDR to an address of this machine and MASTER_PORT to a free port"
        ) from None
    return sock.detach()  # the store owns the descriptor from now on


def leave_process_group() -> None:
    """At exit: destroy the group, then let gloo's threads finish releasing the last collective's tensors.

    A gloo worker thread drops its references to a finished collective's tensors just after the caller's
    `wait()` returns, and dropping them takes the GIL. If the main thread reaches interpreter
    finalization first, Python ends that thread inside a C++ destructor and the process aborts with
    "terminate called without an active exception" (seen about once in 12 runs of a script that
    all-gathers right before it exits). Sleeping hands the GIL to any such thread; 50 ms is ample for a
    release that takes microseconds, and is paid once per worker process.
    """
    if dist.is_available() and dist.is_initialized():
        with contextlib.suppress(Exception):
            dist.destroy_process_group()
    time.sleep(0.05)
