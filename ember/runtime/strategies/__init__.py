"""Strategies: how the model and data are spread over processes, behind one protocol (`protocol.py`).

    protocol.py       the Strategy protocol every strategy implements whole; RunView, what it may read
    single_device.py  one process, one device
    parallel.py       what DDP and FSDP share: process group, collectives, sharded data, stop agreement
    ddp.py            DistributedDataParallel (and `wrap_module`, shared with TorchTrainer)
    fsdp.py           FSDP2 `fully_shard`
    model_parallel.py a 2-D mesh (data x tensor parallel) the Module parallelizes in configure_model

Example:
    >>> from ember.runtime.strategies import DDPStrategy
    >>> DDPStrategy(max_failures=1).name
    'ddp'
"""

from ember.runtime.strategies.ddp import DDPStrategy
from ember.runtime.strategies.fsdp import FSDPStrategy
from ember.runtime.strategies.model_parallel import ModelParallelStrategy
from ember.runtime.strategies.protocol import Strategy
from ember.runtime.strategies.single_device import SingleDeviceStrategy

__all__ = ["DDPStrategy", "FSDPStrategy", "ModelParallelStrategy", "SingleDeviceStrategy", "Strategy"]
