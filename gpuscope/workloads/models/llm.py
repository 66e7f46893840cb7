"""T5 (encoder-decoder) and a Llama-style decoder in plain PyTorch (see ``models.transformer``
for the references and the parameter counts)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from gpuscope.workloads.models.transformer import RMSNorm, attend


# -- T5 --------------------------------------------------------------------------------------------
def _buckets(rel: torch.Tensor, bidirectional: bool, n: int = 32, max_dist: int = 128) -> torch.Tensor:
    """T5's relative position buckets (Raffel et al. 2020 §2.1; the reference implementation):
    half the buckets per direction when bidirectional; exact buckets for small distances, then
    logarithmic up to ``max_dist``."""
    out = torch.zeros_like(rel)
    if bidirectional:
        n //= 2
        out = out + (rel > 0).long() * n
        rel = rel.abs()
    else:
        rel = -torch.clamp(rel, max=0)
    exact = n // 2
    large = exact + (torch.log(rel.float().clamp(min=1) / exact)
                     / math.log(max_dist / exact) * (n - exact)).long()
    large = torch.clamp(large, max=n - 1)
    return out + torch.where(rel < exact, rel, large)


class T5Attention(nn.Module):
    """Multi-head attention without biases or 1/sqrt(d) scaling (folded into the init), with an
    optional relative position bias (first layer of each stack)."""

    def __init__(self, dim: int, heads: int, dkv: int, rel_bias: bool, bidirectional: bool) -> None:
        super().__init__()
        self.heads, self.bidirectional = heads, bidirectional
        inner = heads * dkv
        self.q, self.k = nn.Linear(dim, inner, bias=False), nn.Linear(dim, inner, bias=False)
        self.v, self.o = nn.Linear(dim, inner, bias=False), nn.Linear(inner, dim, bias=False)
        self.rel = nn.Embedding(32, heads) if rel_bias else None

    def position_bias(self, s: int, t: int, device: torch.device, causal: bool) -> torch.Tensor:
        assert self.rel is not None
        rel = torch.arange(t, device=device)[None, :] - torch.arange(s, device=device)[:, None]
        bias = self.rel(_buckets(rel, self.bidirectional)).permute(2, 0, 1)[None]  # 1,h,s,t
        if causal:
            mask = torch.ones(s, t, dtype=torch.bool, device=device).triu(1)
            bias = bias.masked_fill(mask, float("-inf"))
        return bias

    def forward(self, x: torch.Tensor, kv: torch.Tensor, bias: torch.Tensor | None,
                p: float) -> torch.Tensor:
        out = attend(self.q(x), self.k(kv), self.v(kv), self.heads, self.heads, False, bias, p,
                     scale=1.0)
        return self.o(out)


class T5Layer(nn.Module):
    """Pre-norm self-attention, (decoder) cross-attention, ReLU FFN; residuals with dropout."""

    def __init__(self, dim: int, heads: int, dkv: int, ffn: int, decoder: bool, first: bool) -> None:
        super().__init__()
        self.self_ln = RMSNorm(dim)
        self.self_attn = T5Attention(dim, heads, dkv, first, bidirectional=not decoder)
        self.cross_ln = RMSNorm(dim) if decoder else None
        self.cross = T5Attention(dim, heads, dkv, False, False) if decoder else None
        self.ff_ln = RMSNorm(dim)
        self.wi, self.wo = nn.Linear(dim, ffn, bias=False), nn.Linear(ffn, dim, bias=False)
        self.drop = nn.Dropout(0.1)

    def forward(self, x: torch.Tensor, bias: torch.Tensor | None, enc: torch.Tensor | None = None,
                cross_bias: torch.Tensor | None = None) -> torch.Tensor:
        p = 0.1 if self.training else 0.0
        h = self.self_ln(x)
        x = x + self.drop(self.self_attn(h, h, bias, p))
        if self.cross is not None and self.cross_ln is not None and enc is not None:
            x = x + self.drop(self.cross(self.cross_ln(x), enc, cross_bias, p))
        return x + self.drop(self.wo(self.drop(F.relu(self.wi(self.ff_ln(x))))))


class T5(nn.Module):
    """T5 for conditional generation: ``forward(src ids, tgt ids) -> logits (b, t, vocab)``."""

    def __init__(self, layers: int = 6, dim: int = 512, heads: int = 8, dkv: int = 64,
                 ffn: int = 2048, vocab: int = 32128) -> None:
        super().__init__()
        self.vocab_size, self.dim = vocab, dim
        self.shared = nn.Embedding(vocab, dim)
        self.encoder = nn.ModuleList(T5Layer(dim, heads, dkv, ffn, False, i == 0)
                                     for i in range(layers))
        self.decoder = nn.ModuleList(T5Layer(dim, heads, dkv, ffn, True, i == 0)
                                     for i in range(layers))
        self.enc_ln, self.dec_ln = RMSNorm(dim), RMSNorm(dim)
        self.drop = nn.Dropout(0.1)

    @property
    def enc_rel(self) -> T5Attention:
        return self.encoder[0].self_attn  # type: ignore[return-value]

    @property
    def dec_rel(self) -> T5Attention:
        return self.decoder[0].self_attn  # type: ignore[return-value]

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        s, t = src.shape[1], tgt.shape[1]
        x = self.drop(self.shared(src))
        bias = self.enc_rel.position_bias(s, s, src.device, causal=False)
        for layer in self.encoder:
            x = layer(x, bias)
        enc = self.drop(self.enc_ln(x))
        y = self.drop(self.shared(tgt))
        dbias = self.dec_rel.position_bias(t, t, tgt.device, causal=True)
        for layer in self.decoder:
            y = layer(y, dbias, enc)
        y = self.drop(self.dec_ln(y)) * self.dim ** -0.5  # tied head: rescale (Mesh TF)
        return F.linear(y, self.shared.weight)


# -- Llama -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LlamaConfig:
    """A Llama-style decoder's size; defaults are TinyLlama-1.1B's (Zhang et al. 2024)."""

    dim: int = 2048
    layers: int = 22
    heads: int = 32
    kv_heads: int = 4
    ffn: int = 5632
    vocab: int = 32000
    max_len: int = 2048
    rope_theta: float = 10000.0


def _rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary embedding (Su et al. 2021), the half-split layout of the reference code."""
    x1, x2 = x.chunk(2, dim=-1)
    return x * cos + torch.cat([-x2, x1], dim=-1) * sin


