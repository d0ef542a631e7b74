"""A pool of forked worker processes: the engine behind parallel tasks and class UDFs ("actors").

Each worker builds its handler once (``make_handler()`` runs in the child: for a class UDF this is
where the model is constructed), then turns payloads into blocks until told to stop. Workers are
forked, so the plan and the user's functions need no pickling. Payloads go to whichever worker is
free; results come back in submission order (or as they finish, with ``ordered=False``). A pool
sized ``(min, max)`` starts ``min`` workers and adds one whenever every worker is busy and work
is waiting, up to ``max``.

Sharing the machine: each worker limits torch (and OpenMP/MKL) to ``torch_threads`` intra-op
threads, by default ``cores // max workers``, so N workers x threads ~ cores. With ``num_gpus``
each worker sees its own GPU through ``CUDA_VISIBLE_DEVICES`` (fractions share a device). The
pool never waits for resources to be free: a pool of 2 runs on 2 cores.

Failures: a worker whose handler cannot be built, or that raises, ends the job with one error
naming the worker, its pid, the input it was given and the original traceback. A worker that dies
(killed, segfault, out of memory) is noticed through its process sentinel: the job ends with a
``WorkerError`` at once, or, with ``max_task_retries``, the payload goes to a fresh worker.
Workers die with their parent (PR_SET_PDEATHSIG) and on pipe EOF, so no orphans are left behind.

In a process where Ray runs (a driver after ``ray.init``, a Ray task or actor), workers are started
fresh instead of forked, since a fork shares Ray's sockets (``spawned.py``): the handler factory then
travels with cloudpickle, and each worker pays an interpreter start.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.connection
import os
import queue
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pyarrow as pa

from ember.data.execute.spawned import SpawnedProcess, ray_runs_here
from ember.data.execute.wire import block_to_bytes, bytes_to_block
from ember.errors import ConfigError, DataError, WorkerError
from ember.processes.zygote import die_with_parent

Handler = Callable[[Any], Iterable[pa.Table]]


#: Seconds a new worker has to reach its first line of ember code; the steps before it take
#: milliseconds after a fork (of this process, or of the zygote where Ray runs), so a worker that has not
#: got there is stuck and will never get there (below).
START_TIMEOUT_S = 30.0
#: Starts tried for one worker before the pool gives up with an error.
START_ATTEMPTS = 3


def _die_with_parent(parent_pid: int | None) -> None:
    """SIGKILL when the parent ends; `parent_pid` (the pool's process, for a fork of it): already ended?
    None for a worker of the zygote (spawned.py), whose parent is the zygote."""
    die_with_parent()
    if parent_pid is not None and os.getppid() != parent_pid:
        os._exit(0)


_THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def limit_threads(threads: int) -> None:
    """Before the handler is built: torch (if imported) now, OpenMP/MKL when first loaded."""
    for name in _THREAD_VARIABLES:
        os.environ[name] = str(threads)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(threads)


def _worker_main(
    conn: Any,
    make_handler: Callable[[], Handler],
    parent_pid: int | None,
    torch_threads: int,
    gpu_ids: list[int] | None,
) -> None:
    _die_with_parent(parent_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    conn.send("started")  # the parent waits for this: see WorkerPool._start_worker
    if gpu_ids is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, gpu_ids))
    limit_threads(torch_threads)
    handler: Handler | None = None
    init_error: str | None = None
    try:
        handler = make_handler()
    except Exception as e:
        init_error = "could not be constructed: " + _describe(e)
        if "re-initialize CUDA in forked subprocess" in str(e):
            init_error = init_error.replace(
                "\n",
                "; the parent process used CUDA (torch.cuda.is_available(), "
                "device_count() or .cuda()) before the pool started: move that into "
                "the predictor class's __init__\n",
                1,
            )
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        seq, kind, payload = message
        if kind == "block":
            block = bytes_to_block(conn.recv_bytes())
            payload = block if payload is None else (block, payload)
        if init_error is not None:
            conn.send(("err", seq, init_error))
            continue
        try:
            assert handler is not None  # make_handler() returned it: init_error is None
            blocks = list(handler(payload))
        except Exception as e:
            conn.send(("err", seq, _describe(e)))
            continue
        conn.send(("ok", seq, len(blocks)))
        for block in blocks:
            conn.send_bytes(block_to_bytes(block))


class _Forker:
    """One long-lived thread of this process that starts (forks) every worker.

    GNU OpenMP (torch's intra-op pool) is not fork-safe: a child forked from a thread that ran a
    parallel region hangs in its first parallel region of its own. A thread that never runs torch
    code has no OpenMP team, so children forked from it can use several threads. It stays alive
    because PR_SET_PDEATHSIG fires when the forking *thread* ends, not only the process.
    """

    _lock = threading.Lock()
    _requests: queue.Queue | None = None
    _thread: threading.Thread  # set with _requests

    @classmethod
    def start(cls, process: Any) -> None:
        with cls._lock:
            if cls._requests is None or not cls._thread.is_alive():
                cls._requests = queue.Queue()
                cls._thread = threading.Thread(
                    target=cls._serve, args=(cls._requests,), name="ember-forker", daemon=True
                )
                cls._thread.start()
        done: queue.Queue = queue.Queue()
        cls._requests.put((process, done))
        error = done.get()
        if error is not None:
            raise error

    @staticmethod
    def _serve(requests: queue.Queue) -> None:
        while True:
            process, done = requests.get()
            try:
                process.start()
            except BaseException as e:  # handed back to the caller
                done.put(e)
            else:
                done.put(None)


def _is_block_pair(payload: Any) -> bool:
    """``(block, extra)``: the block travels as Arrow IPC, ``extra`` (small) is pickled beside it."""
    return isinstance(payload, tuple) and len(payload) == 2 and isinstance(payload[0], pa.Table)


def _describe(e: BaseException) -> str:
    if isinstance(e, DataError):
        return str(e)
    frames = [f for f in traceback.extract_tb(e.__traceback__) if not f.filename.startswith(_EMBER_DATA)]
    tb = "".join(traceback.format_list(frames)) + "".join(traceback.format_exception_only(type(e), e))
    return f"{type(e).__name__}: {e}\nOriginal traceback:\n{tb}"


_EMBER_DATA = os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))
)  # ember/data: not the user's problem


class _Worker:
    def __init__(self, process: Any, conn: Any, index: int) -> None:
        self.process, self.conn, self.index = process, conn, index
        self.task: int | None = None  # the seq it is working on


def assign_gpus(index: int, num_gpus: float, device_count: int) -> list[int]:
    """The devices worker ``index`` sees: whole GPUs of its own, or a shared one for fractions.

    Example:
        >>> [assign_gpus(i, 1, 2) for i in range(2)], [assign_gpus(i, 0.5, 1) for i in range(2)]
        ([[0], [1]], [[0], [0]])
    """
    if num_gpus >= 1:
        per = int(num_gpus)
        return [(index * per + k) % device_count for k in range(per)]
    per_device = max(1, int(1 / num_gpus))
    return [(index // per_device) % device_count]


def cuda_device_count() -> int:
    """GPUs visible here, counted through NVML: ``torch.cuda.device_count()`` (and ``is_available()``)
    would initialize the CUDA driver in this process, and forked workers could then never use CUDA."""
    import torch

    count = getattr(torch.cuda, "_device_count_nvml", lambda: -1)()
    return count if count >= 0 else torch.cuda.device_count()


def check_gpus(num_gpus: float, workers: int) -> int:
    """Devices on this machine for ``workers`` workers of ``num_gpus`` each; a clear error if none."""
    if num_gpus < 0:
        raise ConfigError(f"num_gpus={num_gpus}; use 0 (CPU), a fraction to share a GPU, or a whole number")
    count = cuda_device_count()
    if count == 0:
        raise ConfigError(
            f"num_gpus={num_gpus} per worker but this machine has no CUDA GPU; drop num_gpus to run on the "
            "CPU"
        )
    torch = sys.modules["torch"]
    if torch.cuda.is_initialized():
        raise ConfigError(
            "CUDA is already initialized in this process, so forked GPU workers cannot use it; build the "
            "model (and call .cuda()) inside the predictor class's __init__, not before map_batches"
        )
    if num_gpus * workers > count:  # oversubscribe rather than wait forever, and say so
        print(
            f"ember.data: {workers} workers x num_gpus={num_gpus} > {count} GPU(s); workers will share "
            "devices",
            file=sys.stderr,
        )
    return count


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
        num_gpus: float = 0,
        max_task_retries: int = 0,
        ordered: bool = True,
    ) -> None:
        self.min_size, self.max_size = (size, size) if isinstance(size, int) else tuple(size)
        if not 1 <= self.min_size <= self.max_size:
            raise ConfigError(f"pool size {size} is invalid; use n >= 1 or (min, max) with 1 <= min <= max")
        self.make_handler, self.name = make_handler, name
        self.torch_threads = torch_threads or max(1, (os.cpu_count() or 1) // self.max_size)
        self.shutdown_timeout_s = shutdown_timeout_s
        self.num_gpus, self.max_task_retries, self.ordered = num_gpus, max_task_retries, ordered
        self.gpu_count = check_gpus(num_gpus, self.max_size) if num_gpus else 0
        self.workers: list[_Worker] = []
        self.started = 0  # workers ever started: the next one's index
        self.retries = 0  # payloads re-sent after their worker died
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

    def _start_worker(self, index: int | None = None) -> _Worker:
        """Start worker ``index`` and wait until it runs ember's code.

        A fork copies only the forking thread: a lock that another thread (Ray's, gRPC's, a
        library's pool) held at that moment stays locked forever in the child, and a child whose
        at-fork handlers or loader need it hangs before its first line. Such a child is killed and
        forked again, the lock having most likely been released by then; after ``START_ATTEMPTS``
        forks the pool stops with an error instead of waiting on a worker that will never answer.
        """
        index = self.started if index is None else index
        self.started = max(self.started, index + 1)
        problem = ""
        for attempt in range(1, START_ATTEMPTS + 1):
            worker = self._fork_worker(index)
            problem = self._await_start(worker)
            if not problem:
                self.workers.append(worker)
                return worker
            worker.process.kill()
            worker.process.join()
            worker.conn.close()
            if attempt < START_ATTEMPTS:
                print(
                    f"ember.data: {self.name} {index} (pid {worker.process.pid}) {problem}; started "
                    f"another (attempt {attempt + 1} of {START_ATTEMPTS})",
                    file=sys.stderr,
                )
        self.close()
        if problem.startswith("exited"):
            raise WorkerError(
                f"{self.name} {index} {problem}, {START_ATTEMPTS} times; what it printed above says why"
            )
        raise WorkerError(
            f"{self.name} {index} {problem}, {START_ATTEMPTS} times: each fork got stuck before "
            "running any code, on a lock another thread of this process held when it forked (a library's "
            "background threads); start the dataset's work before that library's threads, or run it in "
            "a process of its own"
        )

    @staticmethod
    def _await_start(worker: _Worker) -> str:
        """'' once the worker runs ember's code; else what went wrong: stuck, or ended, before that."""
        if not worker.conn.poll(START_TIMEOUT_S):
            return f"did not start within {START_TIMEOUT_S:g} s"
        try:
            worker.conn.recv()  # "started"
        except (EOFError, OSError):
            worker.process.join(timeout=5.0)
            return f"exited with code {worker.process.exitcode} before it started"
        return ""

    def _fork_worker(self, index: int) -> _Worker:
        gpus = assign_gpus(index, self.num_gpus, self.gpu_count) if self.num_gpus else None
        parent_conn, child_conn = self._context.Pipe(duplex=True)
        process: Any
        args: tuple[Callable[[], Handler], int | None, int, list[int] | None]
        if ray_runs_here():  # a fork would share Ray's sockets (spawned.py): forked from the zygote instead
            args = (self.make_handler, None, self.torch_threads, gpus)
            process = SpawnedProcess(_worker_main, child_conn, args)
        else:
            args = (self.make_handler, os.getpid(), self.torch_threads, gpus)
            process = self._context.Process(
                target=_worker_main, args=(child_conn, *args), daemon=True, name=f"{self.name} {index}"
            )
        _Forker.start(process)
        child_conn.close()
        return _Worker(process, parent_conn, index)

    def _who(self, worker: _Worker) -> str:
        return f"{self.name} (pid {worker.process.pid})"

    def _idle_worker(self, grow: bool = True) -> _Worker | None:
        for worker in self.workers:
            if worker.task is None:
                return worker
        if grow and len(self.workers) < self.max_size:
            return self._start_worker()
        return None

    def imap(
        self, payloads: Iterator[tuple[Any, str]], window: int | Callable[[], int] | None = None
    ) -> Iterator[list[pa.Table]]:
        """Map ``(payload, description)`` pairs to lists of blocks, in order (or as they finish
        when the pool is not ``ordered``). The description names the input in error messages.

        At most ``window`` results are outstanding or buffered at once (backpressure).
        """
        limit = window if callable(window) else (lambda: window or 2 * self.max_size)
        self._descriptions: dict[int, str] = {}
        self._payloads: dict[int, Any] = {}  # kept while in flight, to retry after a worker dies
        self._attempts: dict[int, int] = {}
        self._retry_queue: list[int] = []
        results: dict[int, list[pa.Table]] = {}
        submitted = delivered = 0
        exhausted = False
        while True:
            while self._retry_queue:
                worker = self._idle_worker()
                if worker is None:
                    break
                seq = self._retry_queue.pop(0)
                self._send(worker, seq, self._payloads[seq])
            while not exhausted and not self._retry_queue and submitted - delivered < limit():
                worker = self._idle_worker(grow=False)
                if worker is None and len(self.workers) >= self.max_size:
                    break
                item = next(payloads, None)
                if item is None:
                    exhausted = True
                    break
                if worker is None:  # autoscale: every worker is busy and work is waiting
                    worker = self._start_worker()
                payload, self._descriptions[submitted] = item
                if self.max_task_retries:
                    self._payloads[submitted] = payload
                self._send(worker, submitted, payload)
                submitted += 1
            ready = delivered if self.ordered else next(iter(results), None)
            if ready is not None and ready in results:
                self._descriptions.pop(ready, None)
                self._payloads.pop(ready, None)
                yield results.pop(ready)
                delivered += 1
                continue
            if exhausted and delivered == submitted:
                return
            self._receive(results)

    def _send(self, worker: _Worker, seq: int, payload: Any) -> None:
        worker.task = seq
        try:
            if isinstance(payload, pa.Table) or _is_block_pair(payload):
                block, extra = payload if isinstance(payload, tuple) else (payload, None)
                worker.conn.send((seq, "block", extra))
                worker.conn.send_bytes(block_to_bytes(block))
            else:
                worker.conn.send((seq, "object", payload))
        except (BrokenPipeError, ConnectionResetError):  # it died before taking the work
            if self.max_task_retries and seq not in self._payloads:
                self._payloads[seq] = payload
            self._worker_died(worker)

    def _receive(self, results: dict[int, list[pa.Table]]) -> None:
        busy = {w.conn: w for w in self.workers if w.task is not None}
        sentinels = {w.process.sentinel: w for w in self.workers}
        ready = multiprocessing.connection.wait(list(busy) + list(sentinels))
        for handle in ready:
            if handle in busy:
                self._read_result(busy[handle], results)
        for handle in ready:
            if handle in sentinels and sentinels[handle] in self.workers:
                self._worker_died(sentinels[handle])

    def _read_result(self, worker: _Worker, results: dict) -> None:
        try:
            status, seq, body = worker.conn.recv()
            if status == "err":
                self.close()
                where = self._descriptions.get(seq, "?")
                if body.startswith("could not be constructed"):
                    raise DataError(f"{self._who(worker)} {body}")
                raise DataError(f"{self._who(worker)} failed on {where}: {body}")
            results[seq] = [bytes_to_block(worker.conn.recv_bytes()) for _ in range(body)]
        except (EOFError, OSError):
            self._worker_died(worker)
            return
        worker.task = None

    def _worker_died(self, worker: _Worker) -> None:
        worker.process.join(timeout=1.0)
        code = worker.process.exitcode
        how = (
            f"was killed by signal {signal.Signals(-code).name}"
            if code and code < 0
            else f"exited with code {code}"
        )
        seq = worker.task
        if seq is None and self.max_task_retries:  # died idle: nothing lost, replace it
            self.workers.remove(worker)
            worker.conn.close()
            self._start_worker()
            return
        doing = self._descriptions.get(seq, "?") if seq is not None else "nothing"
        attempts = self._attempts.get(seq, 0) if seq is not None else 0
        if seq is not None and attempts < self.max_task_retries:
            self._attempts[seq] = attempts + 1
            self.retries += 1
            print(
                f"ember.data: {self._who(worker)} {how} while processing {doing}; "
                f"retrying on a new worker (retry {attempts + 1} of {self.max_task_retries})",
                file=sys.stderr,
            )
            self.workers.remove(worker)
            worker.conn.close()
            self._retry_queue.append(seq)
            self._start_worker()
            return
        self.close()
        hint = (
            f"it failed {attempts + 1} times (max_task_retries={self.max_task_retries}: all "
            f"{self.max_task_retries} retries used); "
            if self.max_task_retries
            else "pass max_task_retries=N to retry a batch on a new worker, and "
        )
        raise WorkerError(
            f"{self._who(worker)} {how} while processing {doing}; {hint}"
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
