"""Group rules at failure-domain scope under concurrency: many clients,
three worker processes, real RabbitMQ, every backend. Each rule is judged
on the state its transaction commits: storms into one group end exactly
as the rule allows, gangs are placed whole or not at all."""

import collections
import random
import threading
import uuid

from tests.functional.domains import (Racks, claim, claim_item, group_of)
from tests.functional.helpers import (allocate, assert_fault, in_parallel,
                                      one, provider)


def racks_of(racks, placed):
    return collections.Counter(racks.rack_of(p['root_uuid'])
                               for p in placed if p['status'] == 200)


def test_spread_storms_end_even_over_the_racks(rpc):
    racks = Racks(rpc)
    for _ in range(10):
        group_uuid = group_of(rpc, [{'policy': 'spread',
                                     'scope': racks.rack_level,
                                     'max_skew': 1}])
        placed = in_parallel(
            lambda consumer: claim(rpc, consumer, racks.request(),
                                   group_uuid),
            [str(uuid.uuid4()) for _ in range(64)], clients=32)
        assert [p['status'] for p in placed] == [200] * 64, [
            p for p in placed if p['status'] != 200][:2]
        assert sorted(racks_of(racks, placed).values()) == [16] * 4
        state = one(rpc.get_groups(uuids=[group_uuid]))['domains'][0]
        assert state['skew'] == 0 and state['satisfied'] is True


def test_anti_affinity_two_per_rack_places_exactly_eight(rpc):
    racks = Racks(rpc)
    group_uuid = group_of(rpc, [{'policy': 'anti-affinity',
                                 'scope': racks.rack_level,
                                 'max_per_domain': 2}])
    placed = in_parallel(
        lambda consumer: claim(rpc, consumer, racks.request(), group_uuid),
        [str(uuid.uuid4()) for _ in range(64)], clients=32)
    refused = [p for p in placed if p['status'] != 200]
    assert len(placed) - len(refused) == 8
    for item in refused:
        assert_fault(item, 409, 'group.policy_violation')
    assert sorted(racks_of(racks, placed).values()) == [2] * 4


def test_storms_into_several_groups_at_once_keep_every_group_rule(rpc):
    """Claims into four groups at once share transactions, each locking
    the groups it can take and giving back calls into a group another
    holds: every group still ends exactly at its rule."""
    racks = Racks(rpc)
    spread, *anti = [group_of(rpc, [{'policy': 'spread',
                                     'scope': racks.rack_level,
                                     'max_skew': 1}])] + [
        group_of(rpc, [{'policy': 'anti-affinity', 'scope': racks.rack_level,
                        'max_per_domain': 1}]) for _ in range(3)]
    aims = [spread] * 16 + anti * 8
    random.shuffle(aims)
    placed = in_parallel(
        lambda aim: (aim, claim(rpc, str(uuid.uuid4()), racks.request(),
                                aim)), aims, clients=32)
    by_group = collections.defaultdict(list)
    for aim, item in placed:
        by_group[aim].append(item)
    assert [p['status'] for p in by_group[spread]] == [200] * 16
    assert sorted(racks_of(racks, by_group[spread]).values()) == [4] * 4
    for group_uuid in anti:
        refused = [p for p in by_group[group_uuid] if p['status'] != 200]
        for item in refused:
            assert_fault(item, 409, 'group.policy_violation')
        assert sorted(racks_of(racks, by_group[group_uuid]).values()) == \
            [1] * 4
    for item in rpc.get_groups(uuids=[spread] + anti)['items']:
        assert all(d['satisfied'] for d in item['domains']), item


def test_anti_affinity_allocates_at_random_hosts_place_exactly_eight(rpc):
    racks = Racks(rpc)
    group_uuid = group_of(rpc, [{'policy': 'anti-affinity',
                                 'scope': racks.rack_level,
                                 'max_per_domain': 2}])
    hosts = sorted(racks.hosts)
    aims = [random.choice(hosts) for _ in range(64)]

    def aimed(host):
        item = allocate(rpc, str(uuid.uuid4()), {host: {'VCPU': 1}},
                        group_uuid=group_uuid)
        return dict(item, root_uuid=host)

    placed = in_parallel(aimed, aims, clients=32)
    for item in placed:
        if item['status'] != 200:
            assert_fault(item, 409, 'group.policy_violation')
    assert sorted(racks_of(racks, placed).values()) == [2] * 4
    group = one(rpc.get_groups(uuids=[group_uuid]))
    assert len(group['members']) == 8
    assert group['domains'][0]['satisfied'] is True


def test_affinity_within_one_zone_under_concurrent_claims(rpc):
    racks = Racks(rpc)
    group_uuid = group_of(rpc, [{'policy': 'affinity',
                                 'scope': racks.zone_level}])
    placed = in_parallel(
        lambda consumer: claim(rpc, consumer, racks.request(), group_uuid),
        [str(uuid.uuid4()) for _ in range(32)], clients=32)
    assert [p['status'] for p in placed] == [200] * 32
    assert len({racks.zone_of(p['root_uuid']) for p in placed}) == 1


def _pools_and_nics(rpc, racks):
    """A storage pool per zone (DISK_GB), a NIC under every host
    (bandwidth)."""
    pools = {}
    for zone, aggregate in zip(('zone-a', 'zone-b'), racks.zone_aggregates):
        pool, generation = provider(rpc, {'DISK_GB': {'total': 10000}})
        assert one(rpc.set_provider_aggregates(
            provider_uuid=pool, provider_generation=generation,
            aggregates=[aggregate]))['status'] == 200
        pools[pool] = zone
    nics = {}
    for host in racks.hosts:
        nic, _ = provider(rpc, {'NET_BW_EGR_KILOBIT_PER_SEC':
                                {'total': 100000}}, parent=host)
        nics[nic] = racks.zone_of(host)
    return pools, nics


