"""Model factories for ``benchmarks/emulator_memory.py``'s cited batch sizes that the catalog
does not list: BERT fine-tuned on SQuAD (a question-answering head: start and end logits per
token), as the published benchmarks train it. Random weights (Hugging Face ``transformers``,
its default attention implementation); sizes from the BERT paper (base: 12 layers, hidden
768, 12 heads; large: 24, 1024, 16), vocabulary 30522, 512 positions.

Used as ``--module benchmarks/memory_models.py:bert_base_squad`` with the dataset
``tokens:seq=384,vocab=30522`` (SQuAD's 384-token windows).
"""

from __future__ import annotations

import torch
from torch import nn


class SquadHead(nn.Module):
    """Token ids in, ``(batch, seq, 2)`` start/end logits out (the workload's cross-entropy
    over them costs what SQuAD's start and end losses cost)."""

    def __init__(self, layers: int, hidden: int, heads: int) -> None:
        super().__init__()
        from transformers import BertConfig, BertForQuestionAnswering

        cfg = BertConfig(vocab_size=30522, hidden_size=hidden, num_hidden_layers=layers,
                         num_attention_heads=heads, intermediate_size=4 * hidden,
                         max_position_embeddings=512)
        self.bert = BertForQuestionAnswering(cfg)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        out = self.bert(input_ids=ids)
        return torch.stack((out.start_logits, out.end_logits), dim=-1)


def bert_base_squad() -> nn.Module:
    return SquadHead(12, 768, 12)


def bert_large_squad() -> nn.Module:
    return SquadHead(24, 1024, 16)
