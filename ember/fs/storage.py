"""One filesystem layer: a local path or a URL (s3://, gs://, memory://, file://) to a filesystem + path.

Every place where ember reads or writes a user-named location calls `storage_path` (a `pathlib.Path`
for local paths, `file://` and `local://` included; a `RemotePath` for anything else) or `resolve`
(a `pyarrow.fs.FileSystem` and the path on it). Object stores come from pyarrow (``s3://``, ``gs://``)
and, for other schemes (``memory://``, ...), from fsspec wrapped as a pyarrow filesystem.

S3 is configured the way the AWS tools are: credentials from ``AWS_ACCESS_KEY_ID`` /
``AWS_SECRET_ACCESS_KEY`` (or the usual profile files), the endpoint from ``AWS_ENDPOINT_URL_S3`` or
``AWS_ENDPOINT_URL``, the region from ``AWS_REGION`` / ``AWS_DEFAULT_REGION``; ``s3://anonymous@bucket``
reads without credentials (pyarrow's and Ray's form). Retries and timeouts are bounded
(`S3_ATTEMPTS`, `CONNECT_TIMEOUT_S`, `REQUEST_TIMEOUT_S`), and the first touch of a bucket checks
it, so a missing bucket, refused credentials or an unreachable endpoint is one `StorageError`
naming the URL and the problem within seconds, not a retry loop.

Example:
    >>> filesystem, path = resolve("memory://docs/example.txt")
    >>> with storage_path("memory://docs/example.txt").open("wb") as f:
    ...     _ = f.write(b"hi")
    >>> storage_path("memory://docs/example.txt").read_bytes()
    b'hi'
    >>> storage_path("file:///tmp/x.ckpt")
    PosixPath('/tmp/x.ckpt')
"""

from __future__ import annotations

import io
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any, cast

from ember.errors import StorageError
from ember.fs.url import scheme_of

#: How many times one S3 request is tried (the first try included) before the error is reported.
S3_ATTEMPTS = 3
CONNECT_TIMEOUT_S = 5.0
REQUEST_TIMEOUT_S = 30.0
#: Seconds for one object-store request (the deadline table of docs/safety.md; ember.deadlines names it too).
STORAGE_TIMEOUT_ENV = "EMBER_STORAGE_TIMEOUT_S"


def request_timeout_s() -> float:
    """EMBER_STORAGE_TIMEOUT_S when set to a positive number, else REQUEST_TIMEOUT_S."""
    text = os.environ.get(STORAGE_TIMEOUT_ENV, "").strip()
    try:
        value = float(text) if text else REQUEST_TIMEOUT_S
    except ValueError:
        value = -1.0
    if not value > 0:
        raise StorageError(f"{STORAGE_TIMEOUT_ENV}={text!r} must be a positive number of seconds")
    return value


_LOCAL_SCHEMES = ("file://", "local://")
_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*)://")
#: One filesystem per (scheme, user, endpoint[, request timeout]) and the buckets already checked.
_cache: dict[tuple[str | float, ...], Any] = {}
_checked: set[tuple[str | float, ...]] = set()


def _url_scheme(url: str) -> str:
    """The scheme of `url`, which `is_url` (or RemotePath's constructor) already accepted."""
    match = _SCHEME.match(url)
    if match is None:  # unreachable after those checks; said plainly rather than as an AttributeError
        raise ValueError(f"not a URL: {url!r}")
    return match.group(1)


_lock = threading.Lock()


def is_url(path: str | os.PathLike[str] | RemotePath) -> bool:
    """Whether `path` names a location outside the local filesystem (``file://`` is local).

    Example:
        >>> is_url("s3://bucket/x"), is_url("file:///tmp/x"), is_url("runs/x")
        (True, False, False)
    """
    text = os.fspath(path) if not isinstance(path, RemotePath) else path.url
    scheme = (
        scheme_of(text) if isinstance(text, str) else None
    )  # refuses "s3:/bucket", "foo://x" (ember.fs.url)
    return scheme is not None and scheme not in ("file", "local")


def local_path(path: str | os.PathLike[str]) -> str:
    """`path` without a ``file://`` or ``local://`` prefix (a local path stays as it is)."""
    text = os.fspath(path)
    if isinstance(text, str):
        scheme_of(text)  # a malformed URL never becomes a local folder named "s3:"
    for prefix in _LOCAL_SCHEMES:
        if text.startswith(prefix):
            return text[len(prefix) :]
    return text


def storage_path(path: str | os.PathLike[str] | RemotePath) -> Path | RemotePath:
    """A `pathlib.Path` for a local path, a `RemotePath` for a URL: the one call that replaces ``Path(x)``
    wherever a user's path may be on object storage."""
    if isinstance(path, (Path, RemotePath)):
        return path
    if is_url(path):
        return RemotePath(os.fspath(path))
    return Path(local_path(path))


