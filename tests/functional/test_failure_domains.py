"""RPC 1.5 over the wire: topology levels, provider traits and
aggregates, groups of rules at rack and zone scope (what they refuse,
what get_groups reports), bad input answered per item with nothing
written."""

import uuid

import pytest

from tests.functional import services
from tests.functional.domains import Racks, claim, group_of
from tests.functional.helpers import allocate, assert_fault, one, provider


@pytest.fixture(scope='module')
def racks(rpc):
    return Racks(rpc)


def test_topology_levels_map_aggregates_to_domains(rpc, racks):
    item = one(rpc.get_topology(names=[racks.rack_level]))
    assert item['status'] == 200
    assert item['roots'] == {'rack-%d' % n: 4 for n in range(4)}
    assert sorted(item['domains'].values()) == ['rack-%d' % n
                                                for n in range(4)]
    zone = one(rpc.get_topology(names=[racks.zone_level]))
    assert zone['roots'] == {'zone-a': 8, 'zone-b': 8}
    missing = one(rpc.get_topology(names=['no-such-level']))
    assert_fault(missing, 404, 'topology.not_found')


@pytest.mark.parametrize('name', ['root', 'partition', 'Rack', '-x', ''])
def test_reserved_and_malformed_level_names_are_refused(rpc, name):
    item = one(rpc.set_topology_level(name=name, domains={}))
    assert_fault(item, 400, 'invalid_request')


def test_a_root_in_two_domains_of_a_level_is_refused(rpc, racks):
    host = next(h for h, r in racks.hosts.items() if r == 0)
    generation = one(rpc.get_providers(uuids=[host]))['generation']
    # Through its aggregates: nothing written.
    item = one(rpc.set_provider_aggregates(
        provider_uuid=host, provider_generation=generation,
        aggregates=racks.rack_aggregates[:2]))
    assert_fault(item, 409, 'topology.ambiguous_domain')
    assert host in item['detail'] and racks.rack_level in item['detail']
    assert one(rpc.get_providers(uuids=[host]))['generation'] == generation
    # Through the level: the level keeps its domains.
    before = one(rpc.get_topology(names=[racks.zone_level]))
    item = one(rpc.set_topology_level(name=racks.zone_level, domains=dict(
        before['domains'], **{racks.rack_aggregates[0]: 'zone-c'})))
    assert_fault(item, 409, 'topology.ambiguous_domain')
    assert one(rpc.get_topology(names=[racks.zone_level])) == before


def test_a_level_a_rule_names_cannot_be_deleted(rpc, racks):
    name = 'site-%s' % uuid.uuid4().hex[:6]
    racks.set_level(name, {racks.zone_aggregates[0]: 'site-1'})
    group_uuid = group_of(rpc, [{'policy': 'affinity', 'scope': name}])
    assert_fault(one(rpc.delete_topology_level(name=name)), 409,
                 'topology.in_use')
    assert one(rpc.delete_group(uuid=group_uuid))['status'] == 200
    assert one(rpc.delete_topology_level(name=name))['status'] == 200
    assert_fault(one(rpc.delete_topology_level(name=name)), 404,
                 'topology.not_found')


def test_topology_is_for_admins(rpc):
    member = dict(rpc.context, roles=['member'])
    answer = rpc.call('set_topology_level', context=member, name='rack',
                      domains={})
    assert_fault(one(answer), 403, 'forbidden')


def test_provider_traits_over_rpc_create_custom_ones(rpc):
    host, generation = provider(rpc, {'VCPU': {'total': 4}})
    custom = 'CUSTOM_T_%s' % uuid.uuid4().hex[:8].upper()
    item = one(rpc.set_provider_traits(
        provider_uuid=host, provider_generation=generation,
        traits=[custom, 'HW_CPU_X86_AVX2']))
    assert item['status'] == 200, item
    assert item['traits'] == sorted([custom, 'HW_CPU_X86_AVX2'])
    assert item['generation'] > generation
    bad = one(rpc.set_provider_traits(
        provider_uuid=host, provider_generation=item['generation'],
        traits=['NOT_A_STANDARD_TRAIT']))
    assert_fault(bad, 400, 'invalid_request')
    stale = one(rpc.set_provider_traits(
        provider_uuid=host, provider_generation=generation, traits=[]))
    assert_fault(stale, 409, 'provider.generation_conflict')


@pytest.mark.parametrize('rules, field', [
    ([{'policy': 'spread', 'scope': 'rack', 'max_skew': 0}], 'max_skew'),
    ([{'policy': 'nearby'}], 'policy'),
    ('spread', 'rules'),
    ([{'policy': 'anti-affinity', 'scope': 'nowhere'}], 'scope'),
])
def test_bad_rules_write_no_group(rpc, rules, field):
    group_uuid = str(uuid.uuid4())
    item = one(rpc.create_group(uuid=group_uuid, name='bad', rules=rules))
    assert item['status'] == 400 and field in item['detail'], item
    assert_fault(one(rpc.get_groups(uuids=[group_uuid])), 404,
                 'group.not_found')


