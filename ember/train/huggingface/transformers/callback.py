"""RayTrainReportCallback: a transformers callback that reports metrics and each saved checkpoint."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from ember.fs import copy_tree
from ember.train.checkpoint_folder import Checkpoint
from ember.train.context import get_context, report
from ember.train.huggingface.transformers._require import transformers


class RayTrainReportCallback(transformers.TrainerCallback):
    """After each checkpoint the `transformers.Trainer` saves, report the metrics logged so far (merged
    from `state.log_history`) and that checkpoint to `ember.train.report` (Ray's callback).

    The reported checkpoint folder holds the Hugging Face checkpoint under `checkpoint/`:

        checkpoint_<time>/     ember.train Checkpoint (Ray's name)
        └─ checkpoint/         Hugging Face checkpoint (model, optimizer, trainer_state.json, ...)

    Save and evaluate on the same schedule (both "epoch", or save_steps a multiple of eval_steps) so
    the reported metrics are current. Every worker reports (the call is collective); the checkpoint
    files come from global rank zero, the process that wrote them.

    Example:
        >>> from ember.train.huggingface.transformers import RayTrainReportCallback
        >>> callback = RayTrainReportCallback()
    """

    CHECKPOINT_NAME = "checkpoint"

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        metrics: dict[str, Any] = {}
        for entry in state.log_history:
            metrics.update(entry)
        writer = (
            get_context().get_world_rank() == 0
        )  # the Trainer saves on rank zero; others may see it half-written
        source = transformers.trainer_utils.get_last_checkpoint(args.output_dir) if writer else None
        with tempfile.TemporaryDirectory() as tmp:
            checkpoint = None
            if source is not None:
                copy_tree(source, Path(tmp, self.CHECKPOINT_NAME))
                checkpoint = Checkpoint.from_directory(tmp)
            report(metrics, checkpoint=checkpoint)
