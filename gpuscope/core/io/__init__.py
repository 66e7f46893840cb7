"""One path for every file a command reads or writes.

* :mod:`~gpuscope.core.io.readers`: regular files only, bounded in size (per format: binary,
  text, TOML) and in the values they parse into, UTF-8 text, JSON and TOML with a nesting
  bound (:func:`read_text`, :func:`read_json`, :func:`read_toml`, ...);
* :mod:`~gpuscope.core.io.tables`: CSV and parquet checked against their columns' contract,
  parquet without extension types, CSV cells no spreadsheet evaluates;
* :mod:`~gpuscope.core.io.checkpoints`: torch checkpoints bounded, loaded without code,
  checked key by key;
* :mod:`~gpuscope.core.io.writers`: outputs that are never links, FIFOs, devices or inputs,
  written atomically (:func:`atomic_write`, :func:`replace_atomically`);
* :mod:`~gpuscope.core.io.folders`: output folders replaced as a whole, never holding files
  the command did not write.

Every refusal is one :class:`~gpuscope.core.errors.InputError` line naming the file.
"""

from gpuscope.core.io.checkpoints import check_keys, load_torch, pickle_limit
from gpuscope.core.io.folders import (
    RECORD_NAME,
    check_output_folder,
    output_folder,
    read_record,
    sweep_stale,
    temp_dir,
)
from gpuscope.core.io.readers import (
    MAX_DEPTH,
    MAX_INPUT_ENV,
    MAX_VALUES_ENV,
    PathLike,
    check_depth,
    check_input_file,
    check_json,
    check_utf8,
    check_values,
    csv_cells,
    decode_text,
    input_limit,
    parse_json,
    parse_toml,
    read_bytes,
    read_gzip,
    read_json,
    read_text,
    read_toml,
    text_bytes,
    text_cell_limit,
    value_limit,
)
from gpuscope.core.io.tables import (
    Column,
    check_columns,
    csv_text,
    escape_cell,
    escape_frame,
    read_arrow,
    read_csv,
    read_parquet,
    read_table,
    require_columns,
    unescape_cell,
)
from gpuscope.core.io.writers import (
    atomic_write,
    check_output,
    disk_full,
    make_dirs,
    replace_atomically,
    write_bytes,
    write_error,
    write_figure,
    write_json,
    write_table,
    write_text,
)

__all__ = [
    "MAX_DEPTH", "MAX_INPUT_ENV", "MAX_VALUES_ENV", "RECORD_NAME", "atomic_write",
    "check_columns", "check_depth", "check_input_file", "check_json", "check_keys",
    "check_output", "check_output_folder", "check_utf8", "check_values", "Column", "csv_cells",
    "csv_text", "decode_text", "disk_full", "escape_cell", "escape_frame", "input_limit",
    "load_torch", "make_dirs", "output_folder", "parse_json", "parse_toml", "PathLike",
    "pickle_limit", "read_arrow", "read_bytes", "read_csv", "read_gzip", "read_json",
    "read_parquet", "read_record", "read_table", "read_text", "read_toml", "replace_atomically",
    "require_columns", "sweep_stale", "temp_dir", "text_bytes", "text_cell_limit",
    "unescape_cell", "value_limit",
    "write_bytes", "write_error", "write_figure", "write_json", "write_table", "write_text",
]
