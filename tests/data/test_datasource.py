"""Custom sources through Ray's plug-in API: a Datasource written for Ray runs on ember with only its
imports changed, and gives Ray's rows in Ray's order (locally and with execution="ray")."""

from __future__ import annotations

import dataclasses
import os

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import pyarrow as pa  # noqa: E402
import pytest  # noqa: E402

import ember.data  # noqa: E402
from ember.data.datasource import BlockMetadata, Datasource, ReadTask  # noqa: E402
from ember.errors import ConfigError, DataError  # noqa: E402
from tests.data._sqlite_datasource import make_database, sqlite_datasource  # noqa: E402

EmberSQLite = sqlite_datasource(Datasource, ReadTask, BlockMetadata)


@pytest.fixture
def database(tmp_path):
    return make_database(str(tmp_path / "people.db"))


@pytest.fixture
def ray_data(local_ray):
    """Ray Data with preserve_order (the order ember always gives), restored after."""
    context = local_ray.data.DataContext.get_current()
    before = context.execution_options.preserve_order
    context.execution_options.preserve_order = True
    yield local_ray.data
    context.execution_options.preserve_order = before


def _ray_sqlite():
    from ray.data.block import BlockMetadata as RayBlockMetadata
    from ray.data.datasource import Datasource as RayDatasource
    from ray.data.datasource import ReadTask as RayReadTask

    return sqlite_datasource(RayDatasource, RayReadTask, RayBlockMetadata)


@pytest.mark.parametrize("blocks_as", ["arrow", "pandas"])
def test_a_datasource_written_for_ray_gives_rays_rows_in_rays_order(database, ray_data, blocks_as):
    RaySQLite = _ray_sqlite()
    for blocks in (None, 3):
        ours = ember.data.read_datasource(
            EmberSQLite(database, "people", blocks_as), override_num_blocks=blocks
        )
        theirs = ray_data.read_datasource(
            RaySQLite(database, "people", blocks_as), override_num_blocks=blocks
        )
        assert ours.take_all() == theirs.take_all()
        assert ours.count() == theirs.count() == 50
        assert ours.schema().names == theirs.schema().names


def test_the_same_datasource_runs_on_the_ray_backend(database, local_ray):
    ds = ember.data.read_datasource(EmberSQLite(database, "people"), override_num_blocks=4).map(
        lambda row: {**row, "name": row["name"].upper()}
    )
    local = ds.take_all()
    context = ember.data.DataContext.get_current()
    before, context.execution = context.execution, "ray"
    try:
        on_ray = ds.take_all()
    finally:
        context.execution = before
    assert on_ray == local and local[0] == {"id": 3, "name": "NAME-3"} and len(local) == 50


def test_a_rays_own_datasource_instance_is_read_too(database, local_ray):
    ds = ember.data.read_datasource(_ray_sqlite()(database, "people"), override_num_blocks=2)
    assert [r["id"] for r in ds.take_all()] == list(range(3, 53))


def test_tasks_follow_the_requested_parallelism_and_count_comes_from_metadata(database):
    calls = []

    class Counted(EmberSQLite):
        def _reader(self, start, stop):
            calls.append((start, stop))
            return super()._reader(start, stop)

    ds = ember.data.read_datasource(Counted(database, "people"), parallelism=5)
    assert len(ds.fragments()) == 5 and ds.count() == 50
    assert ds.input_files() == [database]
    assert ds.materialize().num_blocks() == 5


def test_read_task_and_block_metadata_match_rays_contract(local_ray):
    from ray.data.block import BlockMetadata as RayBlockMetadata
    from ray.data.datasource import ReadTask as RayReadTask

    ours = [f.name for f in dataclasses.fields(BlockMetadata)]
    theirs = [f.name for f in dataclasses.fields(RayBlockMetadata)]
    assert ours == theirs
    table = pa.table({"a": list(range(5))})
    mine = ReadTask(lambda: [table, table], BlockMetadata(10, None, None, None), per_task_row_limit=7)
    ray_task = RayReadTask(
        lambda: [table, table], RayBlockMetadata(10, None, None, None), per_task_row_limit=7
    )
    assert [b.num_rows for b in mine()] == [pa.table(b).num_rows for b in ray_task()] == [5, 2]
    assert mine.metadata.num_rows == ray_task.metadata.num_rows == 10


def test_a_datasource_that_cannot_be_read_is_refused_in_one_line(database):
    class Legacy(Datasource):
        def prepare_read(self, parallelism, **read_args):
            return []

    with pytest.raises(ConfigError, match="must implement get_read_tasks and estimate_inmemory_data_size"):
        ember.data.read_datasource(Legacy())
    with pytest.raises(ConfigError, match="pass an instance"):
        ember.data.read_datasource(EmberSQLite)
    with pytest.raises(ConfigError, match="has no argument 'table'"):
        ember.data.read_datasource(EmberSQLite(database, "people"), table="people")
    with pytest.raises(ConfigError, match="parallelism=0"):
        ember.data.read_datasource(EmberSQLite(database, "people"), parallelism=0)
    ember.data.read_datasource(
        EmberSQLite(database, "people"), num_cpus=1, concurrency=2
    )  # Ray's scheduling only


def test_a_read_function_returning_a_block_instead_of_a_list_is_named(database):
    class OneBlock(Datasource):
        def estimate_inmemory_data_size(self):
            return None

        def get_read_tasks(self, parallelism, per_task_row_limit=None, data_context=None):
            return [ReadTask(lambda: pa.table({"a": [1]}), BlockMetadata(1, None, None, None))]

    with pytest.raises(
        DataError, match=r"must return an iterable of blocks, e.g. \[table\] instead of table"
    ):
        ember.data.read_datasource(OneBlock()).take_all()
