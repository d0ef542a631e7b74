"""A tiny BERT built from a config (no download) and real data for it: scikit-learn's digits as tokens.

Each 8x8 digit image becomes a sequence of 64 tokens (its pixel intensities, 0-16); the label is
the digit. Read from the CSV scikit-learn ships, without importing scikit-learn (seconds per worker).
"""

from __future__ import annotations

import gzip
import importlib.util
from pathlib import Path

import numpy as np

DIGITS_CSV = Path(importlib.util.find_spec("sklearn").origin).parent / "datasets" / "data" / "digits.csv.gz"


def digits_tokens() -> tuple[np.ndarray, np.ndarray]:
    """(1797, 64) int64 token ids and (1797,) int64 labels."""
    with gzip.open(DIGITS_CSV, "rt") as f:
        data = np.loadtxt(f, delimiter=",", dtype=np.int64)
    return data[:, :64], data[:, 64]


def tiny_bert(seed: int = 0):
    """A 2-layer BertForSequenceClassification, 32 wide, for 17 token ids and 10 classes."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=17,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        num_labels=10,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    return BertForSequenceClassification(config)
