"""A column of Python lists through iter_torch_batches, as Ray Data 2.60 gives it.

Ray stacks a batch of equal-length lists into one (rows, length) tensor (Ray Train's own
`torch_regression_example.py` feeds `iter_torch_batches` a column built with `.values.tolist()`), per
batch: a batch whose rows all have one length stacks even if another batch's rows have another. A batch
of lists of different lengths, lists of lists and lists of strings cannot become a tensor: refused,
pointing at collate_fn (Ray raises RuntimeError there too). iter_batches keeps Ray's numpy form, an
object array of 1-D arrays.
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd
import pytest
import torch

import ember.data
from ember.data.ray_errors import DataRuntimeError, DataTypeError


def _combine_x(batch: pd.DataFrame) -> pd.DataFrame:
    """torch_regression_example.py's combine_x: the feature columns become one list column."""
    return pd.DataFrame({"x": batch[["a", "b"]].values.tolist(), "y": batch["y"]})


def _regression_like(rd):
    frame = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [4.0, 5.0, 6.0], "y": [0.5, 1.5, 2.5]})
    return rd.from_pandas(frame).map_batches(_combine_x, batch_format="pandas")


def _torch_batches(ds, **kwargs):
    return [
        {k: (v.dtype, tuple(v.shape), v.tolist()) for k, v in b.items()}
        for b in ds.iter_torch_batches(batch_size=2, **kwargs)
    ]


def test_equal_length_lists_stack_into_a_2d_tensor():
    batches = _torch_batches(_regression_like(ember.data))
    assert batches == [
        {"x": (torch.float64, (2, 2), [[1.0, 4.0], [2.0, 5.0]]), "y": (torch.float64, (2,), [0.5, 1.5])},
        {"x": (torch.float64, (1, 2), [[3.0, 6.0]]), "y": (torch.float64, (1,), [2.5])},
    ]


