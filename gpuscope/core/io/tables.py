"""Tables in and out: CSV and parquet, read through the bounded reader and checked against
the columns their contract names; CSV written so that no spreadsheet evaluates a cell.

Parquet: the file's footer is checked before pyarrow sees it (no Arrow extension type is ever
deserialised: such types run Python code of whoever registered them), the uncompressed size
is bounded like a file's, and pandas metadata is ignored (plain columns only).

CSV cells: a text cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage
return is written with a leading ``'`` (as is a text cell that starts with ``'``), so that a
spreadsheet shows it as text instead of running it as a formula; :func:`read_csv` removes
that one quote again, so gpuscope reads back exactly what it wrote.
"""

from __future__ import annotations

import base64
import io
import math
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuscope.core.errors import InputError
from gpuscope.core.io.readers import (
    MAX_INPUT_ENV,
    MAX_VALUES_ENV,
    PathLike,
    check_utf8,
    check_values,
    csv_cells,
    fmt_bytes,
    input_limit,
    read_bytes,
    text_bytes,
    text_cell_limit,
)

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

#: First characters that make a spreadsheet evaluate a cell (OWASP CSV injection).
FORMULA_START: tuple[str, ...] = ("=", "+", "-", "@", "\t", "\r")
_ESCAPED_START = (*FORMULA_START, "'")
_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class Column:
    """One column of a table's contract.

    Attributes:
        name: column name.
        kind: ``number`` (int or float), ``integer``, ``string`` or ``bool``.
        low: smallest allowed value (numbers; NaN is judged by ``nan``).
        high: largest allowed value (numbers).
        nan: NaN (a missing number) allowed; infinities never are.
        required: absent column refused (else checked only when present).
    """

    name: str
    kind: str = "number"
    low: float | None = None
    high: float | None = None
    nan: bool = True
    required: bool = True


def escape_cell(v: Any) -> Any:
    """A text cell a spreadsheet will not evaluate (see the module docstring)."""
    if isinstance(v, str) and v.startswith(_ESCAPED_START):
        return "'" + v
    return v


def unescape_cell(v: Any) -> Any:
    """The inverse of :func:`escape_cell`."""
    if isinstance(v, str) and len(v) > 1 and v[0] == "'" and v[1:].startswith(_ESCAPED_START):
        return v[1:]
    return v


def _text_starting(s: pd.Series, start: str | tuple[str, ...]) -> pd.Series | None:
    """Mask of the text cells of ``s`` that start with ``start`` (None: no text column)."""
    import pandas as pd

    if pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
        return None
    try:
        return s.str.startswith(start, na=False).astype(bool)
    except (AttributeError, TypeError):  # not text at all (an object column of numbers)
        return None


def _text_containing(s: pd.Series, part: str) -> pd.Series | None:
    import pandas as pd

    if pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
        return None
    try:
        return s.str.contains(part, regex=False, na=False).astype(bool)
    except (AttributeError, TypeError):
        return None


def escape_frame(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with every text cell passed through :func:`escape_cell` (a copy when needed)."""
    out = df
    for c in df.columns:
        mask = _text_starting(df[c], _ESCAPED_START)
        if mask is not None and bool(mask.any()):
            if out is df:
                out = df.copy()
            out[c] = df[c].map(escape_cell)
    return out


def _unescape_frame(df: pd.DataFrame) -> pd.DataFrame:
    for c in df.columns:
        mask = _text_starting(df[c], "'")
        if mask is not None and bool(mask.any()):
            df.loc[mask, c] = df.loc[mask, c].map(unescape_cell)
    return df


def csv_text(df: pd.DataFrame, index: bool = False, **kw: Any) -> str:
    """``df`` as CSV text with spreadsheet-safe cells."""
    out, kw = _csv_ready(df, kw)
    return str(out.to_csv(index=index, **kw))


def write_csv_file(df: pd.DataFrame, path: PathLike, index: bool = False, **kw: Any) -> None:
    """Write :func:`csv_text` of ``df`` to ``path`` (UTF-8) in chunks, never holding the
    whole text (a 10**6-row plan is ~100 MB of text, twice that as str and bytes); a large
    table of numbers and plain text through Arrow (:mod:`~gpuscope.core.io.csvarrow`)."""
    out, kw = _csv_ready(df, kw)
    if not index and kw.keys() == {"lineterminator"}:
        from gpuscope.core.io.csvarrow import write_csv_arrow

        if write_csv_arrow(out, path, kw["lineterminator"]):  # same text, ~5x faster
            return
    out.to_csv(path, index=index, encoding="utf-8", **kw)


def _csv_ready(df: pd.DataFrame, kw: dict[str, Any]) -> tuple[pd.DataFrame, dict[str, Any]]:
    out = escape_frame(df)
    # a cell holding a carriage return is quoted only when CR is part of the line ending
    cr = any(m is not None and bool(m.any()) for m in
             (_text_containing(out[c], "\r") for c in out.columns))
    kw.setdefault("lineterminator", "\r\n" if cr else "\n")
    return out, kw


def read_csv(path: PathLike, what: str = "CSV file", columns: Sequence[Column] = (),
             max_bytes: int | None = None, **kw: Any) -> pd.DataFrame:
    """A CSV file as a DataFrame (cells unescaped, see the module docstring), checked against
    ``columns``; empty, binary, malformed, a row with more fields than the header, or a
    value outside its column's contract -> ``InputError``."""
    import pandas as pd

    data = text_bytes(path, what, max_bytes)
    if data.lstrip(_BOM).isspace() or not data.lstrip(_BOM):
        raise InputError(f"{what} {path} is empty")
    check_values(csv_cells(data, kw.get("sep", ",")), what, path, "cells")
    check_utf8(data, what, path)
    kw.setdefault("index_col", False)
    kw.setdefault("encoding", "utf-8-sig")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", pd.errors.ParserWarning)
            df = _parse_csv(data, what, path, kw)
    except InputError:
        raise
    except pd.errors.ParserWarning:
        raise InputError(f"{what} {path}: a row has more fields than the header") from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError, OverflowError) as e:
        msg = str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__
        raise InputError(f"{what} {path} is not a valid CSV table: {msg}") from None
    if b"'" in data:  # only a quoted cell can need unescaping (a scan at C speed)
        df = _unescape_frame(df)
    return check_columns(df, columns, path, what)


