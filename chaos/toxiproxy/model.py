"""Toxiproxy's v2 API as data: errors, toxic specs and Go-faithful JSON decoding (ring: decisions).

Pure functions, no I/O. Every rule below restates upstream Toxiproxy (Shopify/toxiproxy @ v2.12,
``api.go``, ``toxic_collection.go``, ``toxics/*.go``) and Go's ``encoding/json`` as the server
observes it:

* an API error is ``{"error": <message>, "status": <code>}``;
* a request body is decoded like ``json.Decoder.Decode``: the first JSON value counts (trailing
  bytes are ignored), unknown keys are ignored, keys match struct fields case-insensitively, ``null``
  leaves a field unchanged, and a value of the wrong JSON type is a 400 ``bad request body: json:
  cannot unmarshal <kind> into Go struct field <Struct>.<path> of type <type>``;
* a toxic defaults to ``stream="downstream"``, ``toxicity=1`` and ``name="<type>_<stream>"``
  (the stream spelled as sent: parsing is case-insensitive);
* the order of checks when a toxic is added is: body, stream, type, duplicate name, attributes.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal

VERSION: Final = "2.12.0"

Stream = Literal["upstream", "downstream"]
STREAMS: Final[tuple[Stream, ...]] = ("upstream", "downstream")


@dataclass(frozen=True)
class ApiError(Exception):
    """A Toxiproxy API error: the message and the HTTP status, as upstream's ``ApiError``."""

    message: str
    status: int

    def __str__(self) -> str:
        return self.message

    def joined(self, detail: str) -> ApiError:
        """Upstream's ``joinError``: ``"<message>: <detail>"`` with the same status."""
        return ApiError(f"{self.message}: {detail}", self.status)


BAD_REQUEST_BODY: Final = ApiError("bad request body", 400)
MISSING_FIELD: Final = ApiError("missing required field", 400)
PROXY_NOT_FOUND: Final = ApiError("proxy not found", 404)
PROXY_ALREADY_EXISTS: Final = ApiError("proxy already exists", 409)
INVALID_STREAM: Final = ApiError("stream was invalid, can be either upstream or downstream", 400)
INVALID_TOXIC_TYPE: Final = ApiError("invalid toxic type", 400)
TOXIC_ALREADY_EXISTS: Final = ApiError("toxic already exists", 409)
TOXIC_NOT_FOUND: Final = ApiError("toxic not found", 404)


# --- toxic types --------------------------------------------------------------------------------

GoType = Literal["int64", "int", "float32", "string", "bool"]


@dataclass(frozen=True)
class ToxicType:
    """A registered toxic type: its Go struct name, attributes (name, Go type) and buffer size."""

    go_struct: str
    attributes: tuple[tuple[str, GoType], ...]
    buffer_size: int = 0
    stateful: bool = False


TOXIC_TYPES: Final[Mapping[str, ToxicType]] = {
    "noop": ToxicType("NoopToxic", ()),
    "latency": ToxicType("LatencyToxic", (("latency", "int64"), ("jitter", "int64")), buffer_size=1024),
    "bandwidth": ToxicType("BandwidthToxic", (("rate", "int64"),)),
    "slow_close": ToxicType("SlowCloseToxic", (("delay", "int64"),)),
    "timeout": ToxicType("TimeoutToxic", (("timeout", "int64"),)),
    "reset_peer": ToxicType("ResetToxic", (("timeout", "int64"),)),
    "slicer": ToxicType(
        "SlicerToxic", (("average_size", "int"), ("size_variation", "int"), ("delay", "int"))
    ),
    "limit_data": ToxicType("LimitDataToxic", (("bytes", "int64"),), stateful=True),
}


def float32(value: float) -> float:
    """``value`` rounded to the nearest float32 (Go stores ``toxicity`` as ``float32``)."""
    return float(struct.unpack("<f", struct.pack("<f", value))[0])


@dataclass(frozen=True)
class ToxicSpec:
    """A toxic as the API shows it; ``attributes`` holds every attribute, zero values included."""

    name: str
    type: str
    stream: str  # as sent (e.g. "Upstream"); ``direction`` is the parsed value
    toxicity: float
    attributes: Mapping[str, int] = field(default_factory=dict)

    @property
    def direction(self) -> Stream:
        return parse_stream(self.stream)

    def attr(self, name: str) -> int:
        return self.attributes.get(name, 0)

    def to_json(self) -> dict[str, Any]:
        """Go's field order: attributes, name, type, stream, toxicity."""
        return {
            "attributes": dict(self.attributes),
            "name": self.name,
            "type": self.type,
            "stream": self.stream,
            "toxicity": GoFloat32(self.toxicity),
        }


def parse_stream(value: str) -> Stream:
    lowered = value.lower()
    if lowered == "upstream":
        return "upstream"
    if lowered == "downstream":
        return "downstream"
    raise INVALID_STREAM


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


def _type_error(value: Any, where: str, go_type: str, *, with_literal: bool = False) -> ApiError:
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
            raise _type_error(value, where, go_type)
        if isinstance(value, FloatLiteral) or not -(2**63) <= value < 2**63:
            raise _type_error(value, where, go_type, with_literal=True)
        return value
    if go_type == "float32":
        if not _is_number(value):
            raise _type_error(value, where, go_type)
        number = float(value)
        if math.isinf(number) or abs(number) > 3.4028234663852886e38:
            raise _type_error(value, where, go_type, with_literal=True)
        return float32(number)
    if go_type == "string":
        if not isinstance(value, str) or isinstance(value, FloatLiteral):
            raise _type_error(value, where, go_type)
        return str(value)
    if not isinstance(value, bool):
        raise _type_error(value, where, go_type)
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
        raise _type_error(obj, where, go_type)
    decoded: dict[str, Any] = {}
    for name, go_field_type in fields:
        key = _match_key(obj, name)
        if key is None or obj[key] is None:
            continue
        decoded[name] = decode_field(obj[key], go_field_type, f"{struct_name}.{path}{name}")
    return decoded