class LlamaBlock(nn.Module):
    def __init__(self, c: LlamaConfig) -> None:
        super().__init__()
        self.c = c
        dh = c.dim // c.heads
        self.q = nn.Linear(c.dim, c.heads * dh, bias=False)
        self.k = nn.Linear(c.dim, c.kv_heads * dh, bias=False)
        self.v = nn.Linear(c.dim, c.kv_heads * dh, bias=False)
        self.o = nn.Linear(c.heads * dh, c.dim, bias=False)
        self.gate = nn.Linear(c.dim, c.ffn, bias=False)
        self.up = nn.Linear(c.dim, c.ffn, bias=False)
        self.down = nn.Linear(c.ffn, c.dim, bias=False)
        self.ln1, self.ln2 = RMSNorm(c.dim, 1e-5), RMSNorm(c.dim, 1e-5)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        c = self.c
        b, s, _ = x.shape
        dh = c.dim // c.heads
        h = self.ln1(x)
        q = _rope(self.q(h).view(b, s, c.heads, dh), cos, sin).reshape(b, s, -1)
        k = _rope(self.k(h).view(b, s, c.kv_heads, dh), cos, sin).reshape(b, s, -1)
        x = x + self.o(attend(q, k, self.v(h), c.heads, c.kv_heads, True))
        h = self.ln2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))  # SwiGLU (Shazeer 2020)


class Llama(nn.Module):
    """Llama-style causal LM: ``forward(ids (b, s)) -> logits (b, s, vocab)``."""

    def __init__(self, c: LlamaConfig | None = None) -> None:
        super().__init__()
        self.c = c = c or LlamaConfig()
        if c.dim % c.heads or c.heads % c.kv_heads:
            raise ValueError(f"llama: dim {c.dim} must divide by heads {c.heads}, "
                             f"and heads by kv_heads {c.kv_heads}")
        self.vocab_size, self.max_len = c.vocab, c.max_len
        self.tok = nn.Embedding(c.vocab, c.dim)
        self.blocks = nn.ModuleList(LlamaBlock(c) for _ in range(c.layers))
        self.ln_f = RMSNorm(c.dim, 1e-5)
        self.lm_head = nn.Linear(c.dim, c.vocab, bias=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        c = self.c
        dh = c.dim // c.heads
        inv = 1.0 / (c.rope_theta ** (torch.arange(0, dh, 2, device=ids.device).float() / dh))
        ang = torch.arange(ids.shape[1], device=ids.device).float()[:, None] * inv[None]
        ang = torch.cat([ang, ang], dim=-1)[None, :, None, :]  # (1, s, 1, dh)
        cos, sin = ang.cos(), ang.sin()
        x = self.tok(ids)
        for blk in self.blocks:
            x = blk(x, cos, sin)
        return self.lm_head(self.ln_f(x))


__all__ = ["T5", "Llama", "LlamaConfig"]
