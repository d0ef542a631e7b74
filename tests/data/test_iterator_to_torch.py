"""DataIterator.to_torch: Ray 2.60's (features, label) layout, dtypes and unsqueezing, compared with Ray's
tensors on the same parquet file."""

from __future__ import annotations

import warnings

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

import ember.data
from ember.errors import ConfigError


@pytest.fixture(scope="module")
def table_file(tmp_path_factory):
    rng = np.random.default_rng(0)
    path = tmp_path_factory.mktemp("to_torch") / "rows.parquet"
    pq.write_table(
        pa.table(
            {
                "a": rng.integers(0, 9, 10),
                "b": rng.random(10),
                "c": rng.random(10).astype(np.float32),
                "y": rng.integers(0, 2, 10),
            }
        ),
        path,
    )
    return str(path)


def _structure(value):
    """Tensors as (dtype, shape, values) inside the same list/dict/tuple structure, for ``==``."""
    if isinstance(value, torch.Tensor):
        return (str(value.dtype), tuple(value.shape), value.tolist())
    if isinstance(value, dict):
        return {k: _structure(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_structure(v) for v in value)
    return value


OPTIONS = [
    {"label_column": "y"},
    {"label_column": "y", "unsqueeze_label_tensor": False, "label_column_dtype": torch.float32},
    {"label_column": "y", "feature_columns": ["a", "b"], "feature_column_dtypes": torch.float64},
    {"feature_columns": [["a"], ["b", "c"]], "feature_column_dtypes": [torch.int32, torch.float16]},
    {
        "label_column": "y",
        "feature_columns": {"x": ["a", "c"], "z": ["b"]},
        "feature_column_dtypes": {"x": torch.float32, "z": torch.float64},
    },
    {"label_column": "y", "feature_columns": {"x": ["c"], "z": ["b"]}, "unsqueeze_feature_tensors": False},
    {"label_column": "y", "feature_columns": []},
    {},
]


@pytest.mark.parametrize("options", OPTIONS)
def test_batches_match_rays(local_ray, table_file, options):
    ray = local_ray
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Ray's to_torch is deprecated (still public in 2.60)
        theirs = list(ray.data.read_parquet(table_file).iterator().to_torch(batch_size=4, **options))
    ours = list(ember.data.read_parquet(table_file).iterator().to_torch(batch_size=4, **options))
    assert _structure(ours) == _structure(theirs) and len(ours) == 3


def test_resumes_exactly(table_file):
    loader = ember.data.read_parquet(table_file).iterator().to_torch(label_column="y", batch_size=3)
    whole = list(loader)
    stream = iter(loader)
    next(stream)
    state = loader.state_dict()
    again = ember.data.read_parquet(table_file).iterator().to_torch(label_column="y", batch_size=3)
    again.load_state_dict(state)
    rest = list(again)
    assert len(rest) == len(whole) - 1
    for (f1, l1), (f2, l2) in zip(rest, whole[1:], strict=True):
        assert torch.equal(f1, f2) and torch.equal(l1, l2)


def test_squeezed_columns_that_cannot_be_concatenated_are_refused_in_one_line(table_file):
    # Ray fails here too (torch.cat of (N,) tensors along dim 1 raises IndexError).
    loader = (
        ember.data.read_parquet(table_file)
        .iterator()
        .to_torch(feature_columns=["a", "b"], unsqueeze_feature_tensors=False)
    )
    with pytest.raises(ember.errors.DataError, match="unsqueeze_feature_tensors=False"):
        next(iter(loader))


def test_mismatched_dtypes_are_refused_in_one_line(table_file):
    it = ember.data.read_parquet(table_file).iterator()
    with pytest.raises(ConfigError, match="same keys"):
        it.to_torch(feature_columns={"x": ["a"]}, feature_column_dtypes={"w": torch.float32})
    with pytest.raises(ConfigError, match="same length"):
        it.to_torch(feature_columns=[["a"], ["b"]], feature_column_dtypes=[torch.float32])
    with pytest.raises(ConfigError, match="single torch.dtype"):
        it.to_torch(feature_columns=["a"], feature_column_dtypes=[torch.float32])
