"""A real 2-node Ray cluster on this one machine, loopback only, for the tests that need more than one node.

Use it from a test module (the fixture is module-scoped; modules that ask for it one after the other share
one cluster, stopped after the last of them)::

    from tests._ray_cluster import two_node_ray  # noqa: F401  (the fixture, found by pytest by name)

    def test_spreads(two_node_ray):
        ray = two_node_ray.ray                       # the connected `ray` module
        ref = ray.remote(lambda: ray.get_runtime_context().get_node_id()).options(
            resources={"node_b": 0.01}).remote()     # place work on node B by its custom resource
        assert ray.get(ref) == two_node_ray.node_ids["node_b"]

What it starts (``ray.cluster_utils.Cluster``, the harness Ray's own multi-node tests use):

- node A, the head (GCS, raylet; the driver -- this pytest process -- attaches to it) and node B, a worker,
  both at 127.0.0.1 (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` is set before Ray is imported, no dashboard,
  no usage stats), each with 1 CPU, a 128 MiB object store and a custom resource ``{"node_a": 1}`` /
  ``{"node_b": 1}`` so tests can pin work to a node;
- the fixture asserts ``ray.nodes()`` lists exactly these 2 alive nodes, all at 127.0.0.1.

``two_node_ray.kill_node_b()`` SIGKILLs node B's processes (raylet and its workers die with it) for the
node-loss tests; ``two_node_ray.restore_node_b()`` starts a fresh node B so later tests of the module
still see 2 nodes. Teardown disconnects the driver and stops every process the cluster started
(``Cluster.shutdown``: by the node's own PIDs, never by name). ``EMBER_SKIP=ray`` skips the tests.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

# Ray reads these when it is first imported: one machine is no cluster to advertise, and nothing is reported.
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

LOOPBACK = "127.0.0.1"
OBJECT_STORE_BYTES = 128 * 1024 * 1024
# A killed node is declared dead after ~3 s instead of Ray's default ~30 s, so node-loss tests stay short.
_FAST_FAILURE_DETECTION = {
    "health_check_initial_delay_ms": 0,
    "health_check_period_ms": 1000,
    "health_check_timeout_ms": 1000,
    "health_check_failure_threshold": 3,
}


def _node_args(name: str) -> dict[str, Any]:
    return {
        "node_ip_address": LOOPBACK,
        "num_cpus": 1,
        "resources": {name: 1},
        "object_store_memory": OBJECT_STORE_BYTES,
        "include_dashboard": False,
    }


@dataclass
class TwoNodeCluster:
    """The running cluster: ``ray`` (connected module), ``cluster`` (``Cluster``), ``node_ids`` by name."""

    ray: Any
    cluster: Any
    node_b: Any = None
    node_ids: dict[str, str] = field(default_factory=dict)

    @property
    def address(self) -> str:
        """The GCS address (``host:port``) a second driver or ``ray.init(address=...)`` connects to."""
        return self.cluster.address

    def alive_nodes(self) -> list[dict[str, Any]]:
        return [node for node in self.ray.nodes() if node["Alive"]]

    def kill_node_b(self) -> None:
        """SIGKILL node B (no graceful shutdown), as a machine that loses power; waits until Ray sees it
        dead."""
        self.cluster.remove_node(self.node_b, allow_graceful=False)
        self.node_b = None
        self._wait_for_alive(1)

    def restore_node_b(self) -> None:
        """Start a fresh node B (new node id, same custom resource) after ``kill_node_b``."""
        if self.node_b is None:
            self.node_b = self.cluster.add_node(**_node_args("node_b"))
        self._wait_for_alive(2)
        self._record_node_ids()

    def _wait_for_alive(self, count: int, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while len(self.alive_nodes()) != count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the Ray cluster did not reach {count} alive nodes in {timeout:.0f} s")
            time.sleep(0.2)

    def _record_node_ids(self) -> None:
        for node in self.alive_nodes():
            for name in ("node_a", "node_b"):
                if name in node["Resources"]:
                    self.node_ids[name] = node["NodeID"]


def start_two_node_cluster() -> TwoNodeCluster:
    """Start node A (head) and node B on 127.0.0.1 and connect this process as the driver."""
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    if ray.is_initialized():  # another module's local Ray: this module needs its own cluster
        ray.shutdown()
    head = {**_node_args("node_a"), "_system_config": _FAST_FAILURE_DETECTION}
    cluster = Cluster(initialize_head=True, head_node_args=head)
    running = TwoNodeCluster(ray=ray, cluster=cluster)
    try:
        running.node_b = cluster.add_node(**_node_args("node_b"))
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, _node_ip_address=LOOPBACK, log_to_driver=False)
        running._wait_for_alive(2)
        addresses = {node["NodeManagerAddress"] for node in running.alive_nodes()}
        assert addresses == {LOOPBACK}, f"the test cluster must be loopback-only, got {addresses}"
        running._record_node_ids()
        assert set(running.node_ids) == {"node_a", "node_b"}
        import ray.data

        ray.data.DataContext.get_current().enable_progress_bars = False
    except BaseException:
        stop_two_node_cluster(running)
        raise
    return running


def stop_two_node_cluster(running: TwoNodeCluster) -> None:
    """Disconnect the driver, then stop every process the cluster started (by their PIDs)."""
    if running.ray.is_initialized():
        running.ray.shutdown()
    running.cluster.shutdown()


# Starting the cluster takes many seconds: modules that ask for it one after the other share one (a module
# that killed node B has restored it; a missing node B is started again before the next module gets it).
_SHARED: list[TwoNodeCluster] = []


@pytest.fixture(scope="module")
def two_node_ray(request) -> Iterator[TwoNodeCluster]:
    """A 2-node loopback Ray cluster for the whole test module (see the module docstring)."""
    if "ray" in os.environ.get("EMBER_SKIP", ""):
        pytest.skip("EMBER_SKIP=ray")
    running = _shared_cluster()
    if running is None:
        running = start_two_node_cluster()
        _SHARED.append(running)
        request.config.add_cleanup(_stop_shared)  # a run that ends early (-x) stops it too
    try:
        yield running
    finally:
        if not _next_module_uses_it(request):
            _stop_shared()


def _shared_cluster() -> TwoNodeCluster | None:
    """The cluster the previous module used, if this process is still its driver; with 2 nodes again."""
    if not _SHARED:
        return None
    running = _SHARED[0]
    if not (
        running.ray.is_initialized() and running.ray.get_runtime_context().gcs_address == running.address
    ):
        _stop_shared()
        return None
    running.restore_node_b()
    return running


# The test this process runs after the one being torn down (tests/conftest.py's pytest_runtest_teardown
# sets it before fixtures are finalized). Not the next test in collection order: on a pytest-xdist worker the
# next test run is whatever the scheduler sent, and a cluster kept for a module that runs elsewhere would
# stay up under the worker's other tests (Ray initialized, its processes children of this one).
_NEXT_ITEM: list[Any] = [None]


def note_next_item(nextitem: Any) -> None:
    _NEXT_ITEM[0] = nextitem


def _next_module_uses_it(request) -> bool:
    nextitem = _NEXT_ITEM[0]
    return nextitem is not None and "two_node_ray" in getattr(nextitem, "fixturenames", ())


def _stop_shared() -> None:
    while _SHARED:
        stop_two_node_cluster(_SHARED.pop())
