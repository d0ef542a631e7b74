"""save_hyperparameters / hparams / hparams_initial on DataModules, as Lightning's HyperparametersMixin."""

from __future__ import annotations

import argparse

import pytest
import torch

import ember
from ember.hyperparameters import AttributeDict, accepted_arguments


class Digits(ember.DataModule):
    def __init__(self, batch_size: int = 32, root: str = "data", **options):
        super().__init__()
        self.save_hyperparameters()


def test_a_datamodule_saves_its_init_arguments():
    data = Digits(batch_size=64, shuffle=False)
    assert data.hparams == {"batch_size": 64, "root": "data", "shuffle": False}
    assert data.hparams.batch_size == 64 and isinstance(data.hparams, AttributeDict)


def test_hparams_initial_does_not_follow_later_edits():
    data = Digits(batch_size=8)
    data.hparams.batch_size = 16
    assert data.hparams.batch_size == 16 and data.hparams_initial.batch_size == 8


def test_names_ignore_dicts_and_namespaces():
    class Picky(ember.DataModule):
        def __init__(self, a=1, b=2, model=None):
            super().__init__()
            self.save_hyperparameters("a", "model", ignore="model")

    assert Picky().hparams == {"a": 1}

    class FromDict(ember.DataModule):
        def __init__(self, config):
            super().__init__()
            self.save_hyperparameters(config)

    assert FromDict({"x": 1}).hparams == {"x": 1}
    assert FromDict(argparse.Namespace(y=2)).hparams == {"y": 2}


def test_a_datamodule_that_skips_super_init_still_has_hparams():
    class NoSuper(ember.DataModule):
        def __init__(self, size=3):  # Lightning users sometimes forget super().__init__()
            self.save_hyperparameters()

    assert NoSuper().hparams == {"size": 3}
    assert ember.DataModule().hparams == {}


def test_accepted_arguments_keeps_what_init_takes():
    assert accepted_arguments(Digits, {"batch_size": 1, "other": 2}) == {
        "batch_size": 1,
        "other": 2,
    }  # **options

    class Strict(ember.DataModule):
        def __init__(self, batch_size=1):
            super().__init__()

    assert accepted_arguments(Strict, {"batch_size": 1, "other": 2}) == {"batch_size": 1}


def test_module_hparams_unchanged():
    class Net(ember.Module):
        def __init__(self, lr=0.1):
            super().__init__()
            self.save_hyperparameters()
            self.layer = torch.nn.Linear(2, 2)

    assert Net(lr=0.5).hparams.lr == 0.5


@pytest.mark.parametrize("module_name", ["ember.hyperparameters"])
def test_docstring_examples(module_name):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module_name))
    assert result.attempted > 0 and result.failed == 0


def _hierarchy(library):
    """A base class saves its hyperparameters; subclasses call it through super().__init__ (Lightning's docs:
    the hparams hold every level's arguments, the subclass's call winning where both name one)."""

    class Base(library.LightningModule):
        def __init__(self, a=1, b=2, **options):
            super().__init__()
            self.save_hyperparameters()

    class Child(Base):
        def __init__(self, c=3, **options):
            super().__init__(a=10, **options)

    class GrandChild(Child):
        def __init__(self, d=4):
            super().__init__(c=30, b=20)

    return [dict(Child(c=5, b=7).hparams), dict(GrandChild(d=8).hparams), dict(Base().hparams)]


def test_a_base_class_saving_hyperparameters_records_its_subclasses_arguments_as_lightning():
    lightning = pytest.importorskip("lightning.pytorch", reason="Lightning is a test-only dependency")
    assert _hierarchy(ember) == _hierarchy(lightning)
    assert _hierarchy(ember)[1] == {"a": 10, "b": 20, "c": 30, "d": 8}


def test_a_module_built_inside_another_modules_init_keeps_only_its_own_arguments():
    class Leaf(ember.Module):
        def __init__(self, x=1):
            super().__init__()
            self.save_hyperparameters()

    class Holder(ember.Module):
        def __init__(self, y=2):
            super().__init__()
            self.leaf = Leaf(x=4)

    # Lightning 2.6.6 merges Holder's y into the leaf's hparams (it walks every HyperparametersMixin __init__
    # frame); ember walks only the leaf's own class hierarchy
    assert dict(Holder().leaf.hparams) == {"x": 4}
