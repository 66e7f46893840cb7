"""Transformers of today's jobs in plain PyTorch: BERT (MLM), GPT-2 (causal LM), ViT, T5 and a
Llama-style decoder.

Each follows its paper and the reference implementation's parameterisation, so parameter
counts equal the published checkpoints' (tests compare them with ``transformers``' models
built from the same configs):

* BERT (Devlin et al. 2019 §3, Table "BASE" L=12 H=768 A=12, "LARGE" L=24 H=1024 A=16):
  token + position + segment embeddings, post-LN encoder with GELU FFN (4H), MLM head
  (dense + GELU + LN, decoder tied to the token embedding, own bias). 109.5 M / 335.1 M.
* GPT-2 (Radford et al. 2019, Table 2: 12/24/36 layers, d 768/1024/1280): learned positions
  (1024), pre-LN blocks, final LN, LM head tied to the token embedding. 124.4 M / 354.8 M /
  774.0 M (the paper's table rounds them to 117 M / 345 M / 762 M).
* ViT (Dosovitskiy et al. 2021 Table 1: B/16 L=12 D=768 MLP 3072 H=12; L/16 L=24 D=1024
  MLP 4096 H=16): 16x16 patch embedding (a strided conv), class token, learned positions,
  pre-LN blocks, final LN, linear head on the class token. 86.6 M / 304.3 M at 1000 classes.
* T5-small (``models.llm``; Raffel et al. 2020 §3.1; d_model 512, d_ff 2048, 6+6 layers, 8 heads, d_kv 64,
  vocab 32128): RMS layer norm without bias, no biases anywhere, ReLU FFN, relative position
  buckets (32, max distance 128) in each stack's first layer, shared embedding tied to the LM
  head (scaled by d_model^-0.5). 60.5 M.
* Llama (``models.llm``; Touvron et al. 2023): RMSNorm, rotary position embedding, SwiGLU FFN, grouped-query
  attention (``kv_heads``), untied LM head; any size (``LlamaConfig``), default TinyLlama-1.1B
  (dim 2048, 22 layers, 32 heads, 4 KV heads, FFN 5632, vocab 32000).

Attention is ``F.scaled_dot_product_attention`` (flash/efficient kernels on a GPU; its math
decomposition on the meta device). Dropout 0.1 where the papers train with it (BERT, GPT-2,
T5), none for ViT/Llama pre-training defaults.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, heads: int, kv_heads: int,
            causal: bool, bias: torch.Tensor | None = None, p: float = 0.0,
            scale: float | None = None) -> torch.Tensor:
    """(b, s, heads*dh) queries, (b, t, kv_heads*dh) keys/values -> (b, s, heads*dh)."""
    b, s, _ = q.shape
    t = k.shape[1]
    dh = q.shape[-1] // heads
    qh = q.view(b, s, heads, dh).transpose(1, 2)
    kh = k.view(b, t, kv_heads, dh).transpose(1, 2)
    vh = v.view(b, t, kv_heads, dh).transpose(1, 2)
    if kv_heads != heads:  # grouped-query attention: each KV head serves heads/kv_heads queries
        kh = kh.repeat_interleave(heads // kv_heads, dim=1)
        vh = vh.repeat_interleave(heads // kv_heads, dim=1)
    out = F.scaled_dot_product_attention(qh, kh, vh, attn_mask=bias, dropout_p=p,
                                         is_causal=causal and bias is None, scale=scale)
    return out.transpose(1, 2).reshape(b, s, heads * dh)


class Block(nn.Module):
    """A BERT/GPT-2/ViT encoder block: fused QKV attention + GELU MLP, pre- or post-LN."""

    def __init__(self, dim: int, heads: int, ffn: int, pre_ln: bool, causal: bool,
                 dropout: float, gelu: str = "none") -> None:
        super().__init__()
        self.heads, self.pre_ln, self.causal, self.p = heads, pre_ln, causal, dropout
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln1, self.ln2 = nn.LayerNorm(dim, eps=1e-12 if not pre_ln else 1e-5), \
            nn.LayerNorm(dim, eps=1e-12 if not pre_ln else 1e-5)
        self.fc1, self.fc2 = nn.Linear(dim, ffn), nn.Linear(ffn, dim)
        self.gelu = gelu
        self.drop = nn.Dropout(dropout)

    def _attn(self, x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        p = self.p if self.training else 0.0
        return self.drop(self.proj(attend(q, k, v, self.heads, self.heads, self.causal, mask, p)))

    def _mlp(self, x: torch.Tensor) -> torch.Tensor:
        return self.drop(self.fc2(F.gelu(self.fc1(x), approximate=self.gelu)))

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        if self.pre_ln:
            x = x + self._attn(self.ln1(x), mask)
            return x + self._mlp(self.ln2(x))
        x = self.ln1(x + self._attn(x, mask))
        return self.ln2(x + self._mlp(x))


class BertMLM(nn.Module):
    """BERT with its masked-LM head: ``forward(ids (b, s)) -> logits (b, s, vocab)``."""

    def __init__(self, layers: int = 12, dim: int = 768, heads: int = 12, vocab: int = 30522,
                 max_len: int = 512) -> None:
        super().__init__()
        self.vocab_size, self.max_len = vocab, max_len
        self.tok, self.pos, self.seg = (nn.Embedding(vocab, dim), nn.Embedding(max_len, dim),
                                        nn.Embedding(2, dim))
        self.ln = nn.LayerNorm(dim, eps=1e-12)
        self.drop = nn.Dropout(0.1)
        self.blocks = nn.ModuleList(Block(dim, heads, 4 * dim, False, False, 0.1)
                                    for _ in range(layers))
        self.head_dense, self.head_ln = nn.Linear(dim, dim), nn.LayerNorm(dim, eps=1e-12)
        self.head_bias = nn.Parameter(torch.zeros(vocab))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(ids.shape[1], device=ids.device)
        x = self.tok(ids) + self.pos(pos) + self.seg(torch.zeros_like(ids))
        x = self.drop(self.ln(x))
        for blk in self.blocks:
            x = blk(x)
        h = self.head_ln(F.gelu(self.head_dense(x)))
        return F.linear(h, self.tok.weight, self.head_bias)  # decoder tied to the embedding


class GPT2(nn.Module):
    """GPT-2 with its LM head: ``forward(ids (b, s)) -> logits (b, s, vocab)``."""

    def __init__(self, layers: int = 12, dim: int = 768, heads: int = 12, vocab: int = 50257,
                 max_len: int = 1024) -> None:
        super().__init__()
        self.vocab_size, self.max_len = vocab, max_len
        self.tok, self.pos = nn.Embedding(vocab, dim), nn.Embedding(max_len, dim)
        self.drop = nn.Dropout(0.1)
        self.blocks = nn.ModuleList(Block(dim, heads, 4 * dim, True, True, 0.1, "tanh")
                                    for _ in range(layers))
        self.ln_f = nn.LayerNorm(dim)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(ids.shape[1], device=ids.device)
        x = self.drop(self.tok(ids) + self.pos(pos))
        for blk in self.blocks:
            x = blk(x)
        return F.linear(self.ln_f(x), self.tok.weight)  # LM head tied to the embedding


class ViT(nn.Module):
    """Vision Transformer classifier: ``forward(images (b, C, H, W)) -> logits (b, classes)``."""

    def __init__(self, layers: int = 12, dim: int = 768, heads: int = 12, ffn: int = 3072,
                 patch: int = 16, channels: int = 3, size: int = 224, classes: int = 1000) -> None:
        super().__init__()
        if size % patch:
            raise ValueError(f"image size {size} is not a multiple of the patch size {patch}")
        self.patch = nn.Conv2d(channels, dim, patch, stride=patch)
        self.cls = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos = nn.Parameter(torch.zeros(1, (size // patch) ** 2 + 1, dim))
        self.blocks = nn.ModuleList(Block(dim, heads, ffn, True, False, 0.0)
                                    for _ in range(layers))
        self.ln = nn.LayerNorm(dim, eps=1e-12)
        self.head = nn.Linear(dim, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.patch(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln(x)[:, 0])


class RMSNorm(nn.Module):
    """x / rms(x) * weight, computed in fp32 (T5's and Llama's layer norm: no mean, no bias)."""

    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xf = x.float()
        y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * y.to(x.dtype)


__all__ = ["GPT2", "BertMLM", "Block", "RMSNorm", "ViT", "attend"]
