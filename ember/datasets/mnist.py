"""MNIST, Fashion-MNIST and KMNIST as map-style torch datasets, read from their IDX files.

Files are looked up under ``root`` (default ``~/.torch/datasets/<name>``, then the system folder
Debian packages use); decoded arrays are cached as ``.npz`` so the second load takes milliseconds.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
from torch.utils.data import Dataset

from ember.datasets.download import download_files
from ember.datasets.idx import read_idx
from ember.errors import ConfigError, DataError
from ember.fs import atomic_write, remove_stale_temporaries

_CACHE_VERSION = "1"


class _IdxImageDataset(Dataset):
    """28x28 grayscale images with integer labels, from the four standard IDX files."""

    name: ClassVar[str]  # folder name under ~/.torch/datasets
    title: ClassVar[str]  # how people write it
    classes: ClassVar[list[str]]
    MEAN: ClassVar[float | None] = None
    STD: ClassVar[float | None] = None
    mirrors: ClassVar[tuple[str, ...]]
    md5: ClassVar[dict[str, str]]  # official .gz file name -> md5
    system_dirs: ClassVar[tuple[str, ...]] = ()
    apt_package: ClassVar[str | None] = None

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        train: bool = True,
        transform: Callable[[Any], Any] | None = None,
        target_transform: Callable[[int], Any] | None = None,
        download: bool = False,
        normalize: bool | tuple[float, float] = False,
    ) -> None:
        self.train = train
        self.transform, self.target_transform = transform, target_transform
        self.mean, self.std = self._normalization(normalize)
        split = "train" if train else "t10k"
        self.files = [f"{split}-images-idx3-ubyte", f"{split}-labels-idx1-ubyte"]
        folder = self._find(root)
        if folder is None and root is not None:
            # installed already (apt-get install ...): used, and said, for every split, with or without
            # download=True: no download (which fails offline) and no "not found" for a package in place
            folder = self._system_copy(root, download)
        if folder is None and download:
            folder = Path(root).expanduser() if root is not None else self.default_root()
            download_files(folder, self.mirrors, self.md5, what=self.title)
            folder = self._find(folder)
        if folder is None:
            raise DataError(self._missing_message(root))
        self.root = folder
        images, labels = _load_cached([self._path(folder, f) for f in self.files], self.name)
        self._check(images, labels)
        self.data = torch.from_numpy(images)
        self.targets = torch.from_numpy(labels.astype(np.int64))

    def __len__(self) -> int:
        return len(self.targets)

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        """(image, label). A `transform` receives what torchvision's dataset hands it, a PIL Image in mode "L"
        (so `transforms.Compose([transforms.ToTensor(), ...])` works as written); with ember's own
        `normalize=` it receives that normalized tensor instead.
        Without a transform: a float32 [1, 28, 28] tensor."""
        target: Any = int(self.targets[index])
        if self.transform is not None and self.mean is None:
            image: Any = self.transform(self.pil_image(index))
        else:
            image = self.data[index].unsqueeze(0).to(torch.float32).div_(255)
            if self.mean is not None:
                image.sub_(self.mean).div_(self.std)
            if self.transform is not None:
                image = self.transform(image)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target

    def pil_image(self, index: int) -> Any:
        """Image `index` as torchvision's dataset gives it to a transform: a 28x28 PIL Image in mode "L"."""
        from PIL import Image

        return Image.fromarray(self.data[index].numpy())  # uint8 [28, 28]: mode "L"

    def __repr__(self) -> str:
        split = "train" if self.train else "test"
        return f"{type(self).__name__}({split}, {len(self)} images, root={str(self.root)!r})"

    @classmethod
    def default_root(cls) -> Path:
        return Path("~/.torch/datasets").expanduser() / cls.name

    def _normalization(self, normalize: bool | tuple[float, float]) -> tuple[float | None, float | None]:
        if normalize is False:
            return None, None
        if normalize is True:
            if self.MEAN is None or self.STD is None:
                raise ConfigError(f"{self.title} has no standard mean/std; pass normalize=(mean, std)")
            return self.MEAN, self.STD
        mean, std = normalize
        return float(mean), float(std)

    def _candidates(self, root: str | os.PathLike[str] | None) -> list[Path]:
        if root is None:
            return [self.default_root(), *map(Path, self.system_dirs)]
        root = Path(root).expanduser()
        # Also accept the layouts torchvision and a "datasets" folder produce.
        return [root, root / self.name, root / type(self).__name__ / "raw"]

    def _system_copy(self, root: str | os.PathLike[str], download: bool) -> Path | None:
        for folder in map(Path, self.system_dirs):
            if all(self._path(folder, f) is not None for f in self.files):
                instead = " instead of downloading" if download else ""
                print(
                    (
                        f"ember: {self.title} is not in {root} but "
                        f"installed in {folder}; using that copy{instead}"
                    ),
                    file=sys.stderr,
                )
                return folder
        return None

    def _find(self, root: str | os.PathLike[str] | None) -> Path | None:
        for folder in self._candidates(root):
            if all(self._path(folder, f) is not None for f in self.files):
                return folder
        return None

    @staticmethod
    def _path(folder: Path, stem: str) -> Any:
        for path in (folder / stem, folder / f"{stem}.gz"):
            if path.is_file():
                return path
        return None

    def _missing_message(self, root: str | os.PathLike[str] | None) -> str:
        folders = self._candidates(root) + ([Path(d) for d in self.system_dirs] if root is not None else [])
        looked = ", ".join(str(p) for p in folders)
        ways = [f"`apt-get install {self.apt_package}`"] if self.apt_package else []
        ways += ["pass download=True", "pass root= a folder holding them"]
        files = " and ".join(f"{f}[.gz]" for f in self.files)
        return f"{self.title} files {files} not found (looked in {looked}); get them: {', or '.join(ways)}"

    def _check(self, images: np.ndarray, labels: np.ndarray) -> None:
        where = self.root / self.files[0]
        if images.ndim != 3 or images.shape[1:] != (28, 28) or images.dtype != np.uint8:
            raise DataError(f"{where} holds {images.dtype} {images.shape}, expected uint8 [N, 28, 28]")
        if labels.ndim != 1 or len(labels) != len(images):
            raise DataError(f"{self.root}: {len(images)} images but labels of shape {labels.shape}")
        if len(labels) and labels.max() >= len(self.classes):
            raise DataError(f"{self.root}: label {labels.max()} outside 0..{len(self.classes) - 1}")