#: Rows pandas parses at a time (a text cell repeated within them is one Python object).
CSV_CHUNK_ROWS: int = 1 << 18


def _parse_csv(data: bytes, what: str, path: PathLike, kw: dict[str, Any]) -> pd.DataFrame:
    """``data`` parsed by pandas from the bytes in hand (a text copy would cost 4 bytes a
    character), :data:`CSV_CHUNK_ROWS` rows at a time: a text cell is a Python object of
    about 70 bytes unless it repeats one of its chunk, so the distinct text cells of each
    chunk are counted as they come and a table holding more than
    :func:`~gpuscope.core.io.readers.text_cell_limit` is refused before the rest is parsed."""
    import pandas as pd

    limit, held, parts = text_cell_limit(), 0, []
    with pd.read_csv(io.BytesIO(data), chunksize=CSV_CHUNK_ROWS, **kw) as reader:
        for chunk in reader:
            held += sum(int(chunk[c].nunique()) for c in chunk.columns
                        if chunk[c].dtype == object)
            if held > limit:
                raise InputError(f"{what} {path} holds over {limit:,} distinct text cells "
                                 f"(about 70 bytes each once parsed), the limit for one input "
                                 f"file (half of ${MAX_VALUES_ENV}; set it to change)")
            parts.append(chunk)
    if not parts:  # a header and no rows
        return pd.read_csv(io.BytesIO(data), nrows=0, **kw)
    return parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True, copy=False)


# -- parquet -------------------------------------------------------------------------------
def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    out = shift = 0
    while pos < len(buf) and shift < 64:
        b = buf[pos]
        out |= (b & 0x7F) << shift
        pos += 1
        if not b & 0x80:
            return out, pos
        shift += 7
    raise ValueError("bad varint")


def _stored_arrow_schemas(data: bytes) -> list[bytes]:
    """The serialised Arrow schema(s) in a parquet footer (key ``ARROW:schema``), read from
    the footer's bytes without pyarrow (which deserialises extension types on sight)."""
    if len(data) < 12 or data[:4] != b"PAR1" or data[-4:] != b"PAR1":
        raise ValueError("no parquet magic bytes")
    n = int.from_bytes(data[-8:-4], "little")
    if n <= 0 or n > len(data) - 12:
        raise ValueError("bad footer length")
    footer = data[-8 - n:-8]
    key = b"ARROW:schema"
    out: list[bytes] = []
    at = footer.find(key)
    while at >= 0:
        pos = at + len(key)
        try:
            if footer[pos] & 0x0F == 8:  # the value: a binary field (thrift compact)
                size, pos = _varint(footer, pos + 1)
                value = footer[pos:pos + size]
                if len(value) == size:
                    out.append(base64.b64decode(value + b"=" * (-len(value) % 4)))
        except (ValueError, IndexError):
            pass  # the same bytes inside a column name, say: not the schema entry
        at = footer.find(key, at + 1)
    if footer.find(key) >= 0 and not out:
        raise ValueError("unreadable ARROW:schema entry")
    return out


