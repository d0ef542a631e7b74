"""TorchTrainer's workers as local processes that run ONLY the training function (never the user's script).

The driver pickles one job — the training function, its config, the datasets, where the run goes —
with cloudpickle, as Ray does for its actors: a function of an importable module travels by reference
(the worker imports that module), a function defined in `__main__` (a script, `python -c`, a script
piped on stdin, a notebook cell) travels by value, with the globals it uses. It starts N processes of
`python -m ember.train.local_workers JOB` through ember's launcher (`runtime.launch.run_workers`:
torchrun's variables, failures named by rank, no orphans, `max_failures` restarts), forked from a
zygote that imported torch and ember's worker code once (`WORKER_PRELOAD`; ember.processes.zygote).
Each one loads the job and runs the loop as its rank; the user's script is never run again, so code
after `fit()` runs once, in the driver, and a script that Python read from stdin or `-c` trains like a
file.

The job file is written by the driver into a folder only it created (`tempfile.mkdtemp`, mode 0700)
and removed when the workers are done; a worker unpickles nothing else. Rank zero writes what the
loop returned there (`returned.pkl`), which the driver reads: `Result.return_value`.

Example:
    >>> fit_with_local_workers(trainer, run_dir)  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import os
import pickle
import sys
from pathlib import Path
from typing import Any

from ember.class_path import pack_job, unpack_job
from ember.errors import ConfigError
from ember.fs import make_temporary_folder, remove_temporary_folder, write_bytes
from ember.train.result import Result

#: What every worker imports, imported once by the zygote the workers fork from (`runtime.launch`): torch
#: with torch._dynamo and torch.distributed (~3.4 CPU-s, most of a short loop's life), ember.data (a loop's
#: shards) and the worker's own code. Not this module: the fork runs it as ``__main__``.
WORKER_PRELOAD = (
    "torch",
    "torch._dynamo",
    "torch.distributed",
    "ember.data",
    "ember.train.worker",
    "ember.runner",
    "cloudpickle",
)
_JOB_FILE = "job.pkl"
_RETURN_FILE = "returned.pkl"  # rank zero's return value, read by the driver only


@dataclasses.dataclass
class _Job:
    """Everything one worker needs, and nothing of the driver's script."""

    train_loop: Any
    config: dict[str, Any] | None
    datasets: dict[str, Any]
    run_dir: str
    use_gpu: bool
    resume: Any
    torch_config: Any = None
    unsplit: frozenset[str] = frozenset()


def fit_with_local_workers(trainer: Any, run_dir: Path) -> Result:
    """Run `trainer`'s loop on `num_workers` local processes; return the run's Result."""
    from ember.runtime.launch import run_workers

    folder = make_temporary_folder("train-job-")  # 0700, exclusive: nobody else writes here
    try:
        job = folder / _JOB_FILE
        write_bytes(job, _pickled(trainer, run_dir))
        command = [sys.executable, "-m", "ember.train.local_workers", str(job)]
        run_workers(
            command,
            trainer.scaling.num_workers,
            max_failures=trainer.failure.max_failures,
            what="train loop",
            preload=WORKER_PRELOAD,
        )
        returned = _returned(folder)
    finally:
        remove_temporary_folder(folder)
    result = Result.from_path(run_dir)
    result.return_value = returned
    return result


def _returned(folder: Path) -> Any:
    """What rank zero's loop returned, from the file it wrote into the driver's private job folder."""
    path = folder / _RETURN_FILE
    return pickle.loads(path.read_bytes()) if path.is_file() else None


def _write_returned(folder: Path, value: Any) -> None:
    """Rank zero: hand the loop's return value to the driver (cloudpickle, as Ray serializes it)."""
    import cloudpickle

    from ember.fs.atomic import atomic_write

    try:
        body = cloudpickle.dumps(value)
    except Exception as exc:
        raise ConfigError(
            f"train_loop_per_worker returned a {type(value).__name__} that cannot be pickled "
            f"({type(exc).__name__}); return plain values (numbers, lists, dicts)"
        ) from exc
    with atomic_write(folder / _RETURN_FILE) as sink:
        sink.write(body)


def _pickled(trainer: Any, run_dir: Path) -> bytes:
    """The job, packed by `ember.class_path.pack_job` (the driver's sys.path, then cloudpickle)."""
    try:
        import cloudpickle  # noqa: F401 - only to name what is missing in one line
    except ImportError as exc:
        raise ConfigError(
            "TorchTrainer's local workers need cloudpickle to receive the training function; "
            "pip install cloudpickle"
        ) from exc
    job = _Job(
        trainer.train_loop,
        trainer.config,
        trainer.datasets,
        str(run_dir),
        trainer.scaling.use_gpu,
        trainer.resume_from_checkpoint,
        trainer.torch_config,
        frozenset(trainer.dataset_config.unsplit(list(trainer.datasets))),
    )
    try:
        return pack_job(job)
    except Exception as exc:
        raise ConfigError(
            f"TorchTrainer cannot send the training function, its config or datasets to the workers "
            f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}); create such "
            "objects inside train_loop_per_worker instead"
        ) from exc


def _load(path: Path) -> _Job:
    with path.open("rb") as source:
        job: _Job = unpack_job(source)
        return job


def main(argv: list[str]) -> None:
    """A worker: load the job, run the loop as the rank the launcher's variables name."""
    from ember.runner import install_from_environment
    from ember.runtime.launch import install_error_report
    from ember.train.worker import run_train_loop

    # under `python -m ember script.py`: the loop's imports map as the driver's did
    install_from_environment()
    install_error_report()  # a job that fails to load is reported with its traceback, like a failing loop
    job = _load(Path(argv[0]))
    returned = run_train_loop(
        job.train_loop,
        job.config,
        job.datasets,
        Path(job.run_dir),
        job.use_gpu,
        job.resume,
        job.torch_config,
        job.unsplit,
    )
    if os.environ.get("RANK") == "0":
        _write_returned(Path(argv[0]).parent, returned)


if __name__ == "__main__":
    main(sys.argv[1:])
