"""Which launcher started this process, and what it says about ranks and nodes (Lightning's cluster
environments).

ember reads the same three environments Lightning 2.6 reads:

- torchrun / TorchElastic (`TorchElasticEnvironment`): RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,
  GROUP_RANK (the node's rank), MASTER_ADDR/MASTER_PORT. ember's own one-machine launcher writes the
  same variables (plus EMBER_LAUNCH_DIR), so it reads the same way.
- SLURM (`SLURMEnvironment`, a batch `srun` task; an interactive `salloc` shell whose job name is "bash"
  or "interactive" is not a SLURM launch, as in Lightning): SLURM_NTASKS (world size), SLURM_PROCID
  (global rank), SLURM_LOCALID, SLURM_NODEID, SLURM_NTASKS_PER_NODE / SLURM_JOB_NUM_NODES; the main
  address is the first host of SLURM_NODELIST and the port 15000 + the job id's last three digits,
  unless MASTER_ADDR / MASTER_PORT are set. ember then writes torch's variables (RANK, WORLD_SIZE, ...)
  for the process group to read.
- neither: one machine, where ember's launcher starts the processes (`num_nodes` must be 1).

`resolve_num_nodes` checks `Trainer(num_nodes=N, devices=M)` against what the launcher started: the
world must be N x M, otherwise ONE line says what the environment says and what the arguments say.

Example:
    >>> env = detect({"RANK": "3", "LOCAL_RANK": "1", "WORLD_SIZE": "4", "LOCAL_WORLD_SIZE": "2",
    ...               "GROUP_RANK": "1", "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500"})
    >>> env.name, env.world_size, env.num_nodes, env.node_rank, env.local_rank
    ('torchrun', 4, 2, 1, 1)
    >>> detect({"SLURM_NTASKS": "2", "SLURM_PROCID": "1", "SLURM_LOCALID": "0", "SLURM_NODEID": "1",
    ...         "SLURM_JOB_NUM_NODES": "2", "SLURM_NODELIST": "gpu[07-08]",
    ...         "SLURM_JOB_ID": "1234"}).main_address
    'gpu07'
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping, MutableMapping
from typing import Any

from ember.errors import ConfigError

_TORCHRUN_VARIABLES = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK")


@dataclasses.dataclass(frozen=True)
class ClusterEnvironment:
    """What the launcher of this process says about it."""

    name: str  # "torchrun", "ember's launcher" or "SLURM"
    world_size: int
    global_rank: int
    local_rank: int
    node_rank: int
    local_world_size: int  # processes on each node
    main_address: str
    main_port: int

    @property
    def num_nodes(self) -> int:
        return max(1, self.world_size // max(1, self.local_world_size))

    def describe(self) -> str:
        return (
            f"{self.name} started {self.world_size} process{'es' if self.world_size != 1 else ''} on "
            f"{self.num_nodes} node{'s' if self.num_nodes != 1 else ''} ({self.local_world_size} per node)"
        )


def detect(environ: Mapping[str, str] | None = None) -> ClusterEnvironment | None:
    """The launcher's description of this process, or None when no multi-process launcher started it."""
    env = os.environ if environ is None else environ
    check_launch_variables(env)  # a rank past the world size would wait for its peers forever
    if all(name in env for name in _TORCHRUN_VARIABLES):
        return ClusterEnvironment(
            name="ember's launcher" if "EMBER_LAUNCH_DIR" in env else "torchrun",
            world_size=_int(env, "WORLD_SIZE"),
            global_rank=_int(env, "RANK"),
            local_rank=_int(env, "LOCAL_RANK"),
            node_rank=_int(env, "GROUP_RANK"),
            local_world_size=_int(env, "LOCAL_WORLD_SIZE"),
            main_address=env.get("MASTER_ADDR", "127.0.0.1"),
            main_port=_port(env) or 0,
        )
    if _is_slurm_task(env):
        return _slurm(env)
    return None


def _is_slurm_task(env: Mapping[str, str]) -> bool:
    """A task srun started in a batch job (Lightning's rule: not an interactive shell of the allocation)."""
    return "SLURM_NTASKS" in env and env.get("SLURM_JOB_NAME") not in ("bash", "interactive")


