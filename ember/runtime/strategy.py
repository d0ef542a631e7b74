"""TRANSITIONAL: the single-device strategy moved to `ember.runtime.strategies.single_device`.

This name is kept only because `ember/trainer/trainer.py` (rebuilt in parallel, issue 12) still imports
it; delete this file once the Trainer imports from `ember.runtime.strategies`.
"""

from ember.runtime.strategies.single_device import SingleDeviceStrategy

__all__ = ["SingleDeviceStrategy"]
