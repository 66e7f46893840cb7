"""How co-located containers share a worker (seed 004 never says: pluggable, reported).

A sharing model maps the models running on one worker to each job's speed as a fraction of
its solo speed:

* ``ps``: processor sharing, each of n jobs runs at 1/n (work-conserving);
* ``power``: each runs at n^−β (β > 1: total throughput n^(1−β) falls with crowding, the CPU
  thread-oversubscription effect; β = 1 is ``ps``);
* ``measured-pairs``: Gavel's measured co-location throughputs (the project's table
  ``datasets/measured/gavel-colocations.csv``, from Narayanan et al. OSDI'20): job j paired with k runs at
  ``s(j|k) = x_j(j,k) / x_j(solo)``. With n > 2 co-runners (Gavel measured pairs only),
  ``speed_j = (2/n) · mean_k s(j|k)``, which is exact for n = 2 and equals 1/n when every pair
  shares evenly. A pair Gavel marks 0 (does not fit) falls back to 1/n. Seed 004's models map
  onto Gavel's job types by ``GAVEL_MAP`` (ours, see docs/specon.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from gpuscope.core.data import gavel_throughputs
from gpuscope.core.errors import InputError

SHARINGS: tuple[str, ...] = ("ps", "power", "measured-pairs")

#: Seed 004 model → Gavel job type (ours): the VAE is an MLP autoencoder like Gavel's
#: Recommendation autoencoder (batch 4096, the size whose self-pair is closest to the median);
#: the recurrent classifiers are LSTM-family like Gavel's LM, at small batch sizes.
GAVEL_MAP: dict[str, str] = {
    "vae": "('Recommendation (batch size 4096)', 1)",
    "rnn": "('LM (batch size 20)', 1)",
    "gru": "('LM (batch size 10)', 1)",
    "birnn": "('LM (batch size 40)', 1)",
    "dynamic_rnn": "('LM (batch size 5)', 1)",
}


@lru_cache(maxsize=4)
def _gavel(gpu: str) -> dict[str, dict[str, float | list[float]]]:
    data = gavel_throughputs()
    if gpu not in data:
        raise InputError(f"Gavel has no GPU {gpu!r}; expected one of {', '.join(data)}")
    return data[gpu]


def pair_speed(a: str, b: str, gpu: str = "v100") -> float:
    """``s(a|b)``: model a's normalised throughput when co-located with model b on ``gpu``
    (0 when Gavel says the pair does not fit)."""
    t = _gavel(gpu)
    ja, jb = GAVEL_MAP[a], GAVEL_MAP[b]
    solo = float(t[ja]["null"])  # type: ignore[arg-type]
    pair = t[ja].get(jb)
    if not solo or not isinstance(pair, list):
        return 0.0
    return float(pair[0]) / solo


@dataclass(frozen=True)
class SharingModel:
    """``speeds(models)`` for the jobs running together on one worker."""

    name: str = "ps"
    beta: float = 1.3
    gpu: str = "v100"
    _cache: dict[tuple[str, str], float] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.name not in SHARINGS:
            raise InputError(f"unknown sharing model {self.name!r}; expected one of {', '.join(SHARINGS)}")
        if self.name == "power" and self.beta <= 0:
            raise InputError(f"--beta must be > 0, got {self.beta}")

    def label(self) -> str:
        if self.name == "power":
            return f"power(beta={self.beta:g})"
        if self.name == "measured-pairs":
            return f"measured-pairs(gavel {self.gpu})"
        return "ps"

    def _pair(self, a: str, b: str) -> float:
        key = (a, b)
        if key not in self._cache:
            if a not in GAVEL_MAP or b not in GAVEL_MAP:
                raise InputError(f"measured-pairs has no Gavel mapping for {a!r}/{b!r}")
            self._cache[key] = pair_speed(a, b, self.gpu)
        return self._cache[key]

    def speeds(self, models: Sequence[str]) -> list[float]:
        n = len(models)
        if n == 0:
            return []
        if n == 1:
            return [1.0]
        if self.name == "ps":
            return [1.0 / n] * n
        if self.name == "power":
            return [n ** -self.beta] * n
        out = []
        for i, a in enumerate(models):
            s = [self._pair(a, b) for j, b in enumerate(models) if j != i]
            s = [x if x > 0 else 0.5 for x in s]  # does not fit: time-share evenly
            out.append(2.0 / n * sum(s) / len(s))
        return out


__all__ = ["GAVEL_MAP", "SHARINGS", "SharingModel", "pair_speed"]
