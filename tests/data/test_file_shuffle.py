"""The file readers' ``shuffle=`` and ``arrow_open_stream_args=``, against Ray Data on the same files.

Ray shuffles the files' order once per execution; ember's execution index is the epoch, so the
orders of an iterator's epochs 0, 1, 2 are Ray's, and an epoch's order is reproducible (resume)."""

from __future__ import annotations

import gzip
import os

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
import pytest  # noqa: E402

import ember.data  # noqa: E402
from ember.data import FileShuffleConfig  # noqa: E402
from ember.errors import ConfigError  # noqa: E402

FILES = 8


@pytest.fixture
def ray_data(local_ray):
    context = local_ray.data.DataContext.get_current()
    before = context.execution_options.preserve_order
    context.execution_options.preserve_order = True
    yield local_ray.data
    context.execution_options.preserve_order = before


def _write(folder, kind: str) -> str:
    folder.mkdir()
    for i in range(FILES):
        if kind == "csv":
            (folder / f"{i}.csv").write_text(f"f\n{i}\n{i + 100}\n")
        elif kind == "json":
            (folder / f"{i}.jsonl").write_text(f'{{"f": {i}}}\n{{"f": {i + 100}}}\n')
        elif kind == "text":
            (folder / f"{i}.txt").write_text(f"{i}\n{i + 100}\n")
        elif kind == "numpy":
            np.save(folder / f"{i}.npy", np.array([i, i + 100]))
        elif kind == "binary":
            (folder / f"{i}.bin").write_bytes(bytes([i]))
        elif kind == "parquet":
            pq.write_table(pa.table({"f": [i, i + 100]}), folder / f"{i}.parquet")
    return str(folder)


READERS = {
    "csv": "read_csv",
    "json": "read_json",
    "text": "read_text",
    "numpy": "read_numpy",
    "binary": "read_binary_files",
    "parquet": "read_parquet",
}


def _epochs(iterable, n):
    """The rows of n passes (epochs 0..n-1) of one iterator."""
    out = []
    for _ in range(n):
        out.append([value for batch in iterable for value in _batch_values(batch)])
    return out


def _batch_values(batch):
    column = batch[next(iter(batch))]
    return [v.tolist() if isinstance(v, np.ndarray) else v for v in column]


@pytest.mark.parametrize("kind", sorted(READERS))
@pytest.mark.parametrize("reseed", [False, True])
def test_a_seeded_file_shuffle_gives_rays_order_in_every_epoch(tmp_path, ray_data, kind, reseed):
    folder = _write(tmp_path / kind, kind)
    read = READERS[kind]
    ours = getattr(ember.data, read)(folder, shuffle=FileShuffleConfig(seed=7, reseed_after_execution=reseed))
    theirs = getattr(ray_data, read)(
        folder, shuffle=ray_data.FileShuffleConfig(seed=7, reseed_after_execution=reseed)
    )
    our_epochs = _epochs(ours.iter_batches(batch_size=None), 3)
    their_iterator = theirs.iterator()
    their_epochs = [
        [v for b in their_iterator.iter_batches(batch_size=None) for v in _batch_values(b)] for _ in range(3)
    ]
    assert our_epochs == their_epochs
    assert (our_epochs[0] == our_epochs[1]) is not reseed  # reseeding draws a new order each epoch
    assert sorted(map(str, our_epochs[0])) == sorted(
        map(str, _epochs(getattr(ember.data, read)(folder).iter_batches(batch_size=None), 1)[0])
    )


