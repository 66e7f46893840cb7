"""Which kernels ``gpuscope profile kernels`` measures: a deterministic, prefix-stable plan.

The shapes cover the regimes the emulator's kernel model distinguishes
(``gpuscope.emulator.kernels``): for GEMMs (``bmm``, ``linear``) small-shape floors (1 to 64 on
a side), wave boundaries (a strided-batched GEMM of 128 x 128 tiles whose batch is one SM
count, one more and one less; a single GEMM whose 128 x 128 tiles fill one and two waves of the
device's SMs, and one tile more), then log-uniform ``B, M, N, K``; convolutions over batch,
channels, kernel sizes 1/3/5/7, image sizes and strides 1/2; element-wise, softmax, layer
norm and the multi-tensor optimizer ops from one element (the launch floor) through the L2
size to bandwidth-bound tensors of ``max_elems``. Every shape is bounded by ``Limits`` (elements per
tensor, FLOPs per kernel), which the caller sets from the device (small on CPU).

Precisions rotate over the ones the device supports (``kernelschema.PRECISION_DTYPES``;
``tf32`` for GEMMs and convolutions only, the optimizer ops in ``fp32`` as AMP keeps them);
the regime shapes are measured in each. Ops interleave by weight (GEMMs three times as often
as an element-wise op, convolutions twice: each new convolution shape costs a cuDNN
autotuning; each round visits every op first), so any ``len(WEIGHTS)`` first rows cover every
op, ``plan(n)`` is the first ``n`` rows of ``plan(m)`` for ``m > n``, and a bigger budget
extends a finished sweep.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from dataclasses import dataclass

from gpuscope.profiling.kernelschema import BINARY, FOREACH, OP_COLUMNS, UNARY

#: Relative share of the plan per op (the GEMM and convolution classes have most regimes).
WEIGHTS: dict[str, int] = {"bmm": 3, "linear": 3, "conv": 2,
                           **{op: 1 for op in (*BINARY, *UNARY, "softmax", "ln", *FOREACH)}}
MM_OPS: frozenset[str] = frozenset({"bmm", "linear", "conv"})


@dataclass(frozen=True)
class Limits:
    """Bounds of every planned kernel: elements per tensor, FLOPs per kernel, and the SM
    count whose waves the GEMM boundaries straddle."""

    max_elems: int
    max_flops: float
    sms: int


def _loguni(rng: random.Random, lo: float, hi: float) -> int:
    return int(round(math.exp(rng.uniform(math.log(lo), math.log(max(hi, lo))))))


def _gemm_ok(op: str, b: int, m: int, n: int, k: int, lim: Limits) -> bool:
    rows = b * m if op == "linear" else m
    batch = 1 if op == "linear" else b
    sizes = (batch * rows * n, (1 if op == "linear" else b) * n * k, batch * rows * k)
    return max(sizes) <= lim.max_elems and 2.0 * b * m * n * k <= lim.max_flops


def _conv_ok(s: dict[str, int], lim: Limits) -> bool:
    out = (s["Input_Size"] + 2 * s["Padding"] - s["Kernel_Szie"]) // s["Stride"] + 1
    if out < 1:
        return False
    elems = max(s["B"] * s["Input_Channel"] * s["Input_Size"] ** 2,
                s["B"] * s["Output_Channel"] * out * out)
    flops = 2.0 * s["B"] * s["Output_Channel"] * out * out * s["Input_Channel"] \
        * s["Kernel_Szie"] ** 2
    return elems <= lim.max_elems and flops <= lim.max_flops


def _regime(op: str, lim: Limits) -> list[dict[str, int]]:
    """The regime shapes of ``op`` (module docstring), within ``lim``."""
    if op == "bmm":
        out = [dict(B=1, M=s, N=s, K=s) for s in (1, 16, 64)]
        out += [dict(B=max(1, lim.sms * w + d), M=128, N=128, K=128)
                for w in (1, 2) for d in (-1, 0, 1)]
        return [s for s in out if _gemm_ok(op, s["B"], s["M"], s["N"], s["K"], lim)]
    if op == "linear":
        out = [dict(B=1, M=s, N=s, K=s) for s in (1, 16, 64)]
        for w in (1, 2):
            m0 = 128 * max(1, (lim.sms * w) // 2)  # x 2 tile columns of K = 256: w waves
            out += [dict(B=1, M=m0 + d, N=512, K=256) for d in (0, 1, 128)]
        return [s for s in out if _gemm_ok(op, s["B"], s["M"], s["N"], s["K"], lim)]
    if op == "conv":
        out = [dict(B=1, Input_Channel=c, Output_Channel=c, Kernel_Szie=k, Input_Size=8,
                    Stride=1, Padding=k // 2) for c, k in ((1, 1), (16, 3))]
        return [s for s in out if _conv_ok(s, lim)]
    sizes = [1] + [2**e for e in range(10, 40, 3) if 2**e <= lim.max_elems]
    if op in FOREACH:
        return [dict(B=1, H=1)] + [dict(B=64, H=max(1, e // 64)) for e in sizes[1:]]
    if op in ("softmax", "ln"):
        return [dict(B=1, H=1)] + [dict(B=max(1, e // 1024), H=min(e, 1024)) for e in sizes[1:]]
    return [dict(B=1, H=e) for e in sizes]


def _random(op: str, rng: random.Random, lim: Limits) -> dict[str, int] | None:
    """One log-uniform shape of ``op`` within ``lim`` (None: drawn out of bounds)."""
    if op in ("bmm", "linear"):
        b = _loguni(rng, 1, 64 if op == "bmm" else 16)
        m, n, k = (_loguni(rng, 16, 8192) for _ in range(3))
        return dict(B=b, M=m, N=n, K=k) if _gemm_ok(op, b, m, n, k, lim) else None
    if op == "conv":
        ks = rng.choice((1, 3, 3, 5, 7))
        s = dict(B=_loguni(rng, 1, 64), Input_Channel=_loguni(rng, 3, 512),
                 Output_Channel=_loguni(rng, 16, 512), Kernel_Szie=ks,
                 Input_Size=_loguni(rng, 7, 224), Stride=rng.choice((1, 1, 2)), Padding=ks // 2)
        return s if _conv_ok(s, lim) else None
    total = _loguni(rng, 1, lim.max_elems)
    if op in FOREACH:
        b = _loguni(rng, 1, 512)
        return dict(B=b, H=max(1, total // b))
    if op in ("softmax", "ln"):
        h = _loguni(rng, 32, 65536)
        return dict(B=max(1, total // h), H=h)
    h = _loguni(rng, 1, 65536)
    return dict(B=max(1, total // h), H=h)


def _precisions(op: str, supported: tuple[str, ...]) -> tuple[str, ...]:
    if op in FOREACH:
        return ("fp32",)
    if op in MM_OPS:
        return supported
    return tuple(p for p in supported if p != "tf32")


def _op_rows(op: str, lim: Limits, supported: tuple[str, ...], seed: int
             ) -> Iterator[dict[str, object]]:
    """``op``'s rows: each regime shape in every precision, then random shapes with the
    precision rotating (a per-op generator, so the list is prefix-stable)."""
    precs = _precisions(op, supported)
    for s in _regime(op, lim):
        for p in precs:
            yield {"op": op, "precision": p, **s}
    rng = random.Random(f"{seed}:{op}")
    i = misses = 0
    while misses < 10_000:
        drawn = _random(op, rng, lim)
        if drawn is None:
            misses += 1
            continue
        yield {"op": op, "precision": precs[i % len(precs)], **drawn}
        i += 1
    return


def row_key(row: dict[str, object]) -> str:
    """The identity of a planned row: op, precision and shape (a rerun skips measured keys)."""
    op = str(row["op"])
    return "|".join([op, str(row["precision"]),
                     *(str(int(row[c])) for c in OP_COLUMNS[op])])  # type: ignore[call-overload]


def plan(n: int, lim: Limits, supported: tuple[str, ...], seed: int = 0
         ) -> list[dict[str, object]]:
    """The first ``n`` distinct rows of the sweep (module docstring), each with ``key``."""
    gens = {op: _op_rows(op, lim, supported, seed) for op in WEIGHTS}
    order = [op for rep in range(max(WEIGHTS.values())) for op in WEIGHTS if WEIGHTS[op] > rep]
    out: list[dict[str, object]] = []
    seen: set[str] = set()
    while len(out) < n and gens:
        for op in order:
            if op not in gens:
                continue
            row = next(gens[op], None)
            if row is None:
                del gens[op]
                continue
            key = row_key(row)
            if key in seen:
                continue
            seen.add(key)
            out.append({**row, "key": key})
            if len(out) >= n:
                break
    return out
