"""GPT-2 in nanoGPT's manner, written for ember's benchmarks: the architecture and settings are nanoGPT's
(pre-norm blocks, learned positions, causal flash attention through `scaled_dot_product_attention`, a 4x
GELU MLP, weights tied between the token embedding and the head, N(0, 0.02) initialisation with the
residual projections scaled by 1/sqrt(2 * layers), AdamW with decay on matrices only); the code is ours.

    GPT(GPTConfig())   GPT-2 124M: 12 layers, 12 heads, 768 wide, 1024 context, vocabulary 50304

`flops_per_token` is nanoGPT's (and the PaLM paper's) estimate, 6N + 12 L H Q T, for MFU.
"""

from __future__ import annotations

import dataclasses
import inspect
import math

import torch
import torch.nn.functional as F
from torch import nn


@dataclasses.dataclass
class GPTConfig:
    block_size: int = 1024
    vocab_size: int = 50304  # GPT-2's 50257, padded up to a multiple of 64 (nanoGPT's choice, for speed)
    n_layer: int = 12
    n_head: int = 12
    n_embd: int = 768
    dropout: float = 0.0
    bias: bool = False  # nanoGPT trains GPT-2 without biases in Linear and LayerNorm layers


TINY = GPTConfig(block_size=64, vocab_size=256, n_layer=2, n_head=2, n_embd=64)


class SelfAttention(nn.Module):
    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.qkv = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.proj.residual = True  # scaled initialisation
        self.n_head, self.dropout = config.n_head, config.dropout
        self.drop = nn.Dropout(config.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, length, width = x.shape
        heads = self.qkv(x).view(batch, length, 3, self.n_head, width // self.n_head).permute(2, 0, 3, 1, 4)
        out = F.scaled_dot_product_attention(
            heads[0], heads[1], heads[2], is_causal=True, dropout_p=self.dropout if self.training else 0.0
        )
        return self.drop(self.proj(out.transpose(1, 2).reshape(batch, length, width)))


class Block(nn.Module):
    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.attn = SelfAttention(config)
        self.norm2 = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.up = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.down = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.down.residual = True
        self.drop = nn.Dropout(config.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.drop(self.down(F.gelu(self.up(self.norm2(x)))))


class GPT(nn.Module):
    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.config = config
        self.tokens = nn.Embedding(config.vocab_size, config.n_embd)
        self.positions = nn.Embedding(config.block_size, config.n_embd)
        self.drop = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layer))
        self.norm = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.tokens.weight = self.head.weight  # tied
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                std = 0.02 / math.sqrt(2 * config.n_layer) if getattr(module, "residual", False) else 0.02
                nn.init.normal_(module.weight, 0.0, std)
                if getattr(module, "bias", None) is not None:
                    nn.init.zeros_(module.bias)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """The mean next-token cross-entropy of `idx` against `targets` (both [batch, length])."""
        positions = torch.arange(idx.shape[1], device=idx.device)
        x = self.drop(self.tokens(idx) + self.positions(positions))
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.norm(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)).float(), targets.reshape(-1))

    def num_parameters(self, embedding: bool = False) -> int:
        """nanoGPT's count: without the position embedding (the token one is the tied head)."""
        total = sum(p.numel() for p in self.parameters())
        return total if embedding else total - self.positions.weight.numel()

    def flops_per_token(self) -> float:
        """Training FLOPs per token: 6N for the matrices, 12 L H Q T for attention (nanoGPT's estimate)."""
        c = self.config
        return 6 * self.num_parameters() + 12 * c.n_layer * c.n_head * (c.n_embd // c.n_head) * c.block_size


def configure_adamw(
    model: nn.Module,
    lr: float,
    weight_decay: float = 0.1,
    betas: tuple[float, float] = (0.9, 0.95),
    device_type: str = "cpu",
) -> torch.optim.AdamW:
    """nanoGPT's optimizer: decay on every parameter of 2 or
    more dimensions, fused on CUDA where torch has it."""
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [
        {"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay},
        {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
    ]
    fused = device_type == "cuda" and "fused" in inspect.signature(torch.optim.AdamW).parameters
    return torch.optim.AdamW(groups, lr=lr, betas=betas, **({"fused": True} if fused else {}))


def lr_lambda(warmup: int, decay_steps: int, min_ratio: float = 0.1):  # noqa: ANN201
    """nanoGPT's schedule as a LambdaLR factor: linear warm-up, cosine decay to `min_ratio`, then flat."""

    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / (warmup + 1)
        if step > decay_steps:
            return min_ratio
        ratio = (step - warmup) / max(1, decay_steps - warmup)
        return min_ratio + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (1 - min_ratio)

    return factor
