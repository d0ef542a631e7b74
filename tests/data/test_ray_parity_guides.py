"""ember.data against Ray Data 2.60: the guides the other snippet files leave out.

test_ray_parity.py and ..._api_reference.py cover creating datasets, the basic readers and writers,
map / map_batches / flat_map / filter / add_column, expressions, sort / limit / union / zip, the builtin
aggregations, splits, iteration formats and errors. This file takes, scenario by scenario, the documented
behaviours of the guides they do not cover: "Loading data" (every reader's options: lists and folders of
paths, ``partitioning``, ``file_extensions``, ``shuffle="files"``, ``ignore_missing_paths``,
``override_num_blocks``, ``arrow_open_stream_args``), "Inspecting data", "Transforming data" (batch formats,
UDF arguments, ``zero_copy_batch``, actor pools and ``concurrency``, stateful class UDFs, generator UDFs),
"Shuffling data", "Saving data" (file names, ``filename_provider``, rows per file, ``mode``), "Working with
tensors / text / images / PyTorch", "Aggregating data" and "Execution configurations".

The machinery is test_ray_parity.py's: each snippet runs with ``rd = ray.data`` and with ``rd = ember.data``
and the results are compared exactly (Ray with preserve_order=True, ember's only order), as multisets where
Ray's order is undefined, or by the builtin exception type for errors.
"""

from __future__ import annotations

import pytest

from tests.data.test_ray_parity import (
    EXACT,
    MULTISET,
    RAISES,
    STDOUT,
    parity_ray,  # noqa: F401 - the fixture, used by name
)
from tests.data.test_ray_parity import test_ember_data_behaves_as_ray_data as compare_snippet

pytest.importorskip("ray")

# Ray keeps Partitioning / FilenameProvider in ray.data.datasource; ember.data.datasource has them too
D = "import importlib\nD = importlib.import_module(rd.__name__ + '.datasource')\n"
CSVS = (
    "import os\nos.makedirs(tmp + '/d')\nopen(tmp + '/d/1.csv', 'w').write('a\\n1\\n2\\n')\n"
    "open(tmp + '/d/2.csv', 'w').write('a\\n3\\n')\nopen(tmp + '/d/notes.txt', 'w').write('not a csv\\n')\n"
)
HIVE = (
    "import os\nfor year in (2023, 2024):\n    os.makedirs(f'{tmp}/h/year={year}')\n"
    "    open(f'{tmp}/h/year={year}/p.csv', 'w').write(f'v\\n{year % 10}\\n')\n"
)
PNGS = (
    "import numpy as np\nfrom PIL import Image\nimport os\nos.makedirs(tmp + '/img')\nfor i in range(3):\n   "
    " Image.fromarray(np.full((4, 6, 3), 40 * i, dtype=np.uint8)).save(f'{tmp}/img/{i}.png')\n"
)
# the data files of a folder: ember's write manifest, _ember_write.json (docs/data.md "Writing"), is left out
# as Ray's readers leave out every name starting with '_' or '.'
WRITE = "import os\nfiles = lambda d: sorted(f for f in os.listdir(d) if not f.startswith(('_', '.')))\n"

LOADING = [
    (
        "read_csv_list_of_paths",
        "open(tmp + '/1.csv', 'w').write('a\\n1\\n')\nopen(tmp + '/2.csv', 'w').write('a\\n2\\n')\n"
        "out = rd.read_csv([tmp + '/1.csv', tmp + '/2.csv']).take_all()",
        EXACT,
    ),
    (
        "read_csv_folder_file_extensions",
        CSVS + "out = sorted(r['a'] for r in rd.read_csv(tmp + '/d', file_extensions=['csv']).take_all())",
        EXACT,
    ),
    (
        "read_text_file_extensions",
        CSVS + "out = rd.read_text(tmp + '/d', file_extensions=['txt']).take_all()",
        EXACT,
    ),
    (
        "read_csv_hive_partitions_strings",
        HIVE + "out = sorted((r['year'], r['v']) for r in rd.read_csv(tmp + '/h').take_all())",
        EXACT,
    ),
    (
        "read_csv_partitioning_none",
        HIVE + "out = sorted(rd.read_csv(tmp + '/h', partitioning=None).columns())",
        EXACT,
    ),
    (
        "read_csv_partitioning_field_types",
        HIVE + D + "p = D.Partitioning('hive', field_types={'year': int})\n"
        "out = sorted((r['year'], r['v']) for r in rd.read_csv(tmp + '/h', partitioning=p).take_all())",
        EXACT,
    ),
    (
        "read_csv_partition_filter",
        HIVE + D + "f = D.PathPartitionFilter.of(lambda d: d['year'] == '2024')\n"
        "out = rd.read_csv(tmp + '/h', partition_filter=f).take_all()",
        EXACT,
    ),
    (
        "read_text_hive_not_parsed_by_default",
        HIVE + "out = sorted(rd.read_text(tmp + '/h').columns())",
        EXACT,
    ),
    (
        "read_csv_ignore_missing_paths",
        "open(tmp + '/1.csv', 'w').write('a\\n1\\n')\n"
        "out = rd.read_csv([tmp + '/1.csv', tmp + '/nope.csv'], ignore_missing_paths=True).take_all()",
        EXACT,
    ),
    (
        "read_csv_shuffle_files_keeps_rows",
        CSVS + "out = sorted(r['a'] for r in rd.read_csv(tmp + '/d', "
        "file_extensions=['csv'], shuffle='files').take_all())",
        EXACT,
    ),
    (
        "read_csv_file_shuffle_config_rows",
        CSVS + "out = sorted(r['a'] for r in rd.read_csv(tmp + '/d', "
        "file_extensions=['csv'], shuffle=rd.FileShuffleConfig(seed=3)).take_all())",
        EXACT,
    ),
    (
        "read_csv_gzip_name",
        "import gzip\ngzip.open(tmp + '/a.csv.gz', 'wt').write('a\\n1\\n2\\n')\n"
        "out = rd.read_csv(tmp + '/a.csv.gz').take_all()",
        EXACT,
    ),
    (
        "read_csv_arrow_open_stream_args",
        "import gzip\ngzip.open(tmp + '/a.csv', 'wt').write('a\\n5\\n')\n"
        "out = rd.read_csv(tmp + '/a.csv', arrow_open_stream_args={'compression': 'gzip'}).take_all()",
        EXACT,
    ),
    (
        "read_json_lines_true",
        "open(tmp + '/a.jsonl', 'w').write('{\"a\": 1}\\n{\"a\": 2}\\n')\n"
        "out = rd.read_json(tmp + '/a.jsonl', lines=True).take_all()",
        EXACT,
    ),
    (
        "read_json_folder",
        "import os\nos.makedirs(tmp + '/j')\nopen(tmp + '/j/1.json', 'w').write('{\"a\": 1}\\n')\nopen(tmp + "
        "'/j/2.json', 'w').write('{\"a\": 2}\\n')\nout = sorted(r['a'] for r in rd.read_json(tmp + "
        "'/j').take_all())",
        EXACT,
    ),
    (
        "read_text_keep_empty_lines",
        "open(tmp + '/a.txt', 'w').write('a\\n\\nb\\n')\n"
        "out = rd.read_text(tmp + '/a.txt', drop_empty_lines=False).take_all()",
        EXACT,
    ),
    (
        "read_text_encoding",
        "open(tmp + '/a.txt', 'wb').write('caf\\u00e9\\n'.encode('latin-1'))\n"
        "out = rd.read_text(tmp + '/a.txt', encoding='latin-1').take_all()",
        EXACT,
    ),
    (
        "read_numpy_two_files",
        "np.save(tmp + '/a.npy', np.arange(2))\nnp.save(tmp + '/b.npy', np.arange(3))\n"
        "out = rd.read_numpy([tmp + '/a.npy', tmp + '/b.npy']).take_all()",
        EXACT,
    ),
    (
        "read_numpy_2d_schema",
        "np.save(tmp + '/a.npy', np.zeros((3, 2), dtype=np.float32))\n"
        "out = repr(rd.read_numpy(tmp + '/a.npy').schema())",
        EXACT,
    ),
    (
        "read_binary_files_folder",
        "import os\nos.makedirs(tmp + '/b')\nopen(tmp + '/b/x.bin', 'wb').write(b'\\x01')\nopen(tmp + "
        "'/b/y.bin', 'wb').write(b'\\x02\\x03')\nout = sorted(r['bytes'] for r in rd.read_binary_files(tmp + "
        "'/b').take_all())",
        EXACT,
    ),
    (
        "read_parquet_folder_columns",
        "rd.from_items([{'a': i, 'b': str(i)} for i in range(4)]).write_parquet(tmp + '/o')\n"
        "out = sorted(r['a'] for r in rd.read_parquet(tmp + '/o', columns=['a']).take_all())",
        EXACT,
    ),
    (
        "read_parquet_filter_method",
        "rd.range(6).write_parquet(tmp + '/o')\n"
        "out = sorted(r['id'] for r in rd.read_parquet(tmp + '/o').filter(lambda r: r['id'] > 3).take_all())",
        EXACT,
    ),
    (
        "read_parquet_include_paths",
        "import os\nrd.range(2).write_parquet(tmp + '/o')\nout = sorted((r['id'], os.path.dirname(r['path']) "
        "== tmp + '/o') for r in rd.read_parquet(tmp + '/o', include_paths=True).take_all())",
        EXACT,
    ),
    (
        "range_override_num_blocks",
        "out = rd.range(10, override_num_blocks=4).materialize().num_blocks()",
        EXACT,
    ),
    (
        "from_items_override_num_blocks",
        "out = rd.from_items(list(range(6)), override_num_blocks=3).materialize().num_blocks()",
        EXACT,
    ),
    (
        "from_pandas_num_blocks",
        "out = rd.from_pandas([pd.DataFrame({'a': [1]}), pd.DataFrame({'a': [2]})]).num_blocks()",
        EXACT,
    ),
    ("from_numpy_columns", "out = rd.from_numpy(np.ones((2, 2))).columns()", EXACT),
    (
        "from_arrow_schema",
        "out = str(rd.from_arrow(pa.table({'a': pa.array([1], pa.int32()), 's': ['x']})).schema())",
        EXACT,
    ),
    (
        "from_pandas_index_dropped",
        "out = rd.from_pandas(pd.DataFrame({'a': [1, 2]}, index=[5, 6])).take_all()",
        EXACT,
    ),
    (
        "from_torch_tensor_dataset",
        "import torch\nfrom torch.utils.data import TensorDataset\n"
        "ds = rd.from_torch(TensorDataset(torch.arange(3)))\nout = [r['item'] for r in ds.take_all()]",
        EXACT,
    ),
    ("error_read_csv_missing_not_ignored", "rd.read_csv([tmp + '/nope.csv']).take_all()", RAISES),
]

