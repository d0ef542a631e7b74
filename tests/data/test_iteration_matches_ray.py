"""Ray Data 2.60's documented iteration API (``DataIterator``, ``iter_torch_batches``' collate_fn classes,
``iter_batches`` formats, ``take_batch``, the splits), run on ray.data and on ember.data on the same input,
and compared value for value. One local Ray for the module (``local_ray``), preserving row order."""

from __future__ import annotations

import threading
import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
import torch

import ember.data
import ember.data.collate_fn as ember_collate

ROWS = [{"a": i, "b": float(i) / 2} for i in range(10)]


@pytest.fixture(scope="module")
def ray(ordered_ray):
    """Ray Data with input order kept and no progress output (tests/data/conftest.py)."""
    return ordered_ray


def both(ray, make):
    """``make(data_module, collate_module)`` run on Ray's and on ember's (Ray's result first)."""
    import ray.data.collate_fn as ray_collate

    return make(ray.data, ray_collate), make(ember.data, ember_collate)


def plain(value):
    """Tensors, arrays, tables and frames as comparable Python values (with their dtypes)."""
    if isinstance(value, torch.Tensor):
        return ("tensor", str(value.dtype), tuple(value.shape), value.tolist())
    if isinstance(value, np.ndarray):
        return ("ndarray", str(value.dtype), value.tolist())
    if isinstance(value, pa.Table):
        return ("table", str(value.schema), value.to_pylist())
    if isinstance(value, pd.DataFrame):  # Ray's Arrow-backed dtypes as numpy's: docs/data.md, "pandas dtypes"
        dtypes = [str(t).replace("double[pyarrow]", "float64").replace("[pyarrow]", "") for t in value.dtypes]
        return ("frame", dtypes, value.to_dict("list"))
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(plain(v) for v in value)
    return value


def raised(fn):
    """The builtin exception class ``fn()`` raises (None if it returns)."""
    try:
        fn()
    except Exception as error:  # noqa: BLE001 - the class is what is compared
        return next(c for c in type(error).__mro__ if c.__module__ == "builtins")
    return None


# ---------------------------------------------------------------------- collate_fn classes


def _kind_collators(collate):
    class Arrow(collate.ArrowBatchCollateFn):
        def __call__(self, batch):
            return type(batch).__name__

    class Numpy(collate.NumpyBatchCollateFn):
        def __call__(self, batch):
            return type(batch).__name__

    class Pandas(collate.PandasBatchCollateFn):
        def __call__(self, batch):
            return type(batch).__name__

    return {
        "arrow": Arrow(),
        "numpy": Numpy(),
        "pandas": Pandas(),
        "function": lambda batch: type(batch).__name__,
    }


@pytest.mark.parametrize("kind", ["arrow", "numpy", "pandas", "function"])
def test_each_collate_fn_class_is_handed_its_batch_type(ray, kind):
    def run(data, collate):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            return list(
                data.from_items(ROWS).iter_torch_batches(
                    batch_size=4, collate_fn=_kind_collators(collate)[kind]
                )
            )

    theirs, ours = both(ray, run)
    assert (
        ours
        == theirs
        == [{"arrow": "Table", "numpy": "dict", "pandas": "DataFrame", "function": "dict"}[kind]] * 3
    )


def _two_chunks(batch):
    """The batch's "a" column as two tensors (rows split after the first)."""
    a = torch.as_tensor(np.asarray(batch["a"]).copy())
    return [a[:1], a[1:]]


