"""What workers keep of groups between transactions (groups/kept.py) is
never staler than the books: three worker processes, each call served
by whichever takes it, members moved, removed and re-labelled by one
worker and judged by the others, every backend. A worker judging from
members or labels it kept past a change would place a second member in
a rack, or refuse a claim that fits."""

import uuid

from tests.functional.domains import Racks, claim, group_of
from tests.functional.helpers import allocate, assert_fault, one


def anti_affinity_per_rack(rpc, racks):
    return group_of(rpc, [{'policy': 'anti-affinity',
                           'scope': racks.rack_level}])


def fill(rpc, racks, group_uuid):
    """A member in every rack: {consumer: (root, generation)}."""
    placed = {}
    for _ in range(len(racks.rack_aggregates)):
        consumer = str(uuid.uuid4())
        item = claim(rpc, consumer, racks.request(), group_uuid)
        assert item['status'] == 200, item
        placed[consumer] = (item['root_uuid'], item['consumer_generation'])
    assert len({racks.rack_of(r) for r, _g in placed.values()}) == 4
    return placed


def test_a_member_freed_by_one_worker_is_seen_by_every_worker(rpc):
    racks = Racks(rpc)
    group_uuid = anti_affinity_per_rack(rpc, racks)
    placed = fill(rpc, racks, group_uuid)
    for _ in range(12):
        assert_fault(claim(rpc, str(uuid.uuid4()), racks.request(),
                           group_uuid), 409, 'group.policy_violation')
        leaving = sorted(placed)[0]
        root, generation = placed.pop(leaving)
        freed = allocate(rpc, leaving, {}, generation)
        assert freed['status'] == 200, freed
        consumer = str(uuid.uuid4())
        item = claim(rpc, consumer, racks.request(), group_uuid)
        assert item['status'] == 200, item
        assert racks.rack_of(item['root_uuid']) == racks.rack_of(root)
        placed[consumer] = (item['root_uuid'], item['consumer_generation'])


def test_a_member_moved_by_one_worker_is_seen_by_every_worker(rpc):
    """Members moved by allocates within their racks, then out of one
    rack into another's: the rack left is the one a claim gets."""
    racks = Racks(rpc)
    group_uuid = anti_affinity_per_rack(rpc, racks)
    placed = fill(rpc, racks, group_uuid)
    for consumer, (root, generation) in sorted(placed.items()):
        beside = next(h for h in racks.hosts if h != root and
                      racks.hosts[h] == racks.hosts[root])
        item = allocate(rpc, consumer, {beside: {'VCPU': 1}}, generation)
        assert item['status'] == 200, item
        placed[consumer] = (beside, item['consumer_generation'])
    assert_fault(claim(rpc, str(uuid.uuid4()), racks.request(), group_uuid),
                 409, 'group.policy_violation')
    removed = one(rpc.remove_members(group_uuid=group_uuid,
                                     consumer_uuids=[sorted(placed)[0]]))
    assert removed['status'] == 200, removed
    item = claim(rpc, str(uuid.uuid4()), racks.request(), group_uuid)
    assert item['status'] == 200, item
    assert racks.rack_of(item['root_uuid']) == racks.rack_of(
        placed[sorted(placed)[0]][0])


def test_a_root_moved_to_another_rack_is_judged_there(rpc):
    """A host re-labelled (its rack's aggregate replaced) after every
    worker judged it: its member counts in the new rack."""
    racks = Racks(rpc, racks=2)
    for _ in range(6):   # every worker keeps the hosts' labels
        group_uuid = anti_affinity_per_rack(rpc, racks)
        for _ in range(2):
            assert claim(rpc, str(uuid.uuid4()), racks.request(),
                         group_uuid)['status'] == 200
    group_uuid = anti_affinity_per_rack(rpc, racks)
    first = claim(rpc, str(uuid.uuid4()), racks.request(), group_uuid)
    assert first['status'] == 200, first
    host = first['root_uuid']
    other = 1 - racks.hosts[host]
    generation = one(rpc.get_providers(uuids=[host]))['generation']
    item = one(rpc.set_provider_aggregates(
        provider_uuid=host, provider_generation=generation,
        aggregates=[racks.rack_aggregates[other]]))
    assert item['status'] == 200, item
    racks.hosts[host] = other
    for _ in range(3):
        consumer = str(uuid.uuid4())
        second = claim(rpc, consumer, racks.request(), group_uuid)
        assert second['status'] == 200, second
        assert racks.hosts[second['root_uuid']] == 1 - other
        assert_fault(claim(rpc, str(uuid.uuid4()), racks.request(),
                           group_uuid), 409, 'group.policy_violation')
        freed = allocate(rpc, consumer, {}, second['consumer_generation'])
        assert freed['status'] == 200, freed