INSPECTING = [
    (
        "schema_names_types_pairs",
        "s = rd.from_items([{'a': 1, 'b': 'x', 'c': [1.0]}]).schema()\n"
        "out = list(zip(s.names, [str(t) for t in s.types]))",
        EXACT,
    ),
    ("schema_of_tensor_column_repr", "out = repr(rd.range_tensor(2, shape=(3, 2)).schema())", EXACT),
    (
        "schema_of_variable_tensor_repr",
        "out = repr(rd.from_items([{'t': np.zeros(2)}, {'t': np.zeros(3)}]).schema())",
        EXACT,
    ),
    ("count_of_read_csv", CSVS + "out = rd.read_csv(tmp + '/d', file_extensions=['csv']).count()", EXACT),
    (
        "columns_of_read_parquet",
        "rd.from_items([{'x': 1, 'y': 2}]).write_parquet(tmp + '/o')\n"
        "out = rd.read_parquet(tmp + '/o').columns()",
        EXACT,
    ),
    ("show_two_columns", "rd.from_items([{'a': i, 's': 'x' * i} for i in range(3)]).show()", STDOUT),
    ("show_floats_and_lists", "rd.from_items([{'f': 0.5, 'l': [1, 2]}]).show()", STDOUT),
    ("take_default_twenty", "out = len(rd.range(50).take())", EXACT),
    ("take_batch_default_rows", "out = len(rd.range(50).take_batch()['id'])", EXACT),
    (
        "take_batch_numpy_two_columns",
        "out = rd.from_items([{'a': 1, 's': 'x'}, {'a': 2, 's': 'y'}]).take_batch(batch_size=2)",
        EXACT,
    ),
    (
        "stats_is_a_string",
        "ds = rd.range(10).map_batches(lambda b: b).materialize()\nout = isinstance(ds.stats(), str)",
        EXACT,
    ),
    ("size_bytes_ints", "out = rd.from_numpy(np.arange(1000, dtype=np.int64)).size_bytes() >= 8000", EXACT),
    (
        "num_blocks_of_materialized_range",
        "out = rd.range(10, override_num_blocks=2).materialize().num_blocks()",
        EXACT,
    ),
    (
        "input_files_of_read",
        CSVS + "import os\nout = sorted(os.path.basename(f) for f in rd.read_csv(tmp + '/d', "
        "file_extensions=['csv']).input_files())",
        EXACT,
    ),
    (
        "schema_after_select",
        "out = rd.from_items([{'a': 1, 'b': 'x'}]).select_columns(['b']).schema().names",
        EXACT,
    ),
    ("take_all_of_empty", "out = rd.range(0).take_all()", EXACT),
    ("schema_of_empty_range_is_none", "out = rd.range(0).schema()", EXACT),
    ("count_of_empty_from_items", "out = rd.from_items([]).count()", EXACT),
    (
        "select_columns_keyword",
        "out = rd.from_items([{'a': 1, 'b': 2}]).select_columns(cols=['a']).take_all()",
        EXACT,
    ),
    (
        "iter_batches_prefetch_pandas",
        "out = list(rd.range(5).iter_batches(batch_size=2, prefetch_batches=2, batch_format='pandas'))",
        EXACT,
    ),
    ("schema_of_empty_range", "out = rd.range(0).columns()", EXACT),
]

