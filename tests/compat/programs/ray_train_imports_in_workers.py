"""Ray Train's doc page "Get started with PyTorch" (train/getting-started-pytorch), its pattern of importing
`ray.train` and `ray.train.torch` INSIDE the training function (the imports run in each worker), with a tiny
linear model on seeded data instead of FashionMNIST, so it runs with no network.

Run unchanged by Ray (`python ray_train_imports_in_workers.py`) and by ember (`python -m ember ...`): under
the runner the workers must see the same mapping as the
script (EMBER_RUNNER=1). The last line is RESULT {...}.
"""

import json
import os
import tempfile

import ray
import torch
from ray.train import RunConfig, ScalingConfig
from ray.train.torch import TorchTrainer


def train_func(config):
    import ray.train
    import ray.train.torch
    from ray.train import Checkpoint

    torch.manual_seed(0)
    x = torch.linspace(0, 1, 64).unsqueeze(1)
    data = torch.utils.data.TensorDataset(x, 3 * x + 1)
    loader = ray.train.torch.prepare_data_loader(torch.utils.data.DataLoader(data, batch_size=8))
    model = ray.train.torch.prepare_model(torch.nn.Linear(1, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=config["lr"])
    for epoch in range(config["epochs"]):
        if ray.train.get_context().get_world_size() > 1:
            loader.sampler.set_epoch(epoch)
        total = 0.0
        for xb, yb in loader:
            loss = torch.nn.functional.mse_loss(model(xb), yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item()
        with tempfile.TemporaryDirectory() as folder:
            torch.save(model.state_dict(), os.path.join(folder, "model.pt"))
            ray.train.report(
                {"loss": total / len(loader), "epoch": epoch}, checkpoint=Checkpoint.from_directory(folder)
            )


if __name__ == "__main__":
    ray.init(num_cpus=2)
    trainer = TorchTrainer(
        train_func,
        train_loop_config={"lr": 0.1, "epochs": 3},
        scaling_config=ScalingConfig(num_workers=2),
        run_config=RunConfig(storage_path=os.path.abspath("results"), name="run"),
    )
    result = trainer.fit()
    ray.shutdown()
    print(
        "RESULT "
        + json.dumps(
            {
                "loss": result.metrics["loss"],
                "epoch": result.metrics["epoch"],
                "has_checkpoint": result.checkpoint is not None,
            }
        )
    )
