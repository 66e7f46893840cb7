"""A small protobuf text-format parser, enough for GraphDef ``.pbtxt`` files written by
``tf.io.write_graph`` (seed 001 §5.2, Fig. 11) when TensorFlow is not installed.

``parse_text_proto(text)`` returns nested dicts: every field maps to the LIST of its values
(the parser cannot know which fields are repeated); a message value is again such a dict,
scalars are ``str`` (quoted strings unescaped), ``int``, ``float``, ``bool`` or enum names.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from gpuscope.core.errors import InputError

_TOKEN = re.compile(r"""
    (?P<ws>\s+|\#[^\n]*)
  | (?P<str>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<punct>[{}<>:;,\[\]])
  | (?P<word>[A-Za-z0-9_.+\-/]+)
""", re.VERBOSE)


def _tokens(text: str) -> list[tuple[str, str, int]]:
    out: list[tuple[str, str, int]] = []
    pos, line = 0, 1
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise InputError(f"text proto: unexpected character {text[pos]!r} at line {line}")
        kind = m.lastgroup or ""
        if kind != "ws":
            out.append((kind, m.group(), line))
        line += m.group().count("\n")
        pos = m.end()
    return out


def _scalar(kind: str, tok: str) -> Any:
    if kind == "str":
        body = tok[1:-1]
        try:  # C-style escapes (octal bytes, \n, \") as protobuf writes them
            return ast.literal_eval("b'" + body.replace("'", "\\'") + "'").decode("utf-8", "replace")
        except (ValueError, SyntaxError):
            return body
    if tok in ("true", "True"):
        return True
    if tok in ("false", "False"):
        return False
    for conv in (int, float):
        try:
            return conv(tok)
        except ValueError:
            pass
    return tok  # enum name (DT_FLOAT) or identifier


def parse_text_proto(text: str) -> dict[str, list[Any]]:
    """Parse protobuf text format into ``{field: [values]}`` (see the module docstring)."""
    toks = _tokens(text)
    pos = 0

    def message(end: str | None) -> dict[str, list[Any]]:
        nonlocal pos
        msg: dict[str, list[Any]] = {}
        while True:
            if pos >= len(toks):
                if end is None:
                    return msg
                raise InputError(f"text proto: missing {end!r} at end of file")
            kind, tok, line = toks[pos]
            if end is not None and tok == end and kind == "punct":
                pos += 1
                return msg
            if kind == "punct" and tok in ";,":
                pos += 1
                continue
            if kind != "word":
                raise InputError(f"text proto: expected a field name at line {line}, got {tok!r}")
            name = tok
            pos += 1
            if pos < len(toks) and toks[pos][1] == ":":
                pos += 1
            if pos >= len(toks):
                raise InputError(f"text proto: field {name!r} has no value (line {line})")
            kind, tok, line = toks[pos]
            if kind == "punct" and tok in "{<":
                pos += 1
                msg.setdefault(name, []).append(message("}" if tok == "{" else ">"))
            elif kind == "punct" and tok == "[":
                pos += 1
                while toks[pos][1] != "]":
                    if toks[pos][1] != ",":
                        msg.setdefault(name, []).append(_scalar(toks[pos][0], toks[pos][1]))
                    pos += 1
                pos += 1
            elif kind in ("str", "word"):
                val = _scalar(kind, tok)
                pos += 1
                while kind == "str" and pos < len(toks) and toks[pos][0] == "str":
                    val += _scalar("str", toks[pos][1])  # adjacent strings concatenate
                    pos += 1
                msg.setdefault(name, []).append(val)
            else:
                raise InputError(f"text proto: bad value {tok!r} for {name!r} at line {line}")

    try:
        return message(None)
    except IndexError:
        raise InputError("text proto: unexpected end of file") from None
    except RecursionError:
        raise InputError("text proto: messages nested too deeply") from None
