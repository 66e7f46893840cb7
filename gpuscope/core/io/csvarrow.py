"""Large CSV tables through Arrow's writer, byte for byte the text pandas' ``to_csv`` writes.

pandas formats every float cell with NumPy's shortest round-trip repr and passes every cell
through Python's csv writer: ~9 s for a 10**6-row allocation plan of 8 columns. Arrow casts a
column to text in C++ (the same shortest round-trip digits) and writes the rows without a
Python object per cell, ~5x faster. Only what pandas' text can be reproduced for exactly is
written here; everything else returns False and goes through pandas:

* at least :data:`MIN_ROWS` rows (smaller tables gain nothing), at least two columns (pandas
  quotes a row holding one empty cell), ``\\n`` line ends, no index, plain string names;
* columns of float64, NumPy integers or text (``str`` or missing cells only; no text cell
  holding a delimiter, a quote, CR or LF, which pandas would quote);
* floats: Arrow switches to exponent notation at other magnitudes than Python's repr and
  writes an integral value without ``.0``: ``.0`` is appended to an integral value written
  without an exponent, and a cell Arrow writes with an exponent or below 1e-4 in magnitude
  (rare in seconds and counts) is formatted by Python's repr itself. NaN and missing text
  are empty cells, as pandas writes them.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from gpuscope.core.io.readers import PathLike

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

#: Smallest table written through Arrow.
MIN_ROWS: int = 2**16
#: Rows converted and written at a time (bounded memory: ~8 MB of text per chunk).
CHUNK_ROWS: int = 2**16
#: Characters that make pandas (Python's csv writer) quote a cell.
_QUOTED = re.compile(r'[,"\r\n]')


def write_csv_arrow(df: pd.DataFrame, path: PathLike, lineterminator: str) -> bool:
    """Write ``df`` (no index) as CSV to ``path`` when its text can be made identical to
    pandas' (module docstring); False (``path`` then holds nothing of use) when it cannot."""
    import pandas as pd

    names = list(df.columns)
    if (len(df) < MIN_ROWS or lineterminator != "\n" or len(names) < 2
            or isinstance(df.columns, pd.MultiIndex)
            or not all(isinstance(c, str) and c and not _QUOTED.search(c) for c in names)):
        return False
    found = [_kind(df.iloc[:, i]) for i in range(len(names))]
    kinds = [k for k in found if k is not None]
    if len(kinds) < len(found):
        return False
    import pyarrow.csv as pcsv

    opts = pcsv.WriteOptions(include_header=False, quoting_style="none")
    with open(path, "wb") as fh:
        fh.write((",".join(names) + "\n").encode("utf-8"))
        for at in range(0, len(df), CHUNK_ROWS):
            part = df.iloc[at:at + CHUNK_ROWS]
            cols = [_text(part.iloc[:, i], k) for i, k in enumerate(kinds)]
            if any(c is None for c in cols):
                return False
            import pyarrow as pa

            pcsv.write_csv(pa.Table.from_arrays(cols, names=[f"c{i}" for i in range(len(cols))]),
                           fh, opts)
            del cols
            # Arrow's allocator keeps freed pages for reuse: hand them back after each chunk,
            # or a 10**6-row table leaves ~30 MB more resident than pandas' writer
            pa.default_memory_pool().release_unused()
    return True


def _kind(s: pd.Series) -> str | None:
    import numpy as np
    import pandas as pd

    dt = s.dtype
    if isinstance(dt, np.dtype):
        if dt == np.float64:
            return "float"
        if dt.kind in "iu":
            return "int"
        return "text" if dt.kind == "O" else None
    return "text" if isinstance(dt, pd.StringDtype) else None


def _text(s: pd.Series, kind: str) -> pa.Array | None:
    """One column's cells as Arrow text (null: an empty cell), or None when pandas would
    write them otherwise."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if kind == "float":
        return float_text(s.to_numpy())
    if kind == "int":
        return pc.cast(pa.array(s.to_numpy()), pa.string())
    try:  # a pandas string column converts without a Python object per cell
        arr = pa.array(s if s.dtype != object else s.to_numpy(), from_pandas=True)
    except (pa.ArrowException, TypeError, ValueError):
        return None
    if arr.type == pa.null():
        return arr.cast(pa.string())
    if arr.type not in (pa.string(), pa.large_string()):  # bytes, numbers: pandas' str()
        return None
    if pc.any(pc.match_substring_regex(arr, _QUOTED.pattern)).as_py():
        return None
    return arr


def float_text(values: Any) -> pa.Array:
    """Float64 values as the text pandas writes (NumPy's repr, which is Python's), NaN as
    null."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    a = np.asarray(values, dtype=np.float64)
    s = pc.cast(pa.array(a, from_pandas=True), pa.string())
    with np.errstate(invalid="ignore"):
        odd = np.asarray(pc.fill_null(pc.match_substring(s, "e"), False), dtype=bool)
        odd |= (np.abs(a) < 1e-4) & (a != 0)
        whole = np.isfinite(a) & (np.trunc(a) == a) & ~odd  # Arrow writes 3.0 as "3"
    if whole.any():
        s = pc.if_else(whole, pc.binary_join_element_wise(s, ".0", ""), s)
    redo = np.flatnonzero(odd)
    if not len(redo):
        return s
    cells = s.to_pylist()
    for i in redo.tolist():
        cells[i] = repr(float(a[i]))
    return pa.array(cells, pa.string())
