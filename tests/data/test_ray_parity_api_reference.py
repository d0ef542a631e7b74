"""ember.data against Ray Data 2.60: snippets from Ray Data's guides and API reference.

The same machinery as tests/data/test_ray_parity.py (each snippet runs with ``rd = ray.data`` and with
``rd = ember.data``; results compared exactly, as multisets where Ray's order is undefined, or by the builtin
exception type for errors): readers and writers round trips, UDF arguments, expressions, aggregations,
iteration formats, splits and edge cases.
"""

from __future__ import annotations

import pytest

from tests.data.test_ray_parity import (
    EXACT,
    MULTISET,
    RAISES,
    parity_ray,  # noqa: F401 - the fixture, used by name
)
from tests.data.test_ray_parity import test_ember_data_behaves_as_ray_data as compare_snippet

pytest.importorskip("ray")

E = "import importlib\nE = importlib.import_module(rd.__name__ + '.expressions')\n"
PARQUET = (
    "import pyarrow.parquet as pq\n"
    "pq.write_table(pa.table({'a': [1, 2, 3], 'b': ['x', 'y', 'z']}), tmp + '/t.parquet')\n"
)
SNIPPETS = [
    # creating
    ("from_items_dicts", "out = rd.from_items([{'a': 1, 'b': 'x'}, {'a': 2, 'b': 'y'}]).take_all()", EXACT),
    (
        "from_items_ndarray_values",
        "out = rd.from_items([{'x': np.zeros(2)}, {'x': np.ones(2)}]).take_all()",
        EXACT,
    ),
    ("from_items_empty_count", "out = rd.from_items([]).count()", EXACT),
    (
        "from_pandas_list",
        "out = rd.from_pandas([pd.DataFrame({'a': [1]}), pd.DataFrame({'a': [2, 3]})]).take_all()",
        EXACT,
    ),
    ("from_numpy_list", "out = rd.from_numpy([np.arange(2), np.arange(3)]).take_all()", EXACT),
    (
        "from_arrow_list",
        "out = rd.from_arrow([pa.table({'a': [1]}), pa.table({'a': [2]})]).take_all()",
        EXACT,
    ),
    ("range_tensor_batch_shape", "out = rd.range_tensor(3, shape=(2, 2)).take_batch()['data'].shape", EXACT),
    ("range_zero", "out = rd.range(0).count()", EXACT),
    ("to_pandas", "out = rd.range(3).map(lambda r: {'id': r['id'], 's': str(r['id'])}).to_pandas()", EXACT),
    ("to_pandas_limit_ok", "out = rd.range(3).to_pandas(limit=5)", EXACT),
    ("to_arrow_refs_free_to_arrow", "out = rd.range(3).to_pandas().to_dict('list')", EXACT),
    # reading and writing
    (
        "read_numpy",
        "np.save(tmp + '/a.npy', np.arange(3))\nout = rd.read_numpy(tmp + '/a.npy').take_all()",
        EXACT,
    ),
    (
        "read_binary_files",
        "open(tmp + '/b.bin', 'wb').write(b'ab\\x00c')\nout = rd.read_binary_files(tmp + "
        "'/b.bin').take_all()",
        EXACT,
    ),
    (
        "read_parquet_columns",
        PARQUET + "out = rd.read_parquet(tmp + '/t.parquet', columns=['b']).take_all()",
        EXACT,
    ),
    ("read_parquet_schema", PARQUET + "out = rd.read_parquet(tmp + '/t.parquet').schema().names", EXACT),
    (
        "read_csv_tab_delimited",
        "import pyarrow.csv as pcsv\nopen(tmp + '/t.tsv', 'w').write('a\\tb\\n1\\t2\\n')\n"
        "out = rd.read_csv(tmp + '/t.tsv', parse_options=pcsv.ParseOptions(delimiter='\\t')).take_all()",
        EXACT,
    ),
    (
        "read_json_array",
        "open(tmp + '/a.json', 'w').write('[{\"a\": 1}, {\"a\": 2}]')\nout = rd.read_json(tmp + "
        "'/a.json').take_all()",
        EXACT,
    ),
    (
        "read_text_empty_lines",
        "open(tmp + '/a.txt', 'w').write('a\\n\\nb\\n')\nout = rd.read_text(tmp + '/a.txt').take_all()",
        EXACT,
    ),
    (
        "read_folder_of_csv",
        "import os\nos.makedirs(tmp + '/d')\nopen(tmp + '/d/1.csv', 'w').write('a\\n1\\n')\nopen(tmp + "
        "'/d/2.csv', 'w').write('a\\n2\\n')\nout = sorted(r['a'] for r in rd.read_csv(tmp + "
        "'/d').take_all())",
        EXACT,
    ),
    (
        "write_read_csv",
        "rd.range(4).write_csv(tmp + '/o')\nout = sorted(r['id'] for r in rd.read_csv(tmp + "
        "'/o').take_all())",
        EXACT,
    ),
    (
        "write_read_json",
        "rd.from_items([{'a': 1, 's': 'x'}]).write_json(tmp + '/o')\nout = rd.read_json(tmp + "
        "'/o').take_all()",
        EXACT,
    ),
    (
        "write_read_numpy",
        "rd.range_tensor(3, shape=(2,)).write_numpy(tmp + '/o', column='data')\n"
        "out = sorted(r['data'].tolist() for r in rd.read_numpy(tmp + '/o').take_all())",
        EXACT,
    ),
    (
        "write_parquet_partition_cols",
        "rd.from_items([{'k': k, 'v': v} for k in 'ab' for v in range(2)])"
        ".write_parquet(tmp + '/o', partition_cols=['k'])\nimport os\nout = sorted(os.listdir(tmp + '/o'))",
        EXACT,
    ),
    (
        "read_hive_partitions",
        "rd.from_items([{'k': k, 'v': v} for k in 'ab' for v in range(2)])"
        ".write_parquet(tmp + '/o', partition_cols=['k'])\n"
        "out = sorted((r['k'], r['v']) for r in rd.read_parquet(tmp + '/o').take_all())",
        EXACT,
    ),
    # transforming
    (
        "map_fn_kwargs",
        "out = rd.range(3).map(lambda r, k: {'id': r['id'] + k}, fn_kwargs={'k': 10}).take_all()",
        EXACT,
    ),
    (
        "map_batches_fn_args",
        "out = rd.range(3).map_batches(lambda b, k: {'id': b['id'] * k}, fn_args=(3,)).take_all()",
        EXACT,
    ),
    (
        "map_batches_constructor_kwargs",
        "class F:\n    def __init__(self, k):\n        self.k = k\n"
        "    def __call__(self, b):\n        return {'id': b['id'] + self.k}\n"
        "out = rd.range(3).map_batches(F, fn_constructor_kwargs={'k': 5}, concurrency=1).take_all()",
        EXACT,
    ),
    (
        "map_batches_returns_dataframe",
        "out = rd.range(3).map_batches(lambda b: pd.DataFrame({'x': b['id'] * 2})).take_all()",
        EXACT,
    ),
    (
        "map_batches_returns_table",
        "out = rd.range(3).map_batches(lambda b: pa.table({'x': b['id']})).take_all()",
        EXACT,
    ),
    (
        "map_batches_drops_columns",
        "out = rd.from_items([{'a': 1, 'b': 2}]).map_batches(lambda b: {'a': b['a']}).take_all()",
        EXACT,
    ),
    (
        "map_batches_tensor_output",
        "out = rd.range(2).map_batches(lambda b: {'t': np.ones((len(b['id']), 2, 2))}).take_all()",
        EXACT,
    ),
    (
        "flat_map_fn_kwargs",
        "out = rd.range(2).flat_map(lambda r, n: [r] * n, fn_kwargs={'n': 2}).take_all()",
        EXACT,
    ),
    (
        "filter_fn_class",
        "class Even:\n    def __call__(self, r):\n        return r['id'] % 2 == 0\n"
        "out = rd.range(6).filter(Even, concurrency=1).take_all()",
        EXACT,
    ),
    ("filter_expr", E + "out = rd.range(6).filter(expr=E.col('id') > 3).take_all()", EXACT),
    (
        "with_column_expr",
        E + "out = rd.range(3).with_column('y', E.col('id') * 2 + E.lit(1)).take_all()",
        EXACT,
    ),
    ("with_column_compare", E + "out = rd.range(3).with_column('big', E.col('id') >= 1).take_all()", EXACT),
    (
        "add_column_pyarrow",
        "import pyarrow.compute as pc\nout = rd.range(3).add_column('z', lambda t: pc.add(t['id'], 1), "
        "batch_format='pyarrow').take_all()",
        EXACT,
    ),
    (
        "sort_two_keys",
        "out = rd.from_items([{'a': 1, 'b': 2}, {'a': 1, 'b': 1}, {'a': 0, 'b': 5}]).sort(['a', "
        "'b']).take_all()",
        EXACT,
    ),
    ("sort_strings", "out = rd.from_items([{'s': s} for s in ['b', 'a', 'c']]).sort('s').take_all()", EXACT),
    (
        "sort_then_limit",
        "out = rd.from_items([{'a': x} for x in [5, 3, 9, 1]]).sort('a').limit(2).take_all()",
        EXACT,
    ),
    ("random_shuffle_seed_sorted", "out = rd.range(20).random_shuffle(seed=42).sort('id').take_all()", EXACT),
    (
        "randomize_block_order_keeps_rows",
        "out = rd.range(10).randomize_block_order(seed=0).take_all()",
        MULTISET,
    ),
    # aggregations
    (
        "groupby_two_keys",
        "out = rd.from_items([{'a': i % 2, 'b': i % 3} for i in range(12)]).groupby(['a', 'b']).count()"
        ".take_all()",
        MULTISET,
    ),
    (
        "groupby_nan_key",
        "out = rd.from_items([{'k': float('nan')}, {'k': 1.0}, {'k': float('nan')}]).groupby('k').count()"
        ".take_all()",
        MULTISET,
    ),
    (
        "groupby_aggregate",
        "out = rd.from_items([{'k': i % 2, 'v': i} for i in range(6)]).groupby('k')"
        ".aggregate(agg.Sum('v'), agg.Max('v'), agg.Min('v')).take_all()",
        MULTISET,
    ),
    (
        "groupby_mean_many",
        "out = rd.from_items([{'k': i % 2, 'v': i, 'w': 2 * i} for i in range(6)]).groupby('k')"
        ".mean(['v', 'w']).take_all()",
        MULTISET,
    ),
    (
        "groupby_min_max",
        "ds = rd.from_items([{'k': i % 2, 'v': i} for i in range(6)])\n"
        "out = ds.groupby('k').min('v').take_all() + ds.groupby('k').max('v').take_all()",
        MULTISET,
    ),
    (
        "map_groups_pandas",
        "out = rd.from_items([{'k': i % 2, 'v': i} for i in range(6)]).groupby('k')"
        ".map_groups(lambda df: df.assign(v=df['v'] - df['v'].mean()), batch_format='pandas').take_all()",
        MULTISET,
    ),
    (
        "aggregate_absmax",
        "out = rd.from_items([{'x': v} for v in [-5, 3, 4]]).aggregate(agg.AbsMax('x'))",
        EXACT,
    ),
    ("aggregate_quantile", "out = rd.range(11).aggregate(agg.Quantile('id', q=0.5))", EXACT),
    (
        "aggregate_unique",
        "out = {k: sorted(v) for k, v in rd.from_items([{'x': v} for v in [1, 2, 2]]).aggregate("
        "agg.Unique('x')).items()}",
        EXACT,
    ),
    (
        "aggregate_count_column",
        "out = rd.from_items([{'x': 1}, {'x': None}]).aggregate(agg.Count('x'))",
        EXACT,
    ),
    ("aggregate_alias", "out = rd.range(4).aggregate(agg.Sum('id', alias_name='total'))", EXACT),
    ("max_many_columns", "out = rd.from_items([{'a': 1, 'b': 5}, {'a': 3, 'b': 2}]).max(['a', 'b'])", EXACT),
    ("mean_floats", "out = rd.from_items([{'x': 0.1}, {'x': 0.2}, {'x': 0.4}]).mean('x')", EXACT),
    # Ray merges per-block partial results (Chan's formula) over its block layout, ember over its own: the
    # last bits depend on the layout, so 12 places
    ("std_ints", "out = round(rd.from_items([{'x': v} for v in [1, 2, 4, 8]]).std('x'), 12)", EXACT),
    ("sum_of_empty", "out = rd.range(3).filter(lambda r: False).sum('id')", EXACT),
    ("unique_strings", "out = sorted(rd.from_items([{'s': s} for s in 'abcab']).unique('s'))", EXACT),
    # combining and splitting
    ("union_count", "out = rd.range(3).union(rd.range(4), rd.range(5)).count()", EXACT),
    (
        "zip_three",
        "out = rd.range(2).zip(rd.range(2).map(lambda r: {'a': r['id']}), rd.range(2).map(lambda r: {'b': "
        "0})).take_all()",
        EXACT,
    ),
    ("limit_after_map", "out = rd.range(100).map(lambda r: {'id': r['id'] * 2}).limit(3).take_all()", EXACT),
    # split(n) without equal=True cuts at block boundaries, which differ between the two: rows and parts only
    (
        "split_counts",
        "parts = rd.range(10).split(3)\nout = len(parts), sorted(r['id'] for p in parts for r in "
        "p.take_all())",
        EXACT,
    ),
    (
        "split_at_indices_edges",
        "out = [s.take_all() for s in rd.range(5).split_at_indices([0, 2, 10])]",
        EXACT,
    ),
    (
        "train_test_split_int",
        "a, b = rd.range(10).train_test_split(test_size=3)\nout = a.count(), b.count()",
        EXACT,
    ),
    (
        "train_test_split_shuffled_counts",
        "a, b = rd.range(10).train_test_split(test_size=0.2, shuffle=True, seed=0)\n"
        "out = a.count(), b.count(), sorted(r['id'] for r in a.take_all() + b.take_all())",
        EXACT,
    ),
    # iterating and inspecting
    ("take_batch_pandas", "out = rd.range(3).take_batch(batch_format='pandas')", EXACT),
    (
        "iter_batches_pandas",
        "out = list(rd.range(5).iter_batches(batch_size=2, batch_format='pandas'))",
        EXACT,
    ),
    (
        "iter_batches_pyarrow",
        "out = list(rd.range(3).iter_batches(batch_size=2, batch_format='pyarrow'))",
        EXACT,
    ),
    (
        "iter_torch_batches_dtypes",
        "import torch\nout = list(rd.range(4).iter_torch_batches(batch_size=2, dtypes=torch.float32))",
        EXACT,
    ),
    (
        "iter_torch_batches_collate",
        "import torch\nout = list(rd.range(4).iter_torch_batches(batch_size=2, "
        "collate_fn=lambda b: torch.as_tensor(b['id']) * 2))",
        EXACT,
    ),
    ("iterator_iter_batches", "out = list(rd.range(5).iterator().iter_batches(batch_size=2))", EXACT),
    ("iterator_iter_rows", "out = list(rd.range(3).iterator().iter_rows())", EXACT),
    ("materialize_count", "out = rd.range(7).map(lambda r: r).materialize().count()", EXACT),
    ("size_bytes_positive", "out = rd.range(100).materialize().size_bytes() > 0", EXACT),
    ("columns_after_add_column", "out = rd.range(2).add_column('x', lambda df: df['id']).columns()", EXACT),
    (
        "schema_after_map_batches",
        "out = rd.range(2).map_batches(lambda df: df.assign(s='a'), batch_format='pandas').schema().names",
        EXACT,
    ),
    ("take_all_limit_ok", "out = rd.range(3).take_all(limit=3)", EXACT),
    # iterators, formats, types
    ("iter_rows_after_sort", "out = list(rd.from_items([{'a': 2}, {'a': 1}]).sort('a').iter_rows())", EXACT),
    (
        "iter_batches_local_shuffle_rows",
        "out = sorted(int(i) for b in rd.range(20).iter_batches(batch_size=4, "
        "local_shuffle_buffer_size=8, local_shuffle_seed=0) for i in b['id'])",
        EXACT,
    ),
    (
        "iter_torch_batches_tensor_column",
        "out = list(rd.range_tensor(4, shape=(2,)).iter_torch_batches(batch_size=2))",
        EXACT,
    ),
    (
        "iter_torch_batches_drop_last",
        "out = len(list(rd.range(5).iter_torch_batches(batch_size=2, drop_last=True)))",
        EXACT,
    ),
    ("take_batch_tensor", "out = rd.range_tensor(3, shape=(2,)).take_batch(2)", EXACT),
    ("from_items_nested_dict", "out = rd.from_items([{'a': {'x': 1, 'y': 'z'}}]).take_all()", EXACT),
    (
        "from_items_list_column_batch",
        "out = rd.from_items([{'l': [1, 2]}, {'l': [3, 4]}]).take_batch()",
        EXACT,
    ),
    ("from_items_bytes", "out = rd.from_items([{'b': b'xy'}]).take_all()", EXACT),
    ("from_items_bool", "out = rd.from_items([{'b': True}, {'b': False}]).take_batch()", EXACT),
    (
        "from_pandas_datetime_max",
        "out = rd.from_pandas(pd.DataFrame({'t': pd.to_datetime(['2024-01-01', '2024-01-02'])})).max('t')",
        EXACT,
    ),
    ("from_numpy_int32", "out = rd.from_numpy(np.arange(3, dtype=np.int32)).take_batch()", EXACT),
    ("from_numpy_3d_rows", "out = rd.from_numpy(np.zeros((2, 2, 2))).take_all()", EXACT),
    ("min_strings", "out = rd.from_items([{'s': s} for s in ['b', 'a', 'c']]).min('s')", EXACT),
    ("mean_with_nulls", "out = rd.from_items([{'x': 1}, {'x': None}, {'x': 3}]).mean('x')", EXACT),
    ("count_after_union_limit", "out = rd.range(5).union(rd.range(5)).limit(7).count()", EXACT),
    (
        "map_batches_empty_output",
        "out = rd.range(4).map_batches(lambda b: {'id': b['id'][:0]}).count()",
        EXACT,
    ),
    (
        "map_keeps_numpy_values",
        "out = rd.from_items([{'x': np.arange(3)}]).map(lambda r: {'s': int(r['x'].sum())}).take_all()",
        EXACT,
    ),
    (
        "filter_then_map_batches",
        "out = rd.range(10).filter(lambda r: r['id'] > 6).map_batches(lambda b: {'id': b['id'] * 2})"
        ".take_all()",
        EXACT,
    ),
    (
        "select_then_rename",
        "out = rd.from_items([{'a': 1, 'b': 2}]).select_columns(['b']).rename_columns({'b': 'c'}).take_all()",
        EXACT,
    ),
    (
        "add_column_then_drop",
        "out = rd.range(2).add_column('x', lambda df: df['id'] + 1).drop_columns(['id']).take_all()",
        EXACT,
    ),
    (
        "groupby_count_sorted_by_key",
        "out = rd.from_items([{'k': k} for k in [3, 1, 2, 1]]).groupby('k').count().sort('k').take_all()",
        EXACT,
    ),
    (
        "write_parquet_min_rows_per_file",
        "rd.range(10).write_parquet(tmp + '/o', min_rows_per_file=5)\n"
        "out = sorted(r['id'] for r in rd.read_parquet(tmp + '/o').take_all())",
        EXACT,
    ),
    (
        "read_parquet_two_files",
        PARQUET + "import shutil\nshutil.copy(tmp + '/t.parquet', tmp + '/u.parquet')\n"
        "out = rd.read_parquet([tmp + '/t.parquet', tmp + '/u.parquet']).count()",
        EXACT,
    ),
    (
        "read_csv_include_paths_value",
        "import os\nopen(tmp + '/a.csv', 'w').write('a\\n1\\n')\nout = [os.path.basename(r['path']) for r in "
        "rd.read_csv(tmp + '/a.csv', include_paths=True).take_all()]",
        EXACT,
    ),
    (
        "read_text_include_paths",
        "import os\nopen(tmp + '/a.txt', 'w').write('x\\n')\nout = [(os.path.basename(r['path']), r['text']) "
        "for r in rd.read_text(tmp + '/a.txt', include_paths=True).take_all()]",
        EXACT,
    ),
    (
        "read_binary_include_paths",
        "open(tmp + '/b.bin', 'wb').write(b'z')\n"
        "out = [sorted(r) for r in rd.read_binary_files(tmp + '/b.bin', include_paths=True).take_all()]",
        EXACT,
    ),
    (
        "schema_of_read_csv",
        "open(tmp + '/a.csv', 'w').write('a,b\\n1,x\\n')\nout = str(rd.read_csv(tmp + '/a.csv').schema())",
        EXACT,
    ),
    ("schema_float_column", "out = repr(rd.from_items([{'f': 1.5}]).schema())", EXACT),
    (
        "train_test_split_fraction",
        "a, b = rd.range(10).train_test_split(test_size=0.3)\nout = a.take_all(), b.take_all()",
        EXACT,
    ),
    (
        "split_proportionately_counts",
        "out = [p.count() for p in rd.range(10).split_proportionately([0.1, 0.3])]",
        EXACT,
    ),
    (
        "streaming_split_rows",
        "import threading\nits = rd.range(10).streaming_split(2, equal=True)\nseen = [[], []]\ndef "
        "consume(i):\n    seen[i] = [int(x) for b in its[i].iter_batches(batch_size=2) for x in b['id']]\nts "
        "= [threading.Thread(target=consume, args=(i,)) for i in range(2)]\n[t.start() for t in "
        "ts]\n[t.join() for t in ts]\nout = sorted(seen[0] + seen[1]), len(seen[0]) == len(seen[1])",
        EXACT,
    ),
    (
        "error_map_batches_bad_batch_format",
        "rd.range(3).map_batches(lambda b: b, batch_format='nope').take_all()",
        RAISES,
    ),
    ("error_iter_batches_bad_format", "list(rd.range(3).iter_batches(batch_format='nope'))", RAISES),
    ("error_random_sample_fraction", "rd.range(3).random_sample(1.5)", RAISES),
    ("error_split_proportionately_sum", "rd.range(10).split_proportionately([0.6, 0.6])", RAISES),
    ("error_union_not_dataset", "rd.range(3).union([1, 2])", RAISES),
    ("error_map_raises", "def f(r):\n    raise ValueError('bad row')\nrd.range(3).map(f).take_all()", RAISES),
    ("error_drop_missing_column", "rd.range(3).drop_columns(['zz']).take_all()", RAISES),
    ("error_read_missing_path", "rd.read_parquet(tmp + '/nope.parquet').take_all()", RAISES),
    ("error_split_zero", "rd.range(3).split(0)", RAISES),
    ("error_train_test_split_too_big", "rd.range(3).train_test_split(test_size=5)", RAISES),
]


@pytest.mark.parametrize("name,code,how", SNIPPETS, ids=[s[0] for s in SNIPPETS])
def test_ember_data_behaves_as_ray_data(name, code, how, parity_ray, tmp_path):  # noqa: F811
    compare_snippet(name, code, how, parity_ray, tmp_path)


def test_join_refuses_columns_both_sides_have_without_suffixes():
    """Ray 2.60 refuses a join whose non-key columns collide (its join needs polars, absent here, so this is
    checked on ember alone); ember did give two columns named ``v``."""
    import ember.data
    from ember.errors import DataError

    left = ember.data.from_items([{"id": 1, "v": "a"}])
    right = ember.data.from_items([{"id": 1, "v": "b"}])
    with pytest.raises(
        DataError, match=r"both datasets have the column\(s\) \['v'\]; pass left_suffix="
    ) as caught:
        left.join(right, "inner", num_partitions=1).take_all()
    assert isinstance(caught.value, ValueError)
    joined = left.join(right, "inner", num_partitions=1, right_suffix="_r").take_all()
    assert joined == [{"id": 1, "v": "a", "v_r": "b"}]
