"""Built-in real datasets: MNIST, Fashion-MNIST and KMNIST from their IDX files.

Example::

    >>> from ember.datasets import FashionMNIST
    >>> train = FashionMNIST(train=True)          # finds /usr/share/datasets/fashion-mnist
    >>> image, label = train[0]                   # float32 [1, 28, 28] in [0, 1], int

A ``transform=`` receives what torchvision's datasets hand it (a PIL Image in mode "L"), so torchvision's
transforms, or ``ember.datasets.transforms`` (Compose, ToTensor, Normalize), work as written.
"""

from ember.datasets import transforms
from ember.datasets.idx import read_idx
from ember.datasets.mnist import KMNIST, MNIST, FashionMNIST

__all__ = ["KMNIST", "MNIST", "FashionMNIST", "read_idx", "transforms"]
