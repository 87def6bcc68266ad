"""The capacity rule of design §2, as pure logic."""

from hypothesis import given
from hypothesis import strategies as st
import pytest

from allocworker import capacity


def inv(total, **kw):
    values = dict(capacity.DEFAULTS, total=total)
    values.update(kw)
    return capacity.Inventory(**values)


@pytest.mark.parametrize('inventory, used, fits', [
    (inv(8), 8, True),
    (inv(8), 9, False),
    (inv(8, reserved=2), 6, True),
    (inv(8, reserved=2), 7, False),
    (inv(8, reserved=2, allocation_ratio=1.5), 9, True),
    (inv(8, reserved=2, allocation_ratio=1.5), 10, False),
    (inv(3, allocation_ratio=0.5), 1, True),
    (inv(3, allocation_ratio=0.5), 2, False),
])
def test_capacity_is_total_minus_reserved_times_ratio(inventory, used, fits):
    assert capacity.fits(inventory, used) is fits


@pytest.mark.parametrize('amount, broken', [
    (1, 'min_unit'), (2, None), (4, None), (5, 'step_size'),
    (16, None), (18, 'max_unit'),
])
def test_unit_rules(amount, broken):
    inventory = inv(64, min_unit=2, max_unit=16, step_size=2)
    why = capacity.unit_violation(inventory, amount)
    assert (why is None) if broken is None else (broken in why)


def test_moves_on_one_provider_do_not_double_count():
    key = ('p', 'VCPU')
    before = {key: 4}
    after = capacity.usage_after(before, removed={key: 4}, added={key: 4})
    assert capacity.overcommitted({key: inv(4)}, before, after) == set()


def test_growth_beyond_capacity_is_overcommitted():
    key = ('p', 'VCPU')
    after = capacity.usage_after({key: 3}, removed={}, added={key: 2})
    assert capacity.overcommitted({key: inv(4)}, {key: 3}, after) == {key}


def test_over_capacity_key_may_stay_or_shrink_but_not_grow():
    key = ('p', 'VCPU')
    before = {key: 6}  # inventory was forced down to 4
    inventories = {key: inv(4)}
    same = capacity.usage_after(before, {key: 6}, {key: 6})
    less = capacity.usage_after(before, {key: 6}, {key: 5})
    more = capacity.usage_after(before, {key: 6}, {key: 7})
    assert capacity.overcommitted(inventories, before, same) == set()
    assert capacity.overcommitted(inventories, before, less) == set()
    assert capacity.overcommitted(inventories, before, more) == {key}


_keys = st.sampled_from([('p1', 'VCPU'), ('p1', 'DISK_GB'), ('p2', 'VCPU')])
_rows = st.dictionaries(_keys, st.integers(1, 20), max_size=3)


@given(running=st.dictionaries(_keys, st.integers(0, 40), max_size=3),
       old=_rows, new=_rows, total=st.integers(1, 40))
def test_item_usage_agrees_with_the_whole_computation(running, old, new,
                                                      total):
    """Judging only the keys an item touches gives the same verdict as
    recomputing every key."""
    inventories = {key: capacity.Inventory(total, 0, 1, 100, 1, 1.0)
                   for key in (('p1', 'VCPU'), ('p2', 'VCPU'))}
    after, over = capacity.item_usage(inventories, running, old, new)
    whole = capacity.usage_after(running, old, new)
    assert over == capacity.overcommitted(inventories, running, whole)
    assert all(whole[key] == used for key, used in after.items())
    assert set(after) == set(old) | set(new)
