"""Pure parts: request decoding like Go's encoding/json, toxic defaults, encoding, slicer cuts."""

from __future__ import annotations

import itertools
import random

import pytest

from chaos.toxiproxy.errors import ApiError
from chaos.toxiproxy.gojson import GoFloat32, decode_body, encode_json
from chaos.toxiproxy.model import (
    ToxicSpec,
    apply_toxic_update,
    error_body,
    parse_new_toxic,
    parse_populate,
    parse_proxy_input,
)
from chaos.toxiproxy.proxy import split_host_port
from chaos.toxiproxy.toxics import latency_delay_s, slicer_cuts

pytestmark = pytest.mark.unit


def error_of(call: object, *args: object) -> tuple[str, int]:
    with pytest.raises(ApiError) as info:
        call(*args)  # type: ignore[operator]
    return info.value.message, info.value.status


def test_new_toxic_defaults_to_downstream_full_toxicity_and_type_stream_name() -> None:
    toxic = parse_new_toxic(b'{"type":"latency"}', set())
    assert toxic == ToxicSpec("latency_downstream", "latency", "downstream", 1.0, {"latency": 0, "jitter": 0})


def test_stream_is_case_insensitive_and_kept_as_sent_in_the_name() -> None:
    toxic = parse_new_toxic(b'{"type":"timeout","stream":"UpStream"}', set())
    assert (toxic.name, toxic.stream, toxic.direction) == ("timeout_UpStream", "UpStream", "upstream")


def test_keys_match_case_insensitively_and_unknown_keys_are_ignored() -> None:
    toxic = parse_new_toxic(b'{"Type":"bandwidth","attributes":{"RATE":5,"burst":9},"x":1}', set())
    assert toxic.attributes == {"rate": 5}


def test_checks_run_in_upstreams_order() -> None:
    # bad stream before bad type; duplicate name before bad attributes
    assert error_of(parse_new_toxic, b'{"type":"nope","stream":"x"}', set())[0].startswith(
        "stream was invalid"
    )
    body = b'{"type":"latency","name":"a","attributes":{"latency":"x"}}'
    assert error_of(parse_new_toxic, body, {"a"}) == ("toxic already exists", 409)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"", "bad request body: EOF"),
        (b"   ", "bad request body: EOF"),
        (b'{"type":', "bad request body: unexpected EOF"),
        (b"nope", "bad request body: invalid character 'n' looking for beginning of value"),
        (
            b'{"type":"latency","toxicity":"1"}',
            "bad request body: json: cannot unmarshal string into Go struct field "
            "ToxicWrapper.toxicity of type float32",
        ),
        (
            b'{"type":"latency","attributes":{"jitter":true}}',
            "bad request body: json: cannot unmarshal bool into Go struct field "
            "LatencyToxic.attributes.jitter of type int64",
        ),
        (
            b'{"type":"slicer","attributes":{"delay":1e3}}',
            "bad request body: json: cannot unmarshal number 1e3 into Go struct field "
            "SlicerToxic.attributes.delay of type int",
        ),
        (b"[1]", "bad request body: json: cannot unmarshal array into Go value of type toxics.ToxicWrapper"),
        (b'{"type":"frobnicate"}', "invalid toxic type"),
        (b'{"type":""}', "invalid toxic type"),
    ],
)
def test_bad_toxic_bodies_are_400_with_gos_words(body: bytes, message: str) -> None:
    assert error_of(parse_new_toxic, body, set()) == (message, 400)


def test_trailing_bytes_after_the_first_value_are_ignored() -> None:
    assert decode_body(b'{"a":1} trailing') == {"a": 1}


def test_null_fields_leave_defaults() -> None:
    toxic = parse_new_toxic(b'{"type":"latency","stream":null,"toxicity":null,"attributes":null}', set())
    assert (toxic.stream, toxic.toxicity) == ("downstream", 1.0)