def test_an_epochs_order_is_reproducible_and_files_keep_their_rows_together(tmp_path):
    folder = _write(tmp_path / "csv", "csv")
    ds = ember.data.read_csv(folder, shuffle="files")
    batches = ds.iter_batches(batch_size=None)
    start = batches.state_dict()  # no seed given: each run draws one, kept in the iterator's state
    first = [[int(f) for b in batches for f in b["f"]] for _ in range(3)]
    replay = ds.iter_batches(batch_size=None)
    replay.load_state_dict(start)
    again = [[int(f) for b in replay for f in b["f"]] for _ in range(3)]
    assert first == again  # a pure function of (dataset, state, epoch): what resuming an epoch needs
    assert len({tuple(order) for order in first}) == 3
    for order in first:
        assert sorted(order) == sorted(list(range(FILES)) + list(range(100, 100 + FILES)))
        assert all(
            order[i] + 100 == order[i + 1] for i in range(0, len(order), 2)
        )  # a file's rows stay together
    assert ds.count() == 2 * FILES
    shards = [[r["f"] for r in s.iter_rows()] for s in ds.streaming_split(2, equal=True)]
    assert sorted(shards[0] + shards[1]) == sorted(first[0])


def test_shuffle_values_ray_refuses_are_refused(tmp_path, ray_data):
    folder = _write(tmp_path / "csv", "csv")
    for read in (ember.data.read_csv, ray_data.read_csv):
        with pytest.raises(ValueError, match="Invalid value for 'shuffle'|invalid value for 'shuffle'"):
            read(folder, shuffle="rows")
    for config in (FileShuffleConfig, ray_data.FileShuffleConfig):
        with pytest.raises(
            ValueError, match="seed must be an integer or None|Seed must be an integer or None"
        ):
            config(seed=1.5)
    with pytest.raises(ConfigError, match="invalid value for 'shuffle'"):
        ember.data.read_parquet(folder, shuffle=True)


def test_rays_own_file_shuffle_config_is_taken(tmp_path, ray_data):
    folder = _write(tmp_path / "text", "text")
    ours = ember.data.read_text(
        folder, shuffle=ray_data.FileShuffleConfig(seed=3, reseed_after_execution=False)
    )
    theirs = ray_data.read_text(
        folder, shuffle=ray_data.FileShuffleConfig(seed=3, reseed_after_execution=False)
    )
    assert ours.take_all() == theirs.take_all()


def test_the_first_epochs_order_is_the_same_on_the_ray_backend(tmp_path, local_ray):
    folder = _write(tmp_path / "json", "json")
    ds = ember.data.read_json(folder, shuffle=FileShuffleConfig(seed=11))
    local = ds.take_all()
    context = ember.data.DataContext.get_current()
    before, context.execution = context.execution, "ray"
    try:
        assert ds.take_all() == local
    finally:
        context.execution = before


def test_arrow_open_stream_args_open_every_file_as_ray_does(tmp_path, ray_data):
    folder = tmp_path / "gz"
    folder.mkdir()
    (folder / "a.csv").write_bytes(gzip.compress(b"x,y\n1,a\n2,b\n"))
    (folder / "b.txt").write_bytes(gzip.compress(b"hello\nworld\n"))
    args = {"compression": "gzip"}
    assert (
        ember.data.read_csv(str(folder / "a.csv"), arrow_open_stream_args=args).take_all()
        == ray_data.read_csv(str(folder / "a.csv"), arrow_open_stream_args=args).take_all()
    )
    assert (
        ember.data.read_text(str(folder / "b.txt"), arrow_open_stream_args=args).take_all()
        == ray_data.read_text(str(folder / "b.txt"), arrow_open_stream_args=args).take_all()
        == [{"text": "hello"}, {"text": "world"}]
    )
    assert (
        ember.data.read_binary_files(str(folder / "b.txt"), arrow_open_stream_args=args).take_all()
        == ray_data.read_binary_files(str(folder / "b.txt"), arrow_open_stream_args=args).take_all()
    )
    plain = tmp_path / "p.csv"
    plain.write_text("x\n1\n")
    assert ember.data.read_csv(str(plain), arrow_open_stream_args={"buffer_size": 1024}).take_all() == [
        {"x": 1}
    ]
    with pytest.raises(ConfigError, match="arrow_open_stream_args"):
        ember.data.read_csv(str(plain), arrow_open_stream_args={"compresion": "gzip"})
