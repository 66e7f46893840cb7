"""Large CSV tables written through Arrow are byte for byte what pandas writes, and every
table Arrow cannot write identically goes through pandas."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gpuscope.core.io import csv_text, write_table
from gpuscope.core.io.csvarrow import float_text, write_csv_arrow
from gpuscope.core.io.tables import escape_frame

#: Python's repr and NumPy's str switch notation at these magnitudes; Arrow elsewhere.
EDGES = [0.0, -0.0, 1.0, -1.0, 0.5, 1e-4, 9.99e-5, 1e-5, 1.5e-5, 5e-324, 1e15, 1e16 - 2,
         1e16, 1.2345e16, 9999999999999998.0, 1e22, 1e300, -1e300, np.inf, -np.inf, np.nan,
         0.1, 0.3, 1 / 3, 2.0**60, 100.0, 123456789012345.6, 19022935077.34137, 7e-4]


def _pandas_text(df: pd.DataFrame) -> str:
    return str(df.to_csv(index=False, lineterminator="\n"))


def _arrow_text(df: pd.DataFrame, tmp: Path) -> str | None:
    p = tmp / "t.csv"
    return p.read_bytes().decode() if write_csv_arrow(df, p, "\n") else None


def _floats(rng: np.random.Generator, n: int) -> np.ndarray:
    v = np.concatenate([
        rng.uniform(0, 1e6, n), rng.exponential(1e4, n), 10 ** rng.uniform(-12, 25, n),
        np.round(rng.uniform(0, 1e5, n), 1), rng.standard_normal(n), np.array(EDGES),
        np.frombuffer(rng.bytes(8 * n), dtype=np.float64)])
    return v[np.isfinite(v) | np.isinf(v) | np.isnan(v)]


def test_float_text_is_numpys_repr() -> None:
    v = _floats(np.random.default_rng(0), 20_000)
    got = float_text(v).to_pylist()
    want = [None if np.isnan(x) else s for x, s in zip(v, v.astype(str).tolist(), strict=True)]
    assert got == want
    assert [repr(float(x)) for x in v if not np.isnan(x)] == [g for g in got if g is not None]


def test_plan_like_table_is_byte_identical(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gpuscope.core.io.csvarrow as ca

    monkeypatch.setattr(ca, "MIN_ROWS", 10)
    monkeypatch.setattr(ca, "CHUNK_ROWS", 997)  # several chunks, the last one short
    rng = np.random.default_rng(1)
    n = 5_000
    f = _floats(rng, n)[: 4 * n].reshape(4, n)
    df = pd.DataFrame({
        "job_id": [f"q{i}" for i in range(n)],
        "device": np.array(["v100", "a100", ""], dtype=object)[rng.integers(0, 3, n)],
        "gpu": rng.integers(-1, 8, n), "arrival_s": f[0], "start_s": f[1],
        "finish_s": f[2], "jct_s": f[3],
        "status": np.array(["ok", None, "rejected"], dtype=object)[rng.integers(0, 3, n)],
        "count": rng.integers(0, 2**63 - 1, n, dtype=np.uint64),
        "text": pd.array([f"é{i} 'x" if i % 3 else None for i in range(n)], dtype="str"),
    })
    got = _arrow_text(df, tmp_path)
    assert got is not None and got == _pandas_text(df)
    # through the project's writer (spreadsheet escaping first): the file pandas writes
    write_table(df.assign(job_id=[f"=q{i}" for i in range(n)]), tmp_path / "w.csv")
    assert (tmp_path / "w.csv").read_text() == _pandas_text(
        escape_frame(df.assign(job_id=[f"=q{i}" for i in range(n)])))


@pytest.mark.parametrize("df", [
    pd.DataFrame({"a": ["x,y", "z"], "b": [1.0, 2.0]}),       # a delimiter: pandas quotes
    pd.DataFrame({"a": ['say "hi"', "z"], "b": [1.0, 2.0]}),  # a quote
    pd.DataFrame({"a": ["line\nbreak", "z"], "b": [1.0, 2.0]}),
    pd.DataFrame({"a": ["cr\r", "z"], "b": [1.0, 2.0]}),
    pd.DataFrame({"a": [1, "z"], "b": [1.0, 2.0]}),           # a number in a text column
    pd.DataFrame({"a": [b"x", b"y"], "b": [1.0, 2.0]}),       # bytes: pandas writes b'x'
    pd.DataFrame({"a": [True, False], "b": [1.0, 2.0]}),      # bool: True/False
    pd.DataFrame({"a": np.array([0.1, 0.2], dtype=np.float32), "b": [1.0, 2.0]}),
    pd.DataFrame({"a": pd.array([1, None], dtype="Int64"), "b": [1.0, 2.0]}),
    pd.DataFrame({"a,b": [1.0, 2.0], "c": [1.0, 2.0]}),       # a name pandas quotes
    pd.DataFrame({"a": ["", "z"]}),                           # one column: pandas writes ""
])
def test_what_arrow_cannot_write_goes_through_pandas(
        df: pd.DataFrame, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gpuscope.core.io.csvarrow as ca

    monkeypatch.setattr(ca, "MIN_ROWS", 1)
    assert _arrow_text(df, tmp_path) is None
    write_table(df, tmp_path / "w.csv")
    assert (tmp_path / "w.csv").read_bytes() == csv_text(df).encode()  # pandas' text


def test_small_tables_keep_pandas(tmp_path: Path) -> None:
    df = pd.DataFrame({"a": ["x"] * 10, "b": np.arange(10) / 3})
    assert _arrow_text(df, tmp_path) is None
