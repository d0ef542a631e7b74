"""How much memory this process may use: the machine's RAM, or less inside a memory-limited
container (cgroup v1 or v2), as Ray reads it (``ray._common.utils.get_system_memory``).

ember reads, and keeps the smallest of: the physical RAM; cgroup v2's ``memory.max`` of this process's
own cgroup and of each cgroup above it (``/proc/self/cgroup`` names it; ``max`` means no limit) and at
the root; cgroup v1's ``memory.limit_in_bytes`` of the process's memory cgroup, those above it and the root
(the
"no limit" value there is a huge number, which the RAM then undercuts). Ray reads only the roots,
which are the container's own cgroup when the container has a cgroup namespace (Docker's default);
the process's own path also finds a limit set on a cgroup the process was merely placed in.

The roots are parameters (``cgroup_root``, ``self_cgroup``): the internal seam tests point at fake
files to check the parsing.

Example:
    >>> 0 < system_memory() <= physical_memory()
    True
"""

from __future__ import annotations

import os
from collections.abc import Iterator

CGROUP_ROOT = "/sys/fs/cgroup"
SELF_CGROUP = "/proc/self/cgroup"


def physical_memory() -> int:
    """The machine's RAM in bytes (8 GiB where the OS does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not POSIX: assume a small machine
        return 8 * 1024**3


def system_memory(cgroup_root: str = CGROUP_ROOT, self_cgroup: str = SELF_CGROUP) -> int:
    """The smallest of the physical RAM and every container memory limit that applies to this process."""
    limits = [physical_memory()]
    limits += [
        limit
        for limit in (_read_limit(path) for path in _limit_files(cgroup_root, self_cgroup))
        if limit is not None and limit > 0
    ]
    return min(limits)


def _limit_files(cgroup_root: str, self_cgroup: str) -> Iterator[str]:
    """The limit files that may apply, whether or not they exist."""
    yield os.path.join(cgroup_root, "memory.max")  # v2, root (the container's own under a namespace)
    yield os.path.join(cgroup_root, "memory", "memory.limit_in_bytes")  # v1, root
    for controllers, path in _own_cgroups(self_cgroup):
        parts = [p for p in path.split("/") if p and p != ".."]
        for depth in range(1, len(parts) + 1):  # the own cgroup and each one above it
            if controllers == "":  # v2 unified hierarchy
                yield os.path.join(cgroup_root, *parts[:depth], "memory.max")
            elif "memory" in controllers.split(","):  # v1 memory controller
                yield os.path.join(cgroup_root, "memory", *parts[:depth], "memory.limit_in_bytes")


def _own_cgroups(self_cgroup: str) -> list[tuple[str, str]]:
    """(controllers, path) of each line ``id:controllers:path`` of /proc/self/cgroup."""
    try:
        with open(self_cgroup) as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        fields = line.split(":", 2)
        if len(fields) == 3:
            found.append((fields[1], fields[2]))
    return found


def _read_limit(path: str) -> int | None:
    """The number in a limit file; None when it is missing, unreadable, or says ``max``."""
    try:
        with open(path) as f:
            text = f.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None
