"""Orchestration: the Trainer and the loops it runs."""

from ember.trainer.trainer import Trainer

__all__ = ["Trainer"]
