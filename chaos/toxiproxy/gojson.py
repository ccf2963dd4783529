"""Go's ``encoding/json`` as Toxiproxy's API exposes it, for decoding and encoding (ring: decisions).

Decoding follows ``json.Decoder.Decode`` into a struct: the first JSON value counts (trailing
bytes are ignored), unknown keys are ignored, keys match fields case-insensitively (an exact match
first), ``null`` leaves a field unchanged, and a value of the wrong JSON type is a 400 ``bad
request body: json: cannot unmarshal <kind> into Go struct field <Struct>.<path> of type <type>``.
Syntax errors keep Go's ``bad request body:`` prefix; their wording after it is approximated
(``EOF``, ``unexpected EOF``, ``invalid character 'x' looking for beginning of value``).
Encoding follows ``json.Marshal``: compact, UTF-8, HTML characters escaped, float32 shortest form.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Mapping
from typing import Any, Literal

from chaos.toxiproxy.errors import BAD_REQUEST_BODY, ApiError

GoType = Literal["int64", "int", "float32", "string", "bool"]


def float32(value: float) -> float:
    """``value`` rounded to the nearest float32 (Go stores ``toxicity`` as ``float32``)."""
    return float(struct.unpack("<f", struct.pack("<f", value))[0])


# --- Go-faithful JSON decoding ------------------------------------------------------------------


class FloatLiteral(str):
    """A JSON number with a fraction or exponent, kept as written (Go rejects it for ints)."""


def decode_body(body: bytes) -> Any:
    """The first JSON value of ``body`` like ``json.Decoder.Decode``; ApiError 400 if none."""
    text = body.decode("utf-8", errors="replace")
    start = len(text) - len(text.lstrip(" \t\r\n"))
    if start == len(text):
        raise BAD_REQUEST_BODY.joined("EOF")
    decoder = json.JSONDecoder(parse_float=FloatLiteral, parse_constant=_reject_constant)
    try:
        value, _ = decoder.raw_decode(text, start)
    except (json.JSONDecodeError, ValueError) as exc:
        raise BAD_REQUEST_BODY.joined(_syntax_error(text, exc)) from None
    return value


def _reject_constant(name: str) -> Any:
    raise ValueError(f"invalid character '{name[0]}' looking for beginning of value")


def _syntax_error(text: str, exc: Exception) -> str:
    if isinstance(exc, json.JSONDecodeError):
        if exc.pos >= len(text.rstrip(" \t\r\n")):
            return "unexpected EOF"
        return f"invalid character {text[exc.pos]!r} looking for beginning of value"
    return str(exc)


def _kind(value: Any) -> str:
    """Go's name for a JSON value in ``UnmarshalTypeError.Value``."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, str) and not isinstance(value, FloatLiteral):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "number"


def type_error(value: Any, where: str, go_type: str, *, with_literal: bool = False) -> ApiError:
    """Go's ``UnmarshalTypeError`` text (``number 1.5`` when a number literal does not fit)."""
    kind = f"number {value}" if with_literal else _kind(value)
    target = f"Go struct field {where}" if where else "Go value"
    return BAD_REQUEST_BODY.joined(f"json: cannot unmarshal {kind} into {target} of type {go_type}")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | FloatLiteral) and not isinstance(value, bool)


def decode_field(value: Any, go_type: GoType, where: str) -> Any:
    """One non-null field: the decoded value, or the ApiError Go's decoder reports."""
    if go_type in ("int64", "int"):
        if not _is_number(value):
            raise type_error(value, where, go_type)
        if isinstance(value, FloatLiteral) or not -(2**63) <= value < 2**63:
            raise type_error(value, where, go_type, with_literal=True)
        return value
    if go_type == "float32":
        if not _is_number(value):
            raise type_error(value, where, go_type)
        number = float(value)
        if math.isinf(number) or abs(number) > 3.4028234663852886e38:
            raise type_error(value, where, go_type, with_literal=True)
        return float32(number)
    if go_type == "string":
        if not isinstance(value, str) or isinstance(value, FloatLiteral):
            raise type_error(value, where, go_type)
        return str(value)
    if not isinstance(value, bool):
        raise type_error(value, where, go_type)
    return value


def decode_struct(
    obj: Any,
    fields: tuple[tuple[str, GoType], ...],
    *,
    struct_name: str,
    path: str,
    go_type: str,
) -> dict[str, Any]:
    """Decode a JSON object into the named fields (Go rules); returns only the fields present.

    ``path`` prefixes field names in errors (``"attributes."``); ``go_type`` names the whole
    struct when ``obj`` is not an object. The first error wins, as in Go.
    """
    if obj is None:
        return {}
    if not isinstance(obj, dict):
        where = f"{struct_name}.{path.rstrip('.')}" if path else ""
        raise type_error(obj, where, go_type)
    decoded: dict[str, Any] = {}
    for name, go_field_type in fields:
        key = match_key(obj, name)
        if key is None or obj[key] is None:
            continue
        decoded[name] = decode_field(obj[key], go_field_type, f"{struct_name}.{path}{name}")
    return decoded


def match_key(obj: Mapping[str, Any], name: str) -> str | None:
    """Go matches an exact key first, then any key equal under case folding (the last one wins)."""
    if name in obj:
        return name
    folded = [key for key in obj if key.casefold() == name.casefold()]
    return folded[-1] if folded else None


class GoFloat32(float):
    """A float32 that encodes like Go: shortest digits that round-trip, no ``.0`` on integers."""

    def go_text(self) -> str:
        value = float(self)
        for digits in range(1, 10):
            text = f"{value:.{digits}g}"
            if float32(float(text)) == float32(value):
                break
        number = float(text)
        if number == int(number) and abs(number) < 1e21:
            return str(int(number))
        if "e" in text and 1e-6 <= abs(number) < 1e21:
            return f"{number:f}".rstrip("0").rstrip(".")
        return text


def encode_json(value: Any) -> bytes:
    """``json.Marshal``: compact, UTF-8, ``<``/``>``/``&`` and U+2028/9 escaped, float32s as Go."""
    text = _encode(value)
    for char, escape in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(char, escape)
    text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return text.encode()


def _encode(value: Any) -> str:
    if isinstance(value, GoFloat32):
        return value.go_text()
    if isinstance(value, dict):
        items = (f"{json.dumps(str(k), ensure_ascii=False)}:{_encode(v)}" for k, v in value.items())
        return "{" + ",".join(items) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(_encode(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)
