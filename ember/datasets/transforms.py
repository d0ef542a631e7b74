"""The three torchvision transforms the classic MNIST script uses: `Compose`, `ToTensor`, `Normalize`.

torchvision is not a dependency of ember; these accept what torchvision's do (a PIL Image or an ndarray
for `ToTensor`, a float tensor for `Normalize`) and give the same values, so
``from ember.datasets import transforms`` replaces ``from torchvision import transforms`` in that script.
Anything more (crops, augmentation): install torchvision and use its transforms, which ember's datasets
accept as they are.

Example:
    >>> import numpy as np
    >>> from PIL import Image
    >>> pipeline = Compose([ToTensor(), Normalize((0.5,), (0.5,))])
    >>> pipeline(Image.fromarray(np.full((2, 2), 255, np.uint8))).tolist()
    [[[1.0, 1.0], [1.0, 1.0]]]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

__all__ = ["Compose", "Normalize", "ToTensor"]


class Compose:
    """Apply `transforms` in order (torchvision's `Compose`)."""

    def __init__(self, transforms: Sequence[Callable[[Any], Any]]) -> None:
        self.transforms = list(transforms)

    def __call__(self, image: Any) -> Any:
        for transform in self.transforms:
            image = transform(image)
        return image

    def __repr__(self) -> str:
        return f"Compose({self.transforms!r})"


class ToTensor:
    """A PIL Image or an [H, W(, C)] ndarray -> a [C, H, W]
    tensor; uint8 values scaled to [0, 1] (torchvision's).

    Example:
        >>> ToTensor()(np.zeros((28, 28), np.uint8)).shape
        torch.Size([1, 28, 28])
    """

    def __call__(self, pic: Any) -> torch.Tensor:
        if isinstance(pic, torch.Tensor) or not (isinstance(pic, np.ndarray) or hasattr(pic, "getbands")):
            raise TypeError(f"pic should be PIL Image or ndarray. Got {type(pic)}")
        array = np.array(pic, copy=True)
        if array.ndim == 2:
            array = array[:, :, None]
        if array.ndim != 3:
            raise ValueError(f"pic should be 2 or 3 dimensional. Got {array.ndim} dimensions.")
        tensor = torch.from_numpy(array).permute(2, 0, 1).contiguous()
        return tensor.to(torch.get_default_dtype()).div(255) if tensor.dtype == torch.uint8 else tensor

    def __repr__(self) -> str:
        return "ToTensor()"


class Normalize:
    """(tensor - mean) / std per channel, on a float [C, H, W] tensor (torchvision's `Normalize`)."""

    def __init__(self, mean: Sequence[float], std: Sequence[float], inplace: bool = False) -> None:
        self.mean, self.std, self.inplace = list(mean), list(std), inplace

    def __call__(self, tensor: torch.Tensor) -> torch.Tensor:
        if not isinstance(tensor, torch.Tensor) or not tensor.is_floating_point():
            raise TypeError(f"Input tensor should be a float tensor. Got {type(tensor)}")
        mean = torch.as_tensor(self.mean, dtype=tensor.dtype).view(-1, 1, 1)
        std = torch.as_tensor(self.std, dtype=tensor.dtype).view(-1, 1, 1)
        return tensor.sub_(mean).div_(std) if self.inplace else (tensor - mean) / std

    def __repr__(self) -> str:
        return f"Normalize(mean={self.mean}, std={self.std})"
