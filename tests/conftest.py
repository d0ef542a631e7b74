"""Suite-wide: which tests must run on the same pytest-xdist worker (scripts/test.sh runs the suite with
``-n <workers> --dist loadgroup``; see docs/testing.md).

Each xdist worker is its own pytest process with its own module- and session-scoped fixtures. A fixture
that takes seconds to build (a trained model, a DDP run, a server) would be built once per worker that runs
one of its tests; and the in-process Ray of tests/data/conftest.py and tests/_ray_cluster.py is shared by
the modules that use it one after the other, which only holds while they run in one process, in order.
So every test gets an ``xdist_group`` here:

- ``ray``: the tests that use an in-process Ray (``local_ray``, ``two_node_ray`` and the fixtures built on
  them): one worker runs them all, in collection order, as a plain ``pytest`` run would; one Ray at a time.
- tests that share an expensive module-, class- or session-scoped fixture go to one group per set of tests
  linked by such fixtures (a fixture is built once);
- every other test is its own unit of work, balanced over the workers.

Without xdist (``-n 0`` or no ``-n``) the marks change nothing.
"""

from __future__ import annotations

import os

import pytest

# The in-process Ray fixtures (and the module fixtures that start a Ray of their own in this process).
RAY_FIXTURES = frozenset({"local_ray", "two_node_ray", "loopback_ray", "ray_with_s3"})

# Wider-scoped fixtures that cost next to nothing to build again on another worker (a few small files, an
# environment variable): sharing them is not worth tying their tests to one worker.
CHEAP_SHARED_FIXTURES = frozenset(
    {
        "data_root",
        "simple_images",
        "batoidea",
        "breast_cancer_csv",
        "simple_txt",
        "dataset_cache",
        "fashion_root",
        "fashion_test",
    }
)


class _Groups:
    """Union-find over the names of shared fixtures: tests linked by one of them end in one group."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, key: str) -> str:
        self.parent.setdefault(key, key)
        while self.parent[key] != key:
            self.parent[key] = self.parent[self.parent[key]]
            key = self.parent[key]
        return key

    def union(self, keys: list[str]) -> None:
        roots = sorted({self.find(key) for key in keys})
        for root in roots[1:]:
            self.parent[root] = roots[0]


def _shared_fixture_keys(item: pytest.Item) -> list[str]:
    """One key per expensive fixture of wider than function scope this test uses (``ray`` for the Rays)."""
    names = set(getattr(item, "fixturenames", ()))
    keys = ["ray"] if names & RAY_FIXTURES else []
    name2defs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
    for name in sorted(names - CHEAP_SHARED_FIXTURES - RAY_FIXTURES):
        defs = name2defs.get(name)
        if not defs or defs[-1].scope == "function" or not defs[-1].baseid.startswith("tests"):
            continue  # pytest's and plugins' own fixtures (tmp_path_factory, ...) are cheap
        fixturedef = defs[-1]
        module = item.nodeid.split("::")[0]
        where = fixturedef.baseid if fixturedef.scope in ("session", "package") else module
        keys.append(f"{where}:{name}")
    return keys


# A test's own `@pytest.mark.timeout(s)` was chosen for a run of one test at a time; on an xdist worker the
# test shares the machine's cores with the other workers' tests, so its limit is this many times longer.
XDIST_TIMEOUT_FACTOR = 2


def _lengthen_timeouts(items: list[pytest.Item], factor: float) -> None:
    for item in items:
        marker = item.get_closest_marker("timeout")
        seconds = marker and (marker.args[0] if marker.args else marker.kwargs.get("timeout"))
        if seconds:
            kwargs = {k: v for k, v in marker.kwargs.items() if k != "timeout"}
            item.add_marker(pytest.mark.timeout(seconds * factor, **kwargs), append=False)


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "PYTEST_XDIST_WORKER" in os.environ:
        _lengthen_timeouts(items, XDIST_TIMEOUT_FACTOR)
    groups = _Groups()
    keys = {item.nodeid: _shared_fixture_keys(item) for item in items}
    for item_keys in keys.values():
        if item_keys:
            groups.union(item_keys)
    for item in items:
        if keys[item.nodeid]:
            root = groups.find(keys[item.nodeid][0])
            item.add_marker(pytest.mark.xdist_group("ray" if groups.find("ray") == root else root))
