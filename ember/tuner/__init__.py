"""Tuning: Lightning's ``Tuner`` (``lr_find``, ``scale_batch_size``), and the ``LearningRateFinder`` and
``BatchSizeFinder`` callbacks under the names ember.tuner has always had. The searches and the callbacks live
in ember/callbacks (lr_finder.py, batch_size_finder.py: they build their search Trainer as ``type(trainer)``,
so they import nothing above the callbacks, and ``ember.callbacks`` offers them as Lightning's callbacks do).
Above the Trainer; nothing below imports it."""

from ember.callbacks.batch_size_finder import BatchSizeFinder
from ember.callbacks.lr_finder import LearningRateFinder, LRFinder
from ember.tuner.tuner import Tuner

__all__ = ["BatchSizeFinder", "LRFinder", "LearningRateFinder", "Tuner"]
