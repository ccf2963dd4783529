"""A fix applied to kio 0.5.0's decoder at import: unknown tagged fields are skipped (ring: wire).

KIP-482 says a receiver must ignore tagged fields it does not know; kio 0.5.0 raises KeyError on
them instead. librdkafka 2.16 sends one (tag 0, empty) in its Metadata v9 request, so without
this the reference node could not talk to confluent-kafka. `kafkawire.framing` imports this
module, so every process that decodes through the wire layer (node, controller channel, probes)
gets the fix. The patched reader is kio's own
`_read_compiled` with the unknown-tag branch added; nothing else changes.
"""

from __future__ import annotations

from typing import Any

from kio.serial import _parse, readers
from kio.serial._shared import NullableEntityMarker

_PATCHED = "_kafkawire_tolerant"


def _read_compiled(buffer: Any, offset: int, schema: Any) -> tuple[Any, int]:
    size = 0
    if isinstance(schema, _parse._NullableSchema):
        marker_int, add_size = readers.read_int8(buffer, offset)
        size += add_size
        if NullableEntityMarker(marker_int) is NullableEntityMarker.null:
            return None, size
    kwargs: dict[str, Any] = {}
    for fld, field_reader in schema.field_readers:
        kwargs[fld.name], add_size = field_reader(buffer, offset + size)
        size += add_size
    if not schema.entity_type.__flexible__:
        return schema.entity_type(**kwargs), size
    tagged_values: dict[str, Any] = {}
    num_tagged, add_size = readers.read_unsigned_varint(buffer, offset + size)
    size += add_size
    for _ in range(num_tagged):
        tag, add_size = readers.read_unsigned_varint(buffer, offset + size)
        size += add_size
        length, add_size = readers.read_unsigned_varint(buffer, offset + size)
        size += add_size
        known = schema.tagged_field_readers.get(tag)
        if known is None:
            size += int(length)  # unknown tag: skip its bytes (KIP-482)
            continue
        fld, field_reader, _ = known
        tagged_values[fld.name], add_size = field_reader(buffer, offset + size)
        size += add_size
    for fld, _, implicit_default in schema.tagged_field_readers.values():
        kwargs[fld.name] = tagged_values.get(fld.name, implicit_default)
    return schema.entity_type(**kwargs), size


def install() -> None:
    if not getattr(_parse, _PATCHED, False):
        _parse._read_compiled = _read_compiled
        setattr(_parse, _PATCHED, True)


install()
