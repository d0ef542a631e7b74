"""Where code runs: devices, precision, seeding, process groups, strategies, launching workers.

    devices.py             accelerator and device resolution, moving nested batches
    precision.py           autocast and gradient scaling
    seed.py                seed_everything, RNG capture, determinism flags
    strategies/            the Strategy protocol and its three implementations (single device, DDP, FSDP)
    process_group.py       the one process-group join/leave, and `any_rank` (a flag agreed across ranks)
    sharding.py            each rank's equal share of the data
    sharded_checkpoint.py  torch.distributed.checkpoint save, and its safe one-process load
    launch.py              starting and watching worker processes; what a failing rank reports to them
    distributed.py         the public names users import (DDPStrategy, FSDPStrategy, load_sharded_checkpoint)

ember.runtime imports nothing of ember but `errors` and `fs` (tests/test_layers.py).
"""