def _cache_dir() -> Path:
    if "EMBER_CACHE_DIR" in os.environ:
        return Path(os.environ["EMBER_CACHE_DIR"]) / "datasets"
    base = os.environ.get("XDG_CACHE_HOME") or Path("~/.cache").expanduser()
    return Path(base) / "ember" / "datasets"


def _load_cached(paths: list[Path], name: str) -> tuple[np.ndarray, np.ndarray]:
    """Decode the images and labels files, or load them from a cache keyed by path, size and mtime."""
    key = hashlib.sha1(_CACHE_VERSION.encode())
    for path in paths:
        stat = path.stat()
        key.update(f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}".encode())
    cached = _cache_dir() / name / f"{paths[0].name.split('-')[0]}-{key.hexdigest()[:16]}.npz"
    try:
        with np.load(cached) as arrays:
            return arrays["images"], arrays["labels"]
    except Exception:  # absent, unreadable or half-written by an older version: decode again
        pass
    images, labels = read_idx(paths[0]), read_idx(paths[1])
    _write_atomically(cached, images=images, labels=labels)
    return images, labels


def _write_atomically(path: Path, **arrays: np.ndarray) -> None:
    """Write the .npz cache atomically; a cache we cannot write is skipped (a stale killed write removed)."""
    remove_stale_temporaries(path.parent)
    try:
        with atomic_write(path) as f:
            # numpy's hint for **kwds is `bool` (its allow_pickle); the names here are the arrays' keys
            np.savez(f, **arrays)  # type: ignore[arg-type]
    except OSError:
        pass


