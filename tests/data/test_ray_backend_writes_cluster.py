"""A write with execution="ray" on the real 2-node loopback cluster (``tests/_ray_cluster.py``).

Each output file is written by a Ray task: the node each task ran on is logged by the driver when
it records the file (``ember.data.write``, DEBUG). With the blocks made on both nodes, files are
written on both, and the folder equals a local write of the same data, byte for byte.
"""

from __future__ import annotations

import logging
import os

import pytest

import ember.data
from tests import _ray_cluster

two_node_ray = _ray_cluster.two_node_ray  # the module-scoped 2-node cluster fixture


def data_files(folder) -> dict[str, bytes]:
    return {
        name: (folder / name).read_bytes() for name in sorted(os.listdir(folder)) if not name.startswith("_")
    }


def test_files_are_written_by_tasks_on_both_nodes_and_equal_a_local_write(two_node_ray, tmp_path, caplog):
    rows = [{"id": i, "key": i % 7, "x": float(i)} for i in range(400)]
    ds = ember.data.from_items(rows, override_num_blocks=8).map_batches(lambda b: b, batch_size=None)
    ds.write_parquet(str(tmp_path / "local"))

    context = ember.data.DataContext.get_current()
    before, context.execution = context.execution, "ray"
    try:
        with caplog.at_level(logging.DEBUG, logger="ember.data.write"):
            files = ds.write_parquet(str(tmp_path / "ray"))
    finally:
        context.execution = before

    nodes = [
        r.getMessage().rsplit(" ", 1)[1] for r in caplog.records if "written on Ray node" in r.getMessage()
    ]
    assert len(nodes) == len(files) == 8
    assert set(nodes) == set(two_node_ray.node_ids.values())  # tasks on node A and on node B wrote files
    assert data_files(tmp_path / "ray") == data_files(tmp_path / "local")


@pytest.mark.parametrize("distributed", [True, False])
def test_a_datasink_without_distributed_writes_writes_only_on_the_drivers_node(two_node_ray, distributed):
    from tests.data._ray_sinks import NodeRecorder

    sink = NodeRecorder(distributed)
    ds = ember.data.from_items([{"id": i} for i in range(80)], override_num_blocks=8).map_batches(
        lambda b: b, batch_size=None
    )
    context = ember.data.DataContext.get_current()
    before, context.execution = context.execution, "ray"
    try:
        ds.write_datasink(sink)
    finally:
        context.execution = before
    driver_node = two_node_ray.ray.get_runtime_context().get_node_id()
    assert len(sink.nodes) == 8
    if distributed:
        # one write task per block, on the cluster's nodes: Ray's SPREAD is a preference, and on a loaded
        # machine it put all 8 on one node once, so which nodes is Ray's choice, not checked
        assert set(sink.nodes) <= set(two_node_ray.node_ids.values())
    else:
        assert set(sink.nodes) == {driver_node}