#: collate_fn outputs: what Ray moves to the device (joining lists of tensors) and what it hands back as is.
OUTPUTS = {
    "tensor": lambda b: torch.as_tensor(b["a"].copy()),
    "tuple of tensors": lambda b: (torch.as_tensor(b["a"].copy()), torch.as_tensor(b["b"].copy())),
    "list of tensor lists": lambda b: [_two_chunks(b), [torch.ones(2)]],
    "dict of tensors": lambda b: {"x": torch.as_tensor(b["a"].copy())},
    "dict of tensor lists": lambda b: {"x": _two_chunks(b), "y": [torch.zeros(1)]},
    "dict of dicts (not a tensor batch)": lambda b: {"x": {"y": torch.as_tensor(b["a"].copy())}},
    "numpy (not a tensor batch)": lambda b: b["a"],
    "mixed dict (not a tensor batch)": lambda b: {"x": torch.ones(1), "y": [torch.ones(1), torch.ones(1)]},
}


@pytest.mark.parametrize("output", list(OUTPUTS))
@pytest.mark.parametrize("device", ["auto", "cpu"])
def test_a_collate_fns_output_is_moved_as_rays(ray, output, device):
    def run(data, collate):
        class Collate(collate.NumpyBatchCollateFn):
            def __call__(self, batch):
                return OUTPUTS[output](batch)

        return plain(
            list(data.from_items(ROWS).iter_torch_batches(batch_size=4, device=device, collate_fn=Collate()))
        )

    theirs, ours = both(ray, run)
    assert ours == theirs


def test_a_plain_function_collate_fn_is_deprecated_on_both(ray):
    def run(data, collate):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            batches = list(
                data.from_items(ROWS).iter_torch_batches(batch_size=5, collate_fn=lambda b: b["a"] * 2)
            )
        deprecations = [
            w for w in caught if issubclass(w.category, DeprecationWarning) and "collate_fn" in str(w.message)
        ]
        return plain(batches), len(deprecations)

    theirs, ours = both(ray, run)
    assert ours == theirs and ours[1] == 1


@pytest.mark.parametrize("case", ["collate_fn with dtypes", "collate_fn not callable"])
def test_refused_collate_fns_raise_valueerror_on_both(ray, case):
    def run(data, collate):
        ds = data.from_items(ROWS)
        if case == "collate_fn with dtypes":
            return raised(
                lambda: list(ds.iter_torch_batches(collate_fn=collate.DefaultCollateFn(), dtypes=torch.int8))
            )
        return raised(lambda: list(ds.iter_torch_batches(collate_fn=3)))

    theirs, ours = both(ray, run)
    assert ours is theirs is ValueError


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"combine_chunks": True},
        {"dtypes": torch.float16},
        {"dtypes": {"a": torch.int32, "b": torch.float32}, "combine_chunks": True},
    ],
)
def test_default_collate_fn_called_directly(ray, options):
    table = pa.concat_tables([pa.table({"a": [1, 2], "b": [0.5, 1.5]}), pa.table({"a": [3], "b": [2.5]})])
    theirs, ours = both(ray, lambda data, collate: plain(collate.DefaultCollateFn(**options)(table)))
    assert ours == theirs


def test_default_collate_fn_keeps_rays_attributes(ray):
    def run(data, collate):
        fn = collate.DefaultCollateFn(dtypes=torch.float32, combine_chunks=True, num_workers=2)
        return (
            fn.dtypes,
            fn.combine_chunks,
            fn.num_workers,
            isinstance(fn, collate.ArrowBatchCollateFn),
            issubclass(collate.NumpyBatchCollateFn, collate.CollateFn),
        )

    theirs, ours = both(ray, run)
    assert ours == theirs


@pytest.mark.parametrize("dtypes", [None, torch.float64, {"a": torch.float32, "b": torch.int64}])
def test_default_collate_fn_through_iter_torch_batches(ray, dtypes):
    def run(data, collate):
        return plain(
            list(
                data.from_items(ROWS).iter_torch_batches(
                    batch_size=4, collate_fn=collate.DefaultCollateFn(dtypes=dtypes)
                )
            )
        )

    theirs, ours = both(ray, run)
    assert ours == theirs


