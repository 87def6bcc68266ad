"""Failure domains (RPC 1.5) through allocworker-api's
``PUT /resource_providers/{uuid}/aggregates``: a root provider is in at
most one domain of a topology level, so a write that would put it in two
is refused as Placement refuses a write on that route (409, Placement's
error body, WebOb's paragraph before the message) and nothing is
written. Placement has no code for it: it is ``placement.undefined_code``,
not ``placement.concurrent_update``, which its clients retry.

Only roots count: a child may be in every domain; an aggregate outside
every level, or one domain each of two levels, is no conflict. Levels are
set through the service layer, the rest over HTTP as a client would.
"""

import uuid

import pytest

from allocworker.groups import topology
from tests.functional.test_placement_error_texts import CONFLICT

AMBIGUOUS = ('root provider %s would be in 2 domains of topology level %s '
             '(%s, %s); a root is in at most one')
UNDEFINED = 'placement.undefined_code'


def _new():
    return str(uuid.uuid4())


class Levels(object):
    """Level ``rack`` labels two aggregates rack-0 and rack-1; level
    ``zone`` two others zone-a and zone-b."""

    def __init__(self):
        self.rack = [_new(), _new()]
        self.zone = [_new(), _new()]
        for name, aggregates, labels in (
                ('rack', self.rack, ('rack-0', 'rack-1')),
                ('zone', self.zone, ('zone-a', 'zone-b'))):
            item, = topology.set_topology_level(
                None, name, dict(zip(aggregates, labels)))
            assert item['status'] == 200, item

    @staticmethod
    def roots(name):
        item, = topology.get_topology(None, [name])
        assert item['status'] == 200, item
        return item['roots']


@pytest.fixture(scope='module')
def levels(service_layer):
    return Levels()


def _root(shim, name, parent=None):
    provider = _new()
    body = {'uuid': provider, 'name': '%s-%s' % (name, provider)}
    if parent:
        body['parent_provider_uuid'] = parent
    shim.call('POST', '/resource_providers', body)
    return provider


def _path(provider):
    return '/resource_providers/%s/aggregates' % provider


def _put(shim, provider, aggregates, version='1.39', expect=(200,)):
    """The answer to a PUT of ``aggregates`` at the provider's generation
    (from 1.19; a list of uuids before)."""
    body = aggregates
    if version >= '1.19':
        body = {'aggregates': aggregates,
                'resource_provider_generation': shim.generation(provider)}
    return shim.call('PUT', _path(provider), body, version=version,
                     expect=expect)


def _error(answer):
    entry, = answer['errors']
    return entry


def test_root_in_two_domains_is_placements_conflict(shim, levels):
    root = _root(shim, 'domains-root')
    answer = _put(shim, root, [levels.rack[0]])
    assert answer == {'aggregates': [levels.rack[0]],
                      'resource_provider_generation': 1}
    before = levels.roots('rack')
    detail = CONFLICT % (AMBIGUOUS % (root, 'rack', 'rack-0', 'rack-1'))
    # Either order, at each version of the route's error body: a code
    # from 1.23, none before.
    for version, aggregates in (('1.39', levels.rack),
                                ('1.23', levels.rack[::-1]),
                                ('1.19', levels.rack),
                                ('1.1', levels.rack)):
        answer = _put(shim, root, aggregates, version=version,
                      expect=(409,))
        entry = _error(answer)
        assert entry.pop('request_id').startswith('req-'), version
        expected = {'status': 409, 'title': 'Conflict', 'detail': detail}
        if version >= '1.23':
            expected['code'] = UNDEFINED
        assert entry == expected, version
    # Nothing was written: the aggregates, the generation and the level's
    # count of roots per domain are as they were.
    assert shim.call('GET', _path(root)) == {
        'aggregates': [levels.rack[0]], 'resource_provider_generation': 1}
    assert shim.generation(root) == 1
    assert levels.roots('rack') == before
    # Out of rack-0 and into rack-1 is one domain: no conflict.
    answer = _put(shim, root, [levels.rack[1]])
    assert answer == {'aggregates': [levels.rack[1]],
                      'resource_provider_generation': 2}


def test_a_stale_generation_is_still_a_concurrent_update(shim, levels):
    # Placement compares the generation before anything else: a stale one
    # is its concurrent update, whatever the aggregates.
    root = _root(shim, 'domains-stale')
    _put(shim, root, [levels.rack[0]])
    answer = shim.call('PUT', _path(root), {
        'aggregates': levels.rack, 'resource_provider_generation': 0},
        expect=(409,))
    entry = _error(answer)
    assert (entry['detail'], entry['code']) == (CONFLICT % (
        "Resource provider's generation already changed. Please update "
        "the generation and try again."), 'placement.concurrent_update')
    assert shim.call('GET', _path(root))['aggregates'] == [levels.rack[0]]


def test_only_roots_count(shim, levels):
    root = _root(shim, 'domains-parent')
    _put(shim, root, [levels.rack[0]])
    child = _root(shim, 'domains-child', parent=root)
    answer = _put(shim, child, levels.rack + levels.zone)
    assert sorted(answer['aggregates']) == sorted(levels.rack + levels.zone)
    assert sorted(shim.call('GET', _path(child))['aggregates']) == \
        sorted(levels.rack + levels.zone)
    # The root stays in its one domain, and may still move.
    assert shim.call('GET', _path(root))['aggregates'] == [levels.rack[0]]
    _put(shim, root, [levels.rack[1]])


def test_aggregates_outside_every_level(shim, levels):
    root = _root(shim, 'domains-outside')
    outside = [_new(), _new()]
    answer = _put(shim, root, [levels.rack[0]] + outside)
    assert answer['aggregates'] == [levels.rack[0]] + outside
    answer = _put(shim, root, outside)
    assert answer['aggregates'] == outside


def test_one_domain_of_each_of_two_levels(shim, levels):
    root = _root(shim, 'domains-levels')
    both = [levels.rack[0], levels.zone[1]]
    answer = _put(shim, root, both)
    assert answer['aggregates'] == both
    generation = shim.generation(root)
    # Two zones are as refused as two racks, and name their level.
    answer = _put(shim, root, both + [levels.zone[0]], expect=(409,))
    entry = _error(answer)
    assert (entry['detail'], entry['code']) == (CONFLICT % (
        AMBIGUOUS % (root, 'zone', 'zone-a', 'zone-b')), UNDEFINED)
    assert shim.call('GET', _path(root)) == {
        'aggregates': sorted(both), 'resource_provider_generation':
        generation}
