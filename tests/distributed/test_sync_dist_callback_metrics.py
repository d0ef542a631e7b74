"""Under 2-process DDP, a value logged with sync_dist=True is the reduced value in every rank's
`trainer.callback_metrics` (mid-epoch, in the epoch-end hooks, after the run), as in Lightning 2.6: the same
script runs under both and each rank's view must match Lightning's, value for value."""

from __future__ import annotations

import json

import pytest
from _dist import assert_ok, run_ranks

pytest.importorskip("lightning.pytorch")


@pytest.mark.slow
def test_sync_dist_values_in_callback_metrics_are_reduced_on_every_rank_as_in_lightning(tmp_path):
    views = {}
    for library in ("lightning", "ember"):
        out = tmp_path / library
        assert_ok(run_ranks("sync_dist_metrics.py", out, library, ranks=2, timeout=240))
        views[library] = [json.loads((out / f"{library}-{rank}.json").read_text()) for rank in (0, 1)]
    for rank in (0, 1):
        assert views["ember"][rank] == views["lightning"][rank], f"rank {rank}"
    ember0, ember1 = views["ember"]
    for moment in ("train_batch_end", "train_epoch_end", "validation_epoch_end", "after_fit"):
        shared = {k: v for k, v in ember0[moment].items() if k != "own"}
        assert shared == {k: v for k, v in ember1[moment].items() if k != "own"}, (
            moment
        )  # one value on all ranks
    assert ember0["after_fit"]["own"] != ember1["after_fit"]["own"]  # (the unsynced value stays each rank's)
    assert ember0["after_fit"]["s_sum_epoch"] == 9.0  # 3 steps of the ranks' 1 + 2, reduced once at the end
    assert "s" not in ember0["after_fit"]  # a name ending in "_epoch" that was not forked has no alias
