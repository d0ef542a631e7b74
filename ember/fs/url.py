"""The one URL parser: whether a path names an object store, a local file, or is a malformed URL.

Every path or URL that enters ember (``default_root_dir``, ``storage_path``, ``save_dir``, ``ckpt_path``,
the ``read_*`` / ``write_*`` paths) reaches `scheme_of` through `ember.fs.is_url`, so one set of rules
decides for all of them:

- ``scheme://rest`` with a scheme ember or fsspec knows (``s3``, ``gs``, ``memory``, ``hdfs``, ...) is a
  URL; ``file://`` and ``local://`` are local paths;
- ``scheme://rest`` with an unknown scheme (``foo://x``, a typo such as ``s4://``) is refused;
- a known scheme followed by a colon but not by ``//`` (``s3:/bucket``, ``s3:bucket``, ``gs:/b``) and any
  ``word:/`` with a single slash is refused: ember never turns it into a local folder named ``s3:``.

Anything else is a local path (``runs/a:b`` and ``C:/x`` included: a colon inside a name is legal).

Example:
    >>> scheme_of("s3://bucket/run"), scheme_of("runs/x"), scheme_of("file:///tmp/x")
    ('s3', None, 'file')
    >>> scheme_of("s3:/bucket/run")  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ember.errors.MalformedURLError: 's3:/bucket/run' looks like a URL but is malformed (one slash after
    's3:'); write s3://bucket/run for the object store, or ./s3:/bucket/run for a local folder
"""

from __future__ import annotations

import re

from ember.errors import MalformedURLError

#: Schemes ember handles itself (pyarrow's S3 and GCS); others go through fsspec.
OWN_SCHEMES = frozenset({"s3", "s3a", "gs", "gcs", "file", "local", "memory"})
_WITH_SLASHES = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_COLON = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):(/?)(?!/)")


def known_scheme(scheme: str) -> bool:
    """Whether ember can open ``scheme://`` (its own schemes, or one fsspec has an implementation for)."""
    scheme = scheme.lower()
    if scheme in OWN_SCHEMES:
        return True
    try:
        from fsspec.registry import known_implementations, registry
    except ImportError:
        return False
    return scheme in known_implementations or scheme in registry


def scheme_of(text: str) -> str | None:
    """The URL scheme of `text` (lower case), None for a local path; raises MalformedURLError for a string
    that looks like a URL but is not a usable one."""
    match = _WITH_SLASHES.match(text)
    if match is not None:
        scheme = match.group(1).lower()
        if not known_scheme(scheme):
            raise MalformedURLError(
                f"{text!r}: unknown URL scheme {scheme + '://'!r}; ember reads and writes local paths and "
                "s3://, gs://, memory://, file:// (and the schemes of installed fsspec packages)"
            )
        return scheme
    match = _COLON.match(text)
    if match is None:
        return None
    scheme, slash = match.group(1), match.group(2)
    if not slash and not known_scheme(scheme):
        return None  # "run:1/x": a local name with a colon in it
    rest = text[match.end() :]
    problem = "one slash" if slash else "no slashes"
    fixed = f"{scheme}://{rest}"
    raise MalformedURLError(
        f"{text!r} looks like a URL but is malformed ({problem} after {scheme + ':'!r}); write "
        f"{_shown(fixed)} for the object store, or {_shown('./' + text)} for a local folder"
    )


def _shown(text: str) -> str:
    """The text as typed when it prints on one line, else its repr (a newline must not split the message)."""
    return text if text.isprintable() else repr(text)
