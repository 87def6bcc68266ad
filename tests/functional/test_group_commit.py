"""Concurrent calls sharing transactions (group commit) over the real
RabbitMQ with several worker processes: in storms of single-item calls
where some fail (capacity, generation conflicts, policy, bad input,
reused idempotency keys), every call gets exactly the answer it would get
alone, with its own request id, and the books stay clean. Waits for
events never hold back writes."""

from concurrent import futures
import threading
import uuid

from tests.functional import services
from tests.functional.helpers import (alloc_item, allocate, assert_fault,
                                      one, provider)

CLIENTS = 24
# Few executor threads, so a wait that held one would show.
WORKER_CONFIG = '''
[DEFAULT]
executor_thread_pool_size = 4
'''


def caller(roles, project):
    return {'request_id': 'req-%s' % uuid.uuid4(), 'roles': roles,
            'project_id': project, 'user_id': 'u-' + project}


ADMIN = ['admin']
MEMBER = ['member']


def _storm(rpc, calls):
    """Run (context, items) calls at once; [(context, answer)]."""
    start = threading.Barrier(len(calls))

    def run(call):
        context, items = call
        start.wait()
        return context, rpc.call('allocate', context=context, items=items)

    with futures.ThreadPoolExecutor(len(calls)) as pool:
        return list(pool.map(run, calls))


def _new(host, amount=1, project='p-storm', **extra):
    return alloc_item(str(uuid.uuid4()), {host: {'VCPU': amount}},
                      project=project, user='u-' + project, **extra)


def test_storm_each_call_answers_as_if_alone(rpc, ids):
    big, _ = provider(rpc, {'VCPU': {'total': 10000}})
    small, _ = provider(rpc, {'VCPU': {'total': 10}})
    # Consumers that exist already: one to rewrite at a stale
    # generation, one of another project a member may not touch.
    stale = allocate(rpc, ids.stale, {big: {'VCPU': 1}}, project='p-storm')
    foreign = allocate(rpc, ids.foreign, {big: {'VCPU': 1}},
                       project='p-other')
    expected = []  # (context, items, [(status, code)])
    for n in range(6):
        expected.append((caller(ADMIN, 'p-ops'), [_new(big)],
                         [(200, None)]))
        expected.append((caller(MEMBER, 'p-storm'), [_new(big)],
                         [(200, None)]))
    for n in range(3):
        # More than the provider can ever hold: refused whatever ran
        # before it.
        expected.append((caller(ADMIN, 'p-ops'), [_new(small, 11)],
                         [(409, 'capacity.exceeded')]))
        expected.append((caller(ADMIN, 'p-ops'), [alloc_item(
            ids.stale, {big: {'VCPU': 2}}, stale['consumer_generation'] + 50,
            project='p-storm')], [(409, 'consumer.generation_conflict')]))
        # A member of p-storm may not take over p-other's consumer, even
        # in a transaction shared with admins who may.
        expected.append((caller(MEMBER, 'p-storm'), [alloc_item(
            ids.foreign, {big: {'VCPU': 2}}, foreign['consumer_generation'],
            project='p-storm', user='u-p-storm')], [(403, 'forbidden')]))
        # A member writing another project's new consumer: denied
        # before any transaction.
        expected.append((caller(MEMBER, 'p-storm'),
                         [_new(big, project='p-other')],
                         [(403, 'forbidden')]))
        expected.append((caller(ADMIN, 'p-ops'), [_new(big, 0)],
                         [(400, 'invalid_request')]))
        expected.append((caller(ADMIN, 'p-ops'), [_new(
            big, group_uuid=str(uuid.uuid4()))],
            [(400, 'group.not_found')]))
        # Several items in one call keep their order and their own fates.
        expected.append((caller(ADMIN, 'p-ops'),
                         [_new(big), _new(small, 11), _new(big)],
                         [(200, None), (409, 'capacity.exceeded'),
                          (200, None)]))
    answers = _storm(rpc, [(c, items) for c, items, _ in expected])
    for (context, items, wanted), (sent, answer) in zip(expected, answers):
        assert sent is context
        assert answer['request_id'] == context['request_id'], answer
        got = [(i['status'], i.get('code')) for i in answer['items']]
        assert got == wanted, answer
        assert answer['status'] == (200 if all(
            s == 200 for s, _ in wanted) else 207)
        for position, (item, result) in enumerate(zip(items,
                                                      answer['items'])):
            assert result['consumer_uuid'] == item['consumer_uuid']
            if result['status'] == 200:
                assert isinstance(result['consumer_generation'], int)
            elif result['status'] == 409:
                # Named by its index in its own call, never a slot in
                # the shared transaction.
                assert result['detail'].startswith(
                    'items[%d]' % position), result
    conflicts = [a['items'][0] for _, a in answers
                 if a['items'][0].get('code') ==
                 'consumer.generation_conflict']
    assert {c['consumer_generation'] for c in conflicts} == {
        stale['consumer_generation']}
    # Nothing the refused calls asked for was written.
    held = one(rpc.get_allocations(consumer_uuids=[ids.foreign]))
    assert held['project_id'] == 'p-other'
    assert held['consumer_generation'] == foreign['consumer_generation']
    assert one(rpc.get_usages(provider_uuids=[small]))['usages'] == {
        'VCPU': 0}


