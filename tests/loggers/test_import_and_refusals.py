"""The integrations cost nothing until used, and the trackers ember does not provide are refused by name with
the alternatives."""

import json
import subprocess
import sys

import pytest

import ember
from ember.loggers import CometLogger, LitLogger, NeptuneLogger

INTEGRATIONS = ["mlflow", "wandb", "transformers", "datasets", "accelerate", "tensorboard"]


def test_importing_ember_and_its_loggers_and_data_loads_no_integration():
    code = (
        "import sys, json, ember, ember.data; from ember.loggers import MLFlowLogger, WandbLogger, "
        "TensorBoardLogger; print(json.dumps(sorted(sys.modules)))"
    )
    loaded = json.loads(
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    )
    assert not [m for m in loaded if m.split(".")[0] in INTEGRATIONS]
    assert "ember.data.read_huggingface" in loaded  # from_huggingface is there, datasets is not imported


@pytest.mark.parametrize("refused", [CometLogger, NeptuneLogger, LitLogger])
def test_trackers_ember_does_not_provide_are_refused_naming_the_loggers_it_has(refused):
    with pytest.raises(ember.ConfigError) as error:
        refused(project="mnist", api_key="x")
    message = str(error.value)
    assert (
        f".{refused.__name__} (Lightning's" in message
        and "is not in ember" in message
        and "\n" not in message
    )
    assert all(name in message for name in ("CSVLogger", "TensorBoardLogger", "MLFlowLogger", "WandbLogger"))
