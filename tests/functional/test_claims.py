"""Scheduling over RPC (1.3): allocation candidates, and claims that pick
and write in one transaction, under storms of concurrent claims against
several worker processes, on every backend.

Each test counts its slots in a resource class of its own, so candidates
of other tests sharing the database never match.
"""

import collections
import threading
import uuid

import pytest

from tests.functional.helpers import (assert_fault, in_parallel, one,
                                      provider, usage)

# The storms send 64 claims at once; 3 worker processes of 5 + 10 pooled
# connections queue them instead of crowding a shared database server.
WORKER_CONFIG = """
[database]
max_overflow = 10
"""


def slot_class(rpc):
    name = 'CUSTOM_SLOT_%s' % uuid.uuid4().hex[:12].upper()
    assert one(rpc.create_resource_class(name=name))['status'] == 200
    return name


def hosts(rpc, name, count, total):
    return [provider(rpc, {name: {'total': total}})[0] for _ in range(count)]


def wanting(name, amount=1, **group):
    return {'groups': [dict(group, resources={name: amount})]}


def claim_item(consumer, request, generation=None, **extra):
    item = {'consumer_uuid': consumer, 'consumer_generation': generation,
            'project_id': 'test-project', 'user_id': 'test-user',
            'request': request}
    item.update(extra)
    return item


def claim(rpc, consumer, request, generation=None, **extra):
    return one(rpc.claim(items=[claim_item(consumer, request, generation,
                                           **extra)]))


def held(rpc, consumer):
    item = one(rpc.get_allocations(consumer_uuids=[consumer]))
    if item['status'] == 404:
        return None
    return {p: a['resources'] for p, a in item['allocations'].items()}


def test_boot_storm_fills_every_slot_without_a_conflict(rpc):
    name = slot_class(rpc)
    roots = hosts(rpc, name, 16, 4)
    consumers = [str(uuid.uuid4()) for _ in range(64)]
    results = in_parallel(lambda c: claim(rpc, c, wanting(name)),
                          consumers, clients=64)
    assert [r['status'] for r in results] == [200] * 64, [
        r for r in results if r['status'] != 200]
    for r in results:
        assert r['allocations'] == {r['root_uuid']: {name: 1}}
        assert held(rpc, r['consumer_uuid']) == r['allocations']
    assert collections.Counter(r['root_uuid'] for r in results) == {
        root: 4 for root in roots}
    assert all(usage(rpc, root) == {name: 4} for root in roots)
    late = claim(rpc, str(uuid.uuid4()), wanting(name))
    assert_fault(late, 409, 'capacity.exceeded')
    assert '16 candidate' not in late['detail']


def test_spread_and_pack_choose_by_free_capacity(rpc):
    name = slot_class(rpc)
    small, big = hosts(rpc, name, 1, 4)[0], hosts(rpc, name, 1, 8)[0]
    assert claim(rpc, str(uuid.uuid4()), wanting(name),
                 strategy='spread')['root_uuid'] == big
    assert claim(rpc, str(uuid.uuid4()), wanting(name),
                 strategy='pack')['root_uuid'] == small
    assert claim(rpc, str(uuid.uuid4()), wanting(name))['root_uuid'] == big


def test_exclude_roots_passes_over_hosts_already_tried(rpc):
    name = slot_class(rpc)
    first, second = hosts(rpc, name, 2, 4)
    placed = claim(rpc, str(uuid.uuid4()), wanting(name),
                   exclude_roots=[first])
    assert placed['root_uuid'] == second
    refused = claim(rpc, str(uuid.uuid4()), wanting(name),
                    exclude_roots=[first, second])
    assert_fault(refused, 409, 'capacity.exceeded')
    assert '2 on excluded roots' in refused['detail']


def _group(rpc, policy, **extra):
    group = str(uuid.uuid4())
    item = one(rpc.create_group(uuid=group, name='g-' + group,
                                policy=policy, **extra))
    assert item['status'] == 200, item
    return group


