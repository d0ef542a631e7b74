"""GPT-2 (124M) training against nanoGPT's hand-written loop: tokens/s, step time and MFU, side by side.

The anchor is nanoGPT's training loop, written here in its manner (benchmarks/gpt2_model.py holds the
model): bf16 autocast, `torch.compile` of the model, fused AdamW (decay on matrices), gradient
accumulation, gradient clipping at 1.0, a warm-up + cosine learning rate. The same model, optimizer,
schedule and batches then run under the ember Trainer (`fit(torch.compile(module))`,
`precision="bf16-mixed"`, `accumulate_grad_batches`, `gradient_clip_val=1.0`) and under Lightning's
(whose `fit(torch.compile(module))` fails on torch >= 2.9 inside its `self.log`, so its module compiles
the GPT inside; `--lightning-compile outer` tries Lightning's documented way).

Token shards: synthetic token sequences written as .npy shards into a temporary folder (rows of
block_size + 1 tokens, like nanoGPT's .bin shards cut into training windows), read by all three loops
through `ember.data.read_numpy(folder).iter_torch_batches(...)` in the same order, so the three see the
same batches and their losses must agree.

    python benchmarks/bench_gpt2.py --tiny              # CPU, < 1 min: a 2-layer GPT, fp32, no compile;
                                                        # checks the three agree in loss on the first steps
    python benchmarks/bench_gpt2.py --out gpt2.json     # CUDA: GPT-2 124M, bf16-mixed, compiled

MFU: training FLOPs per token (nanoGPT's 6N + 12 L H Q T) x tokens/s over the GPU's dense bf16 peak
(H100/H200 SXM: 989 TFLOP/s, A100: 312). nanoGPT's published figure, for reference only (not measured
here): its README gives ~135 ms per iteration with torch.compile (from ~250 ms without) for its GPT-2
124M configuration on A100s.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import math
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
from gpt2_model import GPT, TINY, GPTConfig, configure_adamw, lr_lambda  # noqa: E402

PEAK_BF16_TFLOPS = {"H200": 989.4, "H100": 989.4, "A100": 312.0}
SEED = 1337


def write_token_shards(folder: Path, rows: int, config: GPTConfig, shards: int = 4) -> Path:
    """`shards` .npy files of (rows/shards, block_size + 1) uint16 tokens: a noisy counting sequence, so
    the loss falls within a few steps (a model learns "the next token is this one plus one")."""
    rng = np.random.default_rng(0)
    length = config.block_size + 1
    starts = rng.integers(0, config.vocab_size, size=(rows, 1))
    tokens = (starts + np.arange(length)[None, :]) % config.vocab_size
    noise = rng.random((rows, length)) < 0.1
    tokens = np.where(noise, rng.integers(0, config.vocab_size, size=(rows, length)), tokens).astype(
        np.uint16
    )
    folder.mkdir(parents=True, exist_ok=True)
    for index, part in enumerate(np.array_split(tokens, shards)):
        np.save(folder / f"tokens_{index:03d}.npy", part)
    return folder


def token_batches(folder: Path, batch: int, device_type: str) -> Any:
    """The shards through ember.data: [batch, block_size + 1] int64 tensors in file order (pinned on CUDA)."""
    import ember.data

    return ember.data.read_numpy(str(folder)).iter_torch_batches(
        batch_size=batch, dtypes=torch.long, device=None, drop_last=True, pin_memory=device_type == "cuda"
    )


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


# ---- the hand-written loop (nanoGPT's manner) --------------------------------------------------------
def run_hand_written(args: argparse.Namespace, config: GPTConfig, data: Path, device: torch.device) -> dict:
    torch.manual_seed(SEED)
    model = GPT(config).to(device)
    optimizer = configure_adamw(model, args.lr, device_type=device.type)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda(args.lr_warmup, args.steps))
    forward = torch.compile(model) if args.compile else model
    autocast = (
        torch.autocast(device.type, dtype=torch.bfloat16)
        if args.precision == "bf16-mixed"
        else contextlib.nullcontext()
    )
    batches, losses, t0 = iter(token_batches(data, args.batch, device.type)), [], None
    for step in range(args.steps):
        if step == args.warmup:
            sync(device)
            t0 = time.perf_counter()
        for _ in range(args.accumulate):
            tokens = next(batches)["data"].to(device, non_blocking=True)
            with autocast:
                loss = forward(tokens[:, :-1], tokens[:, 1:])
            losses.append(loss.detach())
            (loss / args.accumulate).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
    sync(device)
    return result("hand-written", time.perf_counter() - t0, losses, args, model, device)


# ---- the same under a Trainer -------------------------------------------------------------------------
def module_class(base: type, compile_inner: bool) -> type:
    """The GPT as a Module of `base` (ember.Module or lightning's LightningModule), timing itself."""

    class GPTModule(base):  # type: ignore[misc, valid-type]
        def __init__(self, config: GPTConfig, args: argparse.Namespace) -> None:
            super().__init__()
            torch.manual_seed(SEED)
            self.gpt = GPT(config)
            self.forward_fn = torch.compile(self.gpt) if compile_inner else self.gpt
            self.args, self.losses, self.t0, self.t1 = args, [], None, None

        def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
            tokens = batch["data"]
            loss = self.forward_fn(tokens[:, :-1], tokens[:, 1:])
            self.losses.append(loss.detach())
            return loss

        def on_train_batch_end(self, outputs: Any, batch: Any, batch_idx: int) -> None:
            if self.t0 is None and self.trainer.global_step == self.args.warmup:
                sync(self.device)
                self.t0 = time.perf_counter()

        def on_train_end(self) -> None:
            sync(self.device)
            self.t1 = time.perf_counter()

        def configure_optimizers(self) -> Any:
            optimizer = configure_adamw(self.gpt, self.args.lr, device_type=self.device.type)
            schedule = torch.optim.lr_scheduler.LambdaLR(
                optimizer, lr_lambda(self.args.lr_warmup, self.args.steps)
            )
            return {"optimizer": optimizer, "lr_scheduler": {"scheduler": schedule, "interval": "step"}}

    return GPTModule


def trainer_options(args: argparse.Namespace, device: torch.device) -> dict:
    return {
        "accelerator": device.type,
        "devices": 1,
        "precision": args.precision,
        "max_steps": args.steps,
        "accumulate_grad_batches": args.accumulate,
        "gradient_clip_val": 1.0,
        "logger": False,
        "enable_checkpointing": False,
        "enable_progress_bar": False,
        "enable_model_summary": False,
        "num_sanity_val_steps": 0,
    }


def run_ember(args: argparse.Namespace, config: GPTConfig, data: Path, device: torch.device) -> dict:
    import ember

    module = module_class(ember.Module, compile_inner=False)(config, args)
    trainer = ember.Trainer(**trainer_options(args, device), default_root_dir=tempfile.mkdtemp())
    trainer.fit(
        torch.compile(module) if args.compile else module, token_batches(data, args.batch, device.type)
    )
    return result("ember", module.t1 - module.t0, module.losses, args, module.gpt, device)


def run_lightning(args: argparse.Namespace, config: GPTConfig, data: Path, device: torch.device) -> dict:
    import lightning.pytorch as pl

    outer = args.compile and args.lightning_compile == "outer"
    module = module_class(pl.LightningModule, compile_inner=args.compile and not outer)(config, args)
    trainer = pl.Trainer(**trainer_options(args, device), default_root_dir=tempfile.mkdtemp())
    trainer.fit(torch.compile(module) if outer else module, token_batches(data, args.batch, device.type))
    return result("Lightning", module.t1 - module.t0, module.losses, args, module.gpt, device)


def result(
    tool: str, seconds: float, losses: list, args: argparse.Namespace, model: GPT, device: torch.device
) -> dict:
    timed_steps = args.steps - args.warmup
    tokens = timed_steps * args.accumulate * args.batch * model.config.block_size
    per_step = [
        float(torch.stack(losses[i : i + args.accumulate]).float().mean())
        for i in range(0, len(losses), args.accumulate)
    ]
    peak = next(
        (
            v
            for k, v in PEAK_BF16_TFLOPS.items()
            if device.type == "cuda" and k in torch.cuda.get_device_name(device)
        ),
        None,
    )
    tokens_per_s = tokens / seconds
    return {
        "tool": tool,
        "tokens_per_s": tokens_per_s,
        "step_ms": 1000 * seconds / timed_steps,
        "mfu": model.flops_per_token() * tokens_per_s / (peak * 1e12) if peak else None,
        "losses": per_step,
    }


RUNNERS = {"hand": run_hand_written, "ember": run_ember, "lightning": run_lightning}


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tiny", action="store_true", help="CPU: a 2-layer GPT, fp32, no compile, < 1 minute")
    p.add_argument(
        "--steps", type=int, default=None, help="optimizer steps (each of --accumulate micro-batches)"
    )
    p.add_argument("--warmup", type=int, default=None, help="steps before the clock starts (compilation)")
    p.add_argument("--batch", type=int, default=None, help="sequences per micro-batch")
    p.add_argument("--accumulate", type=int, default=None)
    p.add_argument("--precision", default=None, choices=["bf16-mixed", "32-true"])
    p.add_argument("--compile", action=argparse.BooleanOptionalAction, default=None)
    p.add_argument("--lightning-compile", choices=["inner", "outer"], default="inner")
    p.add_argument("--only", default="hand,ember,lightning")
    p.add_argument("--lr", type=float, default=6e-4)
    p.add_argument("--lr-warmup", type=int, default=2)
    p.add_argument("--rtol", type=float, default=None, help="loss agreement checked on the first steps")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    tiny = {
        "steps": 8,
        "warmup": 2,
        "batch": 8,
        "accumulate": 2,
        "precision": "32-true",
        "compile": False,
        "rtol": 1e-4,
    }
    gpu = {
        "steps": 30,
        "warmup": 10,
        "batch": 16,
        "accumulate": 4,
        "precision": "bf16-mixed",
        "compile": True,
        "rtol": 2e-2,
    }  # bf16 and compiled kernels: agreement to about 1% on the first steps
    for name, value in (tiny if args.tiny else gpu).items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if not args.tiny and not torch.cuda.is_available():
        raise SystemExit("bench_gpt2 needs a CUDA GPU (or --tiny for the CPU check)")
    device = torch.device("cuda" if not args.tiny else "cpu")
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True  # nanoGPT's setting
    config = TINY if args.tiny else GPTConfig()
    rows = args.steps * args.accumulate * args.batch
    results = []
    with tempfile.TemporaryDirectory() as folder:
        data = write_token_shards(Path(folder) / "shards", rows, config)
        for name in args.only.split(","):
            start = time.perf_counter()
            try:
                results.append(RUNNERS[name](args, config, data, device))
            except Exception as exc:  # a competitor that fails is reported, not hidden
                results.append({"tool": name, "error": f"{type(exc).__name__}: {str(exc)[:300]}"})
            results[-1]["wall_s"] = time.perf_counter() - start
            gc.collect()  # the previous tool's model and optimizer state leave the GPU before the next starts
            if device.type == "cuda":
                torch.cuda.empty_cache()
    print(table(results, config, args, device))
    ok = losses_agree(results, args)
    if args.out:
        Path(args.out).write_text(
            json.dumps(
                {
                    "device": str(device) if device.type == "cpu" else torch.cuda.get_device_name(device),
                    "torch": torch.__version__,
                    "args": vars(args),
                    "results": results,
                    "losses_agree": ok,
                },
                indent=1,
            )
        )
    return 0 if ok and not any("error" in r for r in results) else 1


def losses_agree(results: list[dict], args: argparse.Namespace, first: int = 3) -> bool:
    """The tools' losses on the first `first` steps agree with the hand-written loop's within rtol."""
    measured = [r for r in results if "losses" in r]
    if len(measured) < 2:
        return True
    anchor = measured[0]["losses"][:first]
    for r in measured[1:]:
        worst = max(abs(a - b) / abs(a) for a, b in zip(anchor, r["losses"][:first], strict=True))
        print(
            f"loss agreement, {r['tool']} vs {measured[0]['tool']}, first {first} steps: "
            f"max relative difference {worst:.2e} (rtol {args.rtol:g})"
        )
        if not math.isfinite(worst) or worst > args.rtol:
            return False
    return True


def table(results: list[dict], config: GPTConfig, args: argparse.Namespace, device: torch.device) -> str:
    where = "CPU" if device.type == "cpu" else torch.cuda.get_device_name(device)
    lines = [
        f"GPT ({config.n_layer} layers, {config.n_head} heads, {config.n_embd} wide, {config.block_size} "
        f"context) on {where}, {args.precision}, compile={args.compile}, batch {args.batch} x accumulate "
        f"{args.accumulate}, {args.steps - args.warmup} timed steps",
        "| loop | tokens/s | ms/step | MFU | vs hand-written | first losses |",
        "|---|---|---|---|---|---|",
    ]
    anchor = next((r for r in results if r["tool"] == "hand-written" and "error" not in r), None)
    for r in results:
        if "error" in r:
            lines.append(f"| {r['tool']} | failed: {r['error']} | | | | |")
            continue
        ratio = f"{r['step_ms'] / anchor['step_ms']:.3f}x" if anchor else ""
        mfu = f"{100 * r['mfu']:.1f}%" if r["mfu"] is not None else "n/a"
        lines.append(
            f"| {r['tool']} | {r['tokens_per_s']:,.0f} | {r['step_ms']:.1f} | {mfu} | {ratio} | "
            f"{', '.join(f'{v:.4f}' for v in r['losses'][:3])} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
