"""Ray Data's extra keyword arguments: scheduling-only ones are accepted and change nothing; a typo or
a Ray option that would change the result is a one-line error naming the closest real argument."""

from __future__ import annotations

import importlib.util
import inspect

import numpy as np
import pytest

import ember.data
from ember.data.ray_args import RAY_REMOTE_OPTIONS, SCHEDULING_ONLY, UNSUPPORTED
from ember.errors import ConfigError


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda ds: ds.iter_torch_batches(batchsize=2),
            r"^Dataset\.iter_torch_batches\(\) has no argument 'batchsize'; did you mean 'batch_size'\?$",
        ),
        (
            lambda ds: ds.map_batches(lambda b: b, batch_formt="pandas"),
            r"^Dataset\.map_batches\(\) has no argument 'batch_formt'; did you mean 'batch_format'\?$",
        ),
        (
            lambda ds: ds.random_shuffle(sed=3),
            r"^Dataset\.random_shuffle\(\) has no argument 'sed'; did you mean 'seed'\?$",
        ),
        (
            lambda ds: ds.repartition(2, strict=True),
            r"^Dataset\.repartition\(strict=True\) applies only with target_num_rows_per_block \(Ray ignores "
            r"it with num_blocks\); drop strict= or use target_num_rows_per_block$",
        ),
        (
            lambda ds: ds.filter(lambda r: True, fn_kwrgs={}),
            r"^Dataset\.filter\(\) has no argument 'fn_kwrgs'; did you mean 'fn_kwargs'\?$",
        ),
    ],
)
def test_a_typo_or_an_unsupported_ray_option_is_refused_by_name(call, message):
    with pytest.raises(ConfigError, match=message):
        call(ember.data.range(8))


def test_readers_refuse_unknown_arguments_before_touching_files(tmp_path):
    with pytest.raises(
        ConfigError, match=r"^read_parquet\(\) has no argument 'colums'; did you mean 'columns'\?$"
    ):
        ember.data.read_parquet(tmp_path / "missing.parquet", colums=["x"])


def test_writers_check_pyarrow_options_before_any_work_and_write_nothing(tmp_path):
    ds = ember.data.range(5)
    with pytest.raises(
        ConfigError,
        match=r"^Dataset\.write_parquet\(\) has no argument 'compresion'; did you mean "
        r"'compression'\?$",
    ):
        ds.write_parquet(tmp_path / "a", compresion="zstd")
    with pytest.raises(
        ConfigError, match=r"^Dataset\.write_parquet\(\) does not support Ray Data's catalog="
    ):
        ds.write_parquet(tmp_path / "a", catalog=object())
    assert not (tmp_path / "a").exists() or not any((tmp_path / "a").iterdir())
    import pyarrow.parquet as pq

    (path,) = ds.write_parquet(tmp_path / "b", compression="zstd", ray_remote_args={"num_cpus": 1})
    assert pq.ParquetFile(path).metadata.row_group(0).column(0).compression == "ZSTD"
    assert pq.read_table(path).column("id").to_pylist() == list(range(5))


def test_scheduling_only_ray_arguments_are_accepted_and_change_nothing():
    ds = ember.data.range(10)
    plain = ds.map(lambda r: {"y": r["id"] * 2}).take_all()
    assert (
        ds.map(lambda r: {"y": r["id"] * 2}, num_cpus=0.5, memory=2**20, runtime_env={}).take_all() == plain
    )
    batches = ds.map_batches(
        lambda b: {"y": b["id"] * 2},
        batch_size=4,
        max_task_retries=0,
        scheduling_strategy="SPREAD",
        ray_remote_args_fn=None,
    )
    assert np.concatenate([b["y"] for b in batches.iter_batches(batch_size=None)]).tolist() == [
        r["y"] for r in plain
    ]
    assert len(list(ds.iter_torch_batches(batch_size=5, pin_memory=False))) == 2


def test_the_accepted_names_are_ray_datas_own():
    if importlib.util.find_spec("ray") is None:
        pytest.skip("ray is not installed: nothing to compare the lists with")
    import ray.data
    from ray._common import ray_option_utils

    ray_names = set(ray_option_utils.task_options) | set(ray_option_utils.actor_options)
    for source in (ray.data.Dataset, ray.data):
        for name in dir(source):
            member = getattr(source, name)
            if callable(member) and not name.startswith("_"):
                try:
                    ray_names |= set(inspect.signature(member).parameters)
                except (TypeError, ValueError):
                    continue
    assert ray_names >= SCHEDULING_ONLY, f"not Ray Data arguments: {sorted(SCHEDULING_ONLY - ray_names)}"
    assert ray_names >= UNSUPPORTED, f"not Ray Data arguments: {sorted(UNSUPPORTED - ray_names)}"
    assert ray_names >= RAY_REMOTE_OPTIONS, f"not Ray arguments: {sorted(RAY_REMOTE_OPTIONS - ray_names)}"


