"""Class-based map_batches on a worker pool: the guide's example, parity with a plain loop,
per-worker construction, threads, autoscaling, and the three ways a worker can fail."""

from __future__ import annotations

import os
import re
import threading
import time

import numpy as np
import pyarrow as pa
import pytest
import torch
import torch.nn as nn

import ember.data
import ember.data.execute.pool
from ember.data.execute.pool import WorkerPool
from ember.errors import ConfigError, DataError, WorkerError
from tests._procs import child_pids
from tests.inference.conftest import MEAN, STD


def test_guide_batch_inference_example_prints_one_float32_output(capsys):
    """The seed's example, with only `ray` replaced by `ember`."""
    from typing import Dict  # noqa: UP035  (the guide's code, verbatim)

    ds = ember.data.from_numpy(np.ones((1, 100)))

    class TorchPredictor:
        def __init__(self):
            self.model = nn.Sequential(nn.Linear(in_features=100, out_features=1), nn.Sigmoid())
            self.model.eval()

        def __call__(self, batch: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:  # noqa: UP006
            tensor = torch.as_tensor(batch["data"], dtype=torch.float32)
            with torch.inference_mode():
                return {"output": self.model(tensor).numpy()}

    scale = ember.data.ActorPoolStrategy(size=2)
    predictions = ds.map_batches(TorchPredictor, compute=scale)
    predictions.show(limit=1)
    printed = capsys.readouterr().out.strip()
    assert re.fullmatch(r"\{'output': array\(\[0\.\d+\], dtype=float32\)\}", printed), printed
    assert child_pids() == set()


class NetPredictor:
    """Loads the trained Net once per worker; records which process and how many threads."""

    def __init__(self, ckpt, marker):
        from tests.inference._model import ClassicNet

        with open(marker, "a") as f:
            f.write(f"{os.getpid()}\n")
        self.model = ClassicNet.load_from_checkpoint(ckpt).eval()

    def __call__(self, batch):
        x = torch.from_numpy(batch["image"]).float().div(255).sub(MEAN).div(STD).unsqueeze(1)
        with torch.inference_mode():
            out = self.model(x).numpy()
        n = len(out)
        return {
            "id": batch["id"],
            "output": out,
            "pid": np.full(n, os.getpid()),
            "threads": np.full(n, torch.get_num_threads()),
        }


def test_pool_of_two_equals_a_single_process_loop_row_for_row(
    fashion_parquet, trained_ckpt, fashion_test, tmp_path
):
    marker = tmp_path / "constructed"
    ds = ember.data.read_parquet(str(fashion_parquet)).map_batches(
        NetPredictor, batch_size=100, concurrency=2, fn_constructor_args=(str(trained_ckpt), str(marker))
    )
    table = ds.to_arrow()
    # the plain loop: one process, one thread (as each worker has on 2 cores), the same batches
    from tests.inference._model import ClassicNet

    images, labels = fashion_test
    model = ClassicNet.load_from_checkpoint(trained_ckpt).eval()
    threads = torch.get_num_threads()
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // 2))
    try:
        x = torch.from_numpy(images[:3000]).float().div(255).sub(MEAN).div(STD).unsqueeze(1)
        with torch.inference_mode():
            expected = torch.cat([model(x[i : i + 100]) for i in range(0, 3000, 100)]).numpy()
    finally:
        torch.set_num_threads(threads)
    output = table["output"].combine_chunks().to_numpy_ndarray()
    assert table["id"].to_pylist() == list(range(3000))  # input order kept
    np.testing.assert_array_equal(output, expected)  # bitwise, row for row
    assert (output.argmax(1) == labels[:3000]).mean() > 0.6  # a real, trained model
    constructed = marker.read_text().split()
    assert len(constructed) == 2 == len(set(constructed))  # the model was loaded once per worker
    assert set(table["pid"].to_pylist()) == {int(p) for p in constructed}
    assert set(table["threads"].to_pylist()) == {
        max(1, (os.cpu_count() or 1) // 2)
    }  # workers x threads = cores
    assert child_pids() == set()


def test_num_cpus_sets_each_workers_thread_count(tmp_path):
    class Threads:
        def __call__(self, batch):
            return {
                "threads": np.full(len(batch["id"]), torch.get_num_threads()),
                "omp": np.full(len(batch["id"]), int(os.environ["OMP_NUM_THREADS"])),
            }

    rows = ember.data.range(40).map_batches(Threads, batch_size=10, concurrency=2, num_cpus=3).take_all()
    assert {r["threads"] for r in rows} == {3} and {r["omp"] for r in rows} == {3}


def test_autoscaling_pool_grows_with_backlog_and_keeps_order(tmp_path):
    marker = tmp_path / "constructed"

    class Slow:
        def __init__(self):
            with open(marker, "a") as f:
                f.write(f"{os.getpid()}\n")

        def __call__(self, batch):
            time.sleep(0.05)
            return {"id": batch["id"], "pid": np.full(len(batch["id"]), os.getpid())}

    rows = ember.data.range(100).map_batches(Slow, batch_size=5, concurrency=(1, 2)).take_all()
    assert [r["id"] for r in rows] == list(range(100))
    assert len(set(marker.read_text().split())) == 2  # started with 1, grew to the max of 2
    assert len({r["pid"] for r in rows}) == 2


def test_a_failing_constructor_is_one_error_naming_the_worker(fashion_parquet):
    class NoWeights:
        def __init__(self):
            raise FileNotFoundError("weights.pt not found")

        def __call__(self, batch):
            return batch

    start = time.monotonic()
    with pytest.raises(DataError) as info:
        ember.data.read_parquet(str(fashion_parquet)).map_batches(NoWeights, concurrency=2).take_all()
    message = str(info.value)
    assert re.match(
        r"NoWeights worker \(pid \d+\) could not be constructed: FileNotFoundError: weights.pt not found",
        message,
    ), message
    assert "Original traceback:" in message
    assert time.monotonic() - start < 15
    assert child_pids() == set()


def test_a_call_raising_on_one_batch_names_the_worker_rows_and_file(fashion_parquet):
    class BadBatch:
        def __call__(self, batch):
            if batch["id"][0] == 1000:
                raise ValueError("NaN in the input")
            return {"id": batch["id"]}

    with pytest.raises(DataError) as info:
        ember.data.read_parquet(str(fashion_parquet)).map_batches(
            BadBatch, batch_size=100, concurrency=2
        ).take_all()
    message = str(info.value)
    assert re.match(
        r"BadBatch worker \(pid \d+\) failed on rows 1000-1099 of the input to BadBatch "
        rf"\(file {re.escape(str(fashion_parquet))} row group 4\): map_batches `.*BadBatch` raised "
        r"ValueError: NaN in the input",
        message,
    ), message
    assert child_pids() == set()


class KillOnce:
    """SIGKILLs its own worker on the batch starting at row 500, the first time only."""

    def __init__(self, flag):
        self.flag = flag

    def __call__(self, batch):
        if batch["id"][0] == 500 and not os.path.exists(self.flag):
            open(self.flag, "w").close()
            os.kill(os.getpid(), 9)
        return {"id": batch["id"], "double": batch["id"] * 2}


def test_a_worker_killed_mid_batch_ends_the_job_with_a_clear_error(tmp_path):
    start = time.monotonic()
    with pytest.raises(WorkerError) as info:
        ember.data.range(1000).map_batches(
            KillOnce, batch_size=100, concurrency=2, fn_constructor_args=(str(tmp_path / "flag"),)
        ).take_all()
    assert re.match(
        r"KillOnce worker \(pid \d+\) was killed by signal SIGKILL while processing rows 500-599 of "
        r"the input to KillOnce \(range rows .*\); pass max_task_retries=N",
        str(info.value),
    ), str(info.value)
    assert time.monotonic() - start < 15
    assert child_pids() == set()


def test_with_retries_the_killed_batch_is_rerun_on_a_new_worker(tmp_path, capfd):
    rows = (
        ember.data.range(1000)
        .map_batches(
            KillOnce,
            batch_size=100,
            concurrency=2,
            max_task_retries=1,
            fn_constructor_args=(str(tmp_path / "flag"),),
        )
        .take_all()
    )
    assert [r["id"] for r in rows] == list(range(1000))
    assert [r["double"] for r in rows] == [2 * i for i in range(1000)]
    assert "retrying on a new worker (retry 1 of 1)" in capfd.readouterr().err
    assert child_pids() == set()


@pytest.mark.skipif(
    bool(__import__("ember.data.execute.pool", fromlist=["x"]).cuda_device_count()),
    reason="checks the message on a machine without a GPU",
)
def test_num_gpus_without_a_gpu_is_a_clear_error_not_a_hang():
    class Model:
        def __call__(self, batch):
            return batch

    with pytest.raises(
        ConfigError, match=r"num_gpus=1.0 per worker but this machine has no CUDA GPU; drop num_gpus"
    ):
        ember.data.range(10).map_batches(Model, concurrency=2, num_gpus=1).take_all()


def test_workers_with_several_threads_after_the_parent_ran_torch_do_not_hang():
    """GNU OpenMP is not fork-safe: a worker forked from a thread that ran a parallel region hangs."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent("""
        import numpy as np, torch, ember.data
        torch.set_num_threads(2)
        conv = torch.nn.Conv2d(1, 10, 5)
        with torch.inference_mode():
            conv(torch.randn(256, 1, 28, 28))          # the parent's OpenMP team now exists

        class Conv:
            def __call__(self, batch):
                with torch.inference_mode():
                    y = conv(torch.from_numpy(batch["data"]).float())
                return {"threads": np.full(len(y), torch.get_num_threads())}

        rows = ember.data.range_tensor(256, shape=(1, 28, 28)).map_batches(Conv, batch_size=64, concurrency=1,
                                                                            num_cpus=2).take_all()
        print(len(rows), sorted({r["threads"] for r in rows}))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["256", "[2]"]


# A worker that hangs right after fork: another thread of this process held a lock when the worker was
# forked, and something in the child (here an at-fork handler, in real programs a library's) takes it.
_HELD_AT_FORK = threading.Lock()
_STALL = {"forks_left": 0, "this_fork": False, "exit_instead": False}


def _decide_before_fork() -> None:  # runs in the parent, so the child inherits the decision
    _STALL["this_fork"] = _STALL["forks_left"] > 0
    _STALL["forks_left"] -= _STALL["this_fork"]


def _take_the_held_lock_in_the_child() -> None:
    if _STALL["this_fork"] and _STALL["exit_instead"]:
        os._exit(3)  # a worker that dies before its first line (out of memory, a crash in an import)
    if _STALL["this_fork"]:
        _HELD_AT_FORK.acquire()  # held by the parent's main thread at fork: never released here


os.register_at_fork(before=_decide_before_fork, after_in_child=_take_the_held_lock_in_the_child)


def _pool_that_forks_while_a_lock_is_held(stalled_forks: int, monkeypatch, exit_instead=False) -> WorkerPool:
    monkeypatch.setattr(ember.data.execute.pool, "START_TIMEOUT_S", 2.0)
    _STALL["forks_left"], _STALL["exit_instead"] = stalled_forks, exit_instead
    with _HELD_AT_FORK:
        try:
            return WorkerPool(lambda: lambda n: [pa.table({"n": [n]})], size=2)
        finally:
            _STALL["forks_left"], _STALL["exit_instead"] = 0, False


def test_a_worker_stuck_right_after_fork_is_replaced_not_waited_for(monkeypatch, capfd):
    pool = _pool_that_forks_while_a_lock_is_held(1, monkeypatch)
    try:
        assert [t["n"][0].as_py() for (t,) in pool.imap((i, f"item {i}") for i in range(4))] == [0, 1, 2, 3]
        assert pool.size == 2
    finally:
        pool.close()
    assert "did not start within 2 s" in capfd.readouterr().err
    assert child_pids() == set()


def test_a_worker_that_never_starts_is_one_error_not_a_hang(monkeypatch):
    start = time.monotonic()
    with pytest.raises(WorkerError, match=r"did not start within 2 s, 3 times: .*lock") as info:
        _pool_that_forks_while_a_lock_is_held(3, monkeypatch)
    assert "data worker 0" in str(info.value)
    assert time.monotonic() - start < 20
    assert child_pids() == set()


def test_a_worker_that_ends_before_its_first_line_is_replaced_then_named(monkeypatch, capfd):
    pool = _pool_that_forks_while_a_lock_is_held(1, monkeypatch, exit_instead=True)
    try:
        assert [t["n"][0].as_py() for (t,) in pool.imap((i, f"item {i}") for i in range(3))] == [0, 1, 2]
    finally:
        pool.close()
    assert "exited with code 3 before it started; started another (attempt 2 of 3)" in capfd.readouterr().err
    with pytest.raises(WorkerError, match=r"^data worker 0 exited with code 3 before it started, 3 times; "):
        _pool_that_forks_while_a_lock_is_held(3, monkeypatch, exit_instead=True)
    assert child_pids() == set()
