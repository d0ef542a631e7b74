"""ember's Trainer against Lightning 2.6.6, round 6 (issue 13): the "multiple dataloaders" page (a dict or list of
training loaders read through ``CombinedLoader(mode="max_size_cycle")``, its four modes, the epoch length,
``limit_train_batches``, validate/test/predict given a dict or a CombinedLoader), and the names of
``lightning.pytorch.utilities`` that ember ports.

Each scenario is a function of `L` (`lightning.pytorch` or `ember`) returning what a user observes; the test
runs both and asserts they are equal (`compare_with_lightning`, round 1's harness). A mid-epoch resume with
several loaders is ember's own promise (bitwise), tested against an uninterrupted run.
"""

from __future__ import annotations

import importlib
import pickle

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

import ember
from tests.trainer.test_lightning_parity import _raises, _trainer, compare_with_lightning

pl = pytest.importorskip("lightning.pytorch")


def _numbered(rows: int, start: float = 0.0, batch_size: int = 2, shuffle: bool = False) -> DataLoader:
    """A loader of `rows` 2-feature rows numbered from `start` (so each batch says where it came from)."""
    x = (torch.arange(rows * 2, dtype=torch.float32).reshape(rows, 2) + start)
    return DataLoader(TensorDataset(x), batch_size=batch_size, shuffle=shuffle)


def _first_values(batch):
    """A (nested) batch as its first numbers: which rows of which loader it holds."""
    if batch is None:
        return None
    if isinstance(batch, dict):
        return {k: _first_values(v) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)) and batch and isinstance(batch[0], torch.Tensor):
        return batch[0][:, 0].tolist()
    if isinstance(batch, (list, tuple)):
        return [_first_values(v) for v in batch]
    return batch


def _leaves(batch):
    if isinstance(batch, dict):
        return [t for v in batch.values() for t in _leaves(v)]
    if isinstance(batch, (list, tuple)) and batch and isinstance(batch[0], torch.Tensor):
        return [batch[0]]
    if isinstance(batch, (list, tuple)):
        return [t for v in batch for t in _leaves(v)]
    return []


def _recording_module(L, seen: list):
    """Records (batch_idx, the batch's numbers) of every training step; the loss reads every loader's batch."""

    class Net(L.LightningModule):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.layer = torch.nn.Linear(2, 1)

        def training_step(self, batch, batch_idx):
            seen.append((batch_idx, _first_values(batch)))
            return sum(self.layer(x).mean() for x in _leaves(batch))

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.01)

    return Net


def _fit_on(data_of, **trainer_kwargs):
    """A scenario: fit one epoch on `data_of(L)`; what each training step got, the epoch's length, what
    trainer.train_dataloader is."""

    def scenario(L, root):
        seen: list = []
        trainer = _trainer(L, root, **trainer_kwargs)
        trainer.fit(_recording_module(L, seen)(), data_of(L))
        kind = type(trainer.train_dataloader).__name__
        return {"seen": seen, "batches": trainer.num_training_batches, "train_dataloader": kind,
                "step": trainer.global_step}

    return scenario


def _dict_of_two(L):
    return {"a": _numbered(6), "b": _numbered(4, start=100)}


def _combined(mode):
    return lambda L: L.utilities.CombinedLoader({"a": _numbered(6), "b": _numbered(4, start=100)}, mode=mode)


# --------------------------------------------------------------------------- training on several loaders


def _sequential_refused_in_fit(L, root):
    trainer = _trainer(L, root)
    return _raises(lambda: trainer.fit(_recording_module(L, [])(), _combined("sequential")(L)))


def _train_dataloader_hook_returns_dict(L, root):
    """The loaders come from the Module's train_dataloader(): the same combining."""
    seen: list = []

    class Net(_recording_module(L, seen)):
        def train_dataloader(self):
            return {"x": _numbered(4), "y": [_numbered(2, start=50), _numbered(6, start=70)]}

    trainer = _trainer(L, root, max_epochs=2)
    trainer.fit(Net())
    return {"seen": seen, "batches": trainer.num_training_batches}


def _datamodule_returns_list(L, root):
    seen: list = []

    class Data(L.LightningDataModule):
        def train_dataloader(self):
            return [_numbered(4), _numbered(8, start=30)]

    trainer = _trainer(L, root)
    trainer.fit(_recording_module(L, seen)(), datamodule=Data())
    return {"seen": seen, "batches": trainer.num_training_batches}


# --------------------------------------------------------------------------- evaluation on several loaders