def test_is_tensor_batch_type_agrees(ray):
    values = [
        torch.ones(1),
        [torch.ones(1)],
        ([torch.ones(1)], [torch.ones(2)]),
        {"a": torch.ones(1)},
        {"a": [torch.ones(1)]},
        {"a": {"b": torch.ones(1)}},
        np.ones(1),
        [torch.ones(1), 1],
        "x",
    ]
    theirs, ours = both(ray, lambda data, collate: [collate.is_tensor_batch_type(v) for v in values])
    assert ours == theirs


# ---------------------------------------------------------------------- iter_torch_batches without collate_fn


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"dtypes": torch.float16},
        {"dtypes": {"a": torch.float32, "b": torch.int32}},
        {"device": "cpu"},
        {"drop_last": True},
        {"batch_size": 3, "prefetch_batches": 0},
        {"batch_size": 10},
    ],
)
def test_iter_torch_batches_matches_rays(ray, options):
    options = {"batch_size": 4, **options}
    theirs, ours = both(
        ray, lambda data, _: plain(list(data.from_items(ROWS).iterator().iter_torch_batches(**options)))
    )
    assert ours == theirs


def test_tensor_columns_become_batched_tensors(ray):
    rows = [{"image": np.full((2, 3), i, dtype=np.uint8)} for i in range(4)]
    theirs, ours = both(
        ray, lambda data, _: plain(list(data.from_items(rows).iter_torch_batches(batch_size=4)))
    )
    assert ours == theirs


# ---------------------------------------------------------------------- iter_batches / take_batch formats


@pytest.mark.parametrize("batch_format", ["default", "numpy", "pandas", "pyarrow", None])
@pytest.mark.parametrize("drop_last", [False, True])
def test_iter_batches_formats_match_rays(ray, batch_format, drop_last):
    def run(data, _):
        batches = (
            data.from_items(ROWS)
            .iterator()
            .iter_batches(batch_size=4, batch_format=batch_format, drop_last=drop_last)
        )
        return plain(list(batches))

    theirs, ours = both(ray, run)
    assert ours == theirs


@pytest.mark.parametrize("batch_format", ["default", "numpy", "pandas", "pyarrow"])
def test_take_batch_formats_match_rays(ray, batch_format):
    theirs, ours = both(
        ray, lambda data, _: plain(data.from_items(ROWS).take_batch(3, batch_format=batch_format))
    )
    assert ours == theirs


@pytest.mark.parametrize("call", ["iter_batches", "take_batch"])
def test_an_unknown_batch_format_is_a_valueerror_on_both(ray, call):
    def run(data, _):
        ds = data.from_items(ROWS)
        if call == "take_batch":
            return raised(lambda: ds.take_batch(2, batch_format="torch"))
        return raised(lambda: list(ds.iter_batches(batch_format="torch")))

    theirs, ours = both(ray, run)
    assert ours is theirs is ValueError


def test_a_local_shuffle_without_batch_size_is_a_valueerror_on_both(ray):
    theirs, ours = both(
        ray,
        lambda data, _: raised(
            lambda: list(data.range(8).iterator().iter_batches(batch_size=None, local_shuffle_buffer_size=4))
        ),
    )
    assert ours is theirs is ValueError


def test_a_local_shuffle_keeps_every_row_and_repeats_with_its_seed(ray):
    def run(data, _):
        def epoch(seed):
            batches = (
                data.range(40)
                .iterator()
                .iter_batches(batch_size=8, local_shuffle_buffer_size=16, local_shuffle_seed=seed)
            )
            return [b["id"].tolist() for b in batches]

        first = epoch(5)
        return (
            sorted(sum(first, [])),
            [len(b) for b in first],
            first == epoch(5),
            first != [list(range(i, i + 8)) for i in range(0, 40, 8)],
        )

    theirs, ours = both(ray, run)
    assert ours == theirs == (list(range(40)), [8] * 5, True, True)


# ---------------------------------------------------------------------- DataIterator


