"""The kit's one `TopicPartition` (kafkawire.states): a tuple that the reference's plain
`(topic, partition)` tuples and the probes' keyword constructor both meet (ring: unit tests)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

import probes
from kafkawire.states import LeaderAndIsrPartitionState, TopicPartition
from probes import znode_types

pytestmark = pytest.mark.unit

topics = st.text(min_size=0, max_size=8)
partitions = st.integers(min_value=-(2**31), max_value=2**31 - 1)
pairs = st.tuples(topics, partitions)


def test_the_probes_re_export_the_one_definition() -> None:
    assert probes.TopicPartition is TopicPartition
    assert znode_types.TopicPartition is TopicPartition


def test_keyword_and_positional_construction_give_the_same_value() -> None:
    by_keyword = TopicPartition(topic="t", partition=3)
    assert by_keyword == TopicPartition("t", 3)
    assert (by_keyword.topic, by_keyword.partition) == ("t", 3)
    topic, partition = by_keyword
    assert (topic, partition) == ("t", 3)


def test_repr_and_str_are_the_plain_tuples_so_logs_keep_their_text() -> None:
    tp = TopicPartition("foo", 0)
    assert repr(tp) == str(tp) == f"{tp}" == "('foo', 0)"
    assert f"{ {tp: 0} }" == "{('foo', 0): 0}"


def test_it_encodes_to_json_as_the_tuple_did() -> None:
    assert json.dumps([TopicPartition("t", 1)]) == json.dumps([("t", 1)]) == '[["t", 1]]'


def test_a_leader_and_isr_partition_state_names_its_partition() -> None:
    state = LeaderAndIsrPartitionState("t", 2, 1, 1, 0, (1,), 0, (1,))
    assert isinstance(state.tp, TopicPartition)
    assert state.tp == ("t", 2)


@given(pairs)
def test_it_is_interchangeable_with_the_plain_tuple_as_a_key(pair: tuple[str, int]) -> None:
    tp = TopicPartition(*pair)
    assert tp == pair
    assert hash(tp) == hash(pair)
    assert {pair: "x"}[tp] == "x"
    assert tp in {pair}
    assert pair in {tp}


@given(st.lists(pairs, max_size=20))
def test_it_sorts_exactly_as_the_plain_tuples_do(items: list[tuple[str, int]]) -> None:
    """A dumb version agrees: sorting the NamedTuples orders them as sorting the tuples."""
    assert [tuple(tp) for tp in sorted(TopicPartition(*p) for p in items)] == sorted(items)