TRANSFORMING = [
    (
        "map_batches_pandas_returns_dict",
        "out = rd.range(4).map_batches(lambda df: {'x': df['id'].to_numpy() * 2}, "
        "batch_format='pandas').take_all()",
        EXACT,
    ),
    (
        "map_batches_pyarrow_batch_type",
        "out = rd.range(3).map_batches(lambda t: {'t': [type(t).__name__] * t.num_rows}, "
        "batch_format='pyarrow').take_all()",
        EXACT,
    ),
    (
        "map_batches_numpy_batch_size_sizes",
        "out = rd.range(7).map_batches(lambda b: {'n': [len(b['id'])] * len(b['id'])}, "
        "batch_size=3).take_all()",
        EXACT,
    ),
    (
        "map_batches_zero_copy_batch",
        "out = rd.range(4).map_batches(lambda b: {'id': b['id'] + 1}, zero_copy_batch=True).take_all()",
        EXACT,
    ),
    (
        "map_batches_generator",
        "def split(b):\n    for x in b['id']:\n        yield {'id': np.array([x, x])}\n"
        "out = rd.range(3).map_batches(split).take_all()",
        EXACT,
    ),
    (
        "map_batches_fn_kwargs_and_args",
        "out = rd.range(3).map_batches(lambda b, a, k: {'id': b['id'] * a + k}, "
        "fn_args=(2,), fn_kwargs={'k': 1}).take_all()",
        EXACT,
    ),
    (
        "map_batches_constructor_args_and_kwargs",
        "class F:\n    def __init__(self, a, k=0):\n        self.a, self.k = a, k\n    def __call__(self, "
        "b):\n        return {'id': b['id'] * self.a + self.k}\nout = rd.range(3).map_batches(F, "
        "fn_constructor_args=(3,), fn_constructor_kwargs={'k': 1}, concurrency=1).take_all()",
        EXACT,
    ),
    (
        "map_batches_actor_pool_strategy",
        "class F:\n    def __call__(self, b):\n        return {'id': b['id'] * 2}\n"
        "out = rd.range(6).map_batches(F, compute=rd.ActorPoolStrategy(min_size=1, max_size=2)).take_all()",
        EXACT,
    ),
    (
        "map_batches_actor_pool_size",
        "class F:\n    def __call__(self, b):\n        return {'id': b['id'] - 1}\n"
        "out = rd.range(4).map_batches(F, compute=rd.ActorPoolStrategy(size=1)).take_all()",
        EXACT,
    ),
    (
        "map_batches_concurrency_tuple",
        "class F:\n    def __call__(self, b):\n        return {'id': b['id'] + 10}\n"
        "out = rd.range(4).map_batches(F, concurrency=(1, 2)).take_all()",
        EXACT,
    ),
    (
        "map_batches_function_concurrency",
        "out = rd.range(4).map_batches(lambda b: b, concurrency=2).take_all()",
        EXACT,
    ),
    (
        "map_stateful_class",
        "class AddState:\n    def __init__(self):\n        self.offset = 100\n"
        "    def __call__(self, r):\n        return {'id': r['id'] + self.offset}\n"
        "out = rd.range(3).map(AddState, concurrency=1).take_all()",
        EXACT,
    ),
    (
        "flat_map_class",
        "class Twice:\n    def __call__(self, r):\n        return [r, r]\n"
        "out = rd.range(2).flat_map(Twice, concurrency=1).take_all()",
        EXACT,
    ),
    (
        "filter_fn_kwargs",
        "out = rd.range(6).filter(lambda r, m: r['id'] % m == 0, fn_kwargs={'m': 3}).take_all()",
        EXACT,
    ),
    (
        "map_batches_batch_size_none",
        "out = rd.range(5, override_num_blocks=1).map_batches(lambda b: {'n': [len(b['id'])]}, "
        "batch_size=None).take_all()",
        EXACT,
    ),
    (
        "map_batches_pandas_tensor_column",
        "out = rd.range_tensor(2, shape=(2,)).map_batches("
        "lambda df: df.assign(s=[float(x.sum()) for x in df['data']]), batch_format='pandas').take_all()",
        EXACT,
    ),
    (
        "add_column_numpy_string",
        "out = rd.range(3).add_column('s', lambda b: np.where(b['id'] > 0, 'big', 'zero'), "
        "batch_format='numpy').take_all()",
        EXACT,
    ),
    (
        "drop_columns_many",
        "out = rd.from_items([{'a': 1, 'b': 2, 'c': 3}]).drop_columns(['a', 'c']).take_all()",
        EXACT,
    ),
    (
        "select_columns_string",
        "out = rd.from_items([{'a': 1, 'b': 2}]).select_columns('b').take_all()",
        EXACT,
    ),
    (
        "map_row_numpy_values",
        "out = rd.from_numpy(np.ones((2, 2))).map(lambda r: {'s': r['data'].sum()}).take_all()",
        EXACT,
    ),
    (
        "map_batches_dict_of_lists",
        "out = rd.range(3).map_batches(lambda b: {'x': [int(v) * 2 for v in b['id']]}).take_all()",
        EXACT,
    ),
    (
        "error_map_batches_class_without_concurrency",
        "class F:\n    def __call__(self, b):\n        return b\n"
        "rd.range(2).map_batches(F, compute='tasks').take_all()",
        RAISES,
    ),
    (
        "error_map_batches_fn_constructor_args_on_function",
        "rd.range(2).map_batches(lambda b: b, fn_constructor_args=(1,)).take_all()",
        RAISES,
    ),
]

SHUFFLING = [
    ("random_shuffle_count", "out = rd.range(50).random_shuffle().count()", EXACT),
    (
        "random_shuffle_rows",
        "out = sorted(r['id'] for r in rd.range(30).random_shuffle(seed=5).take_all())",
        EXACT,
    ),
    (
        "randomize_block_order_rows",
        "out = sorted(r['id'] for r in rd.range(20, override_num_blocks=4)"
        ".randomize_block_order().take_all())",
        EXACT,
    ),
    (
        "repartition_shuffle_true_rows",
        "out = sorted(r['id'] for r in rd.range(10).repartition(3, shuffle=True).take_all())",
        EXACT,
    ),
    (
        "local_shuffle_batch_sizes",
        "out = [len(b['id']) for b in rd.range(10).iter_batches(batch_size=4, local_shuffle_buffer_size=5)]",
        EXACT,
    ),
    (
        "iter_torch_batches_local_shuffle_rows",
        "out = sorted(int(x) for b in rd.range(12).iter_torch_batches(batch_size=5, "
        "local_shuffle_buffer_size=6) for x in b['id'])",
        EXACT,
    ),
]

