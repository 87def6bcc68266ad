"""Claims weigh a window of roots at a time (``scheduling/windows.py``):
with a window of one provider per class, every rule that made a claim
pass over a candidate must make it widen to the next window, never fail
while a candidate fits elsewhere. And the room left that orders the
windows (``usages.free``) stays true through inventory changes, as the
audit checks.
"""

import collections
import uuid

import pytest

from tests.functional import services
from tests.functional.helpers import (allocate, assert_fault, in_parallel,
                                      one, provider, usage)
from tests.functional.test_claims import (_group, claim, held, hosts,
                                          slot_class, wanting)

WORKER_CONFIG = """
[database]
max_overflow = 10
[scheduling]
window_size = 1
"""

pytestmark = pytest.mark.usefixtures('service_layer')


def _filled(rpc, root, name, amount):
    consumer = str(uuid.uuid4())
    assert allocate(rpc, consumer, {root: {name: amount}})['status'] == 200


def test_spread_widens_past_excluded_windows_in_order(rpc):
    name = slot_class(rpc)
    by_room = [hosts(rpc, name, 1, total)[0] for total in (8, 6, 4, 2)]
    for tried in range(4):
        placed = claim(rpc, str(uuid.uuid4()), wanting(name),
                       exclude_roots=by_room[:tried])
        assert placed['status'] == 200, placed
        assert placed['root_uuid'] == by_room[tried]
    refused = claim(rpc, str(uuid.uuid4()), wanting(name),
                    exclude_roots=by_room)
    assert_fault(refused, 409, 'capacity.exceeded')
    assert '4 candidate(s) found, 4 on excluded roots' in refused['detail']


def test_pack_reads_the_least_room_that_still_fits_first(rpc):
    name = slot_class(rpc)
    roots = hosts(rpc, name, 3, 4)
    for root, used in zip(roots, (3, 2, 1)):
        _filled(rpc, root, name, used)
    # Room left 1, 2, 3: two units fit on the last two, the tighter first.
    placed = claim(rpc, str(uuid.uuid4()), wanting(name, 2), strategy='pack')
    assert placed['root_uuid'] == roots[1], placed
    placed = claim(rpc, str(uuid.uuid4()), wanting(name, 2), strategy='pack')
    assert placed['root_uuid'] == roots[2], placed
    assert_fault(claim(rpc, str(uuid.uuid4()), wanting(name, 2),
                       strategy='pack'), 409, 'capacity.exceeded')
    assert [usage(rpc, r) for r in roots] == [{name: 3}, {name: 4},
                                              {name: 3}]


def test_a_window_whose_hosts_break_a_unit_rule_is_passed_over(rpc):
    name = slot_class(rpc)
    roomy, _ = provider(rpc, {name: {'total': 16, 'step_size': 4}})
    tight = hosts(rpc, name, 1, 8)[0]
    # The roomiest host is read first but takes only multiples of 4.
    placed = claim(rpc, str(uuid.uuid4()), wanting(name, 2))
    assert placed['root_uuid'] == tight, placed
    assert usage(rpc, roomy) == {name: 0}


def test_anti_affinity_storm_widens_to_distinct_roots(rpc):
    name = slot_class(rpc)
    roots = hosts(rpc, name, 8, 4)
    group = _group(rpc, 'anti-affinity')
    consumers = [str(uuid.uuid4()) for _ in range(8)]
    results = in_parallel(
        lambda c: claim(rpc, c, wanting(name), group_uuid=group), consumers)
    assert [r['status'] for r in results] == [200] * 8, results
    assert sorted(r['root_uuid'] for r in results) == sorted(roots)
    late = claim(rpc, str(uuid.uuid4()), wanting(name), group_uuid=group)
    assert_fault(late, 409, 'group.policy_violation')
    assert '8 candidate(s) fit' in late['detail']


def test_storm_fills_every_slot_through_windows_of_one(rpc):
    name = slot_class(rpc)
    roots = hosts(rpc, name, 12, 3)
    consumers = [str(uuid.uuid4()) for _ in range(36)]
    results = in_parallel(lambda c: claim(rpc, c, wanting(name)),
                          consumers, clients=36)
    assert [r['status'] for r in results] == [200] * 36, [
        r for r in results if r['status'] != 200]
    assert collections.Counter(r['root_uuid'] for r in results) == {
        root: 3 for root in roots}
    for r in results[:6]:
        assert held(rpc, r['consumer_uuid']) == r['allocations']
    assert_fault(claim(rpc, str(uuid.uuid4()), wanting(name)), 409,
                 'capacity.exceeded')