def test_anti_affinity_storm_lands_on_distinct_roots(rpc):
    name = slot_class(rpc)
    roots = hosts(rpc, name, 16, 2)
    group = _group(rpc, 'anti-affinity', max_per_root=1)
    consumers = [str(uuid.uuid4()) for _ in range(16)]
    results = in_parallel(
        lambda c: claim(rpc, c, wanting(name), group_uuid=group), consumers)
    assert [r['status'] for r in results] == [200] * 16, results
    assert sorted(r['root_uuid'] for r in results) == sorted(roots)
    late = claim(rpc, str(uuid.uuid4()), wanting(name), group_uuid=group)
    assert_fault(late, 409, 'group.policy_violation')
    assert '16 candidate(s) fit' in late['detail']
    assert one(rpc.get_groups(uuids=[group]))['members'] == sorted(consumers)


def test_affinity_claims_share_one_root_while_it_has_room(rpc):
    name = slot_class(rpc)
    hosts(rpc, name, 4, 4)
    group = _group(rpc, 'affinity')
    results = in_parallel(
        lambda c: claim(rpc, c, wanting(name), group_uuid=group),
        [str(uuid.uuid4()) for _ in range(4)])
    assert [r['status'] for r in results] == [200] * 4, results
    assert len({r['root_uuid'] for r in results}) == 1
    full = claim(rpc, str(uuid.uuid4()), wanting(name), group_uuid=group)
    assert_fault(full, 409, 'group.policy_violation')


def test_soft_anti_affinity_spreads_even_when_packing(rpc):
    name = slot_class(rpc)
    roots = hosts(rpc, name, 4, 4)
    group = _group(rpc, 'soft-anti-affinity')
    results = in_parallel(
        lambda c: claim(rpc, c, wanting(name), group_uuid=group,
                        strategy='pack'),
        [str(uuid.uuid4()) for _ in range(5)])
    assert [r['status'] for r in results] == [200] * 5, results
    assert set(r['root_uuid'] for r in results) == set(roots)
    # The fifth could only bend the policy: placed, with the warning.
    assert [r.get('warnings') for r in results].count(
        ['group.soft_policy']) == 1


def test_resize_releases_and_replaces_in_one_transaction(rpc):
    name = slot_class(rpc)
    here, there = hosts(rpc, name, 2, 4)
    consumer, neighbour = str(uuid.uuid4()), str(uuid.uuid4())
    first = claim(rpc, consumer, wanting(name, 4), strategy='pack')
    assert first['status'] == 200, first
    other = claim(rpc, neighbour, wanting(name, 4))
    assert other['status'] == 200, other
    # Both hosts are full: only the consumer's own release makes room.
    smaller = claim(rpc, consumer, wanting(name, 3),
                    first['consumer_generation'])
    assert smaller['status'] == 200, smaller
    assert smaller['root_uuid'] == first['root_uuid']
    assert held(rpc, consumer) == {first['root_uuid']: {name: 3}}
    assert usage(rpc, first['root_uuid']) == {name: 3}
    stale = claim(rpc, consumer, wanting(name, 1),
                  first['consumer_generation'])
    assert_fault(stale, 409, 'consumer.generation_conflict')
    assert stale['consumer_generation'] == smaller['consumer_generation']


def test_resize_storm_never_shows_both_or_neither(rpc):
    name = slot_class(rpc)
    roots = hosts(rpc, name, 2, 2)
    consumer = str(uuid.uuid4())
    placed = claim(rpc, consumer, wanting(name, 2))
    seen, done = [], threading.Event()

    def watch():
        while not done.is_set():
            seen.append(held(rpc, consumer))

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        for _ in range(6):
            # Moving needs the other host: only one host fits 2 units
            # alongside nothing, and exclude_roots forbids staying.
            placed = claim(rpc, consumer, wanting(name, 2),
                           placed['consumer_generation'],
                           exclude_roots=[placed['root_uuid']])
            assert placed['status'] == 200, placed
    finally:
        done.set()
        watcher.join()
    assert seen and all(s is not None and len(s) == 1 and
                        list(s.values()) == [{name: 2}] for s in seen), seen
    assert sorted(usage(rpc, r)[name] for r in roots) == [0, 2]