SAVING = [
    (
        "write_parquet_extensions",
        WRITE + "rd.range(4).write_parquet(tmp + '/o')\n"
        "out = {os.path.splitext(f)[1] for f in files(tmp + '/o')}",
        EXACT,
    ),
    (
        "write_csv_extension_and_header",
        WRITE + "rd.range(3).write_csv(tmp + '/o')\n"
        "out = [open(tmp + '/o/' + f).readline() for f in files(tmp + '/o')][:1], {os.path.splitext(f)[1] "
        "for f in files(tmp + '/o')}",
        EXACT,
    ),
    (
        "write_json_lines",
        WRITE + "rd.from_items([{'a': 1}, {'a': 2}]).write_json(tmp + '/o')\n"
        "out = ''.join(open(tmp + '/o/' + f).read() for f in files(tmp + '/o')).replace(' ', '')",
        EXACT,
    ),
    # with pandas_json_args ember writes as Ray (pandas' to_json); without, ember's own writer (json.dumps
    # separators, tested in test_write_args_fn.py; docs/data.md), so the values are compared there
    (
        "write_json_value_types",
        WRITE + "rd.from_items([{'i': 1, 'f': 0.1 + 0.2, 's': 'caf\u00e9/x', 'n': None, 'l': [1, 2], "
        "'d': {'x': 1}}, {'i': 2, 'f': 1e20, 's': 'b', 'n': 3, 'l': [], 'd': {'x': 2}}], "
        "override_num_blocks=1).write_json(tmp + '/o', pandas_json_args_fn=lambda: {})\nout = [open(tmp + "
        "'/o/' + f).read() for f in files(tmp + '/o')]",
        EXACT,
    ),
    (
        "write_json_values_read_back",
        WRITE + "rd.from_items([{'i': 1, 'f': 0.5, 's': 'caf\u00e9', 'n': None}, {'i': 2, 'f': 1e20, "
        "'s': 'b', 'n': 3}]).write_json(tmp + '/o')\nout = rd.read_json(tmp + '/o').take_all()",
        EXACT,
    ),
    (
        "write_numpy_extension",
        WRITE + "rd.range_tensor(2, shape=(2,)).write_numpy(tmp + '/o', column='data')\n"
        "out = {os.path.splitext(f)[1] for f in files(tmp + '/o')}",
        EXACT,
    ),
    (
        "write_filename_provider",
        WRITE + D + "class Names(D.FilenameProvider):\n"
        "    def get_filename_for_task(self, write_uuid, task_index):\n        return "
        "f'rows_{task_index:03}.csv'\nrd.range(3, override_num_blocks=1).write_csv(tmp + '/o', "
        "filename_provider=Names())\nout = files(tmp + '/o'), rd.read_csv(tmp + '/o').take_all()",
        EXACT,
    ),
    (
        "write_max_rows_per_file",
        WRITE + "rd.range(10, override_num_blocks=1).write_parquet(tmp + '/o', max_rows_per_file=4)\n"
        "import pyarrow.parquet as pq\nout = sorted(pq.read_metadata(tmp + '/o/' + f).num_rows for f in "
        "files(tmp + '/o'))",
        EXACT,
    ),
    (
        "write_min_rows_per_file_one_file",
        WRITE + "rd.range(10, override_num_blocks=5).write_csv(tmp + '/o', "
        "min_rows_per_file=10)\nout = len(files(tmp + '/o'))",
        EXACT,
    ),
    (
        "write_mode_overwrite",
        WRITE + "rd.range(3).write_parquet(tmp + '/o')\n"
        "rd.range(2).write_parquet(tmp + '/o', mode='overwrite')\nout = sorted(r['id'] for r in "
        "rd.read_parquet(tmp + '/o').take_all())",
        EXACT,
    ),
    (
        "write_mode_append",
        WRITE
        + "rd.range(3).write_parquet(tmp + '/o')\nrd.range(2).write_parquet(tmp + '/o', mode='append')\n"
        "out = sorted(r['id'] for r in rd.read_parquet(tmp + '/o').take_all())",
        EXACT,
    ),
    (
        "write_mode_ignore",
        WRITE
        + "rd.range(3).write_parquet(tmp + '/o')\nrd.range(2).write_parquet(tmp + '/o', mode='ignore')\n"
        "out = sorted(r['id'] for r in rd.read_parquet(tmp + '/o').take_all())",
        EXACT,
    ),
    (
        "write_mode_savemode_enum",
        WRITE + "rd.range(3).write_csv(tmp + '/o')\n"
        "rd.range(1).write_csv(tmp + '/o', mode=rd.SaveMode.OVERWRITE)\nout = rd.read_csv(tmp + "
        "'/o').take_all()",
        EXACT,
    ),
    (
        "error_write_mode_error",
        "rd.range(3).write_parquet(tmp + '/o')\nrd.range(2).write_parquet(tmp + '/o', mode='error')",
        RAISES,
    ),
    (
        "write_parquet_partition_cols_read_back",
        "rd.from_items([{'k': 'a', 'v': 1}, {'k': 'b', 'v': 2}]).write_parquet(tmp + '/o', "
        "partition_cols=['k'])\nimport os\nout = sorted(os.listdir(tmp + '/o/k=a')) != [], sorted((r['k'], "
        "r['v']) for r in rd.read_parquet(tmp + '/o').take_all())",
        EXACT,
    ),
    (
        "write_csv_arrow_args",
        WRITE + "import pyarrow.csv as pcsv\nrd.from_items([{'a': 1, 'b': 2}]).write_csv(tmp + '/o', "
        "arrow_csv_args_fn=lambda: {'write_options': pcsv.WriteOptions(delimiter='|')})\n"
        "out = [open(tmp + '/o/' + f).read() for f in files(tmp + '/o')]",
        EXACT,
    ),
    (
        "write_json_pandas_args",
        WRITE + "rd.from_items([{'a': 1}]).write_json(tmp + '/o', pandas_json_args_fn=lambda: "
        "{'lines': False, 'orient': 'records'})\nout = [open(tmp + '/o/' + f).read() for f in files(tmp + "
        "'/o')]",
        EXACT,
    ),
]