def test_anti_affinity_per_rack_refuses_a_second_member(rpc, racks):
    group_uuid = group_of(rpc, [{'policy': 'anti-affinity',
                                 'scope': racks.rack_level}])
    rack0 = [h for h, r in racks.hosts.items() if r == 0]
    first = allocate(rpc, str(uuid.uuid4()), {rack0[0]: {'VCPU': 1}},
                     group_uuid=group_uuid)
    assert first['status'] == 200, first
    second = allocate(rpc, str(uuid.uuid4()), {rack0[1]: {'VCPU': 1}},
                      group_uuid=group_uuid)
    assert_fault(second, 409, 'group.policy_violation')
    assert 'rule 0' in second['detail'] and 'rack-0' in second['detail']
    # A claim goes where the rule lets it.
    placed = claim(rpc, str(uuid.uuid4()), racks.request(), group_uuid)
    assert placed['status'] == 200, placed
    assert racks.rack_of(placed['root_uuid']) != 'rack-0'


def test_get_groups_counts_each_rule_per_domain(rpc, racks):
    group_uuid = group_of(rpc, [
        {'policy': 'spread', 'scope': racks.rack_level, 'max_skew': 1},
        {'policy': 'anti-affinity'}])
    for _ in range(6):
        item = claim(rpc, str(uuid.uuid4()), racks.request(), group_uuid)
        assert item['status'] == 200, item
    group = one(rpc.get_groups(uuids=[group_uuid]))
    assert [r['policy'] for r in group['rules']] == ['spread',
                                                     'anti-affinity']
    spread, anti = group['domains']
    assert spread['rule'] == 0 and sorted(spread['counts']) == [
        'rack-%d' % n for n in range(4)]
    assert sorted(spread['counts'].values()) == [1, 1, 2, 2]
    assert spread['skew'] == 1 and spread['satisfied'] is True
    assert sorted(anti['counts'].values()) == [1] * 6
    assert anti['satisfied'] is True and 'skew' not in anti


def test_soft_rules_warn_and_never_refuse(rpc, racks):
    group_uuid = group_of(rpc, [{'policy': 'anti-affinity',
                                 'scope': racks.zone_level,
                                 'enforcement': 'soft'}])
    zone_a = [h for h in racks.hosts if racks.zone_of(h) == 'zone-a']
    for n, host in enumerate(zone_a[:2]):
        item = allocate(rpc, str(uuid.uuid4()), {host: {'VCPU': 1}},
                        group_uuid=group_uuid)
        assert item['status'] == 200, item
        assert item.get('warnings', []) == ([] if n == 0 else
                                            ['group.soft_policy'])


def test_update_group_replaces_rules_under_its_generation(rpc, racks):
    group_uuid = group_of(rpc, [{'policy': 'anti-affinity',
                                 'scope': racks.rack_level,
                                 'max_per_domain': 2}])
    rack0 = [h for h, r in racks.hosts.items() if r == 0]
    for host in rack0[:2]:
        assert allocate(rpc, str(uuid.uuid4()), {host: {'VCPU': 1}},
                        group_uuid=group_uuid)['status'] == 200
    group = one(rpc.get_groups(uuids=[group_uuid]))
    tighter = [{'policy': 'anti-affinity', 'scope': racks.rack_level}]
    refused = one(rpc.update_group(uuid=group_uuid,
                                   generation=group['generation'],
                                   rules=tighter))
    assert_fault(refused, 409, 'group.policy_violation')
    stale = one(rpc.update_group(uuid=group_uuid,
                                 generation=group['generation'] - 1,
                                 rules=tighter, force=True))
    assert_fault(stale, 409, 'group.generation_conflict')
    forced = one(rpc.update_group(uuid=group_uuid,
                                  generation=group['generation'],
                                  rules=tighter, force=True))
    assert forced['status'] == 200, forced
    assert forced['generation'] > group['generation']
    assert forced['rules'][0]['max_per_domain'] == 1
    after = one(rpc.get_groups(uuids=[group_uuid]))
    assert after['domains'][0]['satisfied'] is False
    # Books over the rule refuse only what adds to it.
    assert_fault(allocate(rpc, str(uuid.uuid4()), {rack0[2]: {'VCPU': 1}},
                          group_uuid=group_uuid),
                 409, 'group.policy_violation')
    elsewhere = next(h for h, r in racks.hosts.items() if r == 1)
    assert allocate(rpc, str(uuid.uuid4()), {elsewhere: {'VCPU': 1}},
                    group_uuid=group_uuid)['status'] == 200


