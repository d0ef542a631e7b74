"""The default memory budget is a quarter of what the process may use: the container's memory limit
(cgroup v1 or v2) when it is below the machine's MACHINE_RAM, as Ray reads it. The parsing is checked on fake
cgroup trees (``system_memory(cgroup_root=, self_cgroup=)``, the module's documented seam); the
default itself on this machine's real /sys/fs/cgroup, in a fresh process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ember.data.system_memory import physical_memory, system_memory

GiB = 1024**3
MACHINE_RAM = physical_memory()


def _tree(tmp_path, files: dict[str, str], self_cgroup: str) -> dict[str, str]:
    root = tmp_path / "cgroup"
    for relative, text in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text + "\n")
    (tmp_path / "self").write_text(self_cgroup)
    return {"cgroup_root": str(root), "self_cgroup": str(tmp_path / "self")}


@pytest.mark.skipif(physical_memory() < 3 * GiB, reason="needs more than 2 GiB of RAM")
@pytest.mark.parametrize(
    "files, self_cgroup, expected",
    [
        # cgroup v2 in a container with a cgroup namespace: the limit is at the root
        ({"memory.max": str(GiB // 2)}, "0::/\n", GiB // 2),
        # cgroup v2 without one: the limit is on a cgroup above the process's own
        (
            {"memory.max": "max", "kubepods/memory.max": str(GiB), "kubepods/pod1/memory.max": "max"},
            "0::/kubepods/pod1\n",
            GiB,
        ),
        # cgroup v1: the host's huge "no limit" at the root, the container's limit on its own cgroup
        (
            {
                "memory/memory.limit_in_bytes": "9223372036854771712",
                "memory/docker/abc/memory.limit_in_bytes": str(2 * GiB),
            },
            "5:cpu:/docker/abc\n4:memory:/docker/abc\n0::/\n",
            2 * GiB,
        ),
        # cgroup v1 in a namespace: the root file is the container's
        ({"memory/memory.limit_in_bytes": str(GiB)}, "4:memory:/\n", GiB),
        # no limit anywhere, unreadable values, a limit above the MACHINE_RAM: the MACHINE_RAM
        ({"memory.max": "max"}, "0::/\n", MACHINE_RAM),
        ({"memory.max": "not a number", "memory/memory.limit_in_bytes": ""}, "garbage", MACHINE_RAM),
        ({"memory.max": str(MACHINE_RAM * 4)}, "0::/\n", MACHINE_RAM),
        ({}, "", MACHINE_RAM),
    ],
)
def test_container_limits_are_read_from_cgroup_files(tmp_path, files, self_cgroup, expected):
    assert system_memory(**_tree(tmp_path, files, self_cgroup)) == expected


def test_a_missing_proc_file_reads_the_roots_only(tmp_path):
    paths = _tree(tmp_path, {"memory.max": str(GiB // 4)}, "")
    paths["self_cgroup"] = str(tmp_path / "absent")
    assert system_memory(**paths) == min(GiB // 4, MACHINE_RAM)


def test_default_budget_is_a_quarter_of_this_machines_real_limit():
    """A fresh process reads the real /sys/fs/cgroup: its default budget is a quarter of the smaller of
    the MACHINE_RAM and each limit file that holds a number."""
    code = (
        "import json, ember.data; from ember.data.system_memory import system_memory; "
        "print(json.dumps([ember.data.DataContext().memory_budget_bytes, system_memory()]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    budget, usable = json.loads(out.stdout)
    assert budget == usable // 4 and 0 < usable <= MACHINE_RAM
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        if os.path.exists(path):
            text = Path(path).read_text().strip()
            if text.isdigit():
                assert usable <= int(text)
