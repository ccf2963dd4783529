"""Toxiproxy's v2 API as data: toxic types and specs, request bodies (ring: decisions).

Pure functions, no I/O. Every rule restates upstream Toxiproxy (Shopify/toxiproxy @ v2.12,
``api.go``, ``toxic_collection.go``, ``proxy_collection.go``, ``toxics/*.go``):

* an API error is ``{"error": <message>, "status": <code>}`` (:mod:`.errors`), bodies are decoded
  as Go would (:mod:`.gojson`);
* a toxic defaults to ``stream="downstream"``, ``toxicity=1`` and ``name="<type>_<stream>"``
  (the stream spelled as sent: parsing is case-insensitive);
* the order of checks when a toxic is added is: body, stream, type, duplicate name, attributes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal

from chaos.toxiproxy.errors import (
    INVALID_STREAM,
    INVALID_TOXIC_TYPE,
    MISSING_FIELD,
    TOXIC_ALREADY_EXISTS,
    ApiError,
)
from chaos.toxiproxy.gojson import (
    GoFloat32,
    GoType,
    decode_body,
    decode_struct,
    encode_json,
    match_key,
    type_error,
)

VERSION: Final = "2.12.0"

Stream = Literal["upstream", "downstream"]
STREAMS: Final[tuple[Stream, ...]] = ("upstream", "downstream")


# --- toxic types --------------------------------------------------------------------------------


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
        key = match_key(raw, "attributes")
        if key is not None and raw[key] is not None and not isinstance(raw[key], dict):
            where = "ToxicWrapper.attributes"
            raise type_error(raw[key], where, "toxics.NoopToxic")
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
    key = match_key(raw, "attributes") if isinstance(raw, dict) else None
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
        raise type_error(raw, "", POPULATE_GO_TYPE)
    entries = [
        ProxyInput(**decode_struct(item, _PROXY_FIELDS, struct_name="", path="", go_type="struct"))
        for item in raw
    ]
    for index, entry in enumerate(entries, start=1):
        require_create_fields(entry, f" at proxy {index}")
    return entries


def error_body(error: ApiError) -> bytes:
    """The body of ``http.Error`` with upstream's JSON error and Go's trailing newline."""
    return encode_json({"error": error.message, "status": error.status}) + b"\n"
