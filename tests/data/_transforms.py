"""Stand-ins for the torchvision / torchtext pieces the guide uses (neither is installed here).

Same semantics as the originals for what the guide needs: ToTensor (HWC uint8 -> CHW float in
[0, 1]), CenterCrop, Resize (bilinear), Normalize, Compose, and a lower-casing word tokenizer for
BERTTokenizer(return_tokens=True).
"""

from __future__ import annotations

import re

import numpy as np
import torch
import torch.nn.functional as F

try:  # the real thing when it is installed
    from torchvision import transforms  # type: ignore  # noqa: F401
except ImportError:

    class transforms:  # noqa: N801 - mimics the torchvision module
        class Compose:
            def __init__(self, steps):
                self.steps = steps

            def __call__(self, x):
                for step in self.steps:
                    x = step(x)
                return x

        class ToTensor:
            def __call__(self, image: np.ndarray) -> torch.Tensor:
                return torch.from_numpy(np.array(image)).permute(2, 0, 1).float().div(255)

        class CenterCrop:
            def __init__(self, size: int):
                self.size = size

            def __call__(self, x: torch.Tensor) -> torch.Tensor:
                h, w = x.shape[-2:]
                top, left = (h - self.size) // 2, (w - self.size) // 2
                return x[..., top : top + self.size, left : left + self.size]

        class Resize:
            def __init__(self, size):
                self.size = size

            def __call__(self, x: torch.Tensor) -> torch.Tensor:
                return F.interpolate(x[None], size=self.size, mode="bilinear", align_corners=False)[0]

        class Normalize:
            def __init__(self, mean, std):
                self.mean, self.std = torch.tensor(mean)[:, None, None], torch.tensor(std)[:, None, None]

            def __call__(self, x: torch.Tensor) -> torch.Tensor:
                return (x - self.mean) / self.std


class BERTTokenizer:
    """Stand-in for torchtext's BERTTokenizer with a local vocabulary (no download)."""

    def __init__(self, vocab_path: str | None = None, do_lower_case: bool = True, return_tokens: bool = True):
        self.do_lower_case = do_lower_case

    def __call__(self, texts: list[str]) -> list[list[str]]:
        return [re.findall(r"\w+|[^\w\s]", t.lower() if self.do_lower_case else t) for t in texts]