def test_candidates_answer_in_the_contracts_shape(rpc):
    name = slot_class(rpc)
    root = hosts(rpc, name, 1, 4)[0]
    answer = rpc.get_allocation_candidates(request=wanting(name, 3))
    assert answer['status'] == 200
    assert one(answer) == {
        'status': 200, 'root_uuid': root, 'allocations': {root: {name: 3}},
        'mappings': {'0': [root]},
        'providers': {root: {'capacity': {name: 4}, 'used': {name: 0},
                             'traits': []}}}
    nothing = rpc.get_allocation_candidates(request=wanting(name, 5))
    assert (nothing['status'], nothing['items']) == (200, [])
    bad = rpc.get_allocation_candidates(request={'groups': []})
    assert (bad['status'], bad['code']) == (400, 'invalid_request')
    assert 'request.groups' in bad['detail']


def test_idempotent_repeat_answers_where_the_first_claim_placed(rpc):
    name = slot_class(rpc)
    hosts(rpc, name, 2, 1)
    consumer, key = str(uuid.uuid4()), str(uuid.uuid4())
    first = claim(rpc, consumer, wanting(name), idempotency_key=key)
    assert first['status'] == 200, first
    # Both slots are now taken or free in ways a fresh search would
    # answer differently; the repeat answers the first answer.
    assert claim(rpc, str(uuid.uuid4()), wanting(name))['status'] == 200
    assert claim(rpc, consumer, wanting(name), idempotency_key=key) == first
    reused = claim(rpc, consumer, wanting(name, 2), idempotency_key=key)
    assert_fault(reused, 409, 'idempotency.key_reused')


def test_refused_keyed_claim_answers_its_refusal_again(rpc):
    name = slot_class(rpc)
    hosts(rpc, name, 1, 1)
    taken = claim(rpc, str(uuid.uuid4()), wanting(name))
    consumer, key = str(uuid.uuid4()), str(uuid.uuid4())
    refused = claim(rpc, consumer, wanting(name), idempotency_key=key)
    assert_fault(refused, 409, 'capacity.exceeded')
    freed = rpc.allocate(items=[{
        'consumer_uuid': taken['consumer_uuid'],
        'consumer_generation': taken['consumer_generation'],
        'project_id': 'test-project', 'user_id': 'test-user',
        'allocations': {}}])
    assert one(freed)['status'] == 200
    assert claim(rpc, consumer, wanting(name), idempotency_key=key) == \
        refused
    assert one(rpc.get_allocations(consumer_uuids=[consumer]))['status'] \
        == 404


def test_atomic_claims_commit_together_or_not_at_all(rpc):
    name = slot_class(rpc)
    roots = hosts(rpc, name, 2, 1)
    consumers = [str(uuid.uuid4()) for _ in range(3)]
    answer = rpc.claim(atomic=True, items=[
        claim_item(c, wanting(name)) for c in consumers])
    assert answer['status'] == 207
    assert [i.get('code') for i in answer['items']] == [
        'batch.aborted', 'batch.aborted', 'capacity.exceeded']
    assert all(usage(rpc, r) == {name: 0} for r in roots)
    answer = rpc.claim(atomic=True, items=[
        claim_item(c, wanting(name)) for c in consumers[:2]])
    assert answer['status'] == 200, answer
    assert {i['root_uuid'] for i in answer['items']} == set(roots)


def _decorate(uuid_, generation, traits=(), aggregates=()):
    """Traits and aggregates through the service layer (no RPC call sets
    them; the REST shim does)."""
    from allocworker.providers import aggregates as provider_aggregates
    from allocworker.providers import traits as provider_traits
    if traits:
        item, = provider_traits.set_provider_traits(None, uuid_, generation,
                                                    list(traits))
        assert item['status'] == 200, item
        generation = item['generation']
    if aggregates:
        item, = provider_aggregates.set_provider_aggregates(
            None, uuid_, generation, list(aggregates))
        assert item['status'] == 200, item