def resolve(url: str | os.PathLike[str] | RemotePath) -> tuple[Any, str]:
    """The `pyarrow.fs.FileSystem` and the path on it that `url` names (a local path: the local filesystem).

    S3 buckets are checked once per process (see the module text): a missing bucket, refused
    credentials or an unreachable endpoint is one `StorageError`.
    """
    import pyarrow.fs as pafs

    text = url.url if isinstance(url, RemotePath) else os.fspath(url)
    if not is_url(text):
        return pafs.LocalFileSystem(), os.path.abspath(os.path.expanduser(local_path(text)))
    scheme = _url_scheme(text).lower()
    rest = text[len(scheme) + 3 :]
    if scheme in ("s3", "s3a"):
        return _s3(text, rest)
    if scheme in ("gs", "gcs"):
        return _gcs(text, rest)
    return _fsspec(text, scheme)


def _s3(url: str, rest: str) -> tuple[Any, str]:
    import pyarrow.fs as pafs

    user, _, location = rest.rpartition("@") if "@" in rest.split("/", 1)[0] else ("", "", rest)
    location = location.split("?", 1)[0]
    bucket = location.split("/", 1)[0]
    if not bucket:
        raise StorageError(f"{url}: no bucket in the URL; write s3://<bucket>/<key>")
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or ""
    key = ("s3", user, endpoint, request_timeout_s())
    with _lock:
        filesystem = _cache.get(key)
        if filesystem is None:
            options: dict[str, Any] = {
                "anonymous": user == "anonymous",
                "region": os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1",
                "connect_timeout": min(CONNECT_TIMEOUT_S, key[3]),
                "request_timeout": key[3],
                "retry_strategy": pafs.AwsStandardS3RetryStrategy(max_attempts=S3_ATTEMPTS),
            }
            if endpoint:
                options["endpoint_override"] = endpoint
            filesystem = _cache[key] = pafs.S3FileSystem(**options)
    _check_bucket(filesystem, url, bucket, key + (bucket,))
    return filesystem, location.rstrip("/")


def _check_bucket(filesystem: Any, url: str, bucket: str, key: tuple[str | float, ...]) -> None:
    import pyarrow.fs as pafs

    if key in _checked:
        return
    try:
        info = filesystem.get_file_info(bucket)
    except OSError as e:
        raise storage_error(url, e) from None
    if info.type == pafs.FileType.NotFound:
        raise StorageError(
            f"{url}: bucket {bucket!r} does not exist at {_endpoint_text()}; create it first "
            "(ember never creates buckets) or fix the URL"
        )
    _checked.add(key)


def _gcs(url: str, rest: str) -> tuple[Any, str]:
    import pyarrow.fs as pafs

    anonymous, _, location = rest.rpartition("@") if "@" in rest.split("/", 1)[0] else ("", "", rest)
    key = ("gs", anonymous, "")
    with _lock:
        filesystem = _cache.get(key)
        if filesystem is None:
            from datetime import timedelta

            filesystem = _cache[key] = pafs.GcsFileSystem(
                anonymous=anonymous == "anonymous", retry_time_limit=timedelta(seconds=request_timeout_s())
            )
    return filesystem, location.split("?", 1)[0].rstrip("/")


def _fsspec(url: str, scheme: str) -> tuple[Any, str]:
    import pyarrow.fs as pafs

    try:
        import fsspec
    except ImportError:
        raise StorageError(f"{url}: the {scheme}:// scheme needs fsspec; pip install fsspec") from None
    try:
        filesystem, path = fsspec.core.url_to_fs(url)
    except (ImportError, ValueError) as e:
        raise StorageError(
            f"{url}: no filesystem for {scheme}:// ({e}); install the fsspec package for it"
        ) from None
    return pafs.PyFileSystem(pafs.FSSpecHandler(filesystem)), path.rstrip("/") or "/"


def _endpoint_text() -> str:
    return os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or "AWS S3"


def storage_error(url: str, error: BaseException) -> StorageError:
    """One line naming `url` and what the store said (missing bucket, credentials, endpoint, ...)."""
    text = str(error)
    if "NO_SUCH_BUCKET" in text or "NoSuchBucket" in text or "bucket does not exist" in text.lower():
        problem = "the bucket does not exist; create it first (ember never creates buckets) or fix the URL"
    elif any(
        s in text
        for s in (
            "ACCESS_DENIED",
            "AccessDenied",
            "InvalidAccessKeyId",
            "SignatureDoesNotMatch",
            "INVALID_ACCESS_KEY_ID",
            "SIGNATURE_DOES_NOT_MATCH",
        )
    ) or re.search(r"\b403\b", text):
        problem = (
            "the credentials were refused; check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (or the "
            "profile) and the bucket's permissions"
        )
    elif any(
        s in text for s in ("NETWORK_CONNECTION", "curlCode", "Could not connect", "timed out", "Timeout")
    ):
        problem = (
            f"the endpoint {_endpoint_text()} did not answer (after {S3_ATTEMPTS} tries); check "
            f"AWS_ENDPOINT_URL and the network (the deadline: {STORAGE_TIMEOUT_ENV})"
        )
    else:
        problem = f"the store refused the request ({text.splitlines()[0] if text else type(error).__name__})"
    return StorageError(f"{url}: {problem}")


