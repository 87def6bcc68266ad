"""The per-process keeping of project limits (quota/limits.py), and the
pure rule (quota/rule.py)."""

import collections

from hypothesis import given
from hypothesis import strategies as st
import pytest

from allocworker.conf import CONF
from allocworker.quota import judgement
from allocworker.quota import limits
from allocworker.quota import rule


class Clock(object):
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


class Keystone(object):
    def __init__(self):
        self.down = False
        self.reads = 0
        self.registered = {'class:VCPU': 8}
        self.projects = {'p': {'class:VCPU': 2}}

    def __call__(self):
        self.reads += 1
        if self.down:
            raise ConnectionError('keystone is down')
        return self.registered, self.projects


@pytest.fixture
def source():
    CONF([], project='allocworker', default_config_files=[])
    CONF.set_override('refresh_seconds', 10, 'quota')
    CONF.set_override('stale_seconds', 30, 'quota')
    clock, keystone = Clock(), Keystone()
    found = limits.Source(keystone, clock)
    found._start = lambda: None  # the refresher thread is driven by hand
    yield found, clock, keystone
    CONF.clear_override('refresh_seconds', 'quota')
    CONF.clear_override('stale_seconds', 'quota')


def test_project_limits_override_the_registered_defaults(source):
    found, _clock, _keystone = source
    assert found.current().of('p') == {'class:VCPU': 2}
    assert found.current().of('q') == {'class:VCPU': 8}


def test_the_last_limits_hold_for_stale_seconds_after_keystone_fails(
        source):
    found, clock, keystone = source
    found.current()
    keystone.down = True
    clock.now += 10
    found.refresh()
    clock.now += 29
    assert found.current().of('p') == {'class:VCPU': 2}
    clock.now += 2
    with pytest.raises(limits.Unavailable):
        found.current()
    keystone.down = False
    keystone.projects = {}
    found.refresh()
    assert found.current().of('p') == {'class:VCPU': 8}


def test_a_process_that_never_read_waits_for_keystone_only_now_and_then(
        source):
    found, clock, keystone = source
    keystone.down = True
    for _ in range(5):
        with pytest.raises(limits.Unavailable):
            found.current()
    assert keystone.reads == 1
    clock.now += limits.RETRY_SECONDS + 1
    keystone.down = False
    assert found.current().of('q') == {'class:VCPU': 8}
    assert keystone.reads == 2


def test_what_the_first_read_loaded_is_settled_once_it_succeeds(source):
    found, clock, keystone = source
    settled = []
    found.after_first_read = lambda: settled.append(keystone.reads)
    keystone.down = True
    with pytest.raises(limits.Unavailable):
        found.current()
    assert settled == []
    clock.now += limits.RETRY_SECONDS + 1
    keystone.down = False
    found.current()
    found.refresh()
    assert settled == [2]


def test_what_a_consumer_counts():
    rows = {(1, 'VCPU'): 2, (2, 'VCPU'): 1, (1, 'MEMORY_MB'): 512}
    assert rule.counted('INSTANCE', rows, {'INSTANCE'}) == {
        'class:VCPU': 3, 'class:MEMORY_MB': 512, 'servers': 1}
    assert rule.counted('MIGRATION', rows, {'INSTANCE'}) == {}
    assert rule.counted('INSTANCE', {}, {'INSTANCE'}) == {}
    assert rule.counted('VOLUME', rows, {'INSTANCE', 'VOLUME'}) == {
        'class:VCPU': 3, 'class:MEMORY_MB': 512}


def test_only_growth_past_a_limit_is_refused():
    limits_ = {'class:VCPU': 4, 'servers': 1}
    usage = {'class:VCPU': 6, 'servers': 1}
    delta = collections.Counter({'class:VCPU': -1, 'servers': 0})
    assert rule.refusal(limits_, usage, delta) is None
    delta = collections.Counter({'class:VCPU': 1})
    assert rule.refusal(limits_, usage, delta) == rule.Refusal(
        'class:VCPU', 4, 6, 1)
    assert rule.refusal(limits_, {}, collections.Counter(
        {'class:VCPU': 4, 'class:DISK_GB': 100})) is None


Item = collections.namedtuple('Item', ['project_id', 'allocations', 'kind',
                                       'released'])
_classes = st.sampled_from(['VCPU', 'MEMORY_MB'])
_items = st.lists(st.builds(
    Item, st.just('p'),
    st.dictionaries(st.sampled_from(['rp1', 'rp2']),
                    st.dictionaries(_classes, st.integers(1, 4),
                                    min_size=1), max_size=2),
    st.sampled_from(['INSTANCE', 'MIGRATION', '']),
    st.dictionaries(_classes, st.integers(0, 4))), max_size=6)


_amounts = st.dictionaries(st.sampled_from(
    ['class:VCPU', 'class:MEMORY_MB', 'servers']), st.integers(0, 12))


@given(limit=_amounts, used=_amounts, items=_items)
def test_a_project_within_reach_of_no_limit_refuses_no_item(
        limit, used, items):
    """What a transaction's items could add at most (``_add_most``)
    bounds what any of them adds, in any order, whatever their
    consumers' types and what they release: a project whose usage plus
    that bound is within its limits is passed without a running count."""
    most = {}
    for item in items:
        if item.allocations:
            judgement._add_most(most, item)
    if not rule.within(limit, used, most.get('p', {})):
        return
    running = dict(used)
    for item in items:
        rows = {(rp, name): amount
                for rp, resources in item.allocations.items()
                for name, amount in resources.items()}
        delta = collections.Counter(rule.counted(item.kind, rows,
                                                 {'INSTANCE'}))
        delta.subtract(rule.counted(
            item.kind, {(0, name): amount
                        for name, amount in item.released.items()},
            {'INSTANCE'}))
        assert rule.refusal(limit, running, delta) is None
        for resource, amount in delta.items():
            running[resource] = running.get(resource, 0) + amount
