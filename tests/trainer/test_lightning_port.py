"""A module written for Lightning (the seed-001 story) runs under ember with only its import lines changed."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

LIGHTNING_SCRIPT = textwrap.dedent("""
    import torch
    import torch.nn.functional as F
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset, random_split
    import pytorch_lightning as pl
    from pytorch_lightning.callbacks import ModelCheckpoint
    from pytorch_lightning.loggers import TensorBoardLogger
    from sklearn.datasets import load_digits


    class MNISTModel(pl.LightningModule):
        def __init__(self, lr=0.05):
            super().__init__()
            self.save_hyperparameters()
            self.l1 = nn.Linear(8 * 8, 64)
            self.l2 = nn.Linear(64, 10)

        def forward(self, x):
            return self.l2(torch.relu(self.l1(x.view(x.size(0), -1))))

        def training_step(self, batch, batch_nb):
            x, y = batch
            logits = self(x)
            loss = F.cross_entropy(logits, y)
            acc = (logits.argmax(dim=1) == y).float().mean()
            self.log("train_loss", loss, prog_bar=True)
            self.log("train_acc", acc, on_step=False, on_epoch=True)
            return loss

        def validation_step(self, batch, batch_nb):
            x, y = batch
            logits = self(x)
            self.log("val_loss", F.cross_entropy(logits, y), prog_bar=True)
            self.log("val_acc", (logits.argmax(dim=1) == y).float().mean(), prog_bar=True)

        def test_step(self, batch, batch_nb):
            x, y = batch
            self.log("test_acc", (self(x).argmax(dim=1) == y).float().mean())

        def configure_optimizers(self):
            return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)


    if __name__ == "__main__":
        pl.seed_everything(42)
        digits = load_digits()
        data = TensorDataset(torch.tensor(digits.data, dtype=torch.float32) / 16, torch.tensor(digits.target))
        train, val, test = random_split(data, [1300, 200, 297], generator=torch.Generator().manual_seed(0))
        model = MNISTModel()
        trainer = pl.Trainer(
            accelerator="auto",
            devices=1,
            max_epochs=5,
            logger=TensorBoardLogger("lightning_logs", name="mnist"),
            callbacks=[ModelCheckpoint(monitor="val_acc", mode="max")],
        )
        trainer.fit(model, DataLoader(train, batch_size=32, shuffle=True), DataLoader(val, batch_size=64))
        result = trainer.test(model, DataLoader(test, batch_size=64))
        best = MNISTModel.load_from_checkpoint(trainer.checkpoint_callback.best_model_path)
        print("best", trainer.checkpoint_callback.best_model_path, best.hparams.lr)
        print("test_acc", result[0]["test_acc"])