def _eval_module(L, seen: list):
    class Net(_recording_module(L, [])):
        def validation_step(self, batch, batch_idx, dataloader_idx=0):
            seen.append(("val", batch_idx, dataloader_idx, _first_values(batch)))
            self.log("v", sum(x.sum() for x in _leaves(batch)))

        def test_step(self, batch, batch_idx, dataloader_idx=0):
            seen.append(("test", batch_idx, dataloader_idx, _first_values(batch)))
            self.log("t", sum(x.sum() for x in _leaves(batch)))

        def predict_step(self, batch, batch_idx, dataloader_idx=0):
            return _first_values(batch)

    return Net


def _evaluate_on(data_of, **trainer_kwargs):
    """validate, test and predict given `data_of(L)`: the steps' arguments, the results, the predictions."""

    def scenario(L, root):
        seen: list = []
        model = _eval_module(L, seen)()
        trainer = _trainer(L, root, **trainer_kwargs)
        validated = trainer.validate(model, data_of(L), verbose=False)
        tested = trainer.test(model, data_of(L), verbose=False)
        try:
            predicted = trainer.predict(model, data_of(L))
        except Exception:  # noqa: BLE001 - compared by where it is refused (predict: sequential mode only)
            predicted = "raised"
        return {"seen": seen, "validated": [{k: round(float(v), 4) for k, v in r.items()} for r in validated],
                "tested": [{k: round(float(v), 4) for k, v in r.items()} for r in tested], "predicted": predicted}

    return scenario


def _fit_validates_dict(L, root):
    """fit's validation data as a dict: each loader its own dataloader_idx."""
    seen: list = []
    trainer = _trainer(L, root, num_sanity_val_steps=0)
    trainer.fit(_eval_module(L, seen)(), _numbered(4), {"p": _numbered(2, start=10), "q": _numbered(4, start=20)})
    return {"seen": seen, "metrics": sorted(trainer.callback_metrics)}


# --------------------------------------------------------------------------- CombinedLoader on its own


def _combined_loader_alone(L, root):
    """The class itself, from Lightning's module path: each mode's triples and length, with and without limits."""
    module = importlib.import_module(f"{L.__name__}.utilities.combined_loader")
    out = {}
    for mode in ("min_size", "max_size_cycle", "max_size", "sequential"):
        for limits in (None, 2, [1, 3]):
            combined = module.CombinedLoader({"a": _numbered(6), "b": [_numbered(4, start=100)]}, mode)
            combined.limits = limits
            iter(combined)
            triples = [(_first_values(b), i, d) for b, i, d in combined]
            out[f"{mode}/{limits}"] = {"len": len(combined), "triples": triples}
    combined = module.CombinedLoader([_numbered(2), _numbered(4)], "min_size")
    out["flattened"] = len(combined.flattened)
    out["sampler"] = [type(s).__name__ for s in combined.sampler]
    out["bad mode"] = _raises(lambda: module.CombinedLoader([], "longest"))
    return out


# --------------------------------------------------------------------------- lightning.pytorch.utilities names


def _utilities(L, root):
    u = L.utilities
    with torch.device("meta"):
        model, x = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 1)), torch.randn(5, 4)
    net = torch.nn.Module()
    net.a, net.b, net.c = torch.nn.Linear(2, 2), torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)
    net.c.weight = net.a.weight
    shared = u.find_shared_parameters(net)
    copy = pickle.loads(pickle.dumps(net))  # ties survive a pickle; set_shared_parameters re-ties by name
    copy.c.weight = torch.nn.Parameter(copy.c.weight.detach().clone())
    u.set_shared_parameters(copy, shared)
    moved = u.move_data_to_device({"x": [torch.ones(2)], "n": 3}, torch.device("cpu"))
    return {
        "forward flops": u.measure_flops(model, lambda: model(x)),
        "training flops": u.measure_flops(model, lambda: model(x), lambda y: y.sum()),
        "shared": shared, "retied": copy.c.weight is copy.a.weight,
        "picklable": [u.is_picklable(v) for v in (1, [2], lambda: 3, torch.ones(1))],
        "clip": [u.GradClipAlgorithmType.supported_types(), u.GradClipAlgorithmType.supported_type("norm"),
                 u.GradClipAlgorithmType("value") == "value"],
        "workers": u.suggested_max_num_workers(1) >= 1,
        "moved": [type(moved).__name__, moved["n"], moved["x"][0].tolist()],
    }


