"""Consumer groups: hard policies enforced inside the allocation
transaction across worker processes, soft policies warn, bad input is
answered per item."""

from concurrent import futures
import threading
import uuid

import pytest

from tests.functional.helpers import (alloc_item, allocate, assert_fault,
                                      one, provider)

MEMBERS = 16


def hosts(rpc, count=4):
    return [provider(rpc, {'VCPU': {'total': 1000}})[0]
            for _ in range(count)]


def group(rpc, policy, **extra):
    group_uuid = str(uuid.uuid4())
    item = one(rpc.create_group(uuid=group_uuid, name='g-' + group_uuid,
                                policy=policy, **extra))
    assert item['status'] == 200, item
    return group_uuid


def roots(rpc, group_uuid):
    return one(rpc.get_groups(uuids=[group_uuid]))['roots']


def storm(rpc, group_uuid, candidates_of):
    """MEMBERS members at once, each trying its hosts in turn, as a
    scheduler would; returns {member: host it landed on or None}."""
    members = [str(uuid.uuid4()) for _ in range(MEMBERS)]
    start = threading.Barrier(MEMBERS)

    def place(n):
        start.wait()
        for host in candidates_of(n):
            item = allocate(rpc, members[n], {host: {'VCPU': 1}},
                            group_uuid=group_uuid)
            if item['status'] == 200:
                return host
            assert (item['status'], item['code']) == (
                409, 'group.policy_violation'), item
        return None

    with futures.ThreadPoolExecutor(MEMBERS) as pool:
        placed = list(pool.map(place, range(MEMBERS)))
    return dict(zip(members, placed))


@pytest.mark.parametrize('max_per_root', [1, 2])
def test_anti_affinity_storm_places_max_per_root_members_per_host(
        rpc, max_per_root):
    four = hosts(rpc)
    group_uuid = group(rpc, 'anti-affinity', max_per_root=max_per_root)
    placed = storm(rpc, group_uuid,
                   lambda n: four[n % 4:] + four[:n % 4])
    landed = [h for h in placed.values() if h]
    assert len(landed) == 4 * max_per_root
    assert sorted(landed) == sorted(four * max_per_root)
    assert sorted(len(m) for m in roots(rpc, group_uuid).values()) == \
        [max_per_root] * 4
    # Exactly the placed members joined; a refused join leaves no trace.
    members = one(rpc.get_groups(uuids=[group_uuid]))['members']
    assert sorted(members) == sorted(m for m, h in placed.items() if h)


def test_affinity_storm_lands_everyone_on_one_root(rpc):
    four = hosts(rpc)
    group_uuid = group(rpc, 'affinity')
    placed = storm(rpc, group_uuid, lambda n: [four[n % 4]])
    landed = {h for h in placed.values() if h}
    assert len(landed) == 1
    winner, = landed
    expected = sum(1 for n in range(MEMBERS) if four[n % 4] == winner)
    assert sum(1 for h in placed.values() if h) == expected
    assert list(roots(rpc, group_uuid)) == [winner]


def test_join_with_first_allocation_and_child_counts_on_its_root(rpc, ids):
    host, _ = provider(rpc, {'VCPU': {'total': 10}})
    gpu, _ = provider(rpc, {'VGPU': {'total': 4}}, parent=host)
    group_uuid = group(rpc, 'anti-affinity')
    first = allocate(rpc, ids.first, {gpu: {'VGPU': 1}},
                     group_uuid=group_uuid)
    assert first['status'] == 200
    shown = one(rpc.get_groups(uuids=[group_uuid]))
    assert shown['members'] == [ids.first]
    assert shown['roots'] == {host: [ids.first]}
    second = allocate(rpc, ids.second, {host: {'VCPU': 1}},
                      group_uuid=group_uuid)
    assert_fault(second, 409, 'group.policy_violation')
    # A refused join leaves no membership behind.
    assert one(rpc.get_groups(uuids=[group_uuid]))['members'] == [ids.first]


def test_atomic_batch_swapping_members_is_judged_on_the_result(rpc, ids):
    a, b = hosts(rpc, 2)
    group_uuid = group(rpc, 'anti-affinity')
    one_ = allocate(rpc, ids.one, {a: {'VCPU': 1}}, group_uuid=group_uuid)
    two = allocate(rpc, ids.two, {b: {'VCPU': 1}}, group_uuid=group_uuid)
    swap = [alloc_item(ids.one, {b: {'VCPU': 1}}, one_['consumer_generation']),
            alloc_item(ids.two, {a: {'VCPU': 1}}, two['consumer_generation'])]
    apart = rpc.allocate(items=swap)
    assert [i.get('code') for i in apart['items']] == [
        'group.policy_violation', 'group.policy_violation']
    together = rpc.allocate(items=swap, atomic=True)
    assert together['status'] == 200, together
    assert roots(rpc, group_uuid) == {a: [ids.two], b: [ids.one]}


