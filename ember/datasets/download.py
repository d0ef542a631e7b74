"""Fetch dataset files from their official mirrors and verify them against published checksums."""

from __future__ import annotations

import hashlib
from pathlib import Path

from ember.errors import DataError
from ember.fs import atomic_write, make_folders, remove_stale_temporaries


def download_files(folder: Path, mirrors: tuple[str, ...], md5: dict[str, str], what: str) -> None:
    """Put every file of ``md5`` into ``folder``, trying each mirror until the checksum matches.

    Files already present with the right checksum are kept; a file is only ever written under its
    final name by an atomic rename after its checksum was verified.
    """
    make_folders(folder)
    for name, expected in md5.items():
        target = folder / name
        if target.is_file() and _md5(target) == expected:
            continue
        errors = []
        for mirror in mirrors:
            try:
                _fetch(mirror + name, target, expected)
                break
            except (OSError, ValueError) as err:
                errors.append(f"{mirror}: {err}")
        else:
            raise DataError(f"could not download {what} file {name} into {folder} ({'; '.join(errors)})")


def _fetch(url: str, target: Path, expected_md5: str, timeout: float = 60.0) -> None:
    from urllib.request import Request, urlopen  # only paid for when downloading

    print(f"downloading {url}", flush=True)
    digest = hashlib.md5(usedforsecurity=False)
    remove_stale_temporaries(target.parent)  # an earlier download killed half-way
    with (
        atomic_write(target) as out,  # the file appears under its name only once its checksum matched
        urlopen(Request(url, headers={"User-Agent": "ember"}), timeout=timeout) as response,
    ):
        while chunk := response.read(1 << 20):
            digest.update(chunk)
            out.write(chunk)
        if digest.hexdigest() != expected_md5:
            raise ValueError(f"md5 {digest.hexdigest()} != published {expected_md5}")


def _md5(path: Path) -> str:
    digest = hashlib.md5(usedforsecurity=False)
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()