def read_arrow(path: PathLike, what: str = "parquet file",
               columns: list[str] | None = None, data: bytes | None = None) -> pa.Table:
    """A parquet file as an Arrow table: bounded file and uncompressed size, cells (rows x
    columns, from the footer) at most :func:`~gpuscope.core.io.readers.value_limit`, no
    extension types (refused before pyarrow parses the schema), corrupt -> ``InputError``.
    ``data``:
    the file's bytes already in hand (``path`` then only names it)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if data is None:
        data = read_bytes(path, what)
    try:
        schemas = _stored_arrow_schemas(data)
    except (ValueError, IndexError) as e:
        raise InputError(f"{what} {path} is not a valid parquet file: {e}") from None
    if any(b"ARROW:extension:name" in s for s in schemas):
        raise InputError(f"{what} {path} has a column of an Arrow extension type; gpuscope "
                         "reads plain columns only")
    limit = input_limit()
    try:
        pf = pq.ParquetFile(pa.BufferReader(data))
        md = pf.metadata
        size = sum(md.row_group(i).total_byte_size for i in range(md.num_row_groups))
        if size > limit:
            raise InputError(f"{what} {path} holds {fmt_bytes(size)} uncompressed, over the "
                             f"limit of {fmt_bytes(limit)} for one input file (set "
                             f"${MAX_INPUT_ENV} to change)")
        width = md.num_columns if columns is None else len(columns)
        check_values(md.num_rows * max(width, 1), what, path, "cells")
        table = pf.read(columns=columns)
    except InputError:
        raise
    except Exception as e:  # noqa: BLE001 - pyarrow raises ArrowInvalid, OSError, KeyError ...
        raise InputError(f"{what} {path} is not a valid parquet file: {_first_line(e)}"
                         ) from None
    for f in table.schema:
        if isinstance(f.type, pa.ExtensionType):
            raise InputError(f"{what} {path}: column {f.name!r} has an extension type")
    return table


def read_parquet(path: PathLike, what: str = "parquet file", columns: list[str] | None = None,
                 schema: Sequence[Column] = ()) -> pd.DataFrame:
    """A parquet file as a DataFrame (see :func:`read_arrow`), checked against ``schema``."""
    table = read_arrow(path, what, columns)
    try:
        df = table.to_pandas(ignore_metadata=True)
    except Exception as e:  # noqa: BLE001 - a type pandas cannot hold
        raise InputError(f"{what} {path} has columns pandas cannot read: {_first_line(e)}"
                         ) from None
    df = df.drop(columns=[c for c in df.columns if str(c).startswith("__index_level_")])
    return check_columns(df, schema, path, what)


def _first_line(e: BaseException) -> str:
    s = str(e).strip()
    return s.splitlines()[0][:200] if s else type(e).__name__


def read_table(path: PathLike, what: str = "table", **kw: Any) -> pd.DataFrame:
    """A ``.csv`` or ``.parquet`` table (by extension)."""
    suffix = Path(path).suffix.lower()
    if suffix == ".parquet":
        return read_parquet(path, what, **kw)
    if suffix == ".csv":
        return read_csv(path, what, **kw)
    raise InputError(f"{what} {path}: unsupported extension {suffix!r} (use .csv or .parquet)")


def require_columns(df: pd.DataFrame, columns: Iterable[str], path: PathLike,
                    what: str = "table") -> None:
    """Refuse a table missing any of ``columns``, naming the missing ones."""
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise InputError(f"{what} {path} lacks column(s) {', '.join(missing)} "
                         f"(has {', '.join(map(str, df.columns[:12]))})")


def check_columns(df: pd.DataFrame, columns: Sequence[Column], path: PathLike,
                  what: str = "table") -> pd.DataFrame:
    """``df``, refused when a column of the contract is absent, of another kind, or holds a
    value outside its bounds (one line naming the column and the first bad row)."""
    import numpy as np
    import pandas as pd

    require_columns(df, [c.name for c in columns if c.required], path, what)
    for c in columns:
        if c.name not in df.columns:
            continue
        s = df[c.name]
        where = f"{what} {path}, column {c.name!r}"
        if c.kind == "string":
            bad = s.map(lambda v: not (isinstance(v, str) or v is None
                                       or (isinstance(v, float) and math.isnan(v))))
            if bool(bad.any()):
                i = int(np.flatnonzero(bad.to_numpy())[0])
                raise InputError(f"{where}: row {i + 1} is not text ({s.iloc[i]!r})")
            continue
        if c.kind == "bool":
            if not pd.api.types.is_bool_dtype(s):
                raise InputError(f"{where} must hold true/false values, not {s.dtype}")
            continue
        if c.nan and s.dtype == object and bool(s.isna().all()):  # all missing (nulls)
            df[c.name] = s = s.astype("float64")
        if pd.api.types.is_bool_dtype(s) or not pd.api.types.is_numeric_dtype(s):
            raise InputError(f"{where} must hold numbers, not {_dtype_name(s)}")
        v = s.to_numpy(dtype="float64", na_value=np.nan)
        checks = [(np.isinf(v), "is infinite")]
        if not c.nan:
            checks.append((np.isnan(v), "is missing (NaN)"))
        if c.kind == "integer":
            checks.append((~np.isnan(v) & (v != np.round(v)), "is not an integer"))
        if c.low is not None:
            checks.append((v < c.low, f"is below {c.low:g}"))
        if c.high is not None:
            checks.append((v > c.high, f"is above {c.high:g}"))
        for mask, msg in checks:
            if mask.any():
                i = int(np.flatnonzero(mask)[0])
                raise InputError(f"{where}: row {i + 1} {msg} ({v[i]!r})")
    return df


def _dtype_name(s: pd.Series) -> str:
    import pandas as pd

    if pd.api.types.is_bool_dtype(s):
        return "true/false values"
    return "text" if s.dtype == object or pd.api.types.is_string_dtype(s) else str(s.dtype)
