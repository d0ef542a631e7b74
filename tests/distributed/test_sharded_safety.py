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


class _EnumsAsGetattr(pickle.Pickler):
    """Pickles as Python 3.11.0-3.11.4 do (Debian 12's 3.11.2 among them): an Enum member becomes
    `getattr(EnumClass, name)` (later releases write `EnumClass(value)`)."""

    def reducer_override(self, obj):
        import enum

        if isinstance(obj, enum.Enum):
            return getattr, (type(obj), obj.name)
        return NotImplemented


def rewrite_metadata(folder, pickler=_EnumsAsGetattr, extra=None):
    """The folder's .metadata written again by `pickler`; with `extra`, the pickle holds the pair
    (metadata, extra), so the loader meets `extra` while it reads the file."""
    import io

    with open(folder / ".metadata", "rb") as stream:
        metadata = pickle.load(stream)  # the test's own folder, written just above
    buffer = io.BytesIO()
    pickler(buffer).dump(metadata if extra is None else (metadata, extra))
    (folder / ".metadata").write_bytes(buffer.getvalue())


def test_a_folder_whose_metadata_names_enum_members_by_getattr_loads(tmp_path):
    """A folder saved under Python 3.11.0-3.11.4 names the tensors' memory-format enum as
    builtins.getattr(_MEM_FORMAT_ENCODING, 'TORCH_CONTIGUOUS_FORMAT'): ember's own folders, which it once
    refused as code."""
    state = {"state_dict": {"w": torch.randn(3, 4)}, "global_step": 7}
    save_dcp(state, tmp_path / "sharded")
    rewrite_metadata(tmp_path / "sharded")
    assert b"getattr" in (tmp_path / "sharded" / ".metadata").read_bytes()
    loaded = load_sharded_checkpoint(tmp_path / "sharded")
    assert torch.equal(loaded["state_dict"]["w"], state["state_dict"]["w"]) and loaded["global_step"] == 7


class _Gadget:
    """Unpickles as getattr(pathlib.Path, 'write_text'): a bound method a crafted file could call next."""

    def __reduce__(self):
        import pathlib

        return getattr, (pathlib.Path, "write_text")


class _EnumAttribute:
    """getattr on an allowed enum class, for an attribute that is not one of its members."""

    def __reduce__(self):
        from torch.distributed.checkpoint.metadata import _MEM_FORMAT_ENCODING

        return getattr, (_MEM_FORMAT_ENCODING, "__init_subclass__")


@pytest.mark.parametrize("payload", [_Gadget(), _EnumAttribute()], ids=["not-an-enum", "not-a-member"])
def test_getattr_in_metadata_gives_an_enum_member_and_nothing_else(tmp_path, payload):
    save_dcp({"state_dict": {"w": torch.randn(2)}}, tmp_path / "sharded")
    rewrite_metadata(tmp_path / "sharded", pickler=pickle.Pickler, extra=payload)
    with pytest.raises(CheckpointError, match=r"\.metadata asks for .* which is not a member of an enum"):
        load_sharded_checkpoint(tmp_path / "sharded")