def test_iter_rows_and_iter_batches_are_reiterable(ray):
    def run(data, _):
        it = data.from_items(ROWS).iterator()
        rows, batches = it.iter_rows(), it.iter_batches(batch_size=5)
        return list(rows) == list(rows), plain(list(batches)) == plain(list(batches)), list(rows)

    theirs, ours = both(ray, run)
    assert ours == theirs


def test_materialize_schema_and_stats(ray):
    def run(data, _):
        it = data.from_items(ROWS).iterator()
        materialized = it.materialize()
        _ = list(it.iter_batches())
        return (
            materialized.take_all(),
            it.schema().names,
            [str(t) for t in it.schema().types],
            isinstance(it.stats(), str),
            type(materialized).__name__,
        )

    theirs, ours = both(ray, run)
    assert ours == theirs


def test_iterator_to_torch_matches_rays(ray):
    def run(data, _):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # deprecated in Ray 2.60, still there
            return plain(list(data.from_items(ROWS).iterator().to_torch(label_column="a", batch_size=4)))

    theirs, ours = both(ray, run)
    assert ours == theirs


def test_streaming_split_gives_every_consumer_its_share(ray):
    """Ray's shards must be read at the same time (one execution feeds them), so each is read on a thread."""

    def run(data, _):
        results: dict = {}
        for equal in (True, False):
            shards = data.range(11).streaming_split(3, equal=equal)
            rows: list = [None] * 3

            def read(i, shards=shards, rows=rows):
                rows[i] = [r["id"] for r in shards[i].iter_rows()]

            threads = [threading.Thread(target=read, args=(i,)) for i in range(3)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=120)
            counts = [len(r) for r in rows]
            results[equal] = (
                sorted(sum(rows, [])) if not equal else len(set(sum(rows, []))),
                len(set(counts)) == 1 if equal else sum(counts),
            )
        return results

    theirs, ours = both(ray, run)
    assert ours == theirs == {True: (9, True), False: (list(range(11)), 11)}


@pytest.mark.parametrize("split", ["split", "split equal", "split_at_indices", "split_proportionately"])
def test_splits_match_rays(ray, split):
    def run(data, _):
        ds = data.from_items(ROWS)
        parts = {
            "split": lambda: ds.split(3),
            "split equal": lambda: ds.split(3, equal=True),
            "split_at_indices": lambda: ds.split_at_indices([2, 7, 30]),
            "split_proportionately": lambda: ds.split_proportionately([0.25, 0.5]),
        }[split]()
        if (
            split == "split"
        ):  # Ray cuts at block boundaries, ember by rows (docs/data.md): the same rows, n parts
            return len(parts), sum((p.take_all() for p in parts), [])
        return [p.take_all() for p in parts]

    theirs, ours = both(ray, run)
    assert ours == theirs


def test_take_batch_of_an_empty_dataset_is_a_valueerror_on_both(ray):
    def run(data, _):
        return (
            raised(lambda: data.range(4).filter(lambda row: False).take_batch(2)),
            raised(lambda: data.range(4).take_batch(0)),
        )

    theirs, ours = both(ray, run)
    assert ours == theirs == (ValueError, ValueError)


def test_a_local_shuffle_buffer_of_zero_still_shuffles(ray):
    """Ray's rule is "non-None": a zero-row buffer shuffles each batch's worth of rows as it streams."""

    def run(data, _):
        batches = (
            data.range(20)
            .iterator()
            .iter_batches(batch_size=5, local_shuffle_buffer_size=0, local_shuffle_seed=0)
        )
        rows = sum((b["id"].tolist() for b in batches), [])
        return sorted(rows), rows != list(range(20))

    theirs, ours = both(ray, run)
    assert ours == theirs == (list(range(20)), True)


def test_iterator_to_torch_is_deprecated_on_both(ray):
    def run(data, _):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            data.range(4).iterator().to_torch(batch_size=2)
        return [
            issubclass(w.category, DeprecationWarning) and "iter_torch_batches" in str(w.message)
            for w in caught
        ]

    theirs, ours = both(ray, run)
    assert ours == theirs == [True]
