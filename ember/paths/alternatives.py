"""What to use instead of each Lightning name ember does not provide (the second half of every refusal).

Keys are Lightning paths (a module or a module.name); the longest key that starts the refused name's path
answers, so one line covers a whole family (every accelerator, every precision plugin).

Example:
    >>> alternative_for("lightning.pytorch.accelerators.cuda.CUDAAccelerator")
    "Trainer(accelerator='cpu' | 'gpu' | 'cuda' | 'auto', devices=...)"
"""

from __future__ import annotations

_LOGGERS = "ember.loggers' CSVLogger, TensorBoardLogger, MLFlowLogger or WandbLogger"

ALTERNATIVES: dict[str, str] = {
    "lightning.fabric": (
        "ember.Trainer, or ember.train.TorchTrainer for a loop you write (ember has no Fabric)"
    ),
    "lightning.fabric.utilities": "the helpers of ember.utilities",
    "lightning.fabric.plugins.environments": (
        "no plugin: ember reads torchrun's and SLURM's variables "
        "itself (docs/distributed.md), so drop plugins=[...]"
    ),
    "lightning.fabric.plugins.precision": (
        "Trainer(precision='32-true' | '16-mixed' | 'bf16-mixed' | '64-true')"
    ),
    "lightning.fabric.strategies": "Trainer(strategy='ddp' | 'fsdp' | 'auto')",
    "lightning.fabric.accelerators": "Trainer(accelerator='cpu' | 'gpu' | 'cuda' | 'auto', devices=...)",
    "lightning.pytorch.accelerators": "Trainer(accelerator='cpu' | 'gpu' | 'cuda' | 'auto', devices=...)",
    "lightning.pytorch.plugins": "Trainer(precision=...) and ember's own checkpoint files (docs/trainer.md)",
    "lightning.pytorch.plugins.precision": (
        "Trainer(precision='32-true' | '16-mixed' | 'bf16-mixed' | '64-true')"
    ),
    "lightning.pytorch.plugins.environments": (
        "no plugin: ember reads torchrun's and SLURM's variables "
        "itself (docs/distributed.md), so drop plugins=[...]"
    ),
    "lightning.pytorch.plugins.layer_sync": "Trainer(sync_batchnorm=True)",
    "lightning.pytorch.plugins.io": (
        "Trainer(default_root_dir=...) and ModelCheckpoint (ember writes its own files)"
    ),
    "lightning.pytorch.strategies": "Trainer(strategy='ddp' | 'fsdp' | 'auto')",
    "lightning.pytorch.strategies.deepspeed": "Trainer(strategy='fsdp') (ember has no DeepSpeed)",
    "lightning.pytorch.strategies.DeepSpeedStrategy": "Trainer(strategy='fsdp') (ember has no DeepSpeed)",
    "lightning.pytorch.strategies.xla": "Trainer(accelerator='cpu' | 'cuda') (ember has no XLA/TPU support)",
    "lightning.pytorch.strategies.single_xla": (
        "Trainer(accelerator='cpu' | 'cuda') (ember has no XLA/TPU support)"
    ),
    "lightning.pytorch.strategies.model_parallel": "Trainer(strategy='fsdp')",
    "lightning.pytorch.strategies.ModelParallelStrategy": "Trainer(strategy='fsdp')",
    "lightning.pytorch.strategies.launchers": "Trainer(strategy='ddp') (ember launches its own workers)",
    "lightning.pytorch.loops": (
        "the Module's hooks and callbacks (docs/hooks.md); ember's loops are not replaceable"
    ),
    "lightning.pytorch.trainer.connectors": "the Trainer's options (docs/trainer.md)",
    "lightning.pytorch.trainer": "the Trainer's options (docs/trainer.md)",
    "lightning.pytorch.overrides": "Trainer(strategy='ddp'), which shards the data itself",
    "lightning.pytorch.serve": "ember.inference (docs/inference.md)",
    "lightning.pytorch.loggers": _LOGGERS,
    "lightning.pytorch.loggers.comet": _LOGGERS + " (ember has no Comet logger)",
    "lightning.pytorch.loggers.CometLogger": _LOGGERS + " (ember has no Comet logger)",
    "lightning.pytorch.loggers.neptune": _LOGGERS + " (ember has no Neptune logger)",
    "lightning.pytorch.loggers.NeptuneLogger": _LOGGERS + " (ember has no Neptune logger)",
    "lightning.pytorch.loggers.litlogger": _LOGGERS + " (ember has no LitLogger)",
    "lightning.pytorch.loggers.LitLogger": _LOGGERS + " (ember has no LitLogger)",
    "lightning.pytorch.profilers": "SimpleProfiler, AdvancedProfiler or PyTorchProfiler from ember.profilers",
    "lightning.pytorch.demos": (
        "ember.demos' BoringModel or DemoModel, or ember.datasets.MNIST; write the model as an ember.Module"
    ),
    "lightning.pytorch.core": "ember.Module's methods and hooks (docs/hooks.md)",
    "lightning.pytorch.callbacks": "the callbacks of ember.callbacks",
    "lightning.pytorch.tuner": "ember.tuner.Tuner",
    "lightning.pytorch.cli": "ember.cli.LightningCLI (docs/cli.md)",
    "lightning.pytorch.utilities": "the helpers of ember.utilities",
    "lightning.pytorch.utilities.deepspeed": "Trainer(strategy='fsdp') (ember has no DeepSpeed)",
    "lightning.pytorch.utilities.model_summary.model_summary_deepspeed": (
        "ember.utilities.model_summary.ModelSummary"
    ),
    "lightning.pytorch.utilities.seed.isolate_rng": (
        "ember.runtime.seed.preserve_rng_state() (a context manager)"
    ),
    "lightning.pytorch.utilities.types": "plain typing (Any, dict) in your annotations",
    "lightning.pytorch.utilities.migration": (
        "ember loads Lightning 2.x checkpoints as they are (docs/trainer.md)"
    ),
    "lightning.pytorch.utilities.upgrade_checkpoint": "ember loads Lightning 2.x checkpoints as they are",
    "lightning.pytorch.utilities.model_registry": "a checkpoint path (ckpt_path=...)",
}


def alternative_for(lightning_path: str) -> str:
    """The alternative for a Lightning path: the longest key of ALTERNATIVES that starts it."""
    parts = lightning_path.split(".")
    for end in range(len(parts), 0, -1):
        key = ".".join(parts[:end])
        if key in ALTERNATIVES:
            return ALTERNATIVES[key]
    return "what docs/lightning_paths.md lists for this path (ember has no equivalent)"
