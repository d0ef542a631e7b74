"""A pool of forked worker processes: the engine behind parallel tasks and class UDFs ("actors").

Each worker builds its handler once (``make_handler()`` runs in the child: for a class UDF this is
where the model is constructed), then turns payloads into blocks until told to stop. Workers are
forked, so the plan and the user's functions need no pickling. Results come back in submission
order. A worker that raises produces one error carrying its traceback; a worker that dies (killed,
segfault, out of memory) is noticed through its process sentinel and ends the job with a
``WorkerError`` at once. Workers die with their parent (PR_SET_PDEATHSIG) and on pipe EOF, so no
orphans are left behind.
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import traceback
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pyarrow as pa

from ember.data.execute.wire import block_to_bytes, bytes_to_block
from ember.errors import DataError, WorkerError

Handler = Callable[[Any], Iterable[pa.Table]]
_PR_SET_PDEATHSIG = 1


def _die_with_parent(parent_pid: int) -> None:
    with contextlib.suppress(OSError):  # not Linux: pipe EOF still ends the worker
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent_pid:
        os._exit(0)


def _limit_torch_threads(threads: int) -> None:
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(threads)


def _worker_main(conn: Any, make_handler: Callable[[], Handler], parent_pid: int, torch_threads: int) -> None:
    _die_with_parent(parent_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    _limit_torch_threads(torch_threads)
    handler, init_error = None, None
    try:
        handler = make_handler()
    except Exception as e:
        init_error = _describe(e)
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        seq, kind, payload = message
        if kind == "block":
            payload = bytes_to_block(conn.recv_bytes())
        if init_error is not None:
            conn.send(("err", seq, init_error))
            continue
        try:
            blocks = list(handler(payload))
        except Exception as e:
            conn.send(("err", seq, _describe(e)))
            continue
        conn.send(("ok", seq, len(blocks)))
        for block in blocks:
            conn.send_bytes(block_to_bytes(block))


def _describe(e: BaseException) -> str:
    if isinstance(e, DataError):
        return str(e)
    tb = "".join(traceback.format_exception(type(e), e, e.__traceback__))
    return f"{type(e).__name__}: {e}\nOriginal traceback:\n{tb}"


class _Worker:
    def __init__(self, process: Any, conn: Any) -> None:
        self.process, self.conn = process, conn
        self.task: int | None = None  # the seq it is working on


class WorkerPool:
    """Forked processes that each build a handler once and map payloads to blocks, in order.

    Example:
        >>> import pyarrow as pa
        >>> pool = WorkerPool(lambda: (lambda n: [pa.table({"x": [n]})]), size=2)
        >>> [b["x"][0].as_py() for bs in pool.imap((i, f"item {i}") for i in range(3)) for b in bs]
        [0, 1, 2]
        >>> pool.close()
    """

    def __init__(
        self,
        make_handler: Callable[[], Handler],
        size: int | tuple[int, int],
        name: str = "data worker",
        torch_threads: int | None = None,
        shutdown_timeout_s: float = 2.0,
    ) -> None:
        self.min_size, self.max_size = (size, size) if isinstance(size, int) else size
        if not 1 <= self.min_size <= self.max_size:
            raise DataError(f"pool size {size} is invalid; use n >= 1 or (min, max) with 1 <= min <= max")
        self.make_handler, self.name = make_handler, name
        self.torch_threads = torch_threads or max(1, (os.cpu_count() or 1) // self.max_size)
        self.shutdown_timeout_s = shutdown_timeout_s
        self.workers: list[_Worker] = []
        self._context = multiprocessing.get_context("fork")
        for _ in range(self.min_size):
            self._start_worker()

    @property
    def size(self) -> int:
        """Number of live workers."""
        return len(self.workers)

    def pids(self) -> list[int]:
        """Process ids of the workers (for tests and diagnostics)."""
        return [w.process.pid for w in self.workers]

    def _start_worker(self) -> _Worker:
        parent_conn, child_conn = self._context.Pipe(duplex=True)
        process = self._context.Process(
            target=_worker_main,
            args=(child_conn, self.make_handler, os.getpid(), self.torch_threads),
            daemon=True,
            name=self.name,
        )
        process.start()
        child_conn.close()
        worker = _Worker(process, parent_conn)
        self.workers.append(worker)
        return worker

    def _idle_worker(self) -> _Worker | None:
        for worker in self.workers:
            if worker.task is None:
                return worker
        if len(self.workers) < self.max_size:  # autoscale: everyone is busy and there is work
            return self._start_worker()
        return None

    def imap(
        self, payloads: Iterator[tuple[Any, str]], window: int | Callable[[], int] | None = None
    ) -> Iterator[list[pa.Table]]:
        """Map ``(payload, description)`` pairs to lists of blocks; results come back in order.

        At most ``window`` results are outstanding or buffered at once (backpressure).
        """
        limit = window if callable(window) else (lambda: window or 2 * self.max_size)
        descriptions: dict[int, str] = {}
        results: dict[int, list[pa.Table]] = {}
        submitted = delivered = 0
        exhausted = False
        while True:
            while not exhausted and submitted - delivered < limit():
                worker = self._idle_worker()
                if worker is None:
                    break
                item = next(payloads, None)
                if item is None:
                    exhausted = True
                    break
                payload, descriptions[submitted] = item
                self._send(worker, submitted, payload)
                submitted += 1
            if delivered in results:
                descriptions.pop(delivered, None)
                yield results.pop(delivered)
                delivered += 1
                continue
            if exhausted and delivered == submitted:
                return
            self._receive(results, descriptions)

    def _send(self, worker: _Worker, seq: int, payload: Any) -> None:
        worker.task = seq
        if isinstance(payload, pa.Table):
            worker.conn.send((seq, "block", None))
            worker.conn.send_bytes(block_to_bytes(payload))
        else:
            worker.conn.send((seq, "object", payload))

    def _receive(self, results: dict[int, list[pa.Table]], descriptions: dict[int, str]) -> None:
        busy = {w.conn: w for w in self.workers if w.task is not None}
        sentinels = {w.process.sentinel: w for w in self.workers}
        ready = multiprocessing.connection.wait(list(busy) + list(sentinels))
        for handle in ready:
            if handle in busy:
                self._read_result(busy[handle], results, descriptions)
        for handle in ready:
            if handle in sentinels and sentinels[handle] in self.workers:
                self._worker_died(sentinels[handle], descriptions)

    def _read_result(self, worker: _Worker, results: dict, descriptions: dict[int, str]) -> None:
        try:
            status, seq, body = worker.conn.recv()
            if status == "err":
                self.close()
                raise DataError(f"{self.name} failed on {descriptions.get(seq, '?')}: {body}")
            results[seq] = [bytes_to_block(worker.conn.recv_bytes()) for _ in range(body)]
        except (EOFError, OSError):
            self._worker_died(worker, descriptions)
        worker.task = None

    def _worker_died(self, worker: _Worker, descriptions: dict[int, str]) -> None:
        worker.process.join(timeout=1.0)
        code = worker.process.exitcode
        how = f"was killed by signal {signal.Signals(-code).name}" if code and code < 0 else f"exited with code {code}"
        doing = descriptions.get(worker.task, "?") if worker.task is not None else "nothing"
        self.close()
        raise WorkerError(
            f"{self.name} (pid {worker.process.pid}) {how} while processing {doing}; "
            "check for out-of-memory kills or crashes in native code, or lower concurrency"
        )

    def close(self) -> None:
        """Stop every worker: idle ones exit cleanly, busy ones are killed. Safe to call twice."""
        for worker in self.workers:
            if worker.task is None and worker.process.is_alive():
                with contextlib.suppress(OSError, BrokenPipeError):
                    worker.conn.send(None)
            else:
                worker.process.kill()
        for worker in self.workers:
            worker.process.join(timeout=self.shutdown_timeout_s)
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join()
            worker.conn.close()
        self.workers = []

    def __del__(self) -> None:
        if getattr(self, "workers", None):
            self.close()