def test_the_regression_examples_loop_trains_on_them():
    """The example's create_torch_iterator: batch["x"].float() into a Linear(2, 1)."""
    torch.manual_seed(0)
    model = torch.nn.Linear(2, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    before = model.weight.detach().clone()
    for batch in _regression_like(ember.data).iter_torch_batches(batch_size=2):
        loss = torch.nn.functional.l1_loss(model(batch["x"].float()), batch["y"].float().unsqueeze(1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert not torch.equal(before, model.weight)


def test_dtypes_apply_to_the_stacked_tensor():
    ds = ember.data.from_items([{"x": [1, 2]}, {"x": [3, 4]}])
    assert _torch_batches(ds, dtypes=torch.float32) == [
        {"x": (torch.float32, (2, 2), [[1.0, 2.0], [3.0, 4.0]])}
    ]
    assert _torch_batches(ds) == [{"x": (torch.int64, (2, 2), [[1, 2], [3, 4]])}]


def test_each_batch_stacks_on_its_own():
    ds = ember.data.from_items([{"x": [1.0, 2.0]}, {"x": [3.0, 4.0]}, {"x": [5.0]}])
    assert _torch_batches(ds) == [
        {"x": (torch.float64, (2, 2), [[1.0, 2.0], [3.0, 4.0]])},
        {"x": (torch.float64, (1, 1), [[5.0]])},
    ]


def test_ragged_batch_is_refused_naming_collate_fn():
    ds = ember.data.from_items([{"x": [1.0, 2.0]}, {"x": [3.0]}])
    with pytest.raises(
        DataRuntimeError, match=r"lists of different lengths \[1, 2\] in one batch.*collate_fn"
    ):
        _torch_batches(ds)
    with pytest.raises(RuntimeError):  # what an `except` written for Ray catches
        _torch_batches(ds)


@pytest.mark.parametrize(
    "rows",
    [[{"x": [[1, 2], [3, 4]]}, {"x": [[5, 6], [7, 8]]}], [{"x": ["a", "b"]}, {"x": ["c", "d"]}]],
    ids=["nested", "strings"],
)
def test_nested_and_string_lists_are_refused(rows):
    with pytest.raises((DataRuntimeError, DataTypeError), match="collate_fn"):
        _torch_batches(ember.data.from_items(rows))


def test_collate_fn_still_sees_the_lists():
    ds = ember.data.from_items([{"x": [1.0, 2.0]}, {"x": [3.0]}])
    out = [
        b for b in ds.iter_torch_batches(batch_size=2, collate_fn=lambda batch: [len(v) for v in batch["x"]])
    ]
    assert out == [[2, 1]]


def test_iter_batches_keeps_an_object_array_of_rows():
    batch = next(iter(ember.data.from_items([{"x": [1, 2]}, {"x": [3, 4]}]).iter_batches(batch_size=2)))
    assert batch["x"].dtype == object and [row.tolist() for row in batch["x"]] == [[1, 2], [3, 4]]


TO_TORCH_ROWS = [
    {"x": [1.0, 2.0], "z": 3.0, "y": 0},
    {"x": [3.0, 4.0], "z": 4.0, "y": 1},
    {"x": [5.0, 6.0], "z": 5.0, "y": 1},
]
TO_TORCH_CALLS = [
    dict(feature_columns=["x"]),
    dict(feature_columns=[["x"], ["z"]]),
    dict(feature_columns=["x"], unsqueeze_feature_tensors=False),
]


def _to_torch(rd, **kwargs):
    """DataIterator.to_torch (deprecated in Ray 2.60, still there) over the list column: shapes and values."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        batches = rd.from_items(TO_TORCH_ROWS).iterator().to_torch(label_column="y", batch_size=2, **kwargs)
        out = []
        for features, label in batches:
            parts = features if isinstance(features, list) else [features]
            out.append(([tuple(p.shape) for p in parts], [p.tolist() for p in parts], label.tolist()))
        return out


def test_to_torch_stacks_list_columns_too():
    assert _to_torch(ember.data, feature_columns=["x"]) == [
        ([(2, 1, 2)], [[[[1.0, 2.0]], [[3.0, 4.0]]]], [[0], [1]]),
        ([(1, 1, 2)], [[[[5.0, 6.0]]]], [[1]]),
    ]
    assert _to_torch(ember.data, feature_columns=["x"], unsqueeze_feature_tensors=False)[0][0] == [(2, 2)]
    with pytest.raises(RuntimeError):  # (N, 1, 2) and (N, 1) do not concatenate, in Ray either
        _to_torch(ember.data, feature_columns=["x", "z"])


def test_same_batches_as_ray(ordered_ray):
    ordered_ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # Ray's workers cannot import it
    rd = ordered_ray.data
    assert _torch_batches(_regression_like(ember.data)) == _torch_batches(_regression_like(rd))
    uneven = [{"x": [1.0, 2.0]}, {"x": [3.0, 4.0]}, {"x": [5.0]}]
    assert _torch_batches(ember.data.from_items(uneven)) == _torch_batches(rd.from_items(uneven))
    ragged = [{"x": [1.0, 2.0]}, {"x": [3.0]}]
    with pytest.raises(RuntimeError):
        _torch_batches(rd.from_items(ragged))
    with pytest.raises(RuntimeError):
        _torch_batches(ember.data.from_items(ragged))
    ray_batch = next(iter(rd.from_items(uneven).iter_batches(batch_size=2)))["x"]
    ember_batch = next(iter(ember.data.from_items(uneven).iter_batches(batch_size=2)))["x"]
    assert ray_batch.dtype == ember_batch.dtype == object
    assert [np.asarray(r).tolist() for r in ray_batch] == [np.asarray(r).tolist() for r in ember_batch]
    for kwargs in TO_TORCH_CALLS:
        assert _to_torch(ember.data, **kwargs) == _to_torch(rd, **kwargs)