def test_an_instance_its_volume_and_its_port_share_a_zone(rpc):
    racks = Racks(rpc)
    pools, nics = _pools_and_nics(rpc, racks)
    group_uuid = group_of(rpc, [{'policy': 'affinity',
                                 'scope': racks.zone_level}])
    instance = claim(rpc, str(uuid.uuid4()), racks.request(), group_uuid)
    assert instance['status'] == 200, instance
    zone = racks.zone_of(instance['root_uuid'])
    volume = claim(rpc, str(uuid.uuid4()), {'groups': [{
        'resources': {'DISK_GB': 10},
        'member_of': ['in:' + ','.join(
            racks.zone_aggregates)]}]}, group_uuid, consumer_type='VOLUME')
    assert volume['status'] == 200, volume
    assert pools[volume['root_uuid']] == zone
    port = claim(rpc, str(uuid.uuid4()), {'groups': [{
        'resources': {'NET_BW_EGR_KILOBIT_PER_SEC': 1000}}]}, group_uuid,
        consumer_type='PORT')
    assert port['status'] == 200, port
    nic, = port['allocations']
    assert nics[nic] == zone
    # A volume aimed at the other zone's pool is refused.
    other = next(p for p, z in pools.items() if z != zone)
    assert_fault(allocate(rpc, str(uuid.uuid4()), {other: {'DISK_GB': 1}},
                          group_uuid=group_uuid, consumer_type='VOLUME'),
                 409, 'group.policy_violation')


def test_consumer_types_leave_volumes_unjudged(rpc):
    racks = Racks(rpc)
    pools, _nics = _pools_and_nics(rpc, racks)
    group_uuid = group_of(rpc, [{'policy': 'affinity',
                                 'scope': racks.zone_level,
                                 'consumer_types': ['INSTANCE']}])
    instance = claim(rpc, str(uuid.uuid4()), racks.request(), group_uuid)
    zone = racks.zone_of(instance['root_uuid'])
    other = next(p for p, z in pools.items() if z != zone)
    volume = allocate(rpc, str(uuid.uuid4()), {other: {'DISK_GB': 1}},
                      group_uuid=group_uuid, consumer_type='VOLUME')
    assert volume['status'] == 200, volume
    counts = one(rpc.get_groups(uuids=[group_uuid]))['domains'][0]['counts']
    assert counts == {zone: 1}


def test_gangs_are_placed_whole_or_not_at_all(rpc):
    racks = Racks(rpc, racks=3, per_rack=1)
    for host in racks.hosts:
        generation = one(rpc.get_providers(uuids=[host]))['generation']
        assert one(rpc.set_inventories(
            provider_uuid=host, provider_generation=generation,
            inventories={'VCPU': {'total': 4}}))['status'] == 200
    start = threading.Barrier(2)

    def gang(_n):
        group_uuid = group_of(rpc, [{'policy': 'spread',
                                     'scope': racks.rack_level}])
        items = [claim_item(str(uuid.uuid4()), racks.request(), group_uuid)
                 for _ in range(8)]
        start.wait()
        return rpc.call('claim', items=items, atomic=True,
                        rpc_timeout=120)['items']

    outcomes = in_parallel(gang, [0, 1], clients=2)
    whole = [o for o in outcomes if all(i['status'] == 200 for i in o)]
    assert len(whole) == 1, outcomes
    refused, = [o for o in outcomes if o not in whole]
    assert all(i['status'] != 200 for i in refused)
    assert sorted(racks_of(racks, whole[0]).values()) == [2, 3, 3]
    used = sum(one(rpc.get_usages(provider_uuids=[h]))['usages']['VCPU']
               for h in racks.hosts)
    assert used == 8


def test_update_group_racing_claims_never_commits_past_the_rule(rpc):
    racks = Racks(rpc)
    group_uuid = group_of(rpc, [{'policy': 'anti-affinity',
                                 'scope': racks.rack_level,
                                 'max_per_domain': 4}])
    generation = one(rpc.get_groups(uuids=[group_uuid]))['generation']
    tighter = [{'policy': 'anti-affinity', 'scope': racks.rack_level,
                'max_per_domain': 2}]

    def job(n):
        if n == 8:
            return one(rpc.update_group(uuid=group_uuid,
                                        generation=generation,
                                        rules=tighter, force=True))
        return claim(rpc, str(uuid.uuid4()), racks.request(), group_uuid)

    outcomes = in_parallel(job, list(range(33)), clients=33)
    updated = outcomes.pop(8)
    assert updated['status'] == 200 or updated.get('code') == \
        'group.generation_conflict', updated
    per_rack = racks_of(racks, outcomes)
    assert max(per_rack.values()) <= 4
    for item in outcomes:
        if item['status'] != 200:
            assert_fault(item, 409, 'group.policy_violation')
    group = one(rpc.get_groups(uuids=[group_uuid]))
    rule = group['rules'][0]['max_per_domain']
    # What commits after the update keeps it: a new member lands only in
    # a rack below the rule in force.
    late = claim(rpc, str(uuid.uuid4()), racks.request(), group_uuid)
    if all(n >= rule for n in racks_of(racks, outcomes).values()) and \
            len(per_rack) == 4:
        assert_fault(late, 409, 'group.policy_violation')
    else:
        assert late['status'] == 200, late
        assert per_rack[racks.rack_of(late['root_uuid'])] < rule