def test_membership_survives_allocation_delete_and_recreate(rpc, ids):
    a, b = hosts(rpc, 2)
    group_uuid = group(rpc, 'anti-affinity')
    made = allocate(rpc, ids.member, {a: {'VCPU': 1}}, group_uuid=group_uuid)
    allocate(rpc, ids.member, {}, made['consumer_generation'])
    shown = one(rpc.get_groups(uuids=[group_uuid]))
    assert shown['members'] == [ids.member] and shown['roots'] == {}
    assert allocate(rpc, ids.other, {a: {'VCPU': 1}},
                    group_uuid=group_uuid)['status'] == 200
    # Recreated without naming the group, it is still bound by it.
    assert_fault(allocate(rpc, ids.member, {a: {'VCPU': 1}}), 409,
                 'group.policy_violation')
    assert allocate(rpc, ids.member, {b: {'VCPU': 1}})['status'] == 200


def test_adding_a_member_that_already_breaks_the_policy(rpc, ids):
    a, = hosts(rpc, 1)
    allocate(rpc, ids.x, {a: {'VCPU': 1}})
    allocate(rpc, ids.y, {a: {'VCPU': 1}})
    group_uuid = group(rpc, 'anti-affinity')
    answer = rpc.add_members(group_uuid=group_uuid,
                             consumer_uuids=[ids.x, ids.y, ids.z, 'bad'])
    assert answer['status'] == 207
    x, y, z, bad = answer['items']
    assert x['status'] == 200 and z['status'] == 200
    assert_fault(y, 409, 'group.policy_violation')
    assert_fault(bad, 400, 'invalid_request')
    members = one(rpc.get_groups(uuids=[group_uuid]))['members']
    assert members == sorted([ids.x, ids.z])
    removed = rpc.remove_members(group_uuid=group_uuid,
                                 consumer_uuids=[ids.x])
    assert removed['status'] == 200
    assert one(rpc.get_groups(uuids=[group_uuid]))['members'] == [ids.z]


def test_soft_policies_warn_but_never_refuse(rpc, ids):
    a, b = hosts(rpc, 2)
    soft_anti = group(rpc, 'soft-anti-affinity')
    soft_aff = group(rpc, 'soft-affinity')
    assert 'warnings' not in allocate(rpc, ids.p, {a: {'VCPU': 1}},
                                      group_uuid=soft_anti)
    crowded = allocate(rpc, ids.q, {a: {'VCPU': 1}}, group_uuid=soft_anti)
    assert crowded['status'] == 200
    assert crowded['warnings'] == ['group.soft_policy']
    allocate(rpc, ids.r, {a: {'VCPU': 1}}, group_uuid=soft_aff)
    apart = allocate(rpc, ids.s, {b: {'VCPU': 1}}, group_uuid=soft_aff)
    assert apart['status'] == 200
    assert apart['warnings'] == ['group.soft_policy']


def test_bad_input_gets_clear_per_item_codes(rpc, ids):
    a, = hosts(rpc, 1)
    cases = [
        dict(uuid=ids.g1, name='x', policy='sometimes-affinity'),
        dict(uuid=ids.g2, name='x', policy='affinity', max_per_root=2),
        dict(uuid=ids.g3, name='x', policy='anti-affinity', max_per_root=0),
        dict(uuid='not-a-uuid', name='x', policy='affinity'),
        dict(uuid=ids.g4, name='', policy='affinity'),
    ]
    for case in cases:
        item = one(rpc.create_group(**case))
        assert_fault(item, 400, 'invalid_request')
    made = group(rpc, 'affinity')
    assert_fault(one(rpc.create_group(uuid=made, name='again',
                                      policy='affinity')),
                 409, 'group.exists')
    missing = str(uuid.uuid4())
    assert_fault(one(rpc.delete_group(uuid=missing)), 404, 'group.not_found')
    answer = rpc.add_members(group_uuid=missing, consumer_uuids=[ids.c])
    assert (answer['status'], answer['code']) == (404, 'group.not_found')
    assert_fault(one(rpc.get_groups(uuids=[missing])), 404,
                 'group.not_found')
    assert_fault(allocate(rpc, ids.c, {a: {'VCPU': 1}}, group_uuid=missing),
                 400, 'group.not_found')
    assert_fault(allocate(rpc, ids.c, {a: {'VCPU': 1}}, group_uuid='nope'),
                 400, 'invalid_request')
    assert one(rpc.get_allocations(consumer_uuids=[ids.c]))['status'] == 404
    assert one(rpc.delete_group(uuid=made))['status'] == 200
