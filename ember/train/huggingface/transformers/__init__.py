"""Train a `transformers.Trainer` inside `ember.train.TorchTrainer` workers (Ray's
`ray.train.huggingface.transformers`).

Change `ray.train.huggingface.transformers` to `ember.train.huggingface.transformers` and
`ray.train` to `ember.train`; the training function stays the same:

    >>> from ember.train.huggingface.transformers import RayTrainReportCallback, prepare_trainer
    >>> def train_loop_per_worker(config):  # doctest: +SKIP
    ...     trainer = transformers.Trainer(model=model, args=args, train_dataset=train, eval_dataset=test)
    ...     trainer.add_callback(RayTrainReportCallback())   # metrics + checkpoint to ember.train.report
    ...     trainer = prepare_trainer(trainer)               # ember.data shards as datasets
    ...     trainer.train()

Importing this module imports transformers (`pip install 'ember[huggingface]'`).
"""

from ember.train.huggingface.transformers.callback import RayTrainReportCallback
from ember.train.huggingface.transformers.prepare import prepare_trainer

__all__ = ["RayTrainReportCallback", "prepare_trainer"]
