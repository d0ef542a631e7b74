"""Which processes are alive, read from /proc: the tests check that ember leaves no orphans behind."""

from __future__ import annotations

import os


def live_processes(*, parent: int | None = None, group: int | None = None) -> set[int]:
    """Pids of live (non-zombie) processes with this parent pid and/or in this process group."""
    pids = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                state, ppid, pgrp = f.read().rsplit(")", 1)[1].split()[:3]  # after "pid (comm)"
        except OSError:
            continue  # exited while we looked
        if state != "Z" and (parent is None or int(ppid) == parent) and (group is None or int(pgrp) == group):
            pids.add(int(entry))
    return pids


def child_pids() -> set[int]:
    """Live children of this process, but for the suite's own fork servers (tests/_fork_server.py: the
    one tests/distributed's run_ranks keeps for the whole session is no leftover of the test looking)."""
    return {pid for pid in live_processes(parent=os.getpid()) if b"_fork_server.py" not in command_line(pid)}


def command_line(pid: int) -> bytes:
    """The command line of process `pid`, NUL-separated (empty once it has ended)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:  # ended meanwhile
        return b""