""")

EMBER_IMPORTS = {
    "import pytorch_lightning as pl": "import ember as pl",
    "from pytorch_lightning.callbacks import ModelCheckpoint": "from ember.callbacks import ModelCheckpoint",
    "from pytorch_lightning.loggers import TensorBoardLogger": "from ember.loggers import TensorBoardLogger",
}


def test_lightning_module_runs_with_import_lines_changed(tmp_path):
    script = LIGHTNING_SCRIPT
    for lightning, ember_line in EMBER_IMPORTS.items():
        assert lightning in script
        script = script.replace(lightning, ember_line)
    changed = [a for a, b in zip(LIGHTNING_SCRIPT.splitlines(), script.splitlines(), strict=True) if a != b]
    assert len(changed) == 3 and all("import" in line for line in changed)  # nothing but the imports

    (tmp_path / "train.py").write_text(script)
    done = subprocess.run(
        [sys.executable, "train.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert done.returncode == 0, done.stderr
    lines = dict(
        line.split(" ", 1) for line in done.stdout.splitlines() if line.startswith(("best", "test_acc"))
    )
    assert float(lines["test_acc"]) > 0.9
    assert lines["best"].endswith(" 0.05") and ".ckpt" in lines["best"]
    events = list(Path(tmp_path, "lightning_logs", "mnist", "version_0").glob("events.out.tfevents.*"))
    assert events, "the TensorBoard logger wrote no event file"


# ---- real Lightning examples, run under both libraries in the same test
# --------------------------------------- Each is written for Lightning; the ember run is the same text with
# only its import lines changed. Both print their per-batch callback metrics and save their final weights,
# which the test compares.
EXAMPLES = textwrap.dedent('''
    import json, sys
    import torch
    import torch.nn.functional as F
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset
    import pytorch_lightning as pl
    from pytorch_lightning.callbacks import Callback, BackboneFinetuning
    from pytorch_lightning.tuner import Tuner
    from sklearn.datasets import load_digits


    def digits(n=512, batch_size=32):
        data = load_digits()
        x = torch.tensor(data.data[:n], dtype=torch.float32) / 16
        return DataLoader(TensorDataset(x, torch.tensor(data.target[:n])), batch_size=batch_size)


    class Recorder(Callback):
        """The callback metrics after every training batch."""
        def __init__(self):
            self.rows = []

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            self.rows.append({k: float(v) for k, v in trainer.callback_metrics.items()})


    # The GAN of Lightning's domain templates (generative_adversarial_net.py), on 8x8 digits:
    # manual optimization of two optimizers with toggle_optimizer.
    class GAN(pl.LightningModule):
        def __init__(self, latent_dim=16, lr=2e-3):
            super().__init__()
            self.save_hyperparameters()
            self.automatic_optimization = False
            self.generator = nn.Sequential(nn.Linear(latent_dim, 64), nn.LeakyReLU(0.2), nn.Linear(64, 64),
                                           nn.Sigmoid())
            self.discriminator = nn.Sequential(nn.Linear(64, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))

        def forward(self, z):
            return self.generator(z)

        def adversarial_loss(self, y_hat, y):
            return F.binary_cross_entropy_with_logits(y_hat, y)

        def training_step(self, batch, batch_idx):  # the template has (self, batch): see the xfail test below
            imgs, _ = batch
            optimizer_g, optimizer_d = self.optimizers()
            z = torch.randn(imgs.shape[0], self.hparams.latent_dim).type_as(imgs)

            self.toggle_optimizer(optimizer_g)
            valid = torch.ones(imgs.size(0), 1).type_as(imgs)
            g_loss = self.adversarial_loss(self.discriminator(self(z)), valid)
            self.log("g_loss", g_loss, prog_bar=True)
            self.manual_backward(g_loss)
            optimizer_g.step()
            optimizer_g.zero_grad()
            self.untoggle_optimizer(optimizer_g)

            self.toggle_optimizer(optimizer_d)
            real_loss = self.adversarial_loss(self.discriminator(imgs), valid)
            fake = torch.zeros(imgs.size(0), 1).type_as(imgs)
            fake_loss = self.adversarial_loss(self.discriminator(self(z).detach()), fake)
            d_loss = (real_loss + fake_loss) / 2
            self.log("d_loss", d_loss, prog_bar=True)
            self.manual_backward(d_loss)
            optimizer_d.step()
            optimizer_d.zero_grad()
            self.untoggle_optimizer(optimizer_d)

        def configure_optimizers(self):
            lr = self.hparams.lr
            opt_g = torch.optim.Adam(self.generator.parameters(), lr=lr, betas=(0.5, 0.999))
            opt_d = torch.optim.Adam(self.discriminator.parameters(), lr=lr, betas=(0.5, 0.999))
            return [opt_g, opt_d], []


    # Transfer learning as in Lightning's finetuning docs: a backbone frozen, then unfrozen by
    # BackboneFinetuning.
    class Transfer(pl.LightningModule):
        def __init__(self, lr=0.05):
            super().__init__()
            self.save_hyperparameters()
            self.backbone = nn.Sequential(nn.Linear(64, 48), nn.BatchNorm1d(48), nn.ReLU(), nn.Linear(48, 32),
                                          nn.ReLU())
            self.head = nn.Linear(32, 10)

        def training_step(self, batch, batch_idx):
            x, y = batch
            loss = F.cross_entropy(self.head(self.backbone(x)), y)
            self.log("train_loss", loss)
            return loss

        def configure_optimizers(self):
            optimizer = torch.optim.SGD(filter(lambda p: p.requires_grad, self.parameters()),
                                        lr=self.hparams.lr, momentum=0.9)
            return [optimizer], [torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.7)]


    # The LR finder as Lightning's docs use it: find, set, fit.
    class Classifier(pl.LightningModule):
        def __init__(self, lr=1e-3):
            super().__init__()
            self.save_hyperparameters()
            self.net = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))

        def training_step(self, batch, batch_idx):
            x, y = batch
            loss = F.cross_entropy(self.net(x), y)
            self.log("train_loss", loss)
            return loss

        def configure_optimizers(self):
            return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)


    if __name__ == "__main__":
        example, out = sys.argv[1], sys.argv[2]
        pl.seed_everything(7)
        recorder = Recorder()
        common = dict(logger=False, enable_checkpointing=False, enable_progress_bar=False,
                      enable_model_summary=False)
        extra = {}
        if example == "gan":
            model = GAN()
            pl.Trainer(max_epochs=3, callbacks=[recorder], **common).fit(model, digits())
        elif example == "finetune":
            model = Transfer()
            finetuning = BackboneFinetuning(unfreeze_backbone_at_epoch=2, lambda_func=lambda epoch: 1.5)
            trainer = pl.Trainer(max_epochs=5, callbacks=[finetuning, recorder], **common)
            trainer.fit(model, digits())
            extra["lrs"] = [group["lr"] for group in trainer.optimizers[0].param_groups]
        else:
            model = Classifier()
            trainer = pl.Trainer(max_epochs=2, callbacks=[recorder], **common)
            finder = Tuner(trainer).lr_find(model, digits(), min_lr=1e-5, max_lr=1.0, num_training=40)
            extra = {"suggestion": finder.suggestion(), "lr": model.hparams.lr, "curve": finder.results["lr"]}
            trainer.fit(model, digits())
        torch.save(model.state_dict(), out + ".pt")
        with open(out + ".json", "w") as f:
            json.dump({"rows": recorder.rows, "extra": extra}, f)
''')

EXAMPLE_IMPORTS = {
    "import pytorch_lightning as pl": "import ember as pl",
    "from pytorch_lightning.callbacks import Callback, BackboneFinetuning": (
        "from ember.callbacks import Callback, BackboneFinetuning"
    ),
    "from pytorch_lightning.tuner import Tuner": "from ember.tuner import Tuner",
}


ONE_PROCESS = Path(__file__).parents[1] / "cli" / "_one_process.py"


@pytest.fixture(scope="module")
def example_runs(tmp_path_factory) -> dict[str, dict[str, dict]]:
    """The three examples ("gan", "finetune", "lrfind") run under Lightning and under ember (imports changed
    only): {example: {library: records and weights}}. Each library runs the three in one process, one after
    the other (tests/cli/_one_process.py runs the script as `python run_LIBRARY.py EXAMPLE OUT` would, each
    seeding everything at its start), not one process each: Lightning's import alone costs ~8 s of CPU."""
    import json

    pytest.importorskip("pytorch_lightning")
    ported = EXAMPLES
    for lightning, ember_line in EXAMPLE_IMPORTS.items():
        assert lightning in ported
        ported = ported.replace(lightning, ember_line)
    changed = [a for a, b in zip(EXAMPLES.splitlines(), ported.splitlines(), strict=True) if a != b]
    assert len(changed) == len(EXAMPLE_IMPORTS) and all("import" in line for line in changed)
    examples = ["gan", "finetune", "lrfind"]
    tmp_path = tmp_path_factory.mktemp("examples")
    # The two libraries' processes are independent and single-threaded: started together, each in its own
    # folder, they take the time of one on a machine with two cores.
    runs = {}
    try:
        for library, text in (("lightning", EXAMPLES), ("ember", ported)):
            folder = tmp_path / library
            for example in examples:
                (folder / example).mkdir(parents=True)
            (folder / f"run_{library}.py").write_text(text)
            argvs = [[example, f"{example}/{library}"] for example in examples]
            runs[library] = subprocess.Popen(
                [sys.executable, str(ONE_PROCESS), f"run_{library}.py", "runs.json", json.dumps(argvs)],
                cwd=folder,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env={**os.environ, "OMP_NUM_THREADS": "1"},
            )
        results: dict[str, dict[str, dict]] = {example: {} for example in examples}
        for library, process in runs.items():
            _, stderr = process.communicate(timeout=600)
            assert process.returncode == 0, stderr[-3000:]
            ran = json.loads((tmp_path / library / "runs.json").read_text())
            for example, (code, _, err) in zip(examples, ran, strict=True):
                if code != 0:  # the test of this example fails; the others still compare their runs
                    results[example][library] = {"failed": f"exit code {code}: {err[-3000:]}"}
                    continue
                record = json.loads((tmp_path / library / example / f"{library}.json").read_text())
                record["weights"] = torch.load(
                    tmp_path / library / example / f"{library}.pt", weights_only=True
                )
                results[example][library] = record
        return results
    finally:
        for process in runs.values():  # a failed or timed-out run: stop the other one too
            if process.poll() is None:
                process.kill()
                process.wait()


