"""What a Trainer is doing: ``trainer.state`` with Lightning's ``TrainerStatus``, ``TrainerFn`` and
``RunningStage`` (string enums: ``trainer.state.fn == "fit"`` holds)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class _StrEnum(str, Enum):
    def __str__(self) -> str:
        return self.value

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            return self.value.lower() == other.lower()
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.value.lower())


class TrainerStatus(_StrEnum):
    """Whether the Trainer is being built, running, or has finished or been interrupted."""

    INITIALIZING = "initializing"
    RUNNING = "running"
    FINISHED = "finished"
    INTERRUPTED = "interrupted"

    @property
    def stopped(self) -> bool:
        return self in (TrainerStatus.FINISHED, TrainerStatus.INTERRUPTED)


class TrainerFn(_StrEnum):
    """The user-facing call running: fit, validate, test or predict."""

    FITTING = "fit"
    VALIDATING = "validate"
    TESTING = "test"
    PREDICTING = "predict"


class RunningStage(_StrEnum):
    """The loop running inside that call (fit runs sanity checking, training and validation)."""

    TRAINING = "train"
    SANITY_CHECKING = "sanity_check"
    VALIDATING = "validate"
    TESTING = "test"
    PREDICTING = "predict"

    @property
    def evaluating(self) -> bool:
        return self in (RunningStage.VALIDATING, RunningStage.TESTING, RunningStage.SANITY_CHECKING)

    @property
    def dataloader_prefix(self) -> str | None:
        return "val" if self in (RunningStage.VALIDATING, RunningStage.SANITY_CHECKING) else self.value


@dataclass
class TrainerState:
    """``trainer.state``: status, function and stage.

    >>> state = TrainerState(TrainerStatus.RUNNING, TrainerFn.FITTING, RunningStage.TRAINING)
    >>> state.fn == "fit", state.stage == "train", state.stopped
    (True, True, False)
    """

    status: TrainerStatus = TrainerStatus.INITIALIZING
    fn: TrainerFn | None = None
    stage: RunningStage | None = None

    @property
    def finished(self) -> bool:
        return self.status == TrainerStatus.FINISHED

    @property
    def stopped(self) -> bool:
        return self.status.stopped
