"""A transformers model built from a small config (no download) trained by ember: inside TorchTrainer
workers with Ray's RayTrainReportCallback/prepare_trainer, and as an ember.Module by ember.Trainer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

transformers = pytest.importorskip(
    "transformers", reason="needs the huggingface extra: pip install 'ember[huggingface]'"
)
pytest.importorskip("datasets", reason="needs the huggingface extra: pip install 'ember[huggingface]'")

import torch  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from _hf_models import digits_tokens, tiny_bert  # noqa: E402

import ember  # noqa: E402
from ember.errors import ConfigError  # noqa: E402
from ember.train.huggingface.transformers import RayTrainReportCallback, prepare_trainer  # noqa: E402

SCRIPT = HERE / "scripts" / "transformers_torch_trainer.py"


@pytest.mark.slow
@pytest.mark.timeout(420)
def test_transformers_trainer_in_two_workers_reports_a_checkpoint_each_epoch(tmp_path):
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE.parent.parent), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path)], capture_output=True, text=True, env=env, timeout=400
    )
    assert done.returncode == 0, done.stderr[-3000:]
    run = tmp_path / "hf"
    reports = [json.loads(line) for line in (run / "result.json").read_text().splitlines()]
    assert [r["metrics"]["step"] for r in reports] == [6, 12]  # 300 rows a worker, batches of 50, 2 epochs
    names = [r["checkpoint"] for r in reports]  # Ray's checkpoint_<time> names, in report order
    assert len(names) == 2 and names == sorted(names) and all(n.startswith("checkpoint_20") for n in names)
    assert all({"loss", "eval_loss", "epoch", "learning_rate"} <= set(r["metrics"]) for r in reports)
    models = []
    for report, step in zip(reports, (6, 12), strict=True):
        folder = run / report["checkpoint"] / RayTrainReportCallback.CHECKPOINT_NAME
        assert {"config.json", "model.safetensors", "trainer_state.json"} <= {
            p.name for p in folder.iterdir()
        }
        assert json.loads((folder / "trainer_state.json").read_text())["global_step"] == step
        models.append(transformers.BertForSequenceClassification.from_pretrained(folder).state_dict())
    initial = tiny_bert().state_dict()
    name = "classifier.weight"
    assert not torch.equal(models[0][name], initial[name]) and not torch.equal(
        models[1][name], models[0][name]
    )
    assert json.loads(done.stdout.strip().splitlines()[-1])["checkpoint"] == str(run / names[1])


class DigitsBert(ember.Module):
    """The Hugging Face model as an ember.Module: its own loss, AdamW."""

    def __init__(self, lr: float = 3e-3) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.model = tiny_bert()

    def training_step(self, batch, batch_idx):
        input_ids, labels = batch
        loss = self.model(input_ids=input_ids, labels=labels).loss
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        input_ids, labels = batch
        self.log("val_loss", self.model(input_ids=input_ids, labels=labels).loss)

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=self.hparams.lr)


@pytest.fixture
def one_thread():
    """Attention's many small ops crawl when two threads fight other processes for the cores."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_the_same_model_trains_as_an_ember_module_exactly_like_a_plain_loop(tmp_path, one_thread):
    tokens, labels = (torch.tensor(a) for a in digits_tokens())
    train = DataLoader(TensorDataset(tokens[:300], labels[:300]), batch_size=50)
    val = DataLoader(TensorDataset(tokens[1500:], labels[1500:]), batch_size=100)

    module = DigitsBert()
    trainer = ember.Trainer(
        max_epochs=1,
        default_root_dir=tmp_path,
        enable_progress_bar=False,
        enable_model_summary=False,
        logger=False,
    )
    trainer.fit(module, train, val)

    reference = tiny_bert()
    optimizer = torch.optim.AdamW(reference.parameters(), lr=3e-3)
    for input_ids, target in train:
        loss = reference(input_ids=input_ids, labels=target).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    for key, value in reference.state_dict().items():
        assert torch.equal(module.model.state_dict()[key], value), (
            key
        )  # bitwise: ember adds nothing to the math
    assert not torch.equal(module.model.classifier.weight, tiny_bert().classifier.weight)  # it did train
    assert torch.isfinite(trainer.callback_metrics["val_loss"])

    # The checkpoint holds the Hugging Face weights and loads safely (weights_only) into a fresh module.
    restored = DigitsBert.load_from_checkpoint(trainer.checkpoint_callback.best_model_path)
    assert all(torch.equal(restored.model.state_dict()[k], v) for k, v in module.model.state_dict().items())


def test_prepare_trainer_refuses_what_is_not_a_transformers_trainer():
    with pytest.raises(ConfigError, match="prepare_trainer needs a transformers.Trainer; got Trainer"):
        prepare_trainer(ember.Trainer(logger=False))


def test_the_report_callback_is_a_transformers_callback_and_needs_a_torch_trainer(tmp_path):
    callback = RayTrainReportCallback()
    assert isinstance(callback, transformers.TrainerCallback)
    args = transformers.TrainingArguments(output_dir=str(tmp_path), report_to="none", use_cpu=True)
    with pytest.raises(ConfigError, match="only available inside train_loop_per_worker of a TorchTrainer"):
        callback.on_save(args, transformers.TrainerState(), transformers.TrainerControl())