FORMATS = [
    # tensors
    ("tensor_schema_repr", "out = repr(rd.range_tensor(2, shape=(2, 3)).schema())", EXACT),
    (
        "tensor_variable_shapes",
        "out = rd.from_items([{'t': np.zeros(2)}, {'t': np.zeros(3)}]).take_all()",
        EXACT,
    ),
    (
        "tensor_variable_shape_batch",
        "out = rd.from_items([{'t': np.zeros(2)}, {'t': np.zeros(3)}]).take_batch()",
        EXACT,
    ),
    (
        "tensor_pandas_batch_cells",
        "out = [x.tolist() for x in rd.range_tensor(2, shape=(2,)).take_batch("
        "batch_format='pandas')['data']]",
        EXACT,
    ),
    (
        "tensor_write_read_parquet",
        "rd.range_tensor(3, shape=(2, 2)).write_parquet(tmp + '/o')\n"
        "out = sorted(r['data'].tolist() for r in rd.read_parquet(tmp + '/o').take_all())",
        EXACT,
    ),
    (
        "tensor_map_batches_sum",
        "out = rd.range_tensor(4, shape=(2,)).map_batches(lambda b: {'s': b['data'].sum(axis=1)}).take_all()",
        EXACT,
    ),
    # text
    (
        "text_flat_map_words",
        "open(tmp + '/a.txt', 'w').write('a b\\nc\\n')\nout = rd.read_text(tmp + '/a.txt')"
        ".flat_map(lambda r: [{'w': w} for w in r['text'].split()]).take_all()",
        EXACT,
    ),
    (
        "text_map_batches_lower",
        "open(tmp + '/a.txt', 'w').write('Ab\\nCD\\n')\nout = rd.read_text(tmp + '/a.txt')"
        ".map_batches(lambda b: {'text': np.char.lower(b['text'].astype(str))}).take_all()",
        EXACT,
    ),
    # images
    (
        "read_images_rows",
        PNGS + "out = [r['image'].tolist()[0][0] for r in rd.read_images(tmp + '/img').take_all()]",
        EXACT,
    ),
    ("read_images_schema", PNGS + "out = repr(rd.read_images(tmp + '/img').schema())", EXACT),
    (
        "read_images_size",
        PNGS + "out = rd.read_images(tmp + '/img', size=(2, 3)).take_batch()['image'].shape",
        EXACT,
    ),
    (
        "read_images_mode_L",
        PNGS + "out = rd.read_images(tmp + '/img', mode='L').take(1)[0]['image'].shape",
        EXACT,
    ),
    (
        "read_images_include_paths",
        PNGS + "import os\nout = [os.path.basename(r['path']) for r in "
        "rd.read_images(tmp + '/img', include_paths=True).take_all()]",
        EXACT,
    ),
    (
        "write_images_read_back",
        PNGS + "rd.read_images(tmp + '/img').write_images(tmp + '/w', column='image', "
        "file_format='png')\nout = sorted(r['image'].tolist()[0][0] for r in rd.read_images(tmp + "
        "'/w').take_all())",
        EXACT,
    ),
    (
        "read_images_file_extensions",
        PNGS + "open(tmp + '/img/notes.txt', 'w').write('x')\n"
        "out = rd.read_images(tmp + '/img', file_extensions=['png']).count()",
        EXACT,
    ),
    # pytorch
    (
        "iter_torch_batches_dtypes_dict",
        "import torch\nout = list(rd.from_items([{'a': 1, 'b': 2.0}]).iter_torch_batches("
        "dtypes={'a': torch.float64, 'b': torch.float16}))",
        EXACT,
    ),
    (
        "iter_torch_batches_tensor_shapes",
        "out = [b['data'].shape for b in rd.range_tensor(5, shape=(3,)).iter_torch_batches(batch_size=2)]",
        EXACT,
    ),
    (
        "iter_torch_batches_device_cpu",
        "out = [b['id'].device.type for b in rd.range(4).iter_torch_batches(batch_size=2, device='cpu')]",
        EXACT,
    ),
    ("from_torch_list_dataset", "out = rd.from_torch([1, 2, 3]).take_all()", EXACT),
]

AGGREGATING = [
    (
        "groupby_aggregate_mean_std",
        "out = rd.from_items([{'k': i % 2, 'v': float(i)} for i in range(8)]).groupby('k')"
        ".aggregate(agg.Mean('v'), agg.Std('v', ddof=0)).take_all()",
        MULTISET,
    ),
    (
        "groupby_count_alias",
        "out = rd.from_items([{'k': i % 3} for i in range(7)]).groupby('k')"
        ".aggregate(agg.Count(alias_name='n')).take_all()",
        MULTISET,
    ),
    (
        "groupby_sum_alias",
        "out = rd.from_items([{'k': i % 2, 'v': i} for i in range(6)]).groupby('k')"
        ".aggregate(agg.Sum('v', alias_name='total')).take_all()",
        MULTISET,
    ),
    (
        "groupby_map_groups_numpy",
        "out = rd.from_items([{'k': i % 2, 'v': i} for i in range(6)]).groupby('k')"
        ".map_groups(lambda b: {'k': b['k'][:1], 'n': [len(b['v'])]}).take_all()",
        MULTISET,
    ),
    (
        "groupby_map_groups_pyarrow",
        "out = rd.from_items([{'k': i % 2, 'v': i} for i in range(6)]).groupby('k')"
        ".map_groups(lambda t: t.slice(0, 1), batch_format='pyarrow').take_all()",
        MULTISET,
    ),
    (
        "groupby_map_groups_fn_kwargs",
        "out = rd.from_items([{'k': i % 2, 'v': i} for i in range(4)]).groupby('k')"
        ".map_groups(lambda b, m: {'v': b['v'] * m}, fn_kwargs={'m': 10}).take_all()",
        MULTISET,
    ),
    (
        "groupby_two_keys_sum",
        "out = rd.from_items([{'a': i % 2, 'b': i % 3, 'v': i} for i in range(12)])"
        ".groupby(['a', 'b']).sum('v').take_all()",
        MULTISET,
    ),
    (
        "groupby_mean_ignore_nulls_false",
        "out = rd.from_items([{'k': 1, 'v': 1}, {'k': 1, 'v': None}, {'k': 2, 'v': 3}])"
        ".groupby('k').mean('v', ignore_nulls=False).take_all()",
        MULTISET,
    ),
    (
        "aggregate_many",
        "out = rd.range(10).aggregate(agg.Sum('id'), agg.Min('id'), agg.Max('id'), agg.Count())",
        EXACT,
    ),
    (
        "aggregate_custom_aggregate_fn",
        "a = agg.AggregateFn(init=lambda k: 0, accumulate_row=lambda acc, r: acc + r['id'], "
        "merge=lambda a1, a2: a1 + a2, name='total')\nout = rd.range(5).aggregate(a)",
        EXACT,
    ),
    (
        "aggregate_fn_in_groupby",
        "a = agg.AggregateFn(init=lambda k: 0, accumulate_row=lambda acc, r: acc + 1, merge=lambda a1, a2: "
        "a1 + a2, name='rows')\nout = rd.from_items([{'k': i % 2} for i in "
        "range(5)]).groupby('k').aggregate(a).take_all()",
        MULTISET,
    ),
    ("aggregate_quantile_list", "out = rd.range(101).aggregate(agg.Quantile('id', q=0.25))", EXACT),
    (
        "groupby_std_ddof0",
        "out = rd.from_items([{'k': i % 2, 'v': i} for i in range(6)]).groupby('k').std('v', ddof=0)"
        ".take_all()",
        MULTISET,
    ),
    (
        "unique_of_ints_count",
        "out = len(rd.from_items([{'a': i % 4} for i in range(20)]).unique('a'))",
        EXACT,
    ),
    (
        "error_groupby_aggregate_missing_column",
        "rd.range(3).groupby('id').aggregate(agg.Sum('zz')).take_all()",
        RAISES,
    ),
]