@dataclass(frozen=True)
class RemoteStat:
    """What `RemotePath.stat` knows about an object: its size and modification time."""

    st_size: int
    st_mtime_ns: int
    st_mtime: float
    st_mode: int = 0o100644


class RemotePath:
    """A location on an object store or fsspec filesystem, with the part of `pathlib.Path`'s interface
    ember uses (``/``, ``name``, ``parent``, ``exists``, ``is_file``, ``open``, ``unlink``, ...).

    ``str()`` gives the URL back. Folders on object stores are prefixes: ``mkdir`` makes nothing
    there, and ``exists`` is true for a prefix with objects under it.
    """

    def __init__(self, url: str) -> None:
        match = _SCHEME.match(url)
        if match is None:
            raise ValueError(f"not a URL: {url!r}")
        self.url = url.rstrip("/") if len(url) > len(match.group(0)) + 1 else url

    # ---- names ------------------------------------------------------------------------------
    def __str__(self) -> str:
        return self.url

    def __repr__(self) -> str:
        return f"RemotePath({self.url!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RemotePath) and other.url == self.url

    def __hash__(self) -> int:
        return hash(self.url)

    def __lt__(self, other: RemotePath) -> bool:
        return self.url < other.url

    def __truediv__(self, name: str | os.PathLike[str]) -> RemotePath:
        return RemotePath(f"{self.url}/{os.fspath(name).lstrip('/')}")

    @property
    def _scheme_and_rest(self) -> tuple[str, str]:
        scheme = _url_scheme(self.url) + "://"
        return scheme, self.url[len(scheme) :]

    @property
    def name(self) -> str:
        return PurePosixPath(self._scheme_and_rest[1]).name

    @property
    def suffix(self) -> str:
        return PurePosixPath(self.name).suffix

    @property
    def stem(self) -> str:
        return PurePosixPath(self.name).stem

    @property
    def parent(self) -> RemotePath:
        scheme, rest = self._scheme_and_rest
        head = rest.rsplit("/", 1)[0] if "/" in rest else rest
        return RemotePath(scheme + head)

    @property
    def parents(self) -> list[RemotePath]:
        found, current = [], self
        while current.parent != current:
            current = current.parent
            found.append(current)
        return found

    def resolve(self) -> RemotePath:
        return self

    def expanduser(self) -> RemotePath:
        return self

    # ---- the store ----------------------------------------------------------------------------
    def _fs(self) -> tuple[Any, str]:
        return resolve(self.url)

    def _info(self) -> Any:
        filesystem, path = self._fs()
        try:
            return filesystem.get_file_info(path)
        except OSError as e:
            raise storage_error(self.url, e) from None

    def exists(self) -> bool:
        import pyarrow.fs as pafs

        return bool(self._info().type != pafs.FileType.NotFound)

    def is_file(self) -> bool:
        import pyarrow.fs as pafs

        return bool(self._info().type == pafs.FileType.File)

    def is_dir(self) -> bool:
        import pyarrow.fs as pafs

        return bool(self._info().type == pafs.FileType.Directory)

    def is_symlink(self) -> bool:
        return False

    def stat(self) -> RemoteStat:
        import pyarrow.fs as pafs

        info = self._info()
        if info.type == pafs.FileType.NotFound:
            raise FileNotFoundError(self.url)
        mtime_ns = info.mtime_ns or 0
        return RemoteStat(st_size=info.size or 0, st_mtime_ns=mtime_ns, st_mtime=mtime_ns / 1e9)

    def iterdir(self) -> Iterator[RemotePath]:
        import pyarrow.fs as pafs

        filesystem, path = self._fs()
        try:
            infos = filesystem.get_file_info(pafs.FileSelector(path, allow_not_found=True))
        except OSError as e:
            raise storage_error(self.url, e) from None
        for info in sorted(infos, key=lambda i: i.base_name):
            yield self / info.base_name

    def glob(self, pattern: str) -> Iterator[RemotePath]:
        import fnmatch

        return (p for p in self.iterdir() if fnmatch.fnmatchcase(p.name, pattern))

    def rglob(self, pattern: str) -> Iterator[RemotePath]:
        """Every entry below this prefix whose name matches `pattern`, at any depth."""
        import fnmatch

        import pyarrow.fs as pafs

        filesystem, path = self._fs()
        try:
            infos = filesystem.get_file_info(pafs.FileSelector(path, recursive=True, allow_not_found=True))
        except OSError as e:
            raise storage_error(self.url, e) from None
        for info in sorted(infos, key=lambda i: i.path):
            if fnmatch.fnmatchcase(info.base_name, pattern):
                yield self / info.path[len(path) :].lstrip("/")

    def mkdir(self, parents: bool = False, exist_ok: bool = False) -> None:
        filesystem, path = self._fs()
        try:
            filesystem.create_dir(path, recursive=True)  # a no-op marker on object stores
        except OSError as e:
            raise storage_error(self.url, e) from None

    def unlink(self, missing_ok: bool = False) -> None:
        filesystem, path = self._fs()
        try:
            filesystem.delete_file(path)
        except FileNotFoundError:
            if not missing_ok:
                raise
        except OSError as e:
            if not (missing_ok and "not exist" in str(e).lower()):
                raise storage_error(self.url, e) from None

    def open(self, mode: str = "r", encoding: str | None = None, newline: str | None = None) -> IO[Any]:
        """Read whole or write whole: ``"w"``/``"wb"`` go
        through `atomic_write` (the object appears on close)."""
        if mode in ("r", "rb"):
            data = self.read_bytes()
            raw = io.BytesIO(data)
            return (
                raw if mode == "rb" else io.TextIOWrapper(raw, encoding=encoding or "utf-8", newline=newline)
            )
        if mode in ("w", "wb"):
            filesystem, path = self._fs()
            # a file object in all but its class: it forwards every attribute to the spool it writes
            return cast(IO[Any], _ContextFile(write_whole(filesystem, path, mode, encoding, newline)))
        raise ValueError(
            f"{self.url}: object stores are read or written whole; mode {mode!r} is not possible"
        )

    def read_bytes(self) -> bytes:
        filesystem, path = self._fs()
        try:
            with filesystem.open_input_stream(path) as f:
                data: bytes = f.read()
                return data
        except FileNotFoundError:
            raise
        except OSError as e:
            if "not exist" in str(e).lower() or "not found" in str(e).lower():
                raise FileNotFoundError(self.url) from None
            if "is a directory" in str(e).lower() or "directory" in str(e).lower() and self.is_dir():
                raise IsADirectoryError(self.url) from None
            raise storage_error(self.url, e) from None

    def read_text(self, encoding: str = "utf-8") -> str:
        return self.read_bytes().decode(encoding)

    def write_bytes(self, data: bytes) -> int:
        with self.open("wb") as f:
            f.write(data)
        return len(data)

    def write_text(self, text: str, encoding: str = "utf-8") -> int:
        with self.open("w", encoding=encoding) as f:
            f.write(text)
        return len(text)