def _match_key(obj: Mapping[str, Any], name: str) -> str | None:
    """Go matches an exact key first, then any key equal under case folding (the last one wins)."""
    if name in obj:
        return name
    folded = [key for key in obj if key.casefold() == name.casefold()]
    return folded[-1] if folded else None


# --- requests -----------------------------------------------------------------------------------

_WRAPPER_FIELDS: Final[tuple[tuple[str, GoType], ...]] = (
    ("name", "string"),
    ("type", "string"),
    ("stream", "string"),
    ("toxicity", "float32"),
)


def parse_new_toxic(body: bytes, existing_names: set[str]) -> ToxicSpec:
    """``POST /proxies/{p}/toxics``: the new toxic, or the ApiError upstream would return."""
    raw = decode_body(body)
    wrapper = decode_struct(
        raw, _WRAPPER_FIELDS, struct_name="ToxicWrapper", path="", go_type="toxics.ToxicWrapper"
    )
    if isinstance(raw, dict):
        key = _match_key(raw, "attributes")
        if key is not None and raw[key] is not None and not isinstance(raw[key], dict):
            where = "ToxicWrapper.attributes"
            raise _type_error(raw[key], where, "toxics.NoopToxic")
    stream = wrapper.get("stream", "downstream")
    parse_stream(stream)
    toxic_type = wrapper.get("type", "")
    name = wrapper.get("name", "") or f"{toxic_type}_{stream}"
    if toxic_type not in TOXIC_TYPES:
        raise INVALID_TOXIC_TYPE
    if name in existing_names:
        raise TOXIC_ALREADY_EXISTS
    attributes = {attr: 0 for attr, _ in TOXIC_TYPES[toxic_type].attributes}
    attributes |= _decode_attributes(raw, toxic_type)
    return ToxicSpec(name, toxic_type, stream, wrapper.get("toxicity", 1.0), attributes)


def _decode_attributes(raw: Any, toxic_type: str) -> dict[str, int]:
    kind = TOXIC_TYPES[toxic_type]
    key = _match_key(raw, "attributes") if isinstance(raw, dict) else None
    if key is None:
        return {}
    return decode_struct(
        raw[key],
        kind.attributes,
        struct_name=kind.go_struct,
        path="attributes.",
        go_type=f"toxics.{kind.go_struct}",
    )


def apply_toxic_update(toxic: ToxicSpec, body: bytes) -> ToxicSpec:
    """``POST|PATCH /proxies/{p}/toxics/{t}``: attributes decoded over the old ones; toxicity too."""
    raw = decode_body(body)
    top = decode_struct(
        raw,
        (("toxicity", "float32"),),
        struct_name="",
        path="",
        go_type="struct { Attributes interface {}; Toxicity float32 }",
    )
    attributes = dict(toxic.attributes) | _decode_attributes(raw, toxic.type)
    return replace(toxic, toxicity=top.get("toxicity", toxic.toxicity), attributes=attributes)


@dataclass(frozen=True)
class ProxyInput:
    """The fields of a proxy request body (``None``: not sent)."""

    name: str | None = None
    listen: str | None = None
    upstream: str | None = None
    enabled: bool | None = None


_PROXY_FIELDS: Final[tuple[tuple[str, GoType], ...]] = (
    ("name", "string"),
    ("listen", "string"),
    ("upstream", "string"),
    ("enabled", "bool"),
)

POPULATE_GO_TYPE: Final = '[]struct { toxiproxy.Proxy; Enabled *bool "json:\\"enabled\\"" }'


def parse_proxy_input(body: bytes) -> ProxyInput:
    """A proxy create/update body (ApiError 400 on a bad body)."""
    decoded = decode_struct(
        decode_body(body), _PROXY_FIELDS, struct_name="Proxy", path="", go_type="toxiproxy.Proxy"
    )
    return ProxyInput(**decoded)


def require_create_fields(given: ProxyInput, suffix: str = "") -> None:
    """``missing required field: name`` / ``upstream`` (``suffix`` e.g. ``" at proxy 2"``)."""
    if not given.name:
        raise MISSING_FIELD.joined(f"name{suffix}")
    if not given.upstream:
        raise MISSING_FIELD.joined(f"upstream{suffix}")


def parse_populate(body: bytes) -> list[ProxyInput]:
    """``POST /populate``: every entry checked for a name and an upstream before any is created."""
    raw = decode_body(body)
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise _type_error(raw, "", POPULATE_GO_TYPE)
    entries = [
        ProxyInput(**decode_struct(item, _PROXY_FIELDS, struct_name="", path="", go_type="struct"))
        for item in raw
    ]
    for index, entry in enumerate(entries, start=1):
        require_create_fields(entry, f" at proxy {index}")
    return entries


# --- Go-faithful JSON encoding ------------------------------------------------------------------


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


def error_body(error: ApiError) -> bytes:
    """The body of ``http.Error`` with upstream's JSON error and Go's trailing newline."""
    return encode_json({"error": error.message, "status": error.status}) + b"\n"