CONFIG = [
    # Ray's display and scheduling settings: accepted, read back as set, rows unchanged
    (
        "context_display_setting_read_back",
        "ctx = rd.DataContext.get_current()\nold = ctx.enable_progress_bars\nctx.enable_progress_bars = "
        "False\nout = ctx.enable_progress_bars, rd.range(5).map(lambda r: "
        "r).count()\nctx.enable_progress_bars = old",
        EXACT,
    ),
    (
        "context_use_push_based_shuffle_rows",
        "ctx = rd.DataContext.get_current()\nold = ctx.use_push_based_shuffle\nctx.use_push_based_shuffle = "
        "True\nout = sorted(r['id'] for r in "
        "rd.range(20).random_shuffle(seed=1).take_all())\nctx.use_push_based_shuffle = old",
        EXACT,
    ),
    (
        "context_shuffle_strategy_rows",
        "import importlib\nS = importlib.import_module(rd.__name__ + '.context').ShuffleStrategy\nctx = "
        "rd.DataContext.get_current()\nold = ctx.shuffle_strategy\nctx.shuffle_strategy = "
        "S.SORT_SHUFFLE_PULL_BASED\nout = ctx.shuffle_strategy.value, rd.from_items([{'k': i % 3} for i in "
        "range(9)]).groupby('k').count().sort('k').take_all()\nctx.shuffle_strategy = old",
        EXACT,
    ),
    (
        "context_preserve_order_ordered",
        "out = rd.range(30, override_num_blocks=6).map_batches(lambda b: b).take_all()",
        EXACT,
    ),
    (
        "context_execution_options_type",
        "out = type(rd.DataContext.get_current().execution_options).__name__",
        EXACT,
    ),
    ("context_is_a_singleton", "out = rd.DataContext.get_current() is rd.DataContext.get_current()", EXACT),
    (
        "dataset_context_preserve_order",
        "ds = rd.range(3)\nout = ds.context.execution_options.preserve_order",
        EXACT,
    ),
]

MORE = [
    (
        "read_csv_nested_folders",
        "import os\nos.makedirs(tmp + '/d/sub')\nopen(tmp + '/d/1.csv', 'w').write('a\\n1\\n')\nopen(tmp + "
        "'/d/sub/2.csv', 'w').write('a\\n2\\n')\nout = sorted(r['a'] for r in rd.read_csv(tmp + "
        "'/d').take_all())",
        EXACT,
    ),
    (
        "read_csv_override_num_blocks_count",
        "open(tmp + '/a.csv', 'w').write('a\\n' + '\\n'.join(map(str, range(10))) + '\\n')\n"
        "out = rd.read_csv(tmp + '/a.csv', override_num_blocks=2).count()",
        EXACT,
    ),
    (
        "read_numpy_include_paths",
        "import os\nnp.save(tmp + '/a.npy', np.arange(2))\nout = [(int(r['data']), "
        "os.path.basename(r['path'])) for r in rd.read_numpy(tmp + '/a.npy', include_paths=True).take_all()]",
        EXACT,
    ),
    (
        "read_json_nested_objects",
        "open(tmp + '/a.json', 'w').write('{\"a\": {\"b\": 1, \"c\": [1, 2]}}\\n')\n"
        "out = rd.read_json(tmp + '/a.json').take_all()",
        EXACT,
    ),
    ("from_items_tuples", "out = rd.from_items([(1, 2), (3, 4)]).take_all()", EXACT),
    (
        "from_items_override_blocks_batches",
        "out = rd.from_items(list(range(10)), override_num_blocks=3)"
        ".map_batches(lambda b: {'n': [len(b['item'])]}, batch_size=None).take_all()",
        EXACT,
    ),
    (
        "from_pandas_to_pandas_strings",
        "out = rd.from_pandas(pd.DataFrame({'s': ['a', None], 'i': [1, 2]})).to_pandas()",
        EXACT,
    ),
    (
        "from_pandas_tensor_cells",
        "out = rd.from_pandas(pd.DataFrame({'t': [np.zeros(2), np.ones(2)]})).take_batch()",
        EXACT,
    ),
    (
        "map_batches_batch_format_none_type",
        "out = rd.range(3).map_batches(lambda b: {'t': [type(b).__name__] * len(b)}, "
        "batch_format=None).take_all()",
        EXACT,
    ),
    ("take_batch_batch_format_none", "out = rd.range(3).take_batch(2, batch_format=None)", EXACT),
    (
        "iter_batches_batch_format_none",
        "out = list(rd.range(3).iter_batches(batch_size=2, batch_format=None))",
        EXACT,
    ),
    (
        "map_batches_batch_format_default",
        "out = rd.range(3).map_batches(lambda b: {'t': [type(b['id']).__name__] * "
        "len(b['id'])}, batch_format='default').take_all()",
        EXACT,
    ),
    ("filter_expr_string", "out = rd.range(6).filter(expr='id > 3').take_all()", EXACT),
    ("drop_columns_string", "out = rd.from_items([{'a': 1, 'b': 2}]).drop_columns('a').take_all()", EXACT),
    (
        "tensor_map_batches_shape",
        "out = rd.from_numpy(np.zeros((3, 2, 2))).map_batches(lambda b: {'data': b['data'] + 1})"
        ".take_batch()['data'].shape",
        EXACT,
    ),
    (
        "tensor_image_schema",
        "out = repr(rd.from_items([{'image': np.zeros((2, 2, 3), dtype=np.uint8)}]).schema())",
        EXACT,
    ),
    (
        "iter_torch_batches_float_tensor_column",
        "import torch\nout = list(rd.range_tensor(2, shape=(2,))"
        ".iter_torch_batches(dtypes=torch.float32, device='cpu'))",
        EXACT,
    ),
    (
        "text_length_map",
        "open(tmp + '/a.txt', 'w').write('ab\\nc\\n')\nout = rd.read_text(tmp + '/a.txt')"
        ".map(lambda r: {'n': len(r['text'])}).take_all()",
        EXACT,
    ),
    ("repartition_num_blocks_4", "out = rd.range(10).repartition(4).materialize().num_blocks()", EXACT),
    ("split_equal_counts", "out = [p.count() for p in rd.range(10).split(3, equal=True)]", EXACT),
    (
        "groupby_std_ignore_nulls_false",
        "out = rd.from_items([{'k': 1, 'v': 1.0}, {'k': 1, 'v': None}, {'k': 2, 'v': 3.0}, "
        "{'k': 2, 'v': 5.0}]).groupby('k').std('v', ignore_nulls=False).take_all()",
        MULTISET,
    ),
    (
        "groupby_map_groups_two_keys",
        "out = rd.from_items([{'a': i % 2, 'b': i % 3, 'v': i} for i in range(12)]).groupby(['a', "
        "'b']).map_groups(lambda b: {'a': b['a'][:1], 'b': b['b'][:1], 's': [b['v'].sum()]}).take_all()",
        MULTISET,
    ),
    (
        "aggregate_count_not_ignoring_nulls",
        "out = rd.from_items([{'x': 1}, {'x': None}]).aggregate(agg.Count('x', ignore_nulls=False))",
        EXACT,
    ),
    ("aggregate_mean_alias", "out = rd.range(4).aggregate(agg.Mean('id', alias_name='avg'))", EXACT),
    (
        "groupby_unique",
        "out = {r['k']: sorted(r['unique(v)']) for r in rd.from_items([{'k': i % 2, 'v': i % 3} "
        "for i in range(8)]).groupby('k').aggregate(agg.Unique('v')).take_all()}",
        EXACT,
    ),
    (
        "write_parquet_two_partition_cols",
        "rd.from_items([{'k': 'a', 'j': 1, 'v': 1}, {'k': 'b', 'j': 2, 'v': 2}]).write_parquet(tmp + '/o', "
        "partition_cols=['k', 'j'])\nimport os\nout = sorted(os.listdir(tmp + '/o')), sorted(os.listdir(tmp "
        "+ '/o/k=a'))",
        EXACT,
    ),
    (
        "write_parquet_compression_read_back",
        "rd.range(5).write_parquet(tmp + '/o', compression='gzip')\n"
        "out = sorted(r['id'] for r in rd.read_parquet(tmp + '/o').take_all())",
        EXACT,
    ),
    (
        "write_numpy_2d_read_back",
        "rd.from_numpy(np.arange(6).reshape(3, 2)).write_numpy(tmp + '/o', column='data')\n"
        "out = sorted(r['data'].tolist() for r in rd.read_numpy(tmp + '/o').take_all())",
        EXACT,
    ),
    (
        "sort_descending_nulls",
        "out = rd.from_items([{'a': 2}, {'a': None}, {'a': 1}]).sort('a', descending=True).take_all()",
        EXACT,
    ),
    (
        "limit_then_write_count",
        "rd.range(100).limit(7).write_csv(tmp + '/o')\nout = rd.read_csv(tmp + '/o').count()",
        EXACT,
    ),
]

