"""The loops work on a typed run, not on the Trainer's private fields (DESIGN.md decision 9).

Read from the real source: every private attribute or method of the Trainer (a `self._x` it sets
or defines in trainer.py, or in properties.py, the mixin of Lightning's attributes it inherits) must
not be touched anywhere else in ember through an expression that names a trainer (`trainer._x`,
`self.trainer._x`, `module._trainer._x`, ...).
"""

from __future__ import annotations

import ast
from pathlib import Path

import ember
from ember.trainer.trainer import Trainer

EMBER = Path(ember.__file__).parent
TRAINER_PY = EMBER / "trainer" / "trainer.py"
TRAINER_FILES = (TRAINER_PY, EMBER / "trainer" / "properties.py")  # the Trainer's class and its mixin
ALLOWED: dict[Path, set[str]] = {}  # no exceptions: the strategies read only public Trainer attributes


def trainer_private_names() -> set[str]:
    names = {n for n in vars(Trainer) if n.startswith("_") and not n.startswith("__")}
    nodes = [node for path in TRAINER_FILES for node in ast.walk(ast.parse(path.read_text()))]
    for node in nodes:
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
        ):
            names.add(node.attr)
    return names


def private_trainer_accesses(path: Path, private: set[str]) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Attribute) and node.attr in private:
            owner = ast.unparse(node.value)
            if "trainer" in owner.lower():
                found.append(f"{path}:{node.lineno}: {owner}.{node.attr}")
    return found


def test_the_private_names_are_found():
    private = trainer_private_names()
    assert {"_run", "_attach", "_new_run", "_logger_option", "_ended_counts"} <= private


def test_no_private_trainer_attribute_is_touched_outside_trainer_py():
    private = trainer_private_names()
    offending = []
    for path in sorted(EMBER.rglob("*.py")):
        if path in TRAINER_FILES:
            continue
        allowed = ALLOWED.get(path, set())
        offending += private_trainer_accesses(path, private - allowed)
    assert offending == [], "\n".join(offending)


def test_the_checker_sees_an_access(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(
        "def f(trainer, module):\n    return trainer._run, module._trainer._attach, trainer.global_step\n"
    )
    found = private_trainer_accesses(bad, trainer_private_names())
    assert [line.rsplit(": ", 1)[1] for line in found] == ["trainer._run", "module._trainer._attach"]


def test_the_loops_receive_the_run_not_the_trainer():
    from ember.trainer import loops, optimization

    for fn in (
        loops.run_fit,
        loops.run_train_epoch,
        loops.run_evaluation,
        loops.run_predict,
        loops.run_sanity_check,
    ):
        assert list(fn.__annotations__.values())[0] == "Run", fn.__name__
    assert optimization.AutomaticOptimization.__init__.__annotations__["run"] == "Run"
