"""A real, throwaway PostgreSQL server for the read_sql / write_sql tests, on 127.0.0.1 only.

Needs Debian's ``postgresql`` package (``initdb``, ``pg_ctl`` on PATH or under /usr/lib/postgresql/*/bin)
and the ``psycopg`` driver (ember's ``dev`` extra). PostgreSQL refuses to run as root, so as root the
server runs as the unprivileged ``postgres`` user (created by the package), else as the current user.
The test is skipped, with the reason, only when the server cannot be started.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator

import pytest


def _binary(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_user() -> tuple[int, int] | None:
    if os.geteuid() != 0:
        return None
    try:
        user = pwd.getpwnam("postgres")
    except KeyError:
        pytest.skip("PostgreSQL cannot run as root and there is no 'postgres' user to run it as")
    return user.pw_uid, user.pw_gid


def _run(args: list[str], ids: tuple[int, int] | None, timeout: float = 60) -> None:
    def drop() -> None:
        if ids is not None:
            os.setgroups([])
            os.setgid(ids[1])
            os.setuid(ids[0])

    env = {"PATH": os.environ.get("PATH", ""), "LC_ALL": "C", "HOME": "/tmp"}
    subprocess.run(
        args, check=True, capture_output=True, timeout=timeout, preexec_fn=drop, env=env, cwd="/tmp"
    )


@contextlib.contextmanager
def postgres_server() -> Iterator[str]:
    """Yields a psycopg connection string for a fresh server (database ``postgres``, user ``ember``)."""
    pytest.importorskip("psycopg", reason="the psycopg driver is not installed (pip install 'ember[dev]')")
    initdb, pg_ctl = _binary("initdb"), _binary("pg_ctl")
    if initdb is None or pg_ctl is None:
        pytest.skip("PostgreSQL is not installed (apt-get install -y postgresql)")
    ids = _as_user()
    folder = tempfile.mkdtemp(prefix="ember-pg-", dir="/tmp")
    data = os.path.join(folder, "data")
    if ids is not None:
        os.chown(folder, *ids)
    port = _free_port()
    try:
        try:
            _run([initdb, "-D", data, "-U", "ember", "--auth=trust", "-E", "UTF8"], ids)
            _run(
                [
                    pg_ctl,
                    "-D",
                    data,
                    "-w",
                    "-t",
                    "60",
                    "-l",
                    os.path.join(folder, "log"),
                    "-o",
                    f"-h 127.0.0.1 -p {port} -k {folder} -c fsync=off",
                    "start",
                ],
                ids,
            )
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as e:
            detail = getattr(e, "stderr", b"") or b""
            pytest.skip(f"PostgreSQL did not start: {e} {detail.decode(errors='replace')[-300:]}")
        try:
            yield f"host=127.0.0.1 port={port} dbname=postgres user=ember"
        finally:
            with contextlib.suppress(Exception):
                _run([pg_ctl, "-D", data, "-m", "immediate", "-w", "stop"], ids)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