MORE2 = [
    (
        "read_parquet_columns_include_paths",
        "rd.from_items([{'a': 1, 'b': 2}]).write_parquet(tmp + '/o')\n"
        "out = rd.read_parquet(tmp + '/o', columns=['b'], include_paths=True).columns()",
        EXACT,
    ),
    (
        "read_binary_files_schema",
        "open(tmp + '/b.bin', 'wb').write(b'x')\nout = repr(rd.read_binary_files(tmp + '/b.bin').schema())",
        EXACT,
    ),
    (
        "read_text_schema",
        "open(tmp + '/a.txt', 'w').write('x\\n')\nout = repr(rd.read_text(tmp + '/a.txt').schema())",
        EXACT,
    ),
    (
        "read_images_mode_rgb_from_gray",
        "import numpy as np\nfrom PIL import Image\n"
        "Image.fromarray(np.full((2, 3), 7, dtype=np.uint8)).save(tmp + '/g.png')\n"
        "out = rd.read_images(tmp + '/g.png', mode='RGB').take_batch()['image'].shape",
        EXACT,
    ),
    (
        "read_csv_convert_options",
        "import pyarrow.csv as pcsv\nopen(tmp + '/a.csv', 'w').write('a\\n1\\n')\nout = rd.read_csv(tmp + "
        "'/a.csv', convert_options=pcsv.ConvertOptions(column_types={'a': pa.string()})).take_all()",
        EXACT,
    ),
    (
        "read_csv_read_options",
        "import pyarrow.csv as pcsv\nopen(tmp + '/a.csv', 'w').write('junk\\n1,2\\n')\nout = rd.read_csv(tmp "
        "+ '/a.csv', read_options=pcsv.ReadOptions(skip_rows=1, column_names=['x', 'y'])).take_all()",
        EXACT,
    ),
    (
        "map_batches_generator_pandas",
        "def gen(df):\n    yield df.head(1)\n    yield df.tail(1)\nout = rd.range(4, "
        "override_num_blocks=1).map_batches(gen, batch_format='pandas', batch_size=None).take_all()",
        EXACT,
    ),
    (
        "flat_map_generator",
        "def gen(r):\n    for i in range(r['id']):\n        yield {'v': i}\n"
        "out = rd.range(4).flat_map(gen).take_all()",
        EXACT,
    ),
    (
        "map_nested_dict_output",
        "out = rd.range(2).map(lambda r: {'d': {'x': r['id'], 'y': 'a'}}).take_all()",
        EXACT,
    ),
    ("random_sample_zero", "out = rd.range(20).random_sample(0.0, seed=1).count()", EXACT),
    (
        "groupby_max_alias",
        "out = rd.from_items([{'k': i % 2, 'v': i} for i in range(6)]).groupby('k')"
        ".aggregate(agg.Max('v', alias_name='m')).take_all()",
        MULTISET,
    ),
    (
        "std_many_ddof0",
        "out = rd.from_items([{'a': 1, 'b': 2}, {'a': 3, 'b': 6}]).std(['a', 'b'], ddof=0)",
        EXACT,
    ),
    ("sum_floats", "out = rd.from_items([{'x': 0.5}, {'x': 0.25}]).sum('x')", EXACT),
    (
        "write_csv_quoting",
        "rd.from_items([{'s': 'a,b', 't': 'q\"x'}]).write_csv(tmp + '/o')\nout = rd.read_csv(tmp + "
        "'/o').take_all()",
        EXACT,
    ),
    (
        "write_parquet_nulls_read_back",
        "rd.from_items([{'a': 1}, {'a': None}]).write_parquet(tmp + '/o')\n"
        "out = sorted((r['a'] for r in rd.read_parquet(tmp + '/o').take_all()), key=repr)",
        EXACT,
    ),
    ("error_to_pandas_over_limit", "rd.range(5).to_pandas(limit=2)", RAISES),
    (
        "error_map_batches_negative_batch_size",
        "rd.range(3).map_batches(lambda b: b, batch_size=-1).take_all()",
        RAISES,
    ),
    ("error_split_at_indices_unsorted", "rd.range(5).split_at_indices([3, 1])", RAISES),
    ("error_random_shuffle_bad_seed", "rd.range(3).random_shuffle(seed='x').take_all()", RAISES),
    (
        "error_iter_torch_batches_strings",
        "import torch\nlist(rd.from_items([{'s': 'a'}]).iter_torch_batches(dtypes=torch.float32))",
        RAISES,
    ),
    ("error_from_items_not_list", "rd.from_items(5)", RAISES),
    ("error_read_images_missing", "rd.read_images(tmp + '/nope').take_all()", RAISES),
    (
        "error_select_columns_duplicate",
        "rd.from_items([{'a': 1}]).select_columns(['a', 'a']).take_all()",
        RAISES,
    ),
]

