"""A local folder kept in step with a folder on an object store, for writers that need a real disk.

Some writers cannot target an object store directly: TorchTrainer's workers rename checkpoint
folders into place and append to ``result.json``. With ``RunConfig(storage_path="s3://...")`` they
work in a local folder, and `mirrored` uploads it (as Ray Train persists a run to its storage path):

- on entry, whatever the store already holds for the run is downloaded (a restarted run resumes);
- while the block runs, a thread uploads new or changed files every `INTERVAL_S` seconds;
- on exit (success, error or Ctrl-C), one last upload;
- a file it uploaded (or downloaded) that is later deleted locally is deleted from the store.

Each file becomes one whole object (`ember.fs.atomic_write`: spooled, uploaded in one stream).
Names starting with ``.`` (staging folders, temporaries) are never uploaded, and the files named in
``last`` (``result.json``, which names the checkpoints) go after everything else in each pass, and only
up to their last complete line, so the store never holds a record naming a checkpoint whose files are
not there yet.

Example:
    >>> import pathlib, tempfile
    >>> local = pathlib.Path(tempfile.mkdtemp())
    >>> with mirrored(local, "memory://mirror-doc/run"):
    ...     _ = (local / "result.json").write_text('{"loss": 1}\\n')
    >>> storage_path("memory://mirror-doc/run/result.json").read_text()
    '{"loss": 1}\\n'
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ember.errors import UnsafePathError
from ember.fs.atomic import atomic_write
from ember.fs.confine import confined, refuse_linked_folders
from ember.fs.storage import RemotePath, storage_path

INTERVAL_S = 2.0


@contextmanager
def mirrored(
    local: str | Path, url: str | None, last: tuple[str, ...] = ("result.json",), interval: float = INTERVAL_S
) -> Iterator[None]:
    """Keep `local` uploaded to `url` while the block runs (nothing happens when `url` is None)."""
    if url is None:
        yield
        return
    local, remote = Path(local), storage_path(url)
    assert isinstance(remote, RemotePath), f"{url} is not an object-store URL"
    download(remote, local)
    uploader = _Uploader(local, remote, last)
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(interval):
            uploader.sync()

    thread = threading.Thread(target=loop, name="ember-mirror", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        uploader.sync()


def download(remote: RemotePath, local: Path) -> list[str]:
    """Copy every object under `remote` into `local` (same relative names); returns those names.

    A key whose name would leave `local` (``run1/../../escape.txt``, an absolute part, a link planted in
    the working copy) is skipped with a one-line warning: nothing is written outside the working copy."""
    names = []
    for entry in remote.rglob("*"):
        relative = entry.url[len(remote.url) + 1 :]
        if not relative or entry.is_dir():
            continue
        try:
            target = confined(local, relative)
            target.parent.mkdir(parents=True, exist_ok=True)
            refuse_linked_folders(target.parent, local)
        except UnsafePathError as e:
            warnings.warn(f"{entry.url}: not mirrored: {e}", stacklevel=2)
            continue
        try:
            data = entry.read_bytes()
        except (FileNotFoundError, IsADirectoryError):  # a key the store lists but cannot read ("a//b")
            warnings.warn(
                f"{entry.url}: not mirrored: the store lists it but cannot read it back", stacklevel=2
            )
            continue
        with atomic_write(target) as f:
            f.write(data)
        names.append(relative)
    return names


class _Uploader:
    """Uploads the files of `local` that are new or changed since its last pass."""

    def __init__(self, local: Path, remote: RemotePath, last: tuple[str, ...]) -> None:
        self.local, self.remote, self.last = local, remote, last
        self.sent: dict[str, tuple[int, int]] = {}
        self.lock = threading.Lock()
        for file in self._files():  # what was just downloaded is already there
            self.sent[file.relative_to(local).as_posix()] = _signature(file)

    def _files(self) -> list[Path]:
        found = []
        for file in self.local.rglob("*"):
            relative = file.relative_to(self.local)
            if (
                file.is_file()
                and not file.is_symlink()
                and not any(p.startswith(".") for p in relative.parts)
            ):
                found.append(file)
        return sorted(found, key=lambda f: (f.name in self.last, f.as_posix()))

    def sync(self) -> None:
        with self.lock:
            for file in self._files():
                relative = file.relative_to(self.local).as_posix()
                try:
                    signature = _signature(file)
                    if self.sent.get(relative) == signature:
                        continue
                    data = file.read_bytes()
                except FileNotFoundError:  # removed while we looked (a replaced checkpoint)
                    continue
                if file.name in self.last:
                    data = data[: data.rfind(b"\n") + 1]  # whole lines only: a writer may be mid-append
                with atomic_write(self.remote / relative) as f:
                    f.write(data)
                self.sent[relative] = signature
            self._remove_deleted()

    def _remove_deleted(self) -> None:
        """Files this mirror sent (or downloaded) that are gone locally (checkpoints a retention policy
        deleted) are deleted from the store too: after the pass uploaded the record that drops them."""
        for relative in [name for name in self.sent if not (self.local / name).exists()]:
            (self.remote / relative).unlink(missing_ok=True)
            del self.sent[relative]


def _signature(file: Path) -> tuple[int, int]:
    stat = file.stat()
    return stat.st_size, stat.st_mtime_ns