@pytest.mark.usefixtures('service_layer')
def test_numbered_groups_isolate_sharing_disk_and_a_trait(rpc):
    from allocworker.providers import traits as provider_traits
    cpu, vf, disk = slot_class(rpc), slot_class(rpc), slot_class(rpc)
    physnet = 'CUSTOM_PHYSNET_%s' % uuid.uuid4().hex[:8].upper()
    assert provider_traits.create_trait(None, physnet)[0]['status'] == 200
    aggregate = str(uuid.uuid4())
    trees = []
    for with_trait in (True, False):
        root, gen = provider(rpc, {cpu: {'total': 8}})
        _decorate(root, gen, aggregates=[aggregate])
        nic1, gen = provider(rpc, {vf: {'total': 4}}, parent=root)
        _decorate(nic1, gen, traits=[physnet] if with_trait else [])
        nic2, _ = provider(rpc, {vf: {'total': 4}}, parent=root)
        trees.append((root, nic1, nic2))
    pool, gen = provider(rpc, {disk: {'total': 100}})
    _decorate(pool, gen, traits=['MISC_SHARES_VIA_AGGREGATE'],
              aggregates=[aggregate])
    request = {'groups': [{'resources': {cpu: 2, disk: 10}},
                          {'resources': {vf: 1}, 'required': [physnet]},
                          {'resources': {vf: 1}}],
               'group_policy': 'isolate'}
    (root, nic1, nic2), other = trees
    placed = claim(rpc, str(uuid.uuid4()), request)
    assert placed['status'] == 200, placed
    assert placed['root_uuid'] == root
    assert placed['allocations'] == {root: {cpu: 2}, pool: {disk: 10},
                                     nic1: {vf: 1}, nic2: {vf: 1}}
    assert usage(rpc, pool) == {disk: 10}
    # Only the first tree has the trait: excluding it leaves nothing.
    refused = claim(rpc, str(uuid.uuid4()), request, exclude_roots=[root])
    assert_fault(refused, 409, 'capacity.exceeded')
    plain = dict(request, groups=[request['groups'][0],
                                  {'resources': {vf: 1}},
                                  {'resources': {vf: 1}}])
    placed = claim(rpc, str(uuid.uuid4()), plain, exclude_roots=[root])
    assert placed['root_uuid'] == other[0], placed
    assert set(placed['allocations']) == {other[0], pool, other[1],
                                          other[2]}


@pytest.mark.usefixtures('service_layer')
def test_candidates_are_read_in_one_snapshot(rpc):
    from allocworker.db import api as db
    from allocworker.db.catalog import providers as db_providers
    name = slot_class(rpc)
    first = hosts(rpc, name, 1, 1)[0]
    with db.snapshot() as conn:
        assert set(db_providers.ids_by_uuid(conn, [first])) == {first}
        later = hosts(rpc, name, 1, 1)[0]
        assert db_providers.ids_by_uuid(conn, [later]) == {}
    with db.snapshot() as conn:
        assert set(db_providers.ids_by_uuid(conn, [later])) == {later}


@pytest.mark.parametrize('atomic', [True, False])
def test_many_instances_in_one_call_spread_evenly(rpc, atomic):
    name = slot_class(rpc)
    roots = hosts(rpc, name, 10, 4)
    items = [claim_item(str(uuid.uuid4()), wanting(name))
             for _ in range(20)]
    answer = rpc.claim(items=items, atomic=atomic)
    assert answer['status'] == 200, answer
    placed = answer['items']
    assert collections.Counter(p['root_uuid'] for p in placed) == {
        root: 2 for root in roots}
    for p in placed[::5]:
        assert held(rpc, p['consumer_uuid']) == p['allocations']


def test_many_instances_in_one_call_pack_host_by_host(rpc):
    name = slot_class(rpc)
    hosts(rpc, name, 10, 4)
    items = [claim_item(str(uuid.uuid4()), wanting(name), strategy='pack')
             for _ in range(20)]
    answer = rpc.claim(items=items, atomic=True)
    assert answer['status'] == 200, answer
    assert sorted(collections.Counter(
        p['root_uuid'] for p in answer['items']).values()) == [4] * 5
    # Past what fits, an atomic call writes nothing.
    more = [claim_item(str(uuid.uuid4()), wanting(name), strategy='pack')
            for _ in range(21)]
    refused = rpc.claim(items=more, atomic=True)
    assert refused['status'] == 207
    codes = collections.Counter(i.get('code') for i in refused['items'])
    assert codes == {'batch.aborted': 20, 'capacity.exceeded': 1}, codes
    assert rpc.claim(items=more[:20], atomic=True)['status'] == 200
