"""Benchmark 4g: function calls per batch of a parquet feed — the deterministic figure behind benchmark 4.

Benchmark 4 (bench_data_feed.py) times ember.data against streaming the file with pyarrow; on this
noisy 2-core machine a few per cent cannot be resolved by a clock. The work a feed adds per batch can:
cProfile counts every function call (Python and C) made while one full pass runs, after an untimed
warm-up pass. The pass is the benchmark's: Fashion-MNIST train parquet (60,000 rows, uint8 [28, 28]
images, int64 labels) to dicts of torch tensors in batches of 256 (235 batches), consumed by
``for _ in batches: n += 1``. Cases: ember.data's ``iter_torch_batches`` (``prefetch_batches=0``, so
every call happens on the counted thread; with a local shuffle buffer of 2,048 rows too) and the
pyarrow bound, ``bench_data_feed.pyarrow_slices`` (stream 8,192-row record batches, convert each column
once, hand out views). The figure is calls per batch; lower is better, the same on every run.
"""

from __future__ import annotations

import cProfile
import pstats
from collections.abc import Callable, Iterable

from bench_data_feed import BATCH, pyarrow_slices
from harness import Bench, main, new_bench, quiet, version
from workloads import fashion_parquet


def calls_per_batch(batches: Callable[[], Iterable[object]]) -> float:
    """cProfile's total calls over one full pass (after a warm-up pass), divided by the batches."""
    for _ in batches():
        pass
    profile = cProfile.Profile()
    profile.enable()
    count = 0
    for _ in batches():
        count += 1
    profile.disable()
    return pstats.Stats(profile).total_calls / count


def run(quick: bool) -> Bench:
    path = fashion_parquet()
    bench = new_bench(
        "data_calls",
        f"Function calls per batch of {BATCH}: Fashion-MNIST parquet to torch (cProfile, one pass)",
        "calls/batch",
    )
    ember_label, shuffled_label = (
        "ember.data iter_torch_batches",
        "ember.data, local_shuffle_buffer_size=2048",
    )
    bound = "pyarrow iter_batches + slice (upper bound)"
    try:
        import ember.data
    except ImportError:
        ember = None
    with quiet():
        for label, options in (
            (ember_label, {}),
            (shuffled_label, {"local_shuffle_buffer_size": 2048, "local_shuffle_seed": 0}),
        ):
            case = bench.case(label, version("ember"))
            if ember is None:
                case.status = "n/a (not built)"
                continue
            case.samples = [
                calls_per_batch(
                    lambda options=options: ember.data.read_parquet(str(path)).iter_torch_batches(
                        batch_size=BATCH, prefetch_batches=0, **options
                    )
                )
            ]
        bench.case(bound, version("pyarrow")).samples = [calls_per_batch(lambda: pyarrow_slices(path))]
    bench.compare(ember_label, bound)
    bench.compare(shuffled_label, bound)
    return bench


if __name__ == "__main__":
    main(run)
