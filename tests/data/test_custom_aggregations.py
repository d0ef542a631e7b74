"""Ray Data's aggregation guide ("Aggregating Data", docs.ray.io/en/latest/data/aggregating-data.html):
its custom Mean, an ``AggregateFnV2`` subclass that reads its blocks through
``ray.data.block.BlockAccessor``, written here as the page writes it with ``ray.data`` replaced by
``ember.data``, and run on the page's dataset (``range(100)`` with ``group_key = id % 3``) whole and per
group. Where Ray is installed the same class (imports pointing at Ray) gives the same results there.
"""

from __future__ import annotations

import math
import sys
import textwrap

import pytest

import ember.data

# The page's example, imports swapped (the class body is the page's, line for line).
GUIDE_MEAN = textwrap.dedent('''
    import numpy as np
    from {pkg}.aggregate import AggregateFnV2
    from {pkg}.block import Block, BlockAccessor, AggType, U
    import pyarrow.compute as pc
    from typing import List, Optional

    class Mean(AggregateFnV2):
        """Defines mean aggregation."""

        def __init__(
            self,
            on: Optional[str] = None,
            ignore_nulls: bool = True,
            alias_name: Optional[str] = None,
        ):
            super().__init__(
                alias_name if alias_name else f"mean({{str(on)}})",
                on=on,
                ignore_nulls=ignore_nulls,
                zero_factory=lambda: list([0, 0]),  # noqa: C410
            )

        def aggregate_block(self, block: Block) -> AggType:
            block_acc = BlockAccessor.for_block(block)
            count = block_acc.count(self._target_col_name, self._ignore_nulls)

            if count == 0 or count is None:
                return None

            sum_ = block_acc.sum(self._target_col_name, self._ignore_nulls)

            if sum_ is None or (isinstance(sum_, float) and np.isnan(sum_)):
                return sum_

            return [sum_, count]

        def combine(self, current_accumulator: AggType, new: AggType) -> AggType:
            return [current_accumulator[0] + new[0], current_accumulator[1] + new[1]]

        def finalize(self, accumulator: AggType) -> Optional[U]:
            if accumulator[1] == 0:
                return np.nan

            return accumulator[0] / accumulator[1]
''')


def _guide_mean(pkg: str) -> type:
    namespace: dict = {"__name__": __name__}
    exec(compile(GUIDE_MEAN.format(pkg=pkg), f"<aggregating-data.html with {pkg}>", "exec"), namespace)
    mean = namespace["Mean"]
    mean.__module__ = __name__  # its instances travel to Ray's workers by value, with this module
    return mean


def _page_dataset(rd):
    """The page's dataset: range(100) with group_key = id % 3 (the page's add_column line)."""
    return rd.range(100).add_column("group_key", lambda x: x["id"].to_numpy() % 3)


def _results(rd, mean_class):
    ds = _page_dataset(rd)
    whole = ds.aggregate(mean_class(on="id"))
    groups = ds.groupby("group_key").aggregate(mean_class(on="id")).take_all()
    named = ds.aggregate(mean_class(on="id", alias_name="avg"))
    with_nulls = rd.from_items([{"v": 1.0}, {"v": None}, {"v": 5.0}])
    skipping = with_nulls.aggregate(mean_class(on="v"))
    keeping = with_nulls.aggregate(mean_class(on="v", ignore_nulls=False))
    return whole, sorted(groups, key=lambda r: r["group_key"]), named, skipping, keeping


def test_the_guides_custom_mean_runs_on_ember_data():
    whole, groups, named, skipping, keeping = _results(ember.data, _guide_mean("ember.data"))
    assert whole == {"mean(id)": 49.5}
    assert groups == [
        {"group_key": 0, "mean(id)": 49.5},
        {"group_key": 1, "mean(id)": 49.0},
        {"group_key": 2, "mean(id)": 50.0},
    ]
    assert named == {"avg": 49.5}
    assert skipping == {"mean(v)": 3.0}
    assert keeping["mean(v)"] is None or math.isnan(keeping["mean(v)"])


def test_block_accessor_reads_a_pandas_block_like_an_arrow_one():
    import pandas as pd
    import pyarrow as pa

    from ember.data.block import BlockAccessor

    frame = pd.DataFrame({"x": [1.0, None, 4.0]})
    for block in (frame, pa.Table.from_pandas(frame)):
        acc = BlockAccessor.for_block(block)
        assert (acc.count("x", True), acc.count("x", False), acc.sum("x", True), acc.sum("x", False)) == (
            2,
            3,
            5.0,
            None,
        )
        assert acc.min("x", True) == 1.0 and acc.max("x", True) == 4.0 and acc.mean("x", True) == 2.5
        assert acc.sum_of_squared_diffs_from_mean("x", True) == 4.5
        assert acc.column_names() == ["x"] and acc.num_rows() == 3


def test_block_accessor_names_a_missing_column():
    import pyarrow as pa

    from ember.data.block import BlockAccessor
    from ember.errors import ConfigError

    with pytest.raises(ConfigError, match=r"no column 'y'; the block has columns \['x'\]"):
        BlockAccessor.for_block(pa.table({"x": [1]})).sum("y", True)


def test_same_results_as_ray(ordered_ray):
    ordered_ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # Ray's workers cannot import it
    ray_results = _results(ordered_ray.data, _guide_mean("ray.data"))
    ember_results = _results(ember.data, _guide_mean("ember.data"))
    assert ray_results[:4] == ember_results[:4]
    ray_keeping, ember_keeping = ray_results[4]["mean(v)"], ember_results[4]["mean(v)"]
    assert (ray_keeping is None or math.isnan(ray_keeping)) and (
        ember_keeping is None or math.isnan(ember_keeping)
    )
