"""trainer.state's enums compare with Lightning's strings and sort stages as Lightning does."""

from __future__ import annotations

import doctest

import ember.trainer.states
from ember.trainer.states import RunningStage, TrainerFn, TrainerState, TrainerStatus


def test_enums_equal_their_strings_case_insensitively():
    assert (
        TrainerFn.FITTING == "fit" and TrainerFn.FITTING == "FIT" and TrainerFn("test") is TrainerFn.TESTING
    )
    assert {RunningStage.TRAINING: 1}["train"] == 1
    assert str(RunningStage.SANITY_CHECKING) == "sanity_check"


def test_stage_properties():
    assert [s.evaluating for s in RunningStage] == [False, True, True, True, False]
    assert [s.dataloader_prefix for s in RunningStage] == ["train", "val", "val", "test", "predict"]
    assert [s.stopped for s in TrainerStatus] == [False, False, True, True]
    assert TrainerState(TrainerStatus.FINISHED).finished and not TrainerState().stopped


def test_docstring_examples():
    result = doctest.testmod(ember.trainer.states)
    assert result.attempted > 0 and result.failed == 0
