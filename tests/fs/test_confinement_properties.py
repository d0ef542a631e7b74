"""Property-based tests of the file gate: random relative names (``..``, ``.``, absolute parts, links in and
out of the root, unicode, URL-looking parts) never resolve outside their root, and writing through the gate
never touches anything outside it; random URL-looking strings either parse as a usable URL, are refused in
one line, or are plain local names, and a local name is never a folder named after a URL scheme."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ember.errors import MalformedURLError, UnsafePathError
from ember.fs import atomic_write, confined, is_url, local_path, storage_path
from ember.fs.url import known_scheme

PARTS = st.one_of(
    st.sampled_from(
        [
            "..",
            ".",
            "",
            "a",
            "b",
            "link_out",
            "link_in",
            "link_loop",
            "s3:",
            "C:",
            "~",
            "\\..",
            "..\\..",
            "ü",
            "名前",
            "\u202e",
            " ",
            "a..b",
            "...",
            "-",
        ]
    ),
    st.text(
        alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00/"),
        min_size=1,
        max_size=8,
    ),
)
RELATIVE = st.builds(
    lambda lead, parts: lead + "/".join(parts),
    st.sampled_from(["", "/", "//", "./", "../"]),
    st.lists(PARTS, min_size=1, max_size=6),
)
SETTINGS = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> tuple[Path, Path]:
    """A root holding links that lead out of it, inside it and in a loop, beside a folder of the user's."""
    base = tmp_path_factory.mktemp("world")
    root, outside = base / "root", base / "outside"
    (root / "a" / "b").mkdir(parents=True)
    outside.mkdir()
    (outside / "user.txt").write_text("the user's")
    (root / "link_out").symlink_to(outside)
    (root / "a" / "link_out").symlink_to("../../outside")
    (root / "link_in").symlink_to(root / "a")
    (root / "link_loop").symlink_to("link_loop")
    return root, outside


def inside(root: Path, path: Path) -> bool:
    real_root, real = os.path.realpath(root), os.path.realpath(path)
    return real.startswith(real_root + os.sep)


@SETTINGS
@given(relative=RELATIVE)
def test_confined_never_resolves_outside_its_root(world, relative):
    root, _ = world
    try:
        path = confined(root, relative)
    except UnsafePathError as e:
        message = str(e)
        assert "\n" not in message and repr(str(root)) in message and repr(relative) in message
        return
    assert inside(root, path), (relative, path)
    assert not Path(relative).is_absolute() and ".." not in Path(relative).parts


@SETTINGS
@given(relative=RELATIVE, data=st.binary(max_size=16))
def test_writing_through_the_gate_never_changes_anything_outside_the_root(world, relative, data):
    root, outside = world
    before = sorted((p.name, p.read_bytes()) for p in outside.iterdir())
    try:
        path = confined(root, relative)
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_write(path) as f:
            f.write(data)
    except UnsafePathError:
        pass
    except OSError:  # a name the filesystem cannot hold (too long, a folder already there, a link loop)
        pass
    else:
        assert inside(root, path) and path.read_bytes() == data
    assert sorted((p.name, p.read_bytes()) for p in outside.iterdir()) == before
    assert not (root.parent / "escape").exists()


SCHEMES = st.one_of(
    st.sampled_from(
        [
            "s3",
            "S3",
            "gs",
            "gcs",
            "memory",
            "file",
            "local",
            "http",
            "hdfs",
            "foo",
            "s4",
            "x",
            "C",
            "run",
            "a+b",
            "a.b",
        ]
    ),
    st.from_regex(r"[A-Za-z][A-Za-z0-9+.-]{0,6}", fullmatch=True),
)
URLISH = st.builds(
    lambda scheme, colon, slashes, rest: scheme + colon + slashes + rest,
    SCHEMES,
    st.sampled_from([":", ""]),
    st.sampled_from(["", "/", "//", "///"]),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=12),
)


@SETTINGS
@given(text=URLISH)
def test_a_url_looking_string_is_a_url_a_one_line_refusal_or_a_plain_local_name(text, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    try:
        remote = is_url(text)
    except MalformedURLError as e:
        assert "\n" not in str(e) and repr(text) in str(e)
        assert os.listdir(tmp_path) == []
        return
    match = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*):", text)
    if remote:
        assert text.split("://", 1)[0].lower() == match.group(1).lower() and known_scheme(match.group(1))
        assert not isinstance(storage_path(text), Path)  # a RemotePath: nothing local is made for it
        return
    local = local_path(text)
    first = Path(local).parts[0] if Path(local).parts else ""
    if match is not None and not text.lower().startswith(("file://", "local://")):
        scheme = match.group(1)
        assert len(scheme) == 1 or not known_scheme(scheme), text  # C:/x, or "run:1": never "s3:" as a folder
        assert not text[len(scheme) + 1 :].startswith("/") or len(scheme) == 1, text  # never "word:/..."
    assert not (first.endswith(":") and known_scheme(first[:-1]) and len(first) > 2), text


@given(
    scheme=st.sampled_from(["s3", "gs", "memory", "file"]),
    rest=st.from_regex(r"[a-z0-9][a-z0-9/._-]{0,10}", fullmatch=True),
)
def test_known_schemes_with_one_slash_or_none_are_refused_with_the_fixed_url(scheme, rest):
    for text in (f"{scheme}:/{rest}", f"{scheme}:{rest}"):
        with pytest.raises(MalformedURLError, match=re.escape(f"write {scheme}://{rest.lstrip('/')}")):
            is_url(text)
