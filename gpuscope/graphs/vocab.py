"""Op-frequency vocabulary: Driple's frequency encoding of node types (seed 001 §3.1: "the
node type ... is converted into a float number by implementing frequency encoding, which
estimates the number of occurrences of a given operation found in a dataset").

``OpVocabulary().fit(graphs)`` counts every op type over a corpus of graphs; the frequency of
an op is its count divided by the total number of ops in the corpus (so frequencies sum to 1);
an op never seen in the corpus has frequency 0. Saved as JSON beside the dataset it encodes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from gpuscope.core.errors import InputError
from gpuscope.graphs.opgraph import OpGraph

VOCAB_FORMAT = "gpuscope.opvocab/1"


class OpVocabulary:
    """Frequency encoding of op types, fitted on a corpus of ``OpGraph``.

    Args:
        key: node attribute counted: ``op`` (framework op type, Driple's node type) or
            ``op_class`` (canonical class, comparable across frameworks).
    """

    def __init__(self, key: str = "op") -> None:
        self.key = key

    def fit(self, graphs: Iterable[OpGraph]) -> OpVocabulary:
        if self.key not in ("op", "op_class"):
            raise InputError(f"vocabulary key must be 'op' or 'op_class', not {self.key!r}")
        counts: Counter[str] = Counter()
        n_graphs = 0
        for g in graphs:
            counts.update(getattr(n, self.key) for n in g.nodes)
            n_graphs += 1
        self.counts_: dict[str, int] = dict(sorted(counts.items()))
        self.total_: int = int(sum(counts.values()))
        self.n_graphs_: int = n_graphs
        return self

    def _check(self) -> None:
        if not hasattr(self, "counts_"):
            raise InputError("OpVocabulary is not fitted; call fit(graphs) or load(path)")

    def frequency(self, op: str) -> float:
        """Relative frequency of ``op`` in the corpus (0 for an unseen op)."""
        self._check()
        return self.counts_.get(op, 0) / self.total_ if self.total_ else 0.0

    def __len__(self) -> int:
        self._check()
        return len(self.counts_)

    def __contains__(self, op: object) -> bool:
        self._check()
        return op in self.counts_

    def to_dict(self) -> dict[str, object]:
        self._check()
        return {"format": VOCAB_FORMAT, "key": self.key, "n_graphs": self.n_graphs_,
                "total": self.total_, "counts": self.counts_}

    def save(self, path: str | Path) -> Path:
        from gpuscope.core.io import write_json

        return write_json(path, self.to_dict(), what="op vocabulary", check=False)

    @classmethod
    def load(cls, path: str | Path) -> OpVocabulary:
        from gpuscope.core.io import read_json

        d = read_json(path, "vocabulary")
        if not isinstance(d, dict) or d.get("format") != VOCAB_FORMAT:
            raise InputError(f"vocabulary {path}: not a {VOCAB_FORMAT} file")
        counts = d.get("counts")
        if not isinstance(counts, dict) or not all(
                isinstance(v, int) and v >= 0 for v in counts.values()):
            raise InputError(f"vocabulary {path}: 'counts' must map op names to counts")
        v = cls(key=str(d.get("key", "op")))
        v.counts_ = {str(k): int(c) for k, c in sorted(counts.items())}
        v.total_ = int(sum(v.counts_.values()))
        v.n_graphs_ = int(d.get("n_graphs", 0))
        return v

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, OpVocabulary) and self.key == other.key
                and getattr(self, "counts_", None) == getattr(other, "counts_", None))

    def __repr__(self) -> str:
        n = len(self.counts_) if hasattr(self, "counts_") else "unfitted"
        return f"OpVocabulary(key={self.key!r}, ops={n})"
