"""Batch inference: run a trained Module over a dataset on a pool of workers, resumably.

- ``CheckpointPredictor``: the predictor class (``__init__`` loads the model once per worker from a
  checkpoint, safely; ``__call__`` maps a batch dict to an output dict) for ``map_batches``.
- ``predict_to_parquet``: the ``ember predict`` job: read parquet or images with ember.data, run the
  predictor on a worker pool (or Ray Data actors), write one parquet file per input fragment with a
  manifest (``ember.data.write_resumable``), so a killed job resumes where it stopped.

This package sits beside ``cli`` and ``trainer`` (it uses ``Module``, checkpoints and ember.data);
``ember.data`` itself knows nothing about models.
"""

from ember.inference.job import PredictSummary, predict_to_parquet
from ember.inference.predictor import CheckpointPredictor, resolve_module_class

__all__ = ["CheckpointPredictor", "PredictSummary", "predict_to_parquet", "resolve_module_class"]
