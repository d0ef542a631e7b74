"""Opening a sharded (torch.distributed.checkpoint) folder never runs code from it.

torch reads `.metadata` with plain `pickle.load` and non-tensor values with `torch.load(weights_only=False)`;
`load_sharded_checkpoint` reads both safely. Real DCP folders (written by torch in this process), crafted
payloads that would write a marker file.
"""

from __future__ import annotations

import os
import pickle
import warnings

import pytest
import torch

from ember.errors import CheckpointError
from ember.runtime.sharded_checkpoint import load_sharded_checkpoint


class WritesMarker:
    """Unpickling this calls os.system: what a crafted file would do."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def save_dcp(state, folder):
    import torch.distributed.checkpoint as dcp

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "assuming the intent is to save in a single process"
        dcp.save(state, checkpoint_id=str(folder), no_dist=True)


def test_a_real_folder_loads_bitwise(tmp_path):
    state = {
        "state_dict": {"w": torch.randn(3, 4), "b": torch.arange(5, dtype=torch.bfloat16)},
        "global_step": 7,
        "epoch": 1,
    }
    save_dcp(state, tmp_path / "sharded")
    loaded = load_sharded_checkpoint(tmp_path / "sharded")
    assert torch.equal(loaded["state_dict"]["w"], state["state_dict"]["w"])
    assert torch.equal(loaded["state_dict"]["b"], state["state_dict"]["b"])
    assert loaded["global_step"] == 7 and loaded["epoch"] == 1


def test_a_crafted_metadata_file_is_refused_and_never_runs(tmp_path):
    marker = tmp_path / "payload-ran"
    save_dcp({"state_dict": {"w": torch.randn(2)}}, tmp_path / "sharded")
    (tmp_path / "sharded" / ".metadata").write_bytes(pickle.dumps(WritesMarker(marker)))
    with pytest.raises(
        CheckpointError,
        match=r"\.metadata names posix\.system, which is not part of a "
        r"torch\.distributed\.checkpoint folder",
    ):
        load_sharded_checkpoint(tmp_path / "sharded")
    assert not marker.exists()

    (tmp_path / "sharded" / ".metadata").write_bytes(pickle.dumps({"not": "metadata"}))
    with pytest.raises(CheckpointError, match="holds a dict, not a torch.distributed.checkpoint Metadata"):
        load_sharded_checkpoint(tmp_path / "sharded")
    (tmp_path / "sharded" / ".metadata").write_bytes(b"\x80\x04garbage")
    with pytest.raises(CheckpointError, match="is not a readable sharded-checkpoint index"):
        load_sharded_checkpoint(tmp_path / "sharded")


def test_a_crafted_non_tensor_value_is_refused_and_never_runs(tmp_path):
    marker = tmp_path / "payload-ran"
    save_dcp({"state_dict": {"w": torch.randn(2)}, "global_step": WritesMarker(marker)}, tmp_path / "sharded")
    assert not marker.exists()  # saving pickles it; only loading would call it
    with pytest.raises(
        CheckpointError,
        match=r"value 'global_step' cannot be loaded safely \(Trying to load unsupported GLOBAL posix.system",
    ):
        load_sharded_checkpoint(tmp_path / "sharded")
    assert not marker.exists()


def test_a_folder_without_metadata_is_one_line(tmp_path):
    with pytest.raises(CheckpointError, match="is not a sharded checkpoint folder"):
        load_sharded_checkpoint(tmp_path)