def run_both(example_runs: dict[str, dict[str, dict]], example: str) -> dict[str, dict]:
    """The runs of `example` under Lightning and under ember: their records and weights."""
    runs = example_runs[example]
    for library, record in runs.items():
        assert "failed" not in record, f"{library}: {record['failed']}"
    return runs


def assert_close_runs(runs: dict[str, dict], rtol: float) -> None:
    ours, theirs = runs["ember"], runs["lightning"]
    assert len(ours["rows"]) == len(theirs["rows"])
    for step, (a, b) in enumerate(zip(ours["rows"], theirs["rows"], strict=True)):
        assert set(a) == set(b), (step, set(a) ^ set(b))
        for key in a:
            assert abs(a[key] - b[key]) <= rtol * max(1.0, abs(b[key])), (step, key, a[key], b[key])
    assert set(ours["weights"]) == set(theirs["weights"])
    for name, tensor in ours["weights"].items():
        assert torch.allclose(tensor.float(), theirs["weights"][name].float(), rtol=rtol, atol=rtol), name


# Tolerance: the same float operations on the same batches in the same order; the two libraries' loops sum
# the same numbers but may differ in the last bits (e.g. a loss computed once vs. twice), which training
# amplifies a little over a few hundred steps.
@pytest.mark.slow  # two Python processes, one of them importing Lightning
def test_gan_with_manual_optimization_matches_lightning(example_runs):
    assert_close_runs(run_both(example_runs, "gan"), rtol=1e-4)


