"""ember.data: lazy, streaming datasets that feed training (a Ray Data-compatible API).

Example:
    >>> import ember.data
    >>> ds = ember.data.range(8).map_batches(lambda b: {"x": b["id"] * 2}, batch_size=4)
    >>> [b["x"].tolist() for b in ds.iter_batches(batch_size=4)]
    [[0, 2, 4, 6], [8, 10, 12, 14]]

Imports pyarrow and numpy; pandas, Pillow and torch's optional parts load on first use.

This module is ember.data's face: Ray Data's API, and the few seams ember's own packages use
(listed last in ``__all__``). Code outside ember.data imports only from here, never from its
submodules (``tests/test_layers.py``); the layers below are pictured in ``docs/data_layers.md``.
"""

from ember.data import aggregate, collate_fn, datatype, expressions
from ember.data.block import block_to_numpy
from ember.data.context import DataContext, DatasetContext, ExecutionOptions
from ember.data.data_iterator import DataIterator, DatasetIterator
from ember.data.dataset import ActorPoolStrategy, Dataset, MaterializedDataset, TaskPoolStrategy
from ember.data.datasource import (  # writing: Ray's Datasink API, FilenameProvider
    BlockMetadata,
    Datasink,
    Datasource,
    FilenameProvider,
    ReadTask,
)
from ember.data.execute.pool import cuda_device_count
from ember.data.grouped import GroupedData
from ember.data.iterate import BatchIterable, set_auto_device
from ember.data.mix import MixStoppingCondition
from ember.data.random_config import RandomSeedConfig
from ember.data.read.partitioning import Partitioning, PathPartitionFilter
from ember.data.read.shuffle import FileShuffleConfig
from ember.data.read_api import (
    from_arrow,
    from_fragments,
    from_items,
    from_numpy,
    from_pandas,
    from_torch,
    range,
    range_tensor,
    read_binary_files,
    read_csv,
    read_images,
    read_json,
    read_numpy,
    read_orc,
    read_parquet,
    read_sql,
    read_text,
    read_tfrecords,
    read_webdataset,
)
from ember.data.read_datasource import read_datasource
from ember.data.read_huggingface import from_huggingface
from ember.data.schema import Schema
from ember.data.summary import DatasetSummary
from ember.data.write import SaveMode
from ember.data.write_resumable import ResumableParquetWriter, file_fingerprint

__all__ = [
    "ActorPoolStrategy",
    "BatchIterable",
    "DataContext",
    "DataIterator",
    "Datasink",
    "DatasetContext",
    "DatasetIterator",
    "DatasetSummary",
    "ExecutionOptions",
    "FilenameProvider",
    "TaskPoolStrategy",
    "Dataset",
    "GroupedData",
    "MaterializedDataset",
    "MixStoppingCondition",
    "RandomSeedConfig",
    "Partitioning",
    "PathPartitionFilter",
    "SaveMode",
    "aggregate",
    "collate_fn",
    "datatype",
    "expressions",
    "read_orc",
    "Schema",
    "from_arrow",
    "from_huggingface",
    "from_items",
    "from_numpy",
    "from_pandas",
    "from_torch",
    "range",
    "range_tensor",
    "read_binary_files",
    "read_csv",
    "read_images",
    "read_json",
    "read_numpy",
    "read_parquet",
    "read_sql",
    "read_text",
    "read_tfrecords",
    "read_webdataset",
    # custom sources; the file readers' shuffle=
    "BlockMetadata",
    "Datasource",
    "ReadTask",
    "read_datasource",
    "FileShuffleConfig",
    # ember's seams for its own packages (not Ray's API): batch inference (ember.inference), the
    # TorchTrainer's device="auto" (ember.train); runtime sharding uses Dataset/BatchIterable.shard_for_rank
    "ResumableParquetWriter",
    "block_to_numpy",
    "cuda_device_count",
    "file_fingerprint",
    "from_fragments",
    "set_auto_device",
]
