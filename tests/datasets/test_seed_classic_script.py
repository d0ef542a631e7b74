# ruff: noqa: UP008, Q000  (the document's code is kept as the document writes it)
"""The classic PyTorch MNIST script of shared/seeds/000 (Fashion-MNIST standing for MNIST, installed locally),
every line as the document writes it with `torchvision` -> `ember.datasets`: its transforms see PIL images,
as torchvision's datasets hand them, and ember's own Compose/ToTensor/Normalize give torchvision's values.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn, optim
from torch.nn import functional as F
from torch.utils.data import DataLoader

from ember.datasets import FashionMNIST, transforms


class PILOnly:
    """A torchvision-like step: refuses what torchvision's ToTensor refuses ("pic should be PIL Image")."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, tuple[int, int]]] = []

    def __call__(self, pic):
        if not hasattr(pic, "getbands"):
            raise TypeError(f"pic should be PIL Image or ndarray. Got {type(pic)}")
        self.seen.append((pic.mode, pic.size))
        return torch.from_numpy(np.array(pic)).float().div(255)[None]


def test_a_transform_receives_a_pil_image_and_target_transform_an_int(fashion_root: Path) -> None:
    check, targets = PILOnly(), []
    data = FashionMNIST(fashion_root, False, check, lambda t: targets.append(t) or t * 10)  # torchvision's order
    image, label = data[0]
    assert check.seen == [("L", (28, 28))] and targets == [9] and type(targets[0]) is int and label == 90
    assert torch.equal(image[0], data.data[0].float() / 255)  # the pixels torchvision's image holds


def test_ember_transforms_match_the_reference_arithmetic(fashion_root: Path) -> None:
    data = FashionMNIST(fashion_root, train=False)
    pil = data.pil_image(3)
    out = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])(pil)
    expected = (data.data[3].float() / 255 - 0.1307) / 0.3081
    assert out.shape == (1, 28, 28) and out.dtype == torch.float32
    torch.testing.assert_close(out[0], expected)
    with pytest.raises(TypeError, match="pic should be PIL Image or ndarray"):
        transforms.ToTensor()(torch.zeros(1, 28, 28))  # as torchvision's: a tensor is not a picture


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 10, kernel_size=5)
        self.conv2 = nn.Conv2d(10, 20, kernel_size=5)
        self.conv2_drop = nn.Dropout2d()
        self.fc1 = nn.Linear(320, 50)
        self.fc2 = nn.Linear(50, 10)

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2_drop(self.conv2(x)), 2))
        x = x.view(-1, 320)
        x = F.relu(self.fc1(x))
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)


@pytest.mark.slow  # 41 steps with DataLoader worker processes: tens of seconds on a loaded machine
def test_the_classic_script_as_written(fashion_root: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    data_path = str(fashion_root)  # the document: os.path.join(os.path.expanduser('~'), '.torch', 'datasets', 'mnist')
    train_data = FashionMNIST(data_path, train=True, download=True, transform=transforms.Compose([
        transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))]))
    test_data = FashionMNIST(data_path, train=False, transform=transforms.Compose([
        transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))]))
    train_loader = DataLoader(train_data, batch_size=64, shuffle=True, num_workers=2, pin_memory=True)
    test_loader = DataLoader(torch.utils.data.Subset(test_data, range(512)), batch_size=64, num_workers=2,
                             pin_memory=True)
    device = torch.device("cpu")
    torch.manual_seed(1)
    model = Net().to(device)
    optimiser = optim.SGD(model.parameters(), lr=0.01, momentum=0.5)
    model.train()
    train_losses = []
    for i, (data, target) in enumerate(train_loader):
        data = data.to(device=device, non_blocking=True)
        target = target.to(device=device, non_blocking=True)
        optimiser.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        train_losses.append(loss.item())
        optimiser.step()
        if i % 10 == 0:
            torch.save(model.state_dict(), 'model.pth')
            torch.save(optimiser.state_dict(), 'optimiser.pth')
            torch.save(train_losses, 'train_losses.pth')
        if i == 40:  # the document's advice: a short run first
            break
    model.load_state_dict(torch.load('model.pth'))  # resume, as the script's --resume does
    optimiser.load_state_dict(torch.load('optimiser.pth'))
    model.eval()
    test_loss, correct = 0, 0
    with torch.no_grad():
        for data, target in test_loader:
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction='sum').item()
            pred = output.argmax(1, keepdim=True)
            correct += pred.eq(target.view_as(pred)).sum().item()
    acc = correct / 512
    assert os.path.exists("train_losses.pth") and len(torch.load("train_losses.pth")) == 41
    assert sum(train_losses[-10:]) < sum(train_losses[:10]) - 0.3  # it learns from the PIL -> tensor pipeline
    assert 0.0 <= acc <= 1.0 and test_loss > 0
