"""The submodule paths Lightning's doc pages and examples import, used as those pages use them:

- "LightningCLI" (cli/lightning_cli_intermediate) and examples/pytorch/basics/autoencoder.py:
  `from lightning.pytorch.cli import LightningCLI`, `from lightning.pytorch import cli_lightning_logo`
- "LightningModule" (common/lightning_module): `from lightning.pytorch.core import LightningModule`
- "Customize the progress bar" (common/progress_bar): `from
  lightning.pytorch.callbacks.progress import TQDMProgressBar`
- "Model summary" (advanced/model_summary? common/trainer#weights_summary):
  `from lightning.pytorch.utilities.model_summary import ModelSummary`
- examples/pytorch/domain_templates/imagenet.py: `from lightning.pytorch.utilities.model_helpers import
  get_torchvision_model`, `from lightning.pytorch.strategies import ParallelStrategy`,
  `from lightning.pytorch.callbacks import TQDMProgressBar`
- examples/pytorch/domain_templates/computer_vision_fine_tuning.py and autoencoder.py:
  `from lightning.pytorch.utilities.imports import _TORCHVISION_AVAILABLE`,
  `from lightning.pytorch.utilities import rank_zero_info`
- "Run on an on-prem cluster (SLURM)" (clouds/cluster_advanced):
  `from lightning.fabric.plugins.environments import SLURMEnvironment`
- examples/pytorch/basics/transformer.py: `from lightning.pytorch.demos import Transformer, WikiText2`
- "Debugging" / bug_report_model.py: `from lightning.pytorch.demos.boring_classes import BoringModel`
- examples/pytorch/basics/autoencoder.py: `from lightning.pytorch.demos.mnist_datamodule import MNIST`

Run unchanged by Lightning and by ember (`python -m ember module_paths.py`); the last line (RESULT {...}) is
what tests/compat/test_runner.py compares. The names ember lacks (SLURMEnvironment, Transformer, WikiText2,
MNIST) must import; the program reports whether using them works.
"""

import json

import torch
from lightning.fabric.plugins.environments import SLURMEnvironment
from lightning.pytorch import cli_lightning_logo
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.callbacks.progress import TQDMProgressBar
from lightning.pytorch.cli import LightningCLI
from lightning.pytorch.core import LightningModule
from lightning.pytorch.demos import Transformer, WikiText2
from lightning.pytorch.demos.boring_classes import BoringModel
from lightning.pytorch.demos.mnist_datamodule import MNIST
from lightning.pytorch.strategies import ParallelStrategy
from lightning.pytorch.utilities import rank_zero_info
from lightning.pytorch.utilities.imports import _TORCHVISION_AVAILABLE
from lightning.pytorch.utilities.model_helpers import get_torchvision_model
from lightning.pytorch.utilities.model_summary import ModelSummary


class Net(LightningModule):
    def __init__(self):
        super().__init__()
        self.layer_1 = torch.nn.Linear(28 * 28, 16)
        self.layer_2 = torch.nn.Linear(16, 10)

    def forward(self, x):
        return self.layer_2(torch.relu(self.layer_1(x)))


def usable(make):
    """Whether building the thing works here (ember refuses
    the names it lacks; Lightning may need a download)."""
    try:
        make()
        return True
    except Exception:
        return False


if __name__ == "__main__":
    cli_lightning_logo()
    rank_zero_info("module paths program")
    summary = ModelSummary(Net(), max_depth=1)
    print(summary)
    result = {
        "summary_total_params": summary.total_parameters,
        "summary_trainable_params": summary.trainable_parameters,
        "bar_is_callback": issubclass(TQDMProgressBar, Callback),
        "bar_refresh_rate": TQDMProgressBar(refresh_rate=5).refresh_rate,
        "cli_is_class": isinstance(LightningCLI, type),
        "parallel_strategy_is_class": isinstance(ParallelStrategy, type),
        "boring_model_is_module": isinstance(BoringModel(), torch.nn.Module),
        "torchvision_available": bool(_TORCHVISION_AVAILABLE),
        "slurm_environment_importable": isinstance(SLURMEnvironment, type),
        "demo_names_importable": all(callable(c) for c in (Transformer, WikiText2, MNIST)),
    }
    if _TORCHVISION_AVAILABLE:
        result["resnet18_fc_out"] = get_torchvision_model("resnet18", weights=None).fc.out_features
    print("RESULT " + json.dumps(result, sort_keys=True))
