"""A pool worker forked by the zygote where Ray runs (`spawned.py`): ``spawned_worker CONN_FD JOB_FD``
(run as ``__main__`` in the fork, never imported).

It reads its job (the target and its arguments, packed by `ember.class_path.pack_job`) from the pipe at
JOB_FD, then runs ``target(conn, *args)`` with the pool's pipe at CONN_FD. It ends with ``os._exit``, as a
forked pool worker does: nothing of the zygote's state is torn down in it.
"""

import multiprocessing.connection
import os
import sys
import traceback

from ember.class_path import unpack_job


def main(conn_fd: int, job_fd: int) -> None:
    code = 1
    try:
        with open(job_fd, "rb") as job:
            target, args = unpack_job(job)
        target(multiprocessing.connection.Connection(conn_fd), *args)
        code = 0
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
