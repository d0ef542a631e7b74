"""`ember.demos` is `lightning.pytorch.demos`' boring classes: the same data after the same seed, the same
layers, and a fit of each that ends with the same weights as Lightning's."""

from __future__ import annotations

import pytest
import torch

import ember
from ember.demos.boring_classes import (
    BoringDataModule,
    BoringModel,
    DemoModel,
    ManualOptimBoringModel,
    RandomDataset,
    RandomDictDataset,
    RandomIterableDataset,
    RandomIterableDatasetWithLen,
)

lightning = pytest.importorskip("lightning.pytorch", reason="Lightning is a test-only dependency")
from lightning.pytorch.demos import boring_classes as theirs  # noqa: E402

QUIET = {
    "logger": False,
    "enable_checkpointing": False,
    "enable_progress_bar": False,
    "enable_model_summary": False,
}


def _seeded(make):
    torch.manual_seed(7)
    return make()


@pytest.mark.parametrize(
    ("dataset", "name"), [(RandomDataset, "RandomDataset"), (RandomDictDataset, "RandomDictDataset")]
)
def test_the_random_datasets_hold_lightnings_values_after_the_same_seed(dataset, name):
    mine, lightnings = _seeded(lambda: dataset(32, 5)), _seeded(lambda: getattr(theirs, name)(32, 5))
    assert len(mine) == len(lightnings) == 5
    for i in range(5):
        a, b = mine[i], lightnings[i]
        assert torch.equal(a, b) if isinstance(a, torch.Tensor) else all(torch.equal(a[k], b[k]) for k in b)


def test_the_iterable_datasets_draw_as_lightnings_do():
    assert [x.tolist() for x in _seeded(lambda: list(RandomIterableDataset(3, 4)))] == [
        x.tolist() for x in _seeded(lambda: list(theirs.RandomIterableDataset(3, 4)))
    ]
    assert len(RandomIterableDatasetWithLen(3, 4)) == len(theirs.RandomIterableDatasetWithLen(3, 4)) == 4


def _fit(library, model_class, datamodule_class=None, **trainer_kwargs):
    library.seed_everything(0, verbose=False)
    model = model_class()
    trainer = library.Trainer(
        max_epochs=2,
        limit_train_batches=8,
        limit_val_batches=4,
        num_sanity_val_steps=0,
        **QUIET,
        **trainer_kwargs,
    )
    trainer.fit(model, datamodule=datamodule_class() if datamodule_class else None)
    return {k: v.detach().clone() for k, v in model.state_dict().items()}, trainer.global_step


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize(
    ("mine", "lightnings", "dm"),
    [
        (BoringModel, theirs.BoringModel, None),
        (ManualOptimBoringModel, theirs.ManualOptimBoringModel, None),
        (
            DemoModel,
            theirs.DemoModel,
            "datamodule",
        ),  # no data hooks of its own: the CLI docs pair it with one
        (BoringModel, theirs.BoringModel, "datamodule"),
    ],
)
def test_a_fit_of_each_demo_model_ends_with_lightnings_weights(mine, lightnings, dm):
    a, steps_a = _fit(ember, mine, BoringDataModule if dm else None)
    b, steps_b = _fit(lightning, lightnings, theirs.BoringDataModule if dm else None)
    assert steps_a == steps_b == 16
    assert a.keys() == b.keys()
    for key in a:
        torch.testing.assert_close(a[key], b[key], rtol=0, atol=1e-6)


def test_the_datamodule_cuts_four_subsets_by_stage():
    dm = BoringDataModule()
    dm.setup("test")
    assert len(dm.random_test) == 64 and not hasattr(dm, "random_train")
    assert list(dm.random_test.indices) == list(range(128, 192))


def test_lightnings_other_demos_are_refused_by_name():
    import ember.demos

    assert ember.demos.DemoModel is DemoModel and ember.demos.BoringModel is BoringModel
    from ember.errors import ConfigError

    with pytest.raises(
        ConfigError,
        match=r"^ember\.demos\.WikiText2 \(Lightning's lightning\.pytorch\.demos\.WikiText2\) "
        r"is not in ember: use ember\.demos' BoringModel or DemoModel",
    ):
        ember.demos.WikiText2()  # imports (as Lightning's examples do); using it is refused


def test_the_examples_in_the_docstrings_run():
    import doctest

    import ember.demos
    import ember.demos.boring_classes
    import ember.runtime.seed

    for module in (ember.demos, ember.demos.boring_classes, ember.runtime.seed):
        result = doctest.testmod(module, extraglobs={"ember": ember})
        assert result.failed == 0 and result.attempted > 0, module.__name__
