"""The integrations cost nothing until used, and WandbLogger is refused by name with the alternatives."""

import json
import subprocess
import sys

import pytest

import ember
from ember.loggers import WandbLogger

INTEGRATIONS = ["mlflow", "wandb", "transformers", "datasets", "accelerate", "tensorboard"]


def test_importing_ember_and_its_loggers_and_data_loads_no_integration():
    code = ("import sys, json, ember, ember.data; from ember.loggers import MLFlowLogger, WandbLogger, TensorBoardLogger;"
            " print(json.dumps(sorted(sys.modules)))")
    loaded = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    assert not [m for m in loaded if m.split(".")[0] in INTEGRATIONS]
    assert "ember.data.read.huggingface" in loaded  # from_huggingface is there, datasets is not imported


def test_wandb_logger_is_refused_naming_the_loggers_ember_has():
    with pytest.raises(ember.ConfigError, match=r"^WandbLogger is not supported by ember; use MLFlowLogger .*"
                                                r"TensorBoardLogger or CSVLogger from ember.loggers$"):
        WandbLogger(project="mnist", offline=True)
