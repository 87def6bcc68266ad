"""Level ``partition`` (RPC 1.6) in group rules, on every backend, over
RPC to three worker processes: each partition a domain with no
aggregate and no ``set_topology_level``, ``shared`` none; anti-affinity
per site, a spread by partition under a storm of concurrent claims, and
what get_groups and get_topology show."""

import collections
import uuid

from oslo_config import cfg
import oslo_messaging as messaging
import pytest

from allocworker import rpcapi
from tests.functional.domains import claim, group_of
from tests.functional.helpers import (allocate, assert_fault, in_parallel,
                                      one)

HOST_VCPU = 1000


def _partition(prefix='site'):
    return '%s-%s' % (prefix, uuid.uuid4().hex[:10])


class Sites(object):
    """``sites`` partitions of ``per_site`` hosts each; every host offers
    VCPU and a class of these sites' own, which a claim asks for, so
    that only these partitions are eligible for a spread rule (the test
    module's other partitions offer VCPU too)."""

    def __init__(self, rpc, sites=3, per_site=2):
        self.rpc = rpc
        self.names = [_partition() for _ in range(sites)]
        self.own_class = 'CUSTOM_SITE_%s' % uuid.uuid4().hex[:8].upper()
        assert one(rpc.create_resource_class(
            name=self.own_class))['status'] == 200
        self.hosts = {}   # host uuid: partition
        for name in self.names:
            for _ in range(per_site):
                self.hosts[self.host(name, {
                    'VCPU': {'total': HOST_VCPU},
                    self.own_class: {'total': HOST_VCPU}})] = name

    def host(self, partition, inventories):
        """A root provider of ``partition`` with ``inventories``."""
        provider = str(uuid.uuid4())
        item = one(self.rpc.create_provider(
            uuid=provider, name='rp-' + provider, parent_uuid=None,
            partition=partition))
        assert item['status'] == 200, item
        item = one(self.rpc.set_inventories(
            provider_uuid=provider, provider_generation=item['generation'],
            inventories=inventories))
        assert item['status'] == 200, item
        return provider

    def of(self, name):
        return sorted(h for h, p in self.hosts.items() if p == name)

    def request(self):
        return {'groups': [{'resources': {'VCPU': 1, self.own_class: 1}}]}


def _partition_rule(policy='anti-affinity', **extra):
    return dict({'policy': policy, 'scope': 'partition'}, **extra)


def _domains(rpc, group_uuid):
    return one(rpc.get_groups(uuids=[group_uuid]))['domains']


# -- the level ------------------------------------------------------------

def test_get_topology_lists_the_partitions_as_a_level(rpc):
    sites = Sites(rpc, sites=2, per_site=2)
    child = str(uuid.uuid4())
    assert one(rpc.create_provider(
        uuid=child, name='rp-' + child,
        parent_uuid=sites.of(sites.names[0])[0]))['status'] == 200
    sites.host('shared', {'DISK_GB': {'total': 100}})
    item = one(rpc.get_topology(names=['partition']))
    assert set(item) == {'name', 'domains', 'generation', 'roots',
                         'status'}
    assert (item['name'], item['domains'], item['generation']) == (
        'partition', {}, None)
    # Roots only (the child is not one), ``shared`` is no domain.
    assert {n: item['roots'].get(n) for n in sites.names} == {
        sites.names[0]: 2, sites.names[1]: 2}
    assert 'shared' not in item['roots']
    every = rpc.get_topology()['items']
    assert [i for i in every if i['name'] == 'partition'] == [item]
    assert [i['name'] for i in every] == sorted(i['name'] for i in every)


def test_the_level_cannot_be_set_or_deleted(rpc):
    for answer in (rpc.set_topology_level(name='partition', domains={}),
                   rpc.delete_topology_level(name='partition')):
        item = one(answer)
        assert_fault(item, 400, 'invalid_request')
        assert 'reserved' in item['detail']
    assert one(rpc.get_topology(names=['partition']))['status'] == 200


# -- anti-affinity per site ----------------------------------------------

