"""Test files are named by what they test, never by the work round that wrote them (issue 28).

A name ending in a number (`test_lightning_parity2.py`) or carrying a version used as a round
(`test_iteration_ray26.py`) tells a newcomer when a file was written, not where a behaviour is tested; its
tests belong in the feature's file. A name whose number is the feature's own (a format, a precision, a
numbered document) goes in ALLOWED with the reason.
"""

from __future__ import annotations

import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent

# A test file's path relative to tests/ -> why its number names the feature, not a round.
ALLOWED: dict[str, str] = {}

_ENDS_IN_A_NUMBER = re.compile(r"\d$")
# A library or version tag followed by digits, as a suffix
# or in the middle: _ray26, _lightning26, _v2, _round3
_VERSION_AS_ROUND = re.compile(r"_(?:ray|lightning|pl|torch|v|round|r)\d+(?:_|$)")


def named_by_round(stem: str) -> bool:
    return bool(_ENDS_IN_A_NUMBER.search(stem) or _VERSION_AS_ROUND.search(stem))


def test_the_rule_tells_round_names_from_feature_names():
    for stem in [
        "test_lightning_parity2",
        "test_ray_parity3",
        "test_iteration_ray26",
        "test_expressions_ray26",
        "test_s3_seed_002",
        "test_dataset_names_v2",
        "test_loader_round3_extra",
    ]:
        assert named_by_round(stem), stem
    for stem in [
        "test_expressions",
        "test_s3_data",
        "test_lightning_gpu_parity",
        "test_ray_parity_guides",
        "test_fsdp",
        "test_datasets_mnist",
    ]:
        assert not named_by_round(stem), stem


def test_no_test_file_is_named_by_work_round():
    files = sorted(p for p in TESTS.rglob("*.py") if p.name.startswith("test_") or p.stem.endswith("_test"))
    assert len(files) > 100  # the walk found the suite
    by_round = [
        str(p.relative_to(TESTS))
        for p in files
        if named_by_round(p.stem) and str(p.relative_to(TESTS)) not in ALLOWED
    ]
    assert by_round == [], (
        f"test files named by work round: {by_round}; move their tests into the file of the feature they "
        "test (or add the file to ALLOWED in tests/test_test_names.py with why its number is the feature's)"
    )


def test_every_allowed_name_still_exists_and_says_why():
    for relative, reason in ALLOWED.items():
        assert (TESTS / relative).is_file(), f"{relative} is allowed in tests/test_test_names.py but gone"
        assert reason.strip(), f"{relative} is allowed without a reason"
