"""Make the helpers in _dist.py importable from the tests (pytest runs with --import-mode=importlib)."""

import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(__file__))

import pytest  # noqa: E402
from _dist import assert_ok, run, run_ranks, run_script  # noqa: E402

from ember.runtime.launch import free_port  # noqa: E402

if not sys.platform.startswith("linux"):
    collect_ignore_glob = [
        "test_*.py"
    ]  # the orphan checks read /proc; the launcher relies on PR_SET_PDEATHSIG


# Runs shared by several tests (each takes seconds: a test suite that re-ran them would be slow).
@pytest.fixture(scope="session")
def ddp_run(tmp_path_factory):
    """2 processes, shuffled, a checkpoint every 3 steps (8 steps an epoch, 2 epochs)."""
    result = run_script(
        "train_cancer.py", tmp_path_factory.mktemp("ddp"), "--shuffle", "--every-n-steps", "3"
    )
    assert_ok(result)
    return result


@pytest.fixture(scope="session")
def one_process_run(tmp_path_factory):
    """1 process on the global batch (2 x 32), the same shuffled order the 2 ranks split between them."""
    result = run_ranks(
        "train_cancer.py",
        tmp_path_factory.mktemp("one"),
        "--devices",
        "1",
        "--batch",
        "64",
        "--shuffle",
        "--one-process-sampler",
        ranks=1,
    )
    assert_ok(result)
    return result


@pytest.fixture(scope="session")
def torchrun_run(tmp_path_factory):
    """The same script under `torchrun --nproc_per_node=2`, no shuffle: also the reference for resumes."""
    out = tmp_path_factory.mktemp("torchrun")
    torchrun = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node=2",
        "--master_addr=127.0.0.1",
        f"--master_port={free_port()}",
        "--local-addr=127.0.0.1",
    ]
    result = run([*torchrun, str(Path(__file__).parent / "scripts" / "train_cancer.py"), str(out)], out)
    assert_ok(result)
    return result


@pytest.fixture(scope="session")
def fsdp_run(tmp_path_factory):
    """As ddp_run, with strategy="fsdp" (FSDP2 fully_shard), plus a sharded checkpoint at the end. A
    checkpoint every 4 steps: the 16th is the last step, so last.ckpt (written with a checkpoint, as
    Lightning's) holds the final weights, and step 12 (mid-epoch 1) is there to resume from."""
    result = run_ranks(
        "train_cancer.py",
        tmp_path_factory.mktemp("fsdp"),
        "--shuffle",
        "--every-n-steps",
        "4",
        "--strategy",
        "fsdp",
        ranks=2,
    )
    assert_ok(result)
    return result