def test_anti_affinity_keeps_one_member_per_site(rpc):
    sites = Sites(rpc, sites=2, per_site=2)
    east, west = sites.names
    group_uuid = group_of(rpc, [_partition_rule()])
    first = allocate(rpc, str(uuid.uuid4()), {sites.of(east)[0]:
                                              {'VCPU': 1}},
                     group_uuid=group_uuid)
    assert first['status'] == 200, first
    # Another host, the same site: refused, naming the partition.
    again = allocate(rpc, str(uuid.uuid4()), {sites.of(east)[1]:
                                              {'VCPU': 1}},
                     group_uuid=group_uuid)
    assert_fault(again, 409, 'group.policy_violation')
    assert 'scope partition' in again['detail'] and east in again['detail']
    other = allocate(rpc, str(uuid.uuid4()), {sites.of(west)[1]:
                                              {'VCPU': 1}},
                     group_uuid=group_uuid)
    assert other['status'] == 200, other
    assert _domains(rpc, group_uuid) == [
        {'rule': 0, 'counts': {east: 1, west: 1}, 'satisfied': True}]
    # Both sites hold a member: a claim into the group finds none left.
    assert_fault(claim(rpc, str(uuid.uuid4()), sites.request(),
                       group_uuid), 409, 'group.policy_violation')


def test_a_claim_goes_to_the_site_without_a_member(rpc):
    sites = Sites(rpc, sites=2, per_site=2)
    group_uuid = group_of(rpc, [_partition_rule()])
    placed = [claim(rpc, str(uuid.uuid4()), sites.request(), group_uuid)
              for _ in range(2)]
    assert [p['status'] for p in placed] == [200, 200], placed
    assert sorted(sites.hosts[p['root_uuid']] for p in placed) == \
        sorted(sites.names)


def test_shared_roots_are_set_aside(rpc):
    sites = Sites(rpc, sites=1, per_site=1)
    host, = sites.hosts
    pool = sites.host('shared', {'DISK_GB': {'total': 1000}})
    group_uuid = group_of(rpc, [_partition_rule()])
    soft = group_of(rpc, [_partition_rule(enforcement='soft')])
    # An instance with its disk on a shared pool lives in its site.
    member = allocate(rpc, str(uuid.uuid4()), {host: {'VCPU': 1},
                                               pool: {'DISK_GB': 10}},
                      group_uuid=group_uuid)
    assert member['status'] == 200 and 'warnings' not in member, member
    assert _domains(rpc, group_uuid)[0]['counts'] == {sites.names[0]: 1}
    # A member on shared providers only is in no domain: a hard rule
    # refuses it, a soft one warns.
    alone = allocate(rpc, str(uuid.uuid4()), {pool: {'DISK_GB': 1}},
                     group_uuid=group_uuid)
    assert_fault(alone, 409, 'group.policy_violation')
    assert 'no domain at scope partition' in alone['detail']
    warned = allocate(rpc, str(uuid.uuid4()), {pool: {'DISK_GB': 1}},
                      group_uuid=soft)
    assert warned['status'] == 200
    assert warned['warnings'] == ['group.soft_policy']
    state, = _domains(rpc, soft)
    assert state['counts'] == {}
    assert state['unplaced'] == [warned['consumer_uuid']]
    assert state['satisfied'] is False


def test_rules_at_scope_partition_are_created_and_updated(rpc):
    sites = Sites(rpc, sites=1, per_site=2)
    hosts = sites.of(sites.names[0])
    group_uuid = group_of(rpc, [{'policy': 'anti-affinity'}])
    for host in hosts:
        assert allocate(rpc, str(uuid.uuid4()), {host: {'VCPU': 1}},
                        group_uuid=group_uuid)['status'] == 200
    generation = one(rpc.get_groups(uuids=[group_uuid]))['generation']
    # Two members share the site: the new hard rule needs force.
    refused = one(rpc.update_group(uuid=group_uuid, generation=generation,
                                   rules=[_partition_rule()], force=False))
    assert_fault(refused, 409, 'group.policy_violation')
    updated = one(rpc.update_group(uuid=group_uuid, generation=generation,
                                   rules=[_partition_rule()], force=True))
    assert updated['status'] == 200, updated
    assert updated['rules'][0]['scope'] == 'partition'
    assert _domains(rpc, group_uuid) == [
        {'rule': 0, 'counts': {sites.names[0]: 2}, 'satisfied': False}]
    # A level no one set is still 400 topology.not_found.
    unknown = one(rpc.create_group(uuid=str(uuid.uuid4()), name='x',
                                   rules=[{'policy': 'affinity',
                                           'scope': 'no-such-level'}]))
    assert_fault(unknown, 400, 'topology.not_found')


