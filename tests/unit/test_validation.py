"""Input checks: every rejection names the field, hypothesis-driven where
the input space is large."""

from hypothesis import given
from hypothesis import strategies as st
import pytest

from allocworker.allocations import writes as allocations
from allocworker import codes
from allocworker.providers import rules as providers

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=3) |
    st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8)

GOOD = {'consumer_uuid': '6e0a8f5b-6a2c-4c43-9d3e-9c7c1b0c2a10',
        'consumer_generation': None, 'project_id': 'p', 'user_id': 'u',
        'allocations': {'0c6e6b14-3a0f-4f55-bd6e-5f1c1b6a7d21':
                        {'VCPU': 1}}}


def test_good_item_parses_to_canonical_form():
    request = allocations.parse_item(dict(GOOD), 0)
    assert request.consumer_uuid == GOOD['consumer_uuid']
    assert request.allocations == GOOD['allocations']


@pytest.mark.parametrize('field', sorted(GOOD))
@given(value=json_values)
def test_any_wrong_field_value_is_a_400_naming_the_field(field, value):
    item = dict(GOOD, **{field: value})
    try:
        allocations.parse_item(item, 3)
    except codes.Fault as fault:
        assert fault.code == codes.INVALID_REQUEST
        assert 'items[3]' in fault.detail
        assert field in fault.detail or 'allocations' in fault.detail
    # Values that happen to be valid parse; nothing else may escape.


@given(item=json_values)
def test_any_json_value_as_an_item_is_rejected_or_parsed(item):
    try:
        allocations.parse_item(item, 0)
    except codes.Fault as fault:
        assert fault.code == codes.INVALID_REQUEST


@pytest.mark.parametrize('amount', [0, -1, 1.5, '1', True, None])
def test_bad_amounts(amount):
    item = dict(GOOD, allocations={
        '0c6e6b14-3a0f-4f55-bd6e-5f1c1b6a7d21': {'VCPU': amount}})
    with pytest.raises(codes.Fault) as exc:
        allocations.parse_item(item, 0)
    assert 'VCPU' in exc.value.detail


@pytest.mark.parametrize('fields, named', [
    ({}, 'total'),
    ({'total': 0}, 'total'),
    ({'total': 4, 'reserved': -1}, 'reserved'),
    ({'total': 4, 'reserved': 5}, 'reserved'),
    ({'total': 4, 'min_unit': 0}, 'min_unit'),
    ({'total': 4, 'max_unit': 0}, 'max_unit'),
    ({'total': 4, 'min_unit': 3, 'max_unit': 2}, 'min_unit'),
    ({'total': 4, 'step_size': 0}, 'step_size'),
    ({'total': 4, 'allocation_ratio': 0}, 'allocation_ratio'),
    ({'total': 4, 'allocation_ratio': float('nan')}, 'allocation_ratio'),
    ({'total': 4, 'allocation_ratio': 'x'}, 'allocation_ratio'),
    ({'total': True}, 'total'),
    ({'total': 4, 'colour': 'red'}, 'colour'),
])
def test_inventory_bounds_name_the_field(fields, named):
    with pytest.raises(codes.Fault) as exc:
        providers.parse_inventories({'VCPU': fields})
    assert exc.value.code == codes.INVALID_REQUEST
    assert named in exc.value.detail


def test_inventory_defaults():
    parsed = providers.parse_inventories({'VCPU': {'total': 4}})['VCPU']
    assert parsed._asdict() == {
        'total': 4, 'reserved': 0, 'min_unit': 1, 'max_unit': 2147483647,
        'step_size': 1, 'allocation_ratio': 1.0}