def test_the_1_0_forms_keep_their_answers(rpc):
    group_uuid = str(uuid.uuid4())
    item = one(rpc.create_group(uuid=group_uuid, name='old',
                                policy='anti-affinity', max_per_root=2))
    assert set(item) == {'uuid', 'name', 'policy', 'max_per_root',
                         'members', 'generation', 'status'}
    shown = one(rpc.get_groups(uuids=[group_uuid]))
    assert shown['rules'] == [{
        'policy': 'anti-affinity', 'scope': 'root', 'max_per_domain': 2,
        'enforcement': 'hard', 'consumer_types': None}]
    assert shown['domains'] == [{'rule': 0, 'counts': {},
                                 'satisfied': True}]


def test_the_audit_reports_a_rule_the_books_break(rpc, scratch):
    racks = Racks(rpc, racks=2, per_rack=1)
    group_uuid = group_of(rpc, [{'policy': 'anti-affinity',
                                 'scope': racks.rack_level}])
    for host in racks.hosts:
        assert allocate(rpc, str(uuid.uuid4()), {host: {'VCPU': 1}},
                        group_uuid=group_uuid)['status'] == 200
    clean = services.manage('%s/sync.conf' % scratch, 'audit', check=False)
    assert group_uuid not in clean.stdout
    # An operator moves the second host into the first rack.
    host = next(h for h, r in racks.hosts.items() if r == 1)
    generation = one(rpc.get_providers(uuids=[host]))['generation']
    assert one(rpc.set_provider_aggregates(
        provider_uuid=host, provider_generation=generation,
        aggregates=[racks.rack_aggregates[0]]))['status'] == 200
    state = one(rpc.get_groups(uuids=[group_uuid]))['domains'][0]
    assert state == {'rule': 0, 'counts': {'rack-0': 2},
                     'satisfied': False}
    audit = services.manage('%s/sync.conf' % scratch, 'audit', check=False)
    assert audit.returncode != 0
    assert 'hard group rule broken' in audit.stdout + audit.stderr
    assert group_uuid in audit.stdout + audit.stderr


def test_a_claim_finds_the_one_rack_its_rules_leave(rpc):
    # Ten racks: with nine holding a member, a spread claim may go to the
    # tenth only, and searches its roots alone (a tenth of the domains).
    racks = Racks(rpc, racks=10, per_rack=2)
    group_uuid = group_of(rpc, [{'policy': 'spread',
                                 'scope': racks.rack_level}])
    by_rack = {}
    for host, rack in racks.hosts.items():
        by_rack.setdefault(rack, host)
    for rack in range(9):
        assert allocate(rpc, str(uuid.uuid4()), {by_rack[rack]: {'VCPU': 1}},
                        group_uuid=group_uuid)['status'] == 200
    placed = claim(rpc, str(uuid.uuid4()), racks.request(), group_uuid)
    assert placed['status'] == 200, placed
    assert racks.rack_of(placed['root_uuid']) == 'rack-9'
    # Then a rule that leaves no rack: refused as the rule's doing.
    full = group_of(rpc, [{'policy': 'anti-affinity',
                           'scope': racks.rack_level}])
    for rack in range(10):
        assert allocate(rpc, str(uuid.uuid4()), {by_rack[rack]: {'VCPU': 1}},
                        group_uuid=full)['status'] == 200
    assert_fault(claim(rpc, str(uuid.uuid4()), racks.request(), full),
                 409, 'group.policy_violation')


def test_a_filtered_claim_spreads_over_the_domains_it_admits(rpc):
    # Spread per rack, claims filtered to zone-a (racks 0 and 1): the
    # empty racks of zone-b are not eligible, so they hold no minimum
    # of 0 against zone-a's racks.
    racks = Racks(rpc, racks=4, per_rack=2)
    group_uuid = group_of(rpc, [{'policy': 'spread',
                                 'scope': racks.rack_level}])
    zone_a = {'groups': [{'resources': {'VCPU': 1},
                          'member_of': [racks.zone_aggregates[0]]}]}
    placed = [claim(rpc, str(uuid.uuid4()), zone_a, group_uuid)
              for _ in range(4)]
    assert [p['status'] for p in placed] == [200] * 4, placed
    assert sorted(racks.rack_of(p['root_uuid']) for p in placed) == [
        'rack-0', 'rack-0', 'rack-1', 'rack-1']
    # An allocate is judged over every rack: zone-b's are empty.
    host = next(h for h, r in racks.hosts.items() if r == 0)
    assert_fault(allocate(rpc, str(uuid.uuid4()), {host: {'VCPU': 1}},
                          group_uuid=group_uuid),
                 409, 'group.policy_violation')


def test_a_claim_into_a_group_that_does_not_exist_writes_nothing(rpc, racks):
    consumer = str(uuid.uuid4())
    item = claim(rpc, consumer, racks.request(), str(uuid.uuid4()))
    assert_fault(item, 400, 'group.not_found')
    assert_fault(one(rpc.get_allocations(consumer_uuids=[consumer])), 404,
                 'consumer.not_found')
