"""Tuning: Lightning's ``Tuner`` (``lr_find``, ``scale_batch_size``) and the ``LearningRateFinder`` and
``BatchSizeFinder`` callbacks. Above the Trainer (the searches run one); nothing below imports it."""

from ember.tuner.batch_size import BatchSizeFinder
from ember.tuner.lr_finder import LearningRateFinder, LRFinder
from ember.tuner.tuner import Tuner

__all__ = ["BatchSizeFinder", "LRFinder", "LearningRateFinder", "Tuner"]
