"""The pure rules of partitions (RPC 1.6): their names, a child's
partition, where a consumer lives and when its item is refused."""

import re

from hypothesis import given
from hypothesis import strategies as st
import pytest

from allocworker import codes
from allocworker import partitions

# The design's pattern, written out again so the module's cannot drift.
DESIGN = re.compile(r'^[a-z0-9][a-z0-9_.-]{0,63}$')


@given(name=st.from_regex(DESIGN, fullmatch=True))
def test_every_name_of_the_pattern_is_taken_as_given(name):
    assert partitions.parse(name, 'partition') == name


@given(value=st.text(max_size=80) | st.none() | st.integers() |
       st.lists(st.text(max_size=3), max_size=2))
def test_anything_else_is_a_400_naming_the_field(value):
    if isinstance(value, str) and DESIGN.fullmatch(value):
        return
    with pytest.raises(codes.Fault) as caught:
        partitions.parse(value, 'items[2].partition')
    assert caught.value.code == codes.INVALID_REQUEST
    assert 'items[2].partition' in caught.value.detail


@pytest.mark.parametrize('name', ['', 'East', '-east', '.east', '_east',
                                  'e' * 65, 'east west', 'east\n',
                                  'éast'])
def test_names_the_pattern_refuses(name):
    with pytest.raises(codes.Fault):
        partitions.parse(name, 'partition')


@pytest.mark.parametrize('name', ['default', 'shared', 'e', '0', 'e' * 64,
                                  'region-1.edge_2'])
def test_names_the_pattern_takes(name):
    assert partitions.parse(name, 'partition') == name


def test_optional_passes_none():
    assert partitions.optional(None, 'partition') is None


def test_a_child_takes_or_repeats_its_parents_partition():
    assert partitions.of_child(None, 'east', 'p') == 'east'
    assert partitions.of_child('east', 'east', 'p') == 'east'
    with pytest.raises(codes.Fault) as caught:
        partitions.of_child('west', 'east', 'parent-uuid')
    assert caught.value.code == codes.INVALID_REQUEST
    for named in ('partition', 'west', 'east', 'parent-uuid'):
        assert named in caught.value.detail


@pytest.mark.parametrize('found, home, apart', [
    (set(), None, []),
    ({'east'}, 'east', []),
    ({'east', 'shared'}, 'east', []),
    ({'shared'}, 'shared', []),
    ({'east', 'west'}, None, ['east', 'west']),
    ({'east', 'west', 'shared'}, None, ['east', 'west']),
    ({'default', 'east', 'west'}, None, ['default', 'east', 'west']),
])
def test_where_a_consumer_lives(found, home, apart):
    assert partitions.lives_in(found) == home
    assert partitions.apart(found) == apart


def test_a_mismatch_names_the_item_its_partitions_and_providers():
    fault = partitions.mismatch('items[1]', {'west': 'w-uuid',
                                             'east': 'e-uuid'})
    assert fault.code == codes.PARTITION_MISMATCH
    assert fault.code == (409, 'partition.mismatch')
    assert fault.detail.startswith('items[1].allocations')
    assert fault.detail.index('east') < fault.detail.index('west')
    for named in ('e-uuid', 'w-uuid', 'shared'):
        assert named in fault.detail


def test_a_partition_is_its_roots_domain_but_shared_is_none():
    assert partitions.domain('east') == 'east'
    assert partitions.domain(partitions.DEFAULT) == 'default'
    assert partitions.domain(partitions.SHARED) is None
    assert partitions.LEVEL == 'partition'
