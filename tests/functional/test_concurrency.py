"""Many real clients against several worker processes at once: the
invariants hold under races (no overcommit, no lost or phantom consumer,
one winner per generation, reads never fail)."""

import collections
from concurrent import futures
import threading
import uuid

from tests.functional.helpers import (alloc_item, allocate, in_parallel,
                                      one, provider, usage)

CLIENTS = 16


def test_storm_for_the_last_units_never_overcommits(rpc):
    capacity = 20
    host, _ = provider(rpc, {'VCPU': {'total': capacity}})
    consumers = [str(uuid.uuid4()) for _ in range(64)]
    results = in_parallel(
        lambda c: allocate(rpc, c, {host: {'VCPU': 1}}), consumers)
    outcomes = collections.Counter((r['status'], r.get('code'))
                                   for r in results)
    assert outcomes == {(200, None): capacity,
                        (409, 'capacity.exceeded'): 64 - capacity}, outcomes
    assert usage(rpc, host) == {'VCPU': capacity}
    winners = {r['consumer_uuid'] for r in results if r['status'] == 200}
    found = rpc.get_allocations(consumer_uuids=consumers)['items']
    # No lost consumer (every 200 is readable), no phantom (every failure
    # left nothing behind).
    assert {i['consumer_uuid'] for i in found if i['status'] == 200} == \
        winners
    assert all(i['status'] == 404 for i in found
               if i['consumer_uuid'] not in winners)


def test_storm_of_batches_never_overcommits(rpc):
    host, _ = provider(rpc, {'VCPU': {'total': 50}})

    def batch(_):
        return rpc.allocate(atomic=False, items=[
            alloc_item(str(uuid.uuid4()), {host: {'VCPU': 1}})
            for _ in range(10)])['items']

    items = [i for b in in_parallel(batch, range(CLIENTS)) for i in b]
    assert sum(i['status'] == 200 for i in items) == 50
    assert all(i.get('code') == 'capacity.exceeded' for i in items
               if i['status'] != 200)
    assert usage(rpc, host) == {'VCPU': 50}


def test_racing_writers_with_one_generation_have_one_winner(rpc, ids):
    host, _ = provider(rpc, {'VCPU': {'total': 100}})
    made = allocate(rpc, ids.consumer, {host: {'VCPU': 1}})
    results = in_parallel(
        lambda n: allocate(rpc, ids.consumer, {host: {'VCPU': n}},
                           made['consumer_generation']),
        range(2, 2 + CLIENTS))
    winners = [r for r in results if r['status'] == 200]
    assert len(winners) == 1, results
    losers = [r for r in results if r['status'] != 200]
    assert {(r['status'], r['code']) for r in losers} == {
        (409, 'consumer.generation_conflict')}
    read = one(rpc.get_allocations(consumer_uuids=[ids.consumer]))
    assert read['consumer_generation'] == winners[0]['consumer_generation']
    amount = read['allocations'][host]['resources']['VCPU']
    assert usage(rpc, host) == {'VCPU': amount}


def test_racing_creators_of_one_new_consumer_have_one_winner(rpc, ids):
    host, _ = provider(rpc, {'VCPU': {'total': 100}})
    consumer = ids.consumer  # made once, before the threads share it
    results = in_parallel(
        lambda n: allocate(rpc, consumer, {host: {'VCPU': n}}),
        range(1, 1 + CLIENTS))
    assert sum(r['status'] == 200 for r in results) == 1, results
    assert all(r.get('code') == 'consumer.generation_conflict'
               for r in results if r['status'] != 200)


def test_generations_are_unique_under_concurrent_writes(rpc):
    host, _ = provider(rpc, {'VCPU': {'total': 1000}})
    consumer = str(uuid.uuid4())
    seen = []
    lock = threading.Lock()

    def writer(_):
        generation = None
        for n in range(1, 6):
            item = allocate(rpc, consumer, {host: {'VCPU': n}}, generation)
            generation = item['consumer_generation']
            if item['status'] == 200:
                with lock:
                    seen.append(generation)

    in_parallel(writer, range(8), clients=8)
    assert seen and len(seen) == len(set(seen)), seen


def test_reads_never_fail_while_consumers_are_deleted(rpc):
    host, _ = provider(rpc, {'VCPU': {'total': 1000}})
    consumers = {}
    for _ in range(60):
        consumer = str(uuid.uuid4())
        consumers[consumer] = allocate(rpc, consumer, {host: {'VCPU': 1}})[
            'consumer_generation']
    uuids = list(consumers)
    done = threading.Event()
    failures = []

    def reader(_):
        reads = 0
        while not done.is_set() or reads < 3:
            reads += 1
            answer = rpc.get_allocations(consumer_uuids=uuids)
            for item in answer['items']:
                ok = (item['status'] == 200 and
                      item['allocations'][host]['resources'] == {'VCPU': 1}
                      ) or item.get('code') == 'consumer.not_found'
                if not ok:
                    failures.append(item)
            listing = rpc.list_allocations(provider_uuid=host)
            if listing['status'] != 200 or any(
                    i['status'] != 200 or i['resources'] != {'VCPU': 1}
                    for i in listing['items']):
                failures.append(listing)
            used = one(rpc.get_usages(provider_uuids=[host]))
            if used['status'] != 200 or \
                    used['usages']['VCPU'] > len(uuids):
                failures.append(used)

    def deleter(chunk):
        for consumer in chunk:
            item = allocate(rpc, consumer, {}, consumers[consumer])
            if item['status'] != 200:
                failures.append(item)

    with futures.ThreadPoolExecutor(CLIENTS) as pool:
        readers = [pool.submit(reader, n) for n in range(8)]
        deleters = [pool.submit(deleter, uuids[n::8]) for n in range(8)]
        for f in deleters:
            f.result()
        done.set()
        for f in readers:
            f.result()
    assert failures == []
    assert usage(rpc, host) == {'VCPU': 0}
    assert rpc.list_allocations(provider_uuid=host)['items'] == []


def test_books_are_clean_after_the_storms(rpc, scratch):
    """Runs last in this module: every invariant, counters included,
    holds after all the races above."""
    from tests.functional import services
    result = services.manage('%s/sync.conf' % scratch, 'audit',
                             '--grace-seconds', '600', check=False)
    assert result.returncode == 0, result.stdout + result.stderr
