"""`import ember` stays light: optional and heavy pieces load only when used."""

import json
import subprocess
import sys

HEAVY = ["pyarrow", "pandas", "PIL", "tensorboard", "ray", "torchmetrics", "yaml", "sklearn", "lightning"]


def _modules_after(code: str) -> set[str]:
    script = f"import sys, json\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    return set(json.loads(out.splitlines()[-1]))


def test_import_ember_loads_no_optional_or_heavy_package():
    loaded = _modules_after("import ember; ember.Trainer, ember.Module, ember.ModelCheckpoint")
    assert "torch" in loaded
    assert not {m for m in loaded if m.split(".")[0] in HEAVY}, "import ember must stay light"
    lazy = ("ember.data", "ember.train", "ember.datasets", "ember.cli")
    assert not {m for m in loaded if m in lazy or m.startswith(tuple(f"{name}." for name in lazy))}


def test_lazy_submodules_load_on_first_use():
    loaded = _modules_after("import ember; ember.data.range(3)")
    assert "ember.data" in loaded and "pyarrow" in loaded
    assert "pandas" not in loaded and "ray" not in loaded