def test_update_decodes_over_the_old_attributes_and_toxicity() -> None:
    old = ToxicSpec("l", "latency", "upstream", 0.5, {"latency": 10, "jitter": 3})
    new = apply_toxic_update(old, b'{"attributes":{"latency":99},"name":"ignored","stream":"downstream"}')
    assert new == ToxicSpec("l", "latency", "upstream", 0.5, {"latency": 99, "jitter": 3})
    assert apply_toxic_update(old, b'{"toxicity":0}').toxicity == 0.0


def test_toxicity_is_a_float32_and_encodes_like_go() -> None:
    toxic = parse_new_toxic(b'{"type":"noop","toxicity":0.3}', set())
    assert encode_json(toxic.to_json()) == (
        b'{"attributes":{},"name":"noop_downstream","type":"noop","stream":"downstream","toxicity":0.3}'
    )
    assert [GoFloat32(v).go_text() for v in (1.0, 0.0, 0.5, 0.1)] == ["1", "0", "0.5", "0.1"]


def test_json_encoding_escapes_html_like_go() -> None:
    assert encode_json({"a": "<&>"}) == b'{"a":"\\u003c\\u0026\\u003e"}'
    assert error_body(ApiError("proxy not found", 404)) == b'{"error":"proxy not found","status":404}\n'


def test_proxy_body_types_are_checked() -> None:
    assert parse_proxy_input(b'{"name":"a","enabled":false}').enabled is False
    message = (
        "bad request body: json: cannot unmarshal number into Go struct field Proxy.enabled of type bool"
    )
    assert error_of(parse_proxy_input, b'{"enabled":1}') == (message, 400)


def test_populate_validates_every_entry_first() -> None:
    body = b'[{"name":"a","upstream":"u"},{"name":"b"}]'
    assert error_of(parse_populate, body) == ("missing required field: upstream at proxy 2", 400)
    assert parse_populate(b"null") == []
    assert error_of(parse_populate, b"{}")[0].startswith("bad request body: json: cannot unmarshal object")


def test_latency_jitter_is_uniform_in_the_half_open_range() -> None:
    rng = random.Random(7)
    toxic = ToxicSpec("l", "latency", "downstream", 1.0, {"latency": 100, "jitter": 10})
    delays = {round(latency_delay_s(toxic, rng) * 1000) for _ in range(5000)}
    assert delays == set(range(90, 110))  # Int63n(2*jitter) - jitter: 90..109 ms
    assert latency_delay_s(ToxicSpec("l", "latency", "d", 1.0, {"latency": 5, "jitter": -3}), rng) == 0.005


@pytest.mark.parametrize(
    ("size", "average", "variation"), [(4000, 100, 20), (1, 1, 0), (999, 7, 3), (50, 0, 0)]
)
def test_slicer_cuts_are_contiguous_and_stop_at_average_plus_variation(
    size: int, average: int, variation: int
) -> None:
    cuts = slicer_cuts(size, average, variation, random.Random(size))
    assert cuts[0][0] == 0
    assert cuts[-1][1] == size
    assert all(a[1] == b[0] for a, b in itertools.pairwise(cuts))
    assert all(0 < end - start <= max(1, average + variation) for start, end in cuts)


def test_slicer_bisects_like_upstream() -> None:
    # No variation: 400 -> 200 -> 100 (100 - 100 <= 0 stops), so four pieces of 100
    assert slicer_cuts(400, 100, 0, random.Random(0)) == [(0, 100), (100, 200), (200, 300), (300, 400)]
    # 250 - 100 > 0 -> 125 -> 62/63: upstream's pieces can be well under the average
    assert [end - start for start, end in slicer_cuts(250, 100, 0, random.Random(0))] == [62, 63, 62, 63]


@pytest.mark.parametrize(
    ("address", "expected"),
    [("127.0.0.1:80", ("127.0.0.1", "80")), ("[::1]:0", ("::1", "0")), (":0", ("", "0"))],
)
def test_split_host_port(address: str, expected: tuple[str, str]) -> None:
    assert split_host_port(address) == expected


@pytest.mark.parametrize(
    ("address", "message"),
    [("localhost", "missing port in address"), ("a:b:c", "too many colons in address")],
)
def test_split_host_port_errors(address: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        split_host_port(address)
