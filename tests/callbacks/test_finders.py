"""BatchSizeFinder and LearningRateFinder are importable from ember.callbacks (as from Lightning's callbacks),
the same classes ember.tuner exports; the learning-rate finder taken from there runs in a real fit."""

from __future__ import annotations

from _twin import Body, fit, make_module

import ember.callbacks
import ember.tuner


def test_the_same_classes_as_ember_tuner():
    assert ember.callbacks.BatchSizeFinder is ember.tuner.BatchSizeFinder
    assert ember.callbacks.LearningRateFinder is ember.tuner.LearningRateFinder
    assert issubclass(ember.callbacks.LearningRateFinder, ember.callbacks.Callback)


def test_learning_rate_finder_from_callbacks_sets_the_suggestion(tmp_path):
    class WithLr(Body):
        def configure_optimizers(self):
            import torch

            return torch.optim.SGD(self.parameters(), lr=self.lr)

    module = make_module("ember", WithLr, lr=0.1)
    finder = ember.callbacks.LearningRateFinder(
        min_lr=1e-4, max_lr=1.0, num_training_steps=20, early_stop_threshold=None
    )
    trainer = fit("ember", tmp_path, [finder], module=module, max_epochs=3)
    suggestion = finder.optimal_lr.suggestion()
    assert len(finder.optimal_lr.results["lr"]) == 20
    assert module.lr == suggestion != 0.1
    assert trainer.optimizers[0].param_groups[0]["lr"] == suggestion  # the fit went on with it
