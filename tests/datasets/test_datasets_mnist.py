from __future__ import annotations

import gzip
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from ember.datasets import KMNIST, MNIST, FashionMNIST
from ember.errors import ConfigError, DataError


def test_fashion_mnist_real_files(fashion_root: Path) -> None:
    train, test = FashionMNIST(train=True), FashionMNIST(train=False)
    assert (len(train), len(test)) == (60000, 10000)
    assert train.root == fashion_root
    assert train.data.dtype == torch.uint8 and train.data.shape == (60000, 28, 28)
    assert train.targets.dtype == torch.int64
    assert torch.bincount(train.targets).tolist() == [6000] * 10
    assert torch.bincount(test.targets).tolist() == [1000] * 10
    assert len(train.classes) == 10

    image, label = train[0]
    assert image.dtype == torch.float32 and image.shape == (1, 28, 28)
    assert image.min() >= 0.0 and image.max() <= 1.0
    assert type(label) is int and train.classes[label] == "Ankle boot"
    assert torch.equal(image[0], train.data[0].float() / 255)


def test_published_mean_and_std_match_the_data(fashion_root: Path) -> None:
    pixels = FashionMNIST(root=fashion_root).data.float() / 255
    assert pixels.mean().item() == pytest.approx(FashionMNIST.MEAN, abs=5e-5)
    assert pixels.std().item() == pytest.approx(FashionMNIST.STD, abs=5e-5)


def test_normalize_and_transform(fashion_root: Path) -> None:
    plain = FashionMNIST(train=False)[7][0]
    normalized = FashionMNIST(train=False, normalize=True, transform=lambda x: x * 2)[7][0]
    torch.testing.assert_close(normalized, (plain - 0.2860) / 0.3530 * 2)
    custom = FashionMNIST(train=False, normalize=(0.5, 0.5))[7][0]
    torch.testing.assert_close(custom, (plain - 0.5) / 0.5)


def test_kmnist_has_no_standard_stats() -> None:
    with pytest.raises(ConfigError, match=r"normalize=\(mean, std\)"):
        KMNIST(normalize=True)


def test_works_with_a_data_loader(fashion_root: Path) -> None:
    images, labels = next(iter(torch.utils.data.DataLoader(FashionMNIST(train=False), batch_size=64)))
    assert images.shape == (64, 1, 28, 28) and labels.dtype == torch.int64


def test_decoded_arrays_are_cached(fashion_root: Path, dataset_cache: Path, tmp_path: Path) -> None:
    root = tmp_path / "FashionMNIST" / "raw"  # torchvision's layout, uncompressed files
    root.mkdir(parents=True)
    for name in ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"):
        with gzip.open(fashion_root / f"{name}.gz") as src, open(root / name, "wb") as dst:
            shutil.copyfileobj(src, dst)
    first = FashionMNIST(root=tmp_path, train=False)
    cached = sorted((dataset_cache / "fashion-mnist").glob("t10k-*.npz"))
    assert len(cached) == 2  # one for the system files, one for this copy
    assert torch.equal(FashionMNIST(root=tmp_path, train=False).data, first.data)

    for path in cached:  # a damaged cache is ignored and rewritten, never trusted
        path.write_bytes(b"garbage")
    again = FashionMNIST(root=tmp_path, train=False)
    assert torch.equal(again.data, first.data) and torch.equal(again.targets, first.targets)
    assert torch.equal(again.data, FashionMNIST(train=False).data)  # raw and .gz agree
    assert len(list((dataset_cache / "fashion-mnist").glob(".*.tmp"))) == 0


def test_missing_files_say_where_and_how(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setattr(FashionMNIST, "system_dirs", (str(tmp_path / "nowhere"),))
    with pytest.raises(DataError) as err:
        FashionMNIST()
    message = str(err.value)
    assert "\n" not in message
    assert str(tmp_path / ".torch/datasets/fashion-mnist") in message and "nowhere" in message
    assert "apt-get install dataset-fashion-mnist" in message
    assert "download=True" in message and "root=" in message

    with pytest.raises(DataError, match=r"MNIST files train-images-idx3-ubyte\[\.gz\].*download=True"):
        MNIST(root=tmp_path / "empty")


def test_truncated_dataset_file(fashion_root: Path, tmp_path: Path) -> None:
    shutil.copy(fashion_root / "t10k-labels-idx1-ubyte.gz", tmp_path)
    raw = gzip.decompress((fashion_root / "t10k-images-idx3-ubyte.gz").read_bytes())
    (tmp_path / "t10k-images-idx3-ubyte").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(DataError, match=r"t10k-images-idx3-ubyte is truncated"):
        FashionMNIST(root=tmp_path, train=False)


def test_import_is_light() -> None:
    code = "import sys, ember.datasets; print(sorted({'pyarrow', 'pandas', 'PIL'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_download_with_an_explicit_root_uses_the_installed_copy(
    fashion_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import ember.datasets.mnist as mnist

    def offline(*args: object, **kwargs: object) -> None:
        raise AssertionError("downloaded although the files are installed")

    monkeypatch.setattr(mnist, "download_files", offline)
    root = tmp_path / "data"
    test_set = FashionMNIST(root=root, train=False, download=True)
    assert test_set.root == fashion_root and len(test_set) == 10000
    assert f"is not in {root} but installed in {fashion_root}; using that copy" in capsys.readouterr().err


def test_cache_writes_are_atomic_and_clean_up_a_killed_writer(
    fashion_root: Path, dataset_cache: Path
) -> None:
    from ember.fs import is_temporary

    folder = dataset_cache / "fashion-mnist"
    folder.mkdir(parents=True, exist_ok=True)
    stale = folder / ".t10k-0123456789abcdef.npz.999999999.k3j_x9.ember-tmp"  # pid 999999999 is not running
    stale.write_bytes(b"half")
    for cached in folder.glob("t10k-*.npz"):
        cached.unlink()  # force a fresh write
    FashionMNIST(train=False)
    assert not stale.exists()
    assert [p.name for p in folder.iterdir() if is_temporary(p.name)] == []
    assert list(folder.glob("t10k-*.npz"))


@pytest.mark.parametrize("train, download", [(True, False), (False, False), (False, True), (True, True)])
def test_every_split_finds_the_installed_copy_with_or_without_download(
    fashion_root: Path, tmp_path: Path, train: bool, download: bool
) -> None:
    """A root= without the files falls back to the installed package for both splits, download or not,
    and says so; nothing is downloaded (this runs in a fresh process with no network needed)."""
    root = tmp_path / "data"
    code = (
        "import sys; from ember.datasets import FashionMNIST; "
        f"ds = FashionMNIST(root={str(root)!r}, train={train}, download={download}); "
        "print(ds.root, len(ds))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == [str(fashion_root), "60000" if train else "10000"]
    assert f"is not in {root} but installed in {fashion_root}; using that copy" in out.stderr
    assert "downloading http" not in out.stdout + out.stderr and not root.exists()


def test_a_root_without_the_files_names_the_system_folder_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(FashionMNIST, "system_dirs", (str(tmp_path / "nowhere"),))
    with pytest.raises(DataError) as err:
        FashionMNIST(root=tmp_path / "data", train=False)
    message = str(err.value)
    assert str(tmp_path / "nowhere") in message and "apt-get install dataset-fashion-mnist" in message
    assert "\n" not in message
