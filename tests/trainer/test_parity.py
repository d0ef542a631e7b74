"""The Trainer with the defaults users get ends with the same weights, bit for bit, as a hand-written loop."""

import torch
from _models import DigitsMLP, assert_bitwise_equal, digits_loaders, hand_written_fit, seeded, weights

import ember


def test_default_trainer_matches_hand_written_loop_bitwise(tmp_path):
    seeded(0)
    model = DigitsMLP()
    train, val = digits_loaders()
    # Defaults: loggers, checkpointing, progress bar, sanity check, validation every epoch.
    trainer = ember.Trainer(max_epochs=3, default_root_dir=tmp_path)
    trainer.fit(model, train, val)

    seeded(0)
    reference = DigitsMLP()
    train, val = digits_loaders()
    hand_written_fit(reference, train, epochs=3, val_loader=val)

    assert trainer.global_step == 3 * len(train)
    assert_bitwise_equal(weights(model), weights(reference))
    # and it learned something real
    assert trainer.callback_metrics["val_acc"] > 0.85


def test_classic_net_on_fashion_mnist_matches_hand_written(tmp_path):
    """One epoch of the classic MNIST Net over the first half of Fashion-MNIST's training set (the claim does
    not depend on the size; the whole set took twice as long): same weights and same test accuracy."""
    import sys
    from pathlib import Path

    import torch.nn.functional as F

    sys.path.insert(0, str(Path(__file__).parents[2] / "examples" / "fashion_mnist"))
    from model import ClassicNet

    from ember.datasets import FashionMNIST

    train_set = torch.utils.data.Subset(FashionMNIST(train=True, normalize=True), range(30_000))
    test_set = FashionMNIST(train=False, normalize=True)

    def loaders():
        return (
            torch.utils.data.DataLoader(train_set, batch_size=64, shuffle=True),
            torch.utils.data.DataLoader(test_set, batch_size=1000),
        )

    seeded(1)
    model = ClassicNet()
    train, test = loaders()
    trainer = ember.Trainer(
        max_epochs=1, deterministic=True, default_root_dir=tmp_path, enable_progress_bar=False
    )
    trainer.fit(model, train)
    ember_acc = trainer.test(model, test, verbose=False)[0]["test_acc"]

    from ember.runtime.seed import Determinism

    assert not torch.are_deterministic_algorithms_enabled()  # the Trainer put the global flags back
    seeded(1)
    reference = ClassicNet()
    train, test = loaders()
    optimizer = torch.optim.SGD(reference.parameters(), lr=0.01, momentum=0.5)
    with Determinism(True):  # the hand-written loop under the same flags as deterministic=True
        reference.train()
        for data, target in train:
            optimizer.zero_grad()
            loss = F.nll_loss(reference(data), target)
            loss.backward()
            optimizer.step()
        reference.eval()
        correct = 0
        with torch.no_grad():
            for data, target in test:
                correct += (reference(data).argmax(1) == target).sum().item()
    hand_acc = correct / len(test_set)

    assert_bitwise_equal(weights(model), weights(reference))
    assert abs(ember_acc - hand_acc) < 1e-6
    assert hand_acc > 0.7  # one epoch of the classic Net is well above chance (0.1)


def test_a_seeded_generator_gives_the_hand_written_loops_order_in_every_epoch(tmp_path):
    """A DataLoader with its own seeded generator: each epoch's order is the `for` loop's (Lightning's differs
    from epoch 2 on, docs/hooks.md "Where ember's Trainer differs from Lightning")."""
    x, y = torch.arange(60.0).reshape(60, 1), torch.arange(60)

    def loader():
        return torch.utils.data.DataLoader(
            torch.utils.data.TensorDataset(x, y),
            batch_size=8,
            shuffle=True,
            generator=torch.Generator().manual_seed(0),
        )

    plain = []
    reference = loader()
    for _ in range(3):
        plain.append([labels.tolist() for _, labels in reference])

    seen: list[list[list[int]]] = []

    class Recorder(ember.Module):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(1, 1)

        def on_train_epoch_start(self):
            seen.append([])

        def training_step(self, batch, batch_idx):
            seen[-1].append(batch[1].tolist())
            return self.layer(batch[0]).sum()

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    ember.Trainer(
        max_epochs=3,
        logger=False,
        enable_progress_bar=False,
        enable_checkpointing=False,
        enable_model_summary=False,
        default_root_dir=tmp_path,
    ).fit(Recorder(), loader())
    assert seen == plain
    assert seen[0] != seen[1]
