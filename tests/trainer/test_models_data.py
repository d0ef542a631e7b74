"""The test helpers' digits (_models.digits_tensors) are scikit-learn's load_digits, value for value."""

import torch
from _models import digits_tensors


def test_digits_tensors_equal_load_digits_bitwise():
    from sklearn.datasets import load_digits

    digits = load_digits()
    x, y = digits_tensors()
    assert x.shape == (1797, 64) and y.shape == (1797,)
    assert torch.equal(x, torch.tensor(digits.data, dtype=torch.float32) / 16.0)
    assert torch.equal(y, torch.tensor(digits.target, dtype=torch.int64))