# -- spread under a storm ------------------------------------------------

def test_a_spread_by_partition_storm_ends_even(rpc):
    sites = Sites(rpc, sites=3, per_site=2)
    group_uuid = group_of(rpc, [_partition_rule('spread', max_skew=1)])
    placed = in_parallel(
        lambda consumer: claim(rpc, consumer, sites.request(), group_uuid),
        [str(uuid.uuid4()) for _ in range(30)], clients=30)
    assert [p['status'] for p in placed] == [200] * 30, [
        p for p in placed if p['status'] != 200][:2]
    per_site = collections.Counter(sites.hosts[p['root_uuid']]
                                   for p in placed)
    assert per_site == {name: 10 for name in sites.names}
    assert _domains(rpc, group_uuid) == [
        {'rule': 0, 'counts': {name: 10 for name in sites.names},
         'skew': 0, 'satisfied': True}]


def test_a_spread_shows_eligible_sites_without_members(rpc):
    sites = Sites(rpc, sites=3, per_site=1)
    group_uuid = group_of(rpc, [_partition_rule('spread', max_skew=1)])
    first, second, third = sites.names
    assert claim(rpc, str(uuid.uuid4()), {'groups': [{
        'resources': {'VCPU': 1, sites.own_class: 1},
        'in_tree': sites.of(first)[0]}]}, group_uuid)['status'] == 200
    state, = _domains(rpc, group_uuid)
    assert state['counts'] == {first: 1, second: 0, third: 0}
    assert (state['skew'], state['satisfied']) == (1, True)
    # A second member in the first site would make the skew 2.
    assert_fault(allocate(rpc, str(uuid.uuid4()), {
        sites.of(first)[0]: {'VCPU': 1, sites.own_class: 1}},
        group_uuid=group_uuid), 409, 'group.policy_violation')


def test_what_shared_offers_counts_as_offered_by_every_site(rpc):
    sites = Sites(rpc, sites=3, per_site=1)
    pool = sites.host('shared', {'DISK_GB': {'total': 1000}})
    group_uuid = group_of(rpc, [_partition_rule('spread', max_skew=1)])
    first, second, third = sites.names

    def member(site):
        return allocate(rpc, str(uuid.uuid4()), {
            sites.of(site)[0]: {'VCPU': 1, sites.own_class: 1},
            pool: {'DISK_GB': 10}}, group_uuid=group_uuid)

    assert member(first)['status'] == 200
    assert member(second)['status'] == 200
    # No site's tree offers DISK_GB, yet every one is eligible: the
    # third, empty, keeps the first from a second member.
    assert_fault(member(first), 409, 'group.policy_violation')
    state, = _domains(rpc, group_uuid)
    assert state['counts'] == {first: 1, second: 1, third: 0}
    assert member(third)['status'] == 200


# -- the client library --------------------------------------------------

def test_rpcapi_sends_partition_rules_at_1_6(rpc, topic):
    cfg.CONF.set_override('topic', topic, 'worker')
    rules = [_partition_rule()]
    try:
        made = one(rpcapi.AllocWorkerAPI(transport=rpc.transport)
                   .create_group(rpc.context, str(uuid.uuid4()), 'lib',
                                 rules=rules))
        assert made['status'] == 200, made
        cfg.CONF.set_override('allocworker', '1.5', 'upgrade_levels')
        old = rpcapi.AllocWorkerAPI(transport=rpc.transport)
        with pytest.raises(messaging.RPCVersionCapError):
            old.create_group(rpc.context, str(uuid.uuid4()), 'x',
                             rules=rules)
        with pytest.raises(messaging.RPCVersionCapError):
            old.update_group(rpc.context, made['uuid'], made['generation'],
                             rules)
        # Rules of other levels are still 1.5 calls.
        other = one(old.update_group(rpc.context, made['uuid'],
                                     made['generation'],
                                     [{'policy': 'anti-affinity'}]))
        assert other['status'] == 200, other
    finally:
        cfg.CONF.clear_override('allocworker', 'upgrade_levels')
        cfg.CONF.clear_override('topic', 'worker')