def _ray_and_ember_callables(tmp_path):
    """(label, Ray's callable, ember's) for every public function of ray.data and method of its Dataset,
    DataIterator and GroupedData that ember.data also has."""
    import ray.data
    from ray.data.grouped_data import GroupedData
    from ray.data.iterator import DataIterator

    ds = ember.data.range(4)
    owners = [
        ("", ray.data, ember.data),
        ("Dataset.", ray.data.Dataset, ds),
        ("DataIterator.", DataIterator, ds.iterator()),
        ("GroupedData.", GroupedData, ds.groupby("id")),
    ]
    for prefix, ray_owner, ember_owner in owners:
        for name in dir(ray_owner):
            ray_member = getattr(ray_owner, name)
            if name.startswith("_") or not callable(ray_member) or not hasattr(ember_owner, name):
                continue
            if prefix or inspect.isfunction(ray_member):
                yield prefix + name, ray_member, getattr(ember_owner, name)


def _refusal_of(label, ember_fn, name, tmp_path):
    """How ember's ``ember_fn`` answers Ray's keyword ``name``: the message of a ConfigError that names it,
    "accepted", or "TypeError: ..." (refused without saying why in ember's words)."""
    call = {name: object()}
    if label.startswith("Dataset.write_"):  # the writers check their options once they know the path
        call.update(path=str(tmp_path / "out"))
        if label in ("Dataset.write_images", "Dataset.write_numpy"):
            call.update(column="id")
    try:
        ember_fn(**call)
    except ConfigError as error:
        if f"'{name}'" in str(error) or f"{name}=" in str(error):
            return str(error)
    except TypeError as error:
        if "unexpected keyword argument" in str(error):
            return f"TypeError: {error}"
    except Exception:  # noqa: BLE001 - the option passed the argument check; the dummy value failed later
        pass
    return "accepted"


def test_unsupported_lists_exactly_the_ray_arguments_ember_refuses(local_ray, tmp_path):
    """Every Ray Data keyword that ember's counterpart refuses is in UNSUPPORTED (so the message says it
    is Ray's, refused on purpose), every name there is refused somewhere Ray takes it, and none is
    refused with a bare TypeError."""
    refused, bare = {}, []
    for label, ray_fn, ember_fn in _ray_and_ember_callables(tmp_path):
        ours = inspect.signature(ember_fn).parameters
        for name, parameter in inspect.signature(ray_fn).parameters.items():
            if (
                name.startswith("_")
                or name in ours
                or name == "self"
                or parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD)
            ):
                continue
            answer = _refusal_of(label, ember_fn, name, tmp_path)
            if answer.startswith("TypeError"):
                bare.append((label, name, answer))
            elif answer != "accepted":
                refused.setdefault(name, []).append((label, answer))
    assert not bare, f"refused without a one-line ConfigError: {bare}"
    assert set(refused) == UNSUPPORTED, (
        f"refused but not in UNSUPPORTED: {sorted(set(refused) - UNSUPPORTED)}; "
        f"in UNSUPPORTED but accepted: {sorted(UNSUPPORTED - set(refused))}"
    )
    for name, answers in refused.items():
        for label, answer in answers:
            assert f"does not support Ray Data's {name}=" in answer, (label, answer)


@pytest.mark.parametrize("n", [1, 3, 9])
def test_override_num_blocks_cuts_in_memory_data_as_ray_does(n, local_ray):
    import pandas as pd
    import pyarrow as pa

    def blocks(ds):  # the non-empty blocks: ember drops empty ones (n > rows) as it streams
        return [b["a"].tolist() for b in ds.iter_batches(batch_size=None) if len(b["a"])]

    table = pa.table({"a": list(range(7))})
    assert blocks(ember.data.from_arrow(table, override_num_blocks=n)) == blocks(
        local_ray.data.from_arrow(table, override_num_blocks=n)
    )
    # Ray's from_pandas cuts with np.array_split, which on this numpy returns ndarrays its blocks reject:
    # the cut is compared with np.array_split's own
    frames = [pd.DataFrame({"a": list(range(4))}), pd.DataFrame({"a": list(range(4, 7))})]
    parts = [part.tolist() for part in np.array_split(np.arange(7), n)]
    assert blocks(ember.data.from_pandas(frames, override_num_blocks=n)) == [p for p in parts if p]