def test_storm_on_one_provider_fills_it_exactly(rpc):
    """Calls judged one after the other in a shared transaction see the
    usage the calls before them left: the last units go to exactly as
    many calls as fit, the rest answer capacity.exceeded."""
    host, _ = provider(rpc, {'VCPU': {'total': 10}})
    calls = [(caller(ADMIN, 'p-ops'), [_new(host)]) for _ in range(CLIENTS)]
    answers = _storm(rpc, calls)
    outcomes = sorted((a['items'][0]['status'], a['items'][0].get('code'))
                      for _, a in answers)
    assert outcomes == [(200, None)] * 10 + [
        (409, 'capacity.exceeded')] * (CLIENTS - 10)
    assert one(rpc.get_usages(provider_uuids=[host]))['usages'] == {
        'VCPU': 10}


def test_storm_of_idempotent_retries_writes_once(rpc):
    host, _ = provider(rpc, {'VCPU': {'total': 1000}})
    keyed = [_new(host, idempotency_key='key-%s' % uuid.uuid4())
             for _ in range(8)]
    first = one(rpc.allocate(items=[keyed[0]]))
    # Each item sent three times at once, by three callers, and a
    # different item under a key already answered.
    calls = [(caller(ADMIN, 'p-ops'), [item]) for item in keyed] * 3
    reused = dict(_new(host), idempotency_key=keyed[0]['idempotency_key'])
    calls.append((caller(ADMIN, 'p-ops'), [reused]))
    answers = _storm(rpc, calls)
    by_consumer = {}
    for (context, items), (_, answer) in zip(calls, answers):
        assert answer['request_id'] == context['request_id']
        item = answer['items'][0]
        if items[0] is reused:
            assert_fault(item, 409, 'idempotency.key_reused')
            continue
        assert item['status'] == 200, item
        by_consumer.setdefault(item['consumer_uuid'], set()).add(
            item['consumer_generation'])
    # Every repeat got the first answer: one generation per consumer.
    assert by_consumer[first['consumer_uuid']] == {
        first['consumer_generation']}
    assert len(by_consumer) == len(keyed)
    assert all(len(gens) == 1 for gens in by_consumer.values())
    assert one(rpc.get_usages(provider_uuids=[host]))['usages'] == {
        'VCPU': len(keyed)}


def test_same_consumer_in_concurrent_calls_one_winner(rpc, ids):
    """Two calls about one consumer never share a transaction: with one
    generation, exactly one wins and the others see its generation."""
    host, _ = provider(rpc, {'VCPU': {'total': 1000}})
    first = allocate(rpc, ids.consumer, {host: {'VCPU': 1}})
    calls = [(caller(ADMIN, 'p-ops'), [alloc_item(
        ids.consumer, {host: {'VCPU': n + 2}},
        first['consumer_generation'])]) for n in range(12)]
    answers = [a['items'][0] for _, a in _storm(rpc, calls)]
    winners = [a for a in answers if a['status'] == 200]
    assert len(winners) == 1, answers
    for loser in answers:
        if loser['status'] != 200:
            assert_fault(loser, 409, 'consumer.generation_conflict')
            assert loser['consumer_generation'] == \
                winners[0]['consumer_generation']


def test_concurrent_reads_share_a_snapshot_and_keep_their_own_items(rpc):
    host, _ = provider(rpc, {'VCPU': {'total': 1000}})
    held = [allocate(rpc, str(uuid.uuid4()), {host: {'VCPU': 1}},
                     project='p-read')['consumer_uuid'] for _ in range(6)]
    unknown = str(uuid.uuid4())
    contexts = [caller(MEMBER, 'p-read'), caller(MEMBER, 'p-elsewhere'),
                caller(ADMIN, 'p-ops')] * 6
    start = threading.Barrier(len(contexts))

    def read(context):
        start.wait()
        return rpc.call('get_allocations', context=context,
                        consumer_uuids=held[:3] + [unknown, 'bad'])

    with futures.ThreadPoolExecutor(len(contexts)) as pool:
        answers = list(pool.map(read, contexts))
    for context, answer in zip(contexts, answers):
        assert answer['request_id'] == context['request_id']
        got = [(i['status'], i.get('code')) for i in answer['items']]
        own = 200 if context['project_id'] != 'p-elsewhere' else 403
        assert got == [(own, None if own == 200 else 'forbidden')] * 3 + [
            (404, 'consumer.not_found'), (400, 'invalid_request')]


def test_waits_do_not_hold_back_writes(rpc):
    """More waiters than executor threads: allocates still answer while
    every wait is still waiting."""
    host, _ = provider(rpc, {'VCPU': {'total': 1000}})
    waiters = 15  # more than 3 processes x 4 executor threads
    started = threading.Barrier(waiters + 1)
    pool = futures.ThreadPoolExecutor(waiters)

    def wait():
        started.wait()
        return rpc.call('wait_for_events', rpc_timeout=60,
                        consumer_uuid=str(uuid.uuid4()),
                        names=['network-vif-plugged'], timeout=15)

    waits = [pool.submit(wait) for _ in range(waiters)]
    started.wait()
    try:
        for _ in range(3):
            item = allocate(rpc, str(uuid.uuid4()), {host: {'VCPU': 1}})
            assert item['status'] == 200, item
        # Every wait was still waiting when the writes were answered.
        assert not any(w.done() for w in waits)
    finally:
        answers = [w.result() for w in waits]
        pool.shutdown()
    for answer in answers:
        assert_fault(one(answer), 408, 'event.timeout')


def test_books_are_clean_after_the_storms(rpc, scratch):
    """Runs last in this module."""
    result = services.manage('%s/sync.conf' % scratch, 'audit',
                             '--grace-seconds', '600', check=False)
    assert result.returncode == 0, result.stdout + result.stderr