MORE3 = [
    (
        "map_batches_concurrency_triple",
        "class F:\n    def __call__(self, b):\n        return {'id': b['id'] * 3}\n"
        "out = rd.range(4).map_batches(F, concurrency=(1, 2, 1)).take_all()",
        EXACT,
    ),
    (
        "write_read_local_scheme",
        "rd.range(3).write_parquet('local://' + tmp + '/o')\n"
        "out = sorted(r['id'] for r in rd.read_parquet('local://' + tmp + '/o').take_all())",
        EXACT,
    ),
    (
        "read_csv_local_filesystem",
        "import pyarrow.fs as pfs\nopen(tmp + '/a.csv', 'w').write('a\\n1\\n')\n"
        "out = rd.read_csv(tmp + '/a.csv', filesystem=pfs.LocalFileSystem()).take_all()",
        EXACT,
    ),
    (
        "from_arrow_override_num_blocks",
        "out = rd.from_arrow(pa.table({'a': list(range(5))}), override_num_blocks=2).num_blocks()",
        EXACT,
    ),
    (
        "to_pandas_tensor_column",
        "out = [x.tolist() for x in rd.range_tensor(2, shape=(2,)).to_pandas()['data']]",
        EXACT,
    ),
    (
        "iter_rows_after_flat_map",
        "out = list(rd.range(2).flat_map(lambda r: [{'x': r['id']}] * 2).iter_rows())",
        EXACT,
    ),
    (
        "map_groups_returns_dataframe_numpy_format",
        "out = rd.from_items([{'k': i % 2, 'v': i} for i in range(4)]).groupby('k').map_groups(lambda b: "
        "pd.DataFrame({'k': b['k'][:1]}), batch_format='numpy').take_all()",
        MULTISET,
    ),
    (
        "groupby_count_then_filter",
        "out = rd.from_items([{'k': k} for k in 'aab']).groupby('k').count()"
        ".filter(lambda r: r['count()'] > 1).take_all()",
        EXACT,
    ),
    (
        "aggregate_min_max_strings",
        "out = rd.from_items([{'s': s} for s in 'bca']).aggregate(agg.Min('s'), agg.Max('s'))",
        EXACT,
    ),
    (
        "columns_after_with_column",
        "import importlib\nE = importlib.import_module(rd.__name__ + '.expressions')\n"
        "out = rd.range(2).with_column('z', E.col('id') + 1).columns()",
        EXACT,
    ),
    (
        "random_shuffle_then_sort",
        "out = rd.range(10).random_shuffle().sort('id', descending=True).take(3)",
        EXACT,
    ),
    (
        "limit_after_sort_descending",
        "out = rd.range(10).sort('id', descending=True).limit(2).take_all()",
        EXACT,
    ),
    (
        "error_groupby_map_groups_bad_format",
        "rd.range(3).groupby('id').map_groups(lambda b: b, batch_format='nope').take_all()",
        RAISES,
    ),
    (
        "error_read_json_empty_folder",
        "import os\nos.makedirs(tmp + '/empty')\nrd.read_json(tmp + '/empty').take_all()",
        RAISES,
    ),
    (
        "error_read_csv_no_files_with_extension",
        "open(tmp + '/a.txt', 'w').write('x')\nrd.read_csv(tmp, file_extensions=['csv']).take_all()",
        RAISES,
    ),
]

MORE4 = [
    (
        "groupby_quantile",
        "out = rd.from_items([{'k': i % 2, 'v': i} for i in range(10)]).groupby('k')"
        ".aggregate(agg.Quantile('v', q=0.5)).take_all()",
        MULTISET,
    ),
    (
        "groupby_absmax",
        "out = rd.from_items([{'k': i % 2, 'v': -i} for i in range(6)]).groupby('k')"
        ".aggregate(agg.AbsMax('v')).take_all()",
        MULTISET,
    ),
    (
        "aggregate_unique_with_null",
        "out = sorted(rd.from_items([{'x': 1}, {'x': None}, {'x': 1}]).aggregate("
        "agg.Unique('x'))['unique(x)'], key=repr)",
        EXACT,
    ),
    (
        "groupby_sum_strings_key_order",
        "out = rd.from_items([{'k': k, 'v': 1} for k in 'cab']).groupby('k').sum('v').sort('k').take_all()",
        EXACT,
    ),
    (
        "groupby_mean_multiple_keys_columns",
        "out = rd.from_items([{'a': i % 2, 'b': i % 2, 'v': i, 'w': -i} for i in range(6)])"
        ".groupby(['a', 'b']).mean(['v', 'w']).take_all()",
        MULTISET,
    ),
    (
        "text_read_text_two_files_order",
        "open(tmp + '/a.txt', 'w').write('1\\n2\\n')\nopen(tmp + '/b.txt', 'w').write('3\\n')\n"
        "out = rd.read_text([tmp + '/a.txt', tmp + '/b.txt']).take_all()",
        EXACT,
    ),
    ("numpy_batch_of_list_column", "out = rd.from_items([{'l': [1, 2]}, {'l': [3]}]).take_batch()", EXACT),
]

SNIPPETS = (
    MORE
    + MORE2
    + MORE3
    + MORE4
    + LOADING
    + INSPECTING
    + TRANSFORMING
    + SHUFFLING
    + SAVING
    + FORMATS
    + AGGREGATING
    + CONFIG
)


@pytest.mark.parametrize("name,code,how", SNIPPETS, ids=[s[0] for s in SNIPPETS])
def test_ember_data_behaves_as_ray_data(name, code, how, parity_ray, tmp_path):  # noqa: F811
    compare_snippet(name, code, how, parity_ray, tmp_path)


# Where ember deliberately differs (docs/data.md "Where results differ from Ray Data 2.60"): ember's
# behaviour, asserted on ember alone, with the reason.
def test_read_parquet_filter_is_kept_where_ray_refuses_it(tmp_path):
    """Ray 2.60 refuses ``read_parquet(filter=)`` (ValueError: use ``.filter(expr=)``); ember keeps it (a
    pyarrow or ember expression, applied while reading), which ember code relies on."""
    import pyarrow.dataset as pds

    import ember.data

    ember.data.range(6).write_parquet(str(tmp_path / "o"))
    rows = ember.data.read_parquet(str(tmp_path / "o"), filter=pds.field("id") > 3).take_all()
    assert rows == [{"id": 4}, {"id": 5}]


def test_ray_settings_that_change_results_are_refused():
    """Ray's ``target_max_block_size`` sizes blocks in bytes; ember sizes them in rows, so it is refused in
    one line naming ``target_rows_per_block`` (before, it was stored and ignored); a typo is refused the same
    way.
    """
    import ember.data
    from ember.errors import ConfigError

    context = ember.data.DataContext.get_current()
    with pytest.raises(ConfigError, match="target_rows_per_block"):
        context.target_max_block_size = 1024
    with pytest.raises(ConfigError, match="no setting 'enable_progres_bars'"):
        context.enable_progres_bars = False
    assert not hasattr(context, "target_max_block_size")


def test_tensor_column_types_are_arrow_types():
    """``Schema.types`` gives the Arrow types: a fixed-shape tensor column is pyarrow's ``fixed_shape_tensor``
    (Ray: its own ``ArrowTensorTypeV2``); ``repr(schema)`` prints Ray's names (compared above)."""
    import pyarrow as pa

    import ember.data

    (tensor,) = ember.data.range_tensor(2, shape=(3, 2)).schema().types
    assert isinstance(tensor, pa.FixedShapeTensorType) and tuple(tensor.shape) == (3, 2)


def test_in_memory_block_layout():
    """``from_*`` datasets answer ``num_blocks()`` as Ray's MaterializedDataset does; ``from_pandas`` /
    ``from_arrow`` keep one block per frame / table as Ray, ``from_items`` without ``override_num_blocks``
    cuts ``target_rows_per_block`` rows per block (Ray: from the cluster's CPU count, often one block per
    item)."""
    import pandas as pd

    import ember.data

    assert ember.data.from_pandas([pd.DataFrame({"a": [1]})] * 3).num_blocks() == 3
    assert ember.data.from_items(list(range(10))).num_blocks() == 1
    assert ember.data.from_items(list(range(10)), override_num_blocks=4).num_blocks() == 4


def test_repartition_into_zero_blocks_is_refused():
    """Ray's ``repartition(0)`` gives an empty dataset (every row dropped); ember refuses it in one line, as
    it refuses ``limit(-1)`` ("Bad input is one line")."""
    import ember.data
    from ember.errors import ConfigError

    with pytest.raises(ConfigError, match=r"repartition\(num_blocks=0\); use a positive integer"):
        ember.data.range(3).repartition(0).take_all()