class MNIST(_IdxImageDataset):
    """Handwritten digits, 60000 train + 10000 test images.

    Example::

        >>> ds = MNIST(train=False, download=True)   # files go to ~/.torch/datasets/mnist
        >>> image, label = ds[0]                     # float32 [1, 28, 28] in [0, 1], int
    """

    name = "mnist"
    title = "MNIST"
    classes = ["0 - zero", "1 - one", "2 - two", "3 - three", "4 - four",
               "5 - five", "6 - six", "7 - seven", "8 - eight", "9 - nine"]  # fmt: skip
    MEAN, STD = 0.1307, 0.3081
    mirrors = ("https://ossci-datasets.s3.amazonaws.com/mnist/", "http://yann.lecun.com/exdb/mnist/")
    md5 = {
        "train-images-idx3-ubyte.gz": "f68b3c2dcbeaaa9fbdd348bbdeb94873",
        "train-labels-idx1-ubyte.gz": "d53e105ee54ea40749a09fcbcd1e9432",
        "t10k-images-idx3-ubyte.gz": "9fb629c4189551a2d022fa330f9573f3",
        "t10k-labels-idx1-ubyte.gz": "ec29112dd5afa0611ce80d1b7f02629c",
    }


class FashionMNIST(_IdxImageDataset):
    """Zalando's clothing images, 60000 train + 10000 test, 10 classes.

    Found under ``~/.torch/datasets/fashion-mnist`` or ``/usr/share/datasets/fashion-mnist``
    (``apt-get install dataset-fashion-mnist``).

    Example::

        >>> ds = FashionMNIST(train=True, normalize=True)   # like Normalize((0.2860,), (0.3530,))
        >>> image, label = ds[0]
        >>> image.shape, ds.classes[label]
        (torch.Size([1, 28, 28]), 'Ankle boot')
    """

    name = "fashion-mnist"
    title = "Fashion-MNIST"
    classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
               "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]  # fmt: skip
    MEAN, STD = 0.2860, 0.3530
    mirrors = (
        "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",
        "https://raw.githubusercontent.com/zalandoresearch/fashion-mnist/master/data/fashion/",
    )
    md5 = {
        "train-images-idx3-ubyte.gz": "8d4fb7e6c68d591d4c3dfef9ec88bf0d",
        "train-labels-idx1-ubyte.gz": "25c81989df183df01b3e8a0aad5dffbe",
        "t10k-images-idx3-ubyte.gz": "bef4ecab320f06d8554ea6380940ec79",
        "t10k-labels-idx1-ubyte.gz": "bb300cfdad3c16e7a12a480ee83cd310",
    }
    system_dirs = ("/usr/share/datasets/fashion-mnist",)
    apt_package = "dataset-fashion-mnist"


class KMNIST(_IdxImageDataset):
    """Kuzushiji-MNIST: cursive Japanese characters, 60000 train + 10000 test, 10 classes."""

    name = "kmnist"
    title = "KMNIST"
    classes = ["o", "ki", "su", "tsu", "na", "ha", "ma", "ya", "re", "wo"]
    mirrors = ("http://codh.rois.ac.jp/kmnist/dataset/kmnist/",)
    md5 = {
        "train-images-idx3-ubyte.gz": "bdb82020997e1d708af4cf47b453dcf7",
        "train-labels-idx1-ubyte.gz": "e144d726b3acfaa3e44228e80efcd344",
        "t10k-images-idx3-ubyte.gz": "5c965bf0a639b31b8f53240b1b52f4d7",
        "t10k-labels-idx1-ubyte.gz": "7320c461ea6c1c855c0b718fb2a4b134",
    }