SCENARIOS = {
    "dict_of_train_loaders": _fit_on(_dict_of_two),
    "list_of_train_loaders": _fit_on(lambda L: [_numbered(4), _numbered(6, start=100)]),
    "nested_train_loaders": _fit_on(lambda L: {"a": [_numbered(4), _numbered(2, start=40)], "b": _numbered(6, start=80)}),
    "combined_max_size_cycle": _fit_on(_combined("max_size_cycle")),
    "combined_min_size": _fit_on(_combined("min_size")),
    "combined_max_size": _fit_on(_combined("max_size")),
    "sequential_refused_in_fit": _sequential_refused_in_fit,
    "limit_train_batches_int": _fit_on(_dict_of_two, limit_train_batches=2),
    "limit_train_batches_float": _fit_on(_dict_of_two, limit_train_batches=0.5),
    "limit_with_min_size": _fit_on(_combined("min_size"), limit_train_batches=1),
    "max_steps_across_epochs": _fit_on(_dict_of_two, max_epochs=3, max_steps=5),
    "train_dataloader_hook_returns_dict": _train_dataloader_hook_returns_dict,
    "datamodule_returns_list": _datamodule_returns_list,
    "evaluate_dict": _evaluate_on(lambda L: {"p": _numbered(2), "q": _numbered(4, start=20)}),
    "evaluate_nested_list": _evaluate_on(lambda L: [_numbered(2), [_numbered(4, start=20)]]),
    "evaluate_sequential_combined": _evaluate_on(
        lambda L: L.utilities.CombinedLoader([_numbered(2), _numbered(4, start=20)], "sequential")),
    "evaluate_max_size_cycle_combined": _evaluate_on(
        lambda L: L.utilities.CombinedLoader({"p": _numbered(2), "q": _numbered(4, start=20)}, "max_size_cycle")),
    "evaluate_dict_limited": _evaluate_on(lambda L: {"p": _numbered(4), "q": _numbered(6, start=20)},
                                          limit_val_batches=1, limit_test_batches=0.5, limit_predict_batches=2),
    "fit_validates_dict": _fit_validates_dict,
    "combined_loader_alone": _combined_loader_alone,
    "utilities": _utilities,
}


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_ember_observes_what_lightning_observes(name, tmp_path):
    compare_with_lightning(SCENARIOS[name], tmp_path)


def test_every_lightning_utilities_name_is_in_ember_utilities():
    """`from lightning.pytorch.utilities import X` ports as `from ember.utilities import X` (but Lightning's own
    enum base, its shared-filesystem probe and its PossibleUserWarning switch, which have no meaning in ember)."""
    import ember.utilities

    not_ported = {"LightningEnum", "is_shared_filesystem", "disable_possible_user_warnings"}
    assert set(pl.utilities.__all__) - not_ported <= set(ember.utilities.__all__)
    from ember.utilities.combined_loader import CombinedLoader

    assert CombinedLoader is ember.utilities.CombinedLoader


# --------------------------------------------------------------------------- ember's exact resume, several loaders


def _shuffled_fit(root, ckpt_path=None, stop_after=None, every=None):
    """Two epochs on a dict of two shuffled loaders; optionally stopping after `stop_after` steps with a
    checkpoint written every `every` steps, or resuming from `ckpt_path`."""
    seen: list = []
    torch.manual_seed(7)
    data = {"a": _numbered(10, shuffle=True), "b": _numbered(6, start=100, shuffle=True)}
    callbacks = [ember.ModelCheckpoint(dirpath=str(root), every_n_train_steps=every, save_top_k=-1)] if every else []
    trainer = ember.Trainer(max_epochs=2, max_steps=stop_after or -1, logger=False, enable_progress_bar=False,
                            enable_model_summary=False, enable_checkpointing=bool(every), callbacks=callbacks,
                            default_root_dir=str(root), accelerator="cpu")
    model = _recording_module(ember, seen)()
    trainer.fit(model, data, ckpt_path=ckpt_path)
    return model, seen


@pytest.mark.filterwarnings("ignore")
def test_mid_epoch_resume_with_several_shuffled_loaders_is_exact(tmp_path):
    whole, whole_seen = _shuffled_fit(tmp_path / "whole")
    _, first_seen = _shuffled_fit(tmp_path / "part", stop_after=7, every=7)  # epoch 1 is 5 steps: stops in epoch 2
    checkpoint = next((tmp_path / "part").glob("*step=7*.ckpt"))
    resumed, rest_seen = _shuffled_fit(tmp_path / "rest", ckpt_path=str(checkpoint))
    assert first_seen + rest_seen == whole_seen
    for mine, reference in zip(resumed.parameters(), whole.parameters(), strict=True):
        assert torch.equal(mine, reference)
