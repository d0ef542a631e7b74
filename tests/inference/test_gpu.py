"""GPU workers (skipped without CUDA): one device per worker, outputs back on the CPU."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

import ember
import ember.data
from ember.data.execute.pool import cuda_device_count

# counted through NVML: torch.cuda.is_available() here would keep forked workers from using CUDA
pytestmark = pytest.mark.skipif(cuda_device_count() == 0, reason="needs a CUDA GPU")


class OnGPU:
    def __init__(self):
        torch.manual_seed(0)
        self.model = torch.nn.Linear(16, 4).cuda().eval()

    def __call__(self, batch):
        x = torch.from_numpy(batch["data"]).float().cuda()
        with torch.inference_mode():
            y = self.model(x)
        n = len(y)
        return {
            "y": y.cpu().numpy(),
            "device": np.array([os.environ["CUDA_VISIBLE_DEVICES"]] * n),
            "on_cuda": np.full(n, y.is_cuda),
        }


@pytest.mark.parametrize("workers, num_gpus", [(1, 1), (2, 0.5)])
def test_each_worker_gets_its_device_and_outputs_come_back_to_the_cpu(workers, num_gpus):
    data = np.random.default_rng(0).standard_normal((400, 16)).astype(np.float32)
    rows = (
        ember.data.from_numpy(data)
        .map_batches(OnGPU, batch_size=50, concurrency=workers, num_gpus=num_gpus)
        .take_all()
    )
    torch.manual_seed(0)
    expected = torch.nn.Linear(16, 4)(torch.from_numpy(data)).detach().numpy()
    np.testing.assert_allclose(np.stack([r["y"] for r in rows]), expected, atol=1e-4)
    assert {r["device"] for r in rows} == {"0"} and all(r["on_cuda"] for r in rows)
    assert not torch.cuda.is_initialized()  # the parent never touched CUDA, so forked workers could


class Tiny(ember.Module):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(16, 3)

    def forward(self, x):
        return self.layer(x)

    def training_step(self, batch, batch_idx):
        return self(batch).pow(2).mean()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def test_predict_job_runs_on_the_gpu_and_writes_cpu_outputs(tmp_path, monkeypatch):
    from ember.inference import predict_to_parquet

    data = np.random.default_rng(1).standard_normal((300, 16)).astype(np.float32)
    pq.write_table(
        pa.table({"id": np.arange(300), "x": pa.FixedShapeTensorArray.from_numpy_ndarray(data)}),
        tmp_path / "in.parquet",
        row_group_size=100,
    )
    from ember.checkpoint import save_checkpoint

    torch.manual_seed(0)
    model = Tiny()  # saved directly: a Trainer here would query CUDA in this (the forking) process
    save_checkpoint(
        {
            "module_class": "tests.inference.test_gpu.Tiny",
            "state_dict": model.state_dict(),
            "hyper_parameters": {},
        },
        tmp_path / "tiny.ckpt",
    )
    model_file = tmp_path / "tiny_model.py"
    model_file.write_text("from tests.inference.test_gpu import Tiny\n")
    summary = predict_to_parquet(
        str(tmp_path / "in.parquet"),
        str(tmp_path / "out"),
        str(tmp_path / "tiny.ckpt"),
        model=f"{model_file}:Tiny",
        progress=False,
    )  # default: 1 GPU per worker
    table = pq.read_table(tmp_path / "out")
    assert summary.rows == 300 and table["id"].to_pylist() == list(range(300))
    expected = model.eval()(torch.from_numpy(data)).detach().numpy()
    np.testing.assert_allclose(table["output"].combine_chunks().to_numpy_ndarray(), expected, atol=1e-4)
