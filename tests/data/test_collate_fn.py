"""iter_torch_batches' device="auto" (Ray's rule: the training worker's device inside a training loop, the CPU
elsewhere) and where a collate_fn's output goes. The worker's device is the "meta" device here, so that a
move to it shows without a GPU."""

from __future__ import annotations

import pytest
import torch

import ember.data
from ember.data.collate_fn import NumpyBatchCollateFn
from ember.train.context import TrainContext, set_context


@pytest.fixture
def worker_on_meta(tmp_path):
    """Code run as inside an ember.train training loop whose worker device is "meta"."""
    set_context(
        TrainContext(
            world_rank=0,
            world_size=1,
            local_rank=0,
            local_world_size=1,
            node_rank=0,
            run_dir=tmp_path,
            device=torch.device("meta"),
            datasets={},
        )
    )
    yield
    set_context(None)


class Doubled(NumpyBatchCollateFn):
    def __call__(self, batch):
        return {"id": torch.as_tensor(batch["id"].copy()) * 2}


class Listed(NumpyBatchCollateFn):
    def __call__(self, batch):
        return {"id": {"nested": torch.as_tensor(batch["id"].copy())}}  # not a tensor batch: never moved


def test_auto_is_the_cpu_outside_a_training_loop():
    (batch,) = ember.data.range(4).iter_torch_batches(batch_size=4)
    assert batch["id"].device == torch.device("cpu") and batch["id"].tolist() == [0, 1, 2, 3]


def test_auto_is_the_workers_device_inside_a_training_loop(worker_on_meta):
    (batch,) = ember.data.range(4).iterator().iter_torch_batches(batch_size=4)
    (collated,) = ember.data.range(4).iter_torch_batches(batch_size=4, collate_fn=Doubled())
    assert batch["id"].device.type == "meta" and collated["id"].device.type == "meta"


def test_an_explicit_device_wins_inside_a_training_loop(worker_on_meta):
    (batch,) = ember.data.range(4).iter_torch_batches(batch_size=4, device="cpu")
    assert batch["id"].device == torch.device("cpu") and batch["id"].tolist() == [0, 1, 2, 3]


def test_output_that_is_not_a_tensor_batch_stays_where_the_collate_fn_put_it(worker_on_meta):
    (batch,) = ember.data.range(3).iter_torch_batches(batch_size=3, collate_fn=Listed())
    assert batch["id"]["nested"].device == torch.device("cpu") and batch["id"]["nested"].tolist() == [0, 1, 2]


def test_a_collate_fn_survives_resume_exactly():
    batches = ember.data.range(6).iter_torch_batches(batch_size=2, collate_fn=Doubled())
    it = iter(batches)
    next(it)
    again = ember.data.range(6).iter_torch_batches(batch_size=2, collate_fn=Doubled())
    again.load_state_dict(batches.state_dict())
    rest = [b["id"] for b in again]
    assert all(
        torch.equal(a, b) for a, b in zip(rest, [torch.tensor([4, 6]), torch.tensor([8, 10])], strict=True)
    )


def test_default_collate_fn_chunks_are_joined_with_device_none_too():
    """Ray has no device=None (TypeError); ember's None keeps tensors where they are, still one per column."""
    from ember.data.collate_fn import DefaultCollateFn

    ds = ember.data.from_items([{"x": i} for i in range(6)]).repartition(3)  # batches span several chunks
    batches = list(ds.iter_torch_batches(batch_size=4, device=None, collate_fn=DefaultCollateFn()))
    assert [b["x"].tolist() for b in batches] == [[0, 1, 2, 3], [4, 5]]