class _ContextFile:
    """A file opened by entering a context manager, closed (and committed) by leaving it."""

    def __init__(self, context: Any) -> None:
        self._context = context
        self._file = context.__enter__()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._file, name)

    def __enter__(self) -> Any:
        return self._file

    def __exit__(self, *exc: Any) -> bool:
        return bool(self._context.__exit__(*exc))

    def close(self) -> None:
        self._context.__exit__(None, None, None)


def readable(path: str | os.PathLike[str] | RemotePath) -> Any:
    """What ``torch.load`` / ``pyarrow`` can read: the local path itself, or the object's bytes in memory."""
    path = storage_path(path)
    return path if isinstance(path, Path) else io.BytesIO(path.read_bytes())


#: Bytes kept in memory before the spool of an object-store write moves to a local temporary file.
SPOOL_BYTES = 64 << 20


@contextmanager
def write_whole(
    filesystem: Any, path: str, mode: str, encoding: str | None, newline: str | None
) -> Iterator[IO[Any]]:
    """Collect the bytes locally; upload them in one stream only after the block succeeded."""
    with tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES) as spool:
        if mode == "wb":
            yield spool
        else:
            # typeshed's TextIOWrapper wants a buffer class it knows; a spool is a binary file like them
            text = io.TextIOWrapper(cast(IO[bytes], spool), encoding=encoding or "utf-8", newline=newline)
            yield text
            text.flush()
            text.detach()
        spool.seek(0)
        try:
            with filesystem.open_output_stream(path) as out:
                shutil.copyfileobj(spool, out, 8 << 20)
        except OSError as e:
            raise storage_error(_url_of(filesystem, path), e) from None


def _url_of(filesystem: Any, path: str) -> str:
    scheme = {"S3FileSystem": "s3", "GcsFileSystem": "gs"}.get(type(filesystem).__name__, "")
    return f"{scheme}://{path}" if scheme else path
