from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

FASHION = Path("/usr/share/datasets/fashion-mnist")


@pytest.fixture(scope="session", autouse=True)
def dataset_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Decoded-array cache for this test session only: tests never touch ~/.cache."""
    path = tmp_path_factory.mktemp("ember-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("EMBER_CACHE_DIR", str(path))
        yield path / "datasets"


@pytest.fixture(scope="session")
def fashion_root() -> Path:
    if not (FASHION / "t10k-images-idx3-ubyte.gz").exists():
        pytest.skip("Fashion-MNIST is not installed: apt-get install dataset-fashion-mnist")
    return FASHION