def _slurm(env: Mapping[str, str]) -> ClusterEnvironment:
    world = _int(env, "SLURM_NTASKS")
    nodes = int(env.get("SLURM_JOB_NUM_NODES", env.get("SLURM_NNODES", "1")) or 1)
    per_node = _tasks_per_node(env.get("SLURM_NTASKS_PER_NODE", "")) or max(1, world // max(1, nodes))
    job_id = env.get("SLURM_ARRAY_JOB_ID") or env.get("SLURM_JOB_ID", "0")
    default_port = 15000 + int(re.sub(r"\D", "", job_id)[-3:] or 0)
    return ClusterEnvironment(
        name="SLURM",
        world_size=world,
        global_rank=_int(env, "SLURM_PROCID"),
        local_rank=_int(env, "SLURM_LOCALID"),
        node_rank=int(env.get("SLURM_NODEID", "0") or 0),
        local_world_size=per_node,
        main_address=env.get("MASTER_ADDR") or first_host(env.get("SLURM_NODELIST", "127.0.0.1")),
        main_port=_port(env) or default_port,
    )


def _tasks_per_node(text: str) -> int:
    """SLURM_NTASKS_PER_NODE as a number ("2", or "2(x3)" for 3 nodes of 2); 0 when absent or uneven."""
    match = re.fullmatch(r"(\d+)(\(x\d+\))?", text.strip())
    return int(match.group(1)) if match else 0


def first_host(nodelist: str) -> str:
    """The first host of a SLURM node list ("gpu[07-08,12],cpu1" -> "gpu07").

    Example:
        >>> first_host("node[3,5-7]"), first_host("a1,a2")
        ('node3', 'a1')
    """
    match = re.match(r"([^,\[]+)(\[([^\]]*)\])?", nodelist.strip())
    if match is None:
        return "127.0.0.1"
    prefix, brackets = match.group(1), match.group(3)
    return prefix if brackets is None else prefix + re.split(r"[-,]", brackets)[0]


def export_torch_variables(env: ClusterEnvironment, environ: MutableMapping[str, str] | None = None) -> None:
    """Write torch's rendezvous variables from a SLURM description (never overwriting ones already set),
    so `init_process_group` and every rank property read one set of names."""
    target = os.environ if environ is None else environ
    values = {
        "RANK": env.global_rank,
        "LOCAL_RANK": env.local_rank,
        "WORLD_SIZE": env.world_size,
        "LOCAL_WORLD_SIZE": env.local_world_size,
        "GROUP_RANK": env.node_rank,
        "MASTER_ADDR": env.main_address,
        "MASTER_PORT": env.main_port,
    }
    for name, value in values.items():
        target.setdefault(name, str(value))


def resolve_num_nodes(num_nodes: Any, devices: Any, device_ids: list[int]) -> int:
    """Check `Trainer(num_nodes=..., devices=...)` against the launcher's environment; return num_nodes.

    Under SLURM, torch's variables are written from SLURM's first (`export_torch_variables`). With
    `devices="auto"` the devices per node are what the launcher started on each node.
    """
    problem = num_nodes_problem(num_nodes, devices, device_ids)
    if problem is not None:
        raise ConfigError(problem)
    return num_nodes


def num_nodes_problem(num_nodes: Any, devices: Any, device_ids: list[int]) -> str | None:
    """Why `num_nodes` disagrees with the launch environment (one line), or None. A value that is not a
    positive integer raises at once; a disagreement is returned, so that the Trainer accepts the option at
    construction, as Lightning does, and refuses it when a run starts (`Trainer.fit`, ...)."""
    if isinstance(num_nodes, bool) or not isinstance(num_nodes, int) or num_nodes < 1:
        raise ConfigError(f"num_nodes={num_nodes!r} must be a positive integer (the number of machines)")
    env = detect()
    if env is None:
        if num_nodes > 1:
            return (
                f"num_nodes={num_nodes} but no multi-node launcher started this process (no torchrun or "
                "SLURM variables); ember starts processes on one machine only: run `torchrun "
                f"--nnodes={num_nodes} --nproc_per_node=DEVICES --node_rank=I --master_addr=HOST "
                "--master_port=PORT train.py` on each machine, or `srun` under SLURM"
            )
        return None
    if env.name == "SLURM":
        export_torch_variables(env)
    per_node = env.local_world_size if devices == "auto" else len(device_ids)
    if num_nodes * per_node != env.world_size or per_node != env.local_world_size:
        return (
            f"Trainer(num_nodes={num_nodes}, devices={devices!r}) asks for {num_nodes} x {per_node} = "
            f"{num_nodes * per_node} processes, but {env.describe()}; pass num_nodes={env.num_nodes}, "
            f"devices={env.local_world_size} or change the launch command"
        )
    return None


def check_launch_variables(env: Mapping[str, str]) -> None:
    """The launcher's variables agree with each other (RANK below WORLD_SIZE, LOCAL_RANK below
    LOCAL_WORLD_SIZE, MASTER_PORT a port), or one ConfigError line: never a process group that waits
    for a rank that cannot exist.

    Example:
        >>> check_launch_variables({"RANK": "5", "WORLD_SIZE": "2"})  # doctest: +NORMALIZE_WHITESPACE
        Traceback (most recent call last):
        ...
        ember.errors.ConfigError: RANK=5 but WORLD_SIZE=2 in the environment: a rank is 0..1; fix the launch
        command (torchrun sets both), or unset both to let ember start the processes
    """
    for rank, size in (("RANK", "WORLD_SIZE"), ("LOCAL_RANK", "LOCAL_WORLD_SIZE")):
        if rank in env and size in env:
            r, n = _int(env, rank), _int(env, size)
            if n < 1 or not 0 <= r < n:
                raise ConfigError(
                    f"{rank}={r} but {size}={n} in the environment: a rank is 0..{max(n - 1, 0)}; fix the "
                    "launch command (torchrun sets both), or unset both to let ember start the processes"
                )
    _port(env)


def _port(env: Mapping[str, str]) -> int | None:
    """MASTER_PORT as a port number (None when unset), or one ConfigError line."""
    text = env.get("MASTER_PORT", "").strip()
    if not text:
        return None
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise ConfigError(
            f"MASTER_PORT={text!r} in the environment is not a port (1..65535); set it to a free port "
            "of the rank-0 machine, e.g. MASTER_PORT=29500"
        )
    return int(text)


def _int(env: Mapping[str, str], name: str) -> int:
    if name not in env:
        raise ConfigError(
            f"{name} is not set, though SLURM_NTASKS={env.get('SLURM_NTASKS')!r} says this is a SLURM "
            "task; start the script with srun (a shell in the allocation: SLURM_JOB_NAME=interactive)"
        )
    try:
        return int(env[name])
    except ValueError:
        raise ConfigError(
            f"{name}={env[name]!r} in the environment is not an integer; fix the launch command"
        ) from None