@pytest.mark.slow  # two Python processes, one of them importing Lightning
def test_backbone_finetuning_matches_lightning(example_runs):
    runs = run_both(example_runs, "finetune")
    assert runs["ember"]["extra"]["lrs"] == runs["lightning"]["extra"]["lrs"]
    assert_close_runs(runs, rtol=1e-4)


@pytest.mark.slow  # two Python processes, one of them importing Lightning
def test_lr_finder_run_matches_lightning(example_runs):
    runs = run_both(example_runs, "lrfind")
    assert runs["ember"]["extra"] == runs["lightning"]["extra"]
    assert_close_runs(runs, rtol=1e-4)


def test_a_training_step_without_batch_idx_runs(tmp_path):
    """Lightning passes batch_idx only to a training_step that can take it (its GAN template has
    training_step(self, batch)); so does ember."""
    import ember

    class NoIndex(ember.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layer = torch.nn.Linear(2, 1)

        def training_step(self, batch):
            return self.layer(batch[0]).sum()

        def validation_step(self, batch):  # Lightning drops batch_idx from every step hook that lacks it
            self.log("val_sum", self.layer(batch[0]).sum())

        def predict_step(self, batch):
            return self.layer(batch[0])

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    data = [(torch.ones(4, 2),)]
    module = NoIndex()
    before = module.layer.weight.detach().clone()
    trainer = ember.Trainer(
        max_epochs=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        default_root_dir=tmp_path,
    )
    trainer.fit(module, data, data)
    assert trainer.global_step == 1 and not torch.equal(before, module.layer.weight)
    assert "val_sum" in trainer.callback_metrics
    assert trainer.predict(module, data)[0].shape == (4, 1)
