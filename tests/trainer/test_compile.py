"""`trainer.fit(torch.compile(model))`: the Module behind the wrapper runs with its steps compiled.

Inductor builds on CPU, but a first build takes ~15 s, so these tests are few and share one model
class: torch >= 2.5 traces a module's parameters as inputs, so a second instance of the same class
reuses the graphs the first one built (within the process, and inductor's disk cache across them).
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import ember

pytestmark = pytest.mark.slow
QUIET = {
    "logger": False,
    "enable_progress_bar": False,
    "enable_model_summary": False,
    "num_sanity_val_steps": 0,
}


class Net(ember.Module):
    def __init__(self) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.layer = nn.Linear(8, 3)

    def forward(self, x):
        return self.layer(x)

    def training_step(self, batch, batch_idx):
        loss = F.cross_entropy(self(batch[0]), batch[1])
        self.log("loss", loss)  # a graph break: run eagerly, the tensor code around it compiled
        return loss

    def validation_step(self, batch, batch_idx):
        self.log("val_loss", F.cross_entropy(self(batch[0]), batch[1]))

    def predict_step(self, batch, batch_idx):
        return self(batch[0]).argmax(-1)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1, momentum=0.9)


class ManualNet(Net):
    def __init__(self) -> None:
        super().__init__()
        self.automatic_optimization = False

    def training_step(self, batch, batch_idx):
        opt = self.optimizers()
        loss = F.cross_entropy(self(batch[0]), batch[1])
        opt.zero_grad()
        self.manual_backward(loss)
        opt.step()
        self.log("loss", loss)


def loader() -> DataLoader:
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(64, 8, generator=gen)
    y = (x[:, 0] > 0).long() + (x[:, 1] > 0).long()
    return DataLoader(TensorDataset(x, y), batch_size=16)


def graphs_captured() -> int:
    return torch._dynamo.utils.counters["stats"]["calls_captured"]


def new_net(cls=Net):
    torch.manual_seed(0)
    return cls()


def test_compiled_module_fits_validates_checkpoints_plain_names_and_resumes_exactly(tmp_path):
    net = new_net()
    captured = graphs_captured()
    trainer = ember.Trainer(max_steps=8, default_root_dir=tmp_path / "whole", **QUIET)
    trainer.fit(torch.compile(net), loader(), loader())
    assert graphs_captured() > captured  # dynamo traced the steps (the run did not fall back to eager)
    assert trainer.lightning_module is net and set(trainer.callback_metrics) == {"loss", "val_loss"}
    assert trainer.callback_metrics["loss"] < 1.0
    assert "training_step" not in net.__dict__ and "forward" not in net.__dict__  # compiled for the run only

    saved = torch.load(trainer.checkpoint_callback.best_model_path, weights_only=False)
    assert sorted(saved["state_dict"]) == ["layer.bias", "layer.weight"]  # no "_orig_mod." prefix
    plain = Net.load_from_checkpoint(trainer.checkpoint_callback.best_model_path)
    assert torch.equal(plain(loader().dataset.tensors[0]), net(loader().dataset.tensors[0]))

    # 4 steps, a checkpoint, a fresh compiled module resuming to 8: bitwise the uninterrupted 8
    first = ember.Trainer(max_steps=4, default_root_dir=tmp_path / "half", **QUIET)
    first.fit(torch.compile(new_net()), loader(), loader())
    resumed_net = new_net()
    resumed = ember.Trainer(max_steps=8, default_root_dir=tmp_path / "half", **QUIET)
    resumed.fit(
        torch.compile(resumed_net), loader(), loader(), ckpt_path=first.checkpoint_callback.best_model_path
    )
    assert resumed.global_step == 8
    for key, value in net.state_dict().items():
        assert torch.equal(resumed_net.state_dict()[key], value), key


def test_compiled_manual_optimization_and_the_evaluation_stages(tmp_path):
    net = new_net(ManualNet)
    before = net.layer.weight.detach().clone()
    trainer = ember.Trainer(max_epochs=2, default_root_dir=tmp_path, **QUIET)
    compiled = torch.compile(net, backend="aot_eager")  # traced as inductor is, built without code generation
    captured = graphs_captured()
    trainer.fit(compiled, loader(), loader())
    assert (
        graphs_captured() > captured and trainer.global_step == 8
    )  # opt.step() counted through the graph break
    assert not torch.equal(before, net.layer.weight)

    (validated,) = trainer.validate(compiled, loader(), verbose=False)
    assert validated["val_loss"] == pytest.approx(float(trainer.callback_metrics["val_loss"]))
    predictions = torch.cat(trainer.predict(compiled, loader()))
    assert torch.equal(predictions, net(loader().dataset.tensors[0]).argmax(-1))
    assert not any(name in net.__dict__ for name in ("forward", "predict_step", "validation_step"))


def test_a_compiled_plain_torch_module_and_a_compiled_model_parallel_run_are_refused_with_the_fix():
    compiled = torch.compile(nn.Linear(2, 2), backend="eager")
    with pytest.raises(ember.errors.ConfigError, match="not an ember.Module.*torch.compile"):
        ember.Trainer(**QUIET).fit(compiled, loader())
    from ember.runtime.distributed import ModelParallelStrategy

    trainer = ember.Trainer(
        strategy=ModelParallelStrategy(save_distributed_checkpoint=False),
        devices=2,
        accelerator="cpu",
        **QUIET,
    )
    with pytest.raises(ember.errors.ConfigError, match="compile its layers in configure_model"):
        trainer.fit(torch.compile(Net(), backend="eager"), loader())  # refused before any process starts
