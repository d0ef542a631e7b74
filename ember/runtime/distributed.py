"""The public names of ember's distributed training, where docs/distributed.md points users:

    from ember.runtime.distributed import DDPStrategy, FSDPStrategy, load_sharded_checkpoint

What each does lives in its own file: the strategies in `runtime/strategies/`, the process group in
`runtime/process_group.py`, data sharding in `runtime/sharding.py`, sharded checkpoints in
`runtime/sharded_checkpoint.py`, starting workers and reporting their failures in `runtime/launch.py`.

Example:
    >>> from ember.runtime.distributed import DDPStrategy
    >>> DDPStrategy().name
    'ddp'
"""

from ember.runtime.sharded_checkpoint import load_sharded_checkpoint
from ember.runtime.sharding import shard_for_rank
from ember.runtime.strategies import DDPStrategy, FSDPStrategy, ModelParallelStrategy

__all__ = [
    "DDPStrategy",
    "FSDPStrategy",
    "ModelParallelStrategy",
    "load_sharded_checkpoint",
    "shard_for_rank",
]
