"""Running the user's loop inside one worker: process group, context, call, teardown.

Shared by both backends: local processes (the script re-run with torchrun-style variables) and
Ray actors (which set the same variables first). The group is joined with `runtime.process_group.join`,
the same join as the Trainer's DDP and FSDP strategies (store bound to MASTER_ADDR, failures reported
to ember's launcher, left at exit).
"""

from __future__ import annotations

import datetime
import inspect
import os
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from ember.runtime.process_group import join, leave_process_group
from ember.train.checkpoint_folder import Checkpoint
from ember.train.checkpoint_manager import drop_torn_tail, next_report_index
from ember.train.config import TorchConfig
from ember.train.context import TrainContext, remove_stale_staging, set_context

#: The workers' collective timeout without a TorchConfig (Ray's TorchConfig default is 1800 s).
DEFAULT_TIMEOUT_S = 600.0


def run_train_loop(
    train_loop: Any,
    config: dict[str, Any] | None,
    datasets: dict[str, Any],
    run_dir: Path,
    use_gpu: bool,
    resume: Checkpoint | None,
    torch_config: TorchConfig | None = None,
    unsplit: frozenset[str] = frozenset(),
) -> Any:
    """Join the group described by RANK/WORLD_SIZE/MASTER_*, run `train_loop`, leave the group; return what
    `train_loop` returned (rank zero's becomes `Result.return_value`, as in Ray Train).

    `torch_config` sets the group's backend and timeout (None: gloo, nccl on GPUs, and 600 s); the
    datasets named in `unsplit` are read whole by every worker (`DataConfig(datasets_to_split=...)`).
    """
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    device = (
        torch.device("cuda", local_rank) if use_gpu and torch.cuda.is_available() else torch.device("cpu")
    )
    backend = torch_config.backend_for(use_gpu) if torch_config is not None else None
    timeout_s = torch_config.timeout_s if torch_config is not None else DEFAULT_TIMEOUT_S
    join(device, backend=backend, timeout=datetime.timedelta(seconds=timeout_s))
    if rank == 0:
        remove_stale_staging(run_dir)  # nobody of this attempt has reported yet: these are a killed attempt's
        drop_torn_tail(run_dir)
    reports = next_report_index(run_dir)  # continue numbering after a restart
    set_context(
        TrainContext(
            world_rank=rank,
            world_size=world,
            local_rank=local_rank,
            local_world_size=int(os.environ.get("LOCAL_WORLD_SIZE", world)),
            node_rank=int(os.environ.get("GROUP_RANK", 0)),
            run_dir=run_dir,
            device=device,
            datasets=datasets,
            resume_checkpoint=resume,
            reports=reports,
            unsplit=frozenset(unsplit),
        )
    )
    try:
        takes_config = len(inspect.signature(train_loop).parameters) > 0
        returned = train_loop(config if config is not None else {}) if takes_config else train_loop()
        dist.barrier()  # nobody leaves while a peer still needs a collective
        return returned
    finally:
        set_context(None)
        leave_process_group()
