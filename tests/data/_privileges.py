"""Permission tests that work as root: the check runs in a forked child that drops to uid/gid nobody.

Root bypasses file permissions, and nobody cannot start this Python (it lives under /root), so the
child is a fork of the test process: everything it needs is already imported.
"""

from __future__ import annotations

import os


def in_a_child_without_root(fn) -> str:
    """Run ``fn`` in a forked child that, when we are root, drops to uid/gid nobody (root bypasses
    file permissions); returns what it raised as "Type: message"."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.close(read_end)
            if os.geteuid() == 0:
                os.setgroups([])
                os.setgid(65534)
                os.setuid(65534)
            try:
                fn()
                result = "no error"
            except Exception as e:  # reported to the parent
                result = f"{type(e).__name__}: {e}"
            os.write(write_end, result.encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as f:
        out = f.read().decode()
    os.waitpid(pid, 0)
    return out