def test_a_class_only_sharing_providers_offer_searches_every_tree(rpc):
    from tests.functional.test_claims import _decorate
    disk = slot_class(rpc)
    cpu = slot_class(rpc)
    aggregate = str(uuid.uuid4())
    compute, gen = provider(rpc, {cpu: {'total': 4}})
    _decorate(compute, gen, aggregates=[aggregate])
    pool, gen = provider(rpc, {disk: {'total': 100}})
    _decorate(pool, gen, traits=['MISC_SHARES_VIA_AGGREGATE'],
              aggregates=[aggregate])
    # No class of the request is kept in a tree: no window can rank it.
    placed = claim(rpc, str(uuid.uuid4()),
                   {'groups': [{'resources': {disk: 10}}]})
    assert placed['status'] == 200, placed
    assert placed['allocations'] == {pool: {disk: 10}}
    # The tree's own class anchors a window; the disk still comes shared.
    placed = claim(rpc, str(uuid.uuid4()),
                   {'groups': [{'resources': {cpu: 1, disk: 10}}]})
    assert placed['root_uuid'] == compute, placed
    assert placed['allocations'] == {compute: {cpu: 1}, pool: {disk: 10}}


def test_room_left_follows_inventory_changes_and_the_audit_agrees(
        rpc, scratch):
    name = slot_class(rpc)
    host, generation = provider(rpc, {name: {'total': 10}})

    def inventories(generation, force=False, **fields):
        item = one(rpc.set_inventories(
            provider_uuid=host, provider_generation=generation,
            inventories={name: dict({'total': 10}, **fields)},
            force=force))
        assert item['status'] == 200, item
        return item['generation']

    def audit_clean():
        run = services.manage('%s/sync.conf' % scratch, 'audit',
                              check=False)
        assert run.returncode == 0, run.stdout + run.stderr

    consumer = str(uuid.uuid4())
    assert allocate(rpc, consumer, {host: {name: 4}})['status'] == 200
    audit_clean()
    generation = one(rpc.get_providers(uuids=[host]))['generation']
    generation = inventories(generation, reserved=2, allocation_ratio=1.5)
    audit_clean()
    # 12 units of room at most now: 8 more fit, 9 do not.
    assert_fault(claim(rpc, str(uuid.uuid4()), wanting(name, 9)), 409,
                 'capacity.exceeded')
    generation = inventories(generation, total=3, force=True)
    audit_clean()
    assert_fault(claim(rpc, str(uuid.uuid4()), wanting(name, 1)), 409,
                 'capacity.exceeded')
    current = one(rpc.get_allocations(consumer_uuids=[consumer]))
    assert allocate(rpc, consumer, {}, generation=current[
        'consumer_generation'])['status'] == 200
    audit_clean()
    generation = one(rpc.get_providers(uuids=[host]))['generation']
    item = one(rpc.set_inventories(provider_uuid=host,
                                   provider_generation=generation,
                                   inventories={}))
    assert item['status'] == 200, item
    audit_clean()


def test_eight_isolated_groups_on_hosts_of_eight_devices(rpc):
    """Placement bug 2126751: 8^8 combinations per host, walked lazily
    (candidates stop at the limit) or as one (a claim)."""
    device = slot_class(rpc)
    trees = []
    for _ in range(2):
        root, _gen = provider(rpc)
        trees.append((root, {provider(rpc, {device: {'total': 1}},
                                      parent=root)[0] for _ in range(8)}))
    request = {'groups': [{'resources': {device: 1}} for _ in range(8)],
               'group_policy': 'isolate'}
    found = rpc.call('get_allocation_candidates', request=request, limit=10)
    assert found['status'] == 200 and len(found['items']) == 10
    for candidate in found['items']:
        assert len(candidate['allocations']) == 8
        assert set(candidate['allocations']) in [ds for _r, ds in trees]
    placed = [claim(rpc, str(uuid.uuid4()), request) for _ in range(2)]
    assert [p['status'] for p in placed] == [200, 200], placed
    assert {p['root_uuid'] for p in placed} == {r for r, _ds in trees}
    for p in placed:
        assert p['allocations'] == {d: {device: 1} for d in dict(trees)[
            p['root_uuid']]}
    assert_fault(claim(rpc, str(uuid.uuid4()), request), 409,
                 'capacity.exceeded')
