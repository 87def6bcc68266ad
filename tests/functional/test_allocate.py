"""allocate and get_allocations over RabbitMQ, on every backend, through
worker processes started as a user starts them (design §1–§3)."""

from tests.functional.helpers import (alloc_item, allocate, assert_fault,
                                      one, provider, usage)


# -- the lessons of design §1 -------------------------------------------

def test_lesson_failed_first_allocation_leaves_no_phantom_consumer(rpc, ids):
    host, _ = provider(rpc, {'VCPU': {'total': 4}})
    failed = allocate(rpc, ids.consumer, {host: {'VCPU': 5}})
    assert_fault(failed, 409, 'capacity.exceeded')
    assert one(rpc.get_allocations(
        consumer_uuids=[ids.consumer]))['status'] == 404
    # The same retry, still claiming the consumer does not exist, succeeds.
    retried = allocate(rpc, ids.consumer, {host: {'VCPU': 4}})
    assert retried['status'] == 200
    assert isinstance(retried['consumer_generation'], int)


def test_lesson_emptied_consumer_no_longer_exists(rpc, ids):
    host, _ = provider(rpc, {'VCPU': {'total': 4}})
    made = allocate(rpc, ids.consumer, {host: {'VCPU': 1}})
    emptied = allocate(rpc, ids.consumer, {}, made['consumer_generation'])
    assert emptied == {'consumer_uuid': ids.consumer, 'status': 200,
                       'consumer_generation': None}
    read = one(rpc.get_allocations(consumer_uuids=[ids.consumer]))
    assert_fault(read, 404, 'consumer.not_found')
    # It does not exist, so only a caller who says so may create it again.
    stale = allocate(rpc, ids.consumer, {host: {'VCPU': 1}},
                     made['consumer_generation'])
    assert_fault(stale, 409, 'consumer.generation_conflict')
    assert stale['consumer_generation'] is None


def test_lesson_generations_never_reused_across_delete_and_recreate(rpc, ids):
    host, _ = provider(rpc, {'VCPU': {'total': 4}})
    seen = []
    generation = None
    for _ in range(3):
        made = allocate(rpc, ids.consumer, {host: {'VCPU': 1}}, generation)
        seen.append(made['consumer_generation'])
        changed = allocate(rpc, ids.consumer, {host: {'VCPU': 2}},
                           made['consumer_generation'])
        seen.append(changed['consumer_generation'])
        generation = allocate(rpc, ids.consumer, {},
                              changed['consumer_generation'])[
            'consumer_generation']
    assert len(set(seen)) == len(seen), seen
    # And an old generation can never pass the compare-and-swap again.
    made = allocate(rpc, ids.consumer, {host: {'VCPU': 1}})
    for old in seen:
        assert_fault(allocate(rpc, ids.consumer, {}, old), 409,
                     'consumer.generation_conflict')
    assert made['consumer_generation'] not in seen


def test_empty_write_for_unknown_consumer_stores_nothing(rpc, ids):
    item = allocate(rpc, ids.consumer, {})
    assert item == {'consumer_uuid': ids.consumer, 'status': 200,
                    'consumer_generation': None}
    assert one(rpc.get_allocations(
        consumer_uuids=[ids.consumer]))['status'] == 404


def test_generation_conflict_carries_current_generation(rpc, ids):
    host, _ = provider(rpc, {'VCPU': {'total': 4}})
    made = allocate(rpc, ids.consumer, {host: {'VCPU': 1}})
    conflict = allocate(rpc, ids.consumer, {host: {'VCPU': 2}})
    assert_fault(conflict, 409, 'consumer.generation_conflict')
    assert conflict['consumer_generation'] == made['consumer_generation']
    retried = allocate(rpc, ids.consumer, {host: {'VCPU': 2}},
                       conflict['consumer_generation'])
    assert retried['status'] == 200


def test_get_allocations_answers_the_contract(rpc, ids):
    host, _ = provider(rpc, {'VCPU': {'total': 4}, 'MEMORY_MB': {
        'total': 2048}})
    made = allocate(rpc, ids.consumer, {host: {'VCPU': 2, 'MEMORY_MB': 512}},
                    consumer_type='MIGRATION', project='p1', user='u1')
    answer = rpc.get_allocations(consumer_uuids=[ids.consumer, ids.missing])
    assert answer['status'] == 207
    assert answer['request_id'] == rpc.context['request_id']
    found, missing = answer['items']
    provider_generation = one(rpc.get_providers(uuids=[host]))['generation']
    assert found == {
        'consumer_uuid': ids.consumer, 'status': 200,
        'consumer_generation': made['consumer_generation'],
        'project_id': 'p1', 'user_id': 'u1', 'consumer_type': 'MIGRATION',
        'allocations': {host: {'resources': {'VCPU': 2, 'MEMORY_MB': 512},
                               'generation': provider_generation}}}
    assert_fault(missing, 404, 'consumer.not_found')
    assert missing['consumer_uuid'] == ids.missing


def test_replace_semantics_moves_a_consumer_between_providers(rpc, ids):
    a, _ = provider(rpc, {'VCPU': {'total': 4}})
    b, _ = provider(rpc, {'VCPU': {'total': 4}})
    made = allocate(rpc, ids.consumer, {a: {'VCPU': 3}})
    moved = allocate(rpc, ids.consumer, {b: {'VCPU': 3}},
                     made['consumer_generation'])
    assert moved['status'] == 200
    assert usage(rpc, a) == {'VCPU': 0}
    assert usage(rpc, b) == {'VCPU': 3}


# -- capacity ----------------------------------------------------------------

def test_capacity_uses_reserved_and_allocation_ratio(rpc, ids):
    host, _ = provider(rpc, {'VCPU': {'total': 10, 'reserved': 2,
                                      'allocation_ratio': 1.5}})
    assert allocate(rpc, ids.first, {host: {'VCPU': 12}})['status'] == 200
    assert_fault(allocate(rpc, ids.second, {host: {'VCPU': 1}}), 409,
                 'capacity.exceeded')


def test_unit_rules(rpc, ids):
    host, _ = provider(rpc, {'VCPU': {'total': 64, 'min_unit': 2,
                                      'max_unit': 16, 'step_size': 2}})
    for amount in (1, 3, 18):
        assert_fault(allocate(rpc, ids.consumer, {host: {'VCPU': amount}}),
                     409, 'allocation.unit_violation')
    assert allocate(rpc, ids.consumer, {host: {'VCPU': 16}})['status'] == 200


def test_class_without_inventory(rpc, ids):
    host, _ = provider(rpc, {'VCPU': {'total': 4}})
    assert_fault(allocate(rpc, ids.consumer, {host: {'DISK_GB': 1}}), 409,
                 'inventory.not_found')


def test_unknown_class_and_provider(rpc, ids):
    host, _ = provider(rpc, {'VCPU': {'total': 4}})
    assert_fault(allocate(rpc, ids.consumer, {host: {'CUSTOM_NOPE': 1}}),
                 400, 'resource_class.not_found')
    assert_fault(allocate(rpc, ids.consumer, {ids.nowhere: {'VCPU': 1}}),
                 400, 'provider.not_found')


def test_over_capacity_provider_accepts_writes_that_do_not_add_usage(
        rpc, ids):
    host, generation = provider(rpc, {'VCPU': {'total': 8},
                                      'MEMORY_MB': {'total': 1024}})
    made = allocate(rpc, ids.consumer, {host: {'VCPU': 6, 'MEMORY_MB': 512}})
    shrunk = one(rpc.set_inventories(
        provider_uuid=host, provider_generation=one(rpc.get_providers(
            uuids=[host]))['generation'],
        inventories={'VCPU': {'total': 4}, 'MEMORY_MB': {'total': 1024}},
        force=True))
    assert shrunk['status'] == 200
    # Growing the over-committed class is refused...
    grow_vcpu = {host: {'VCPU': 8, 'MEMORY_MB': 512}}
    assert_fault(allocate(rpc, ids.consumer, grow_vcpu,
                          made['consumer_generation']),
                 409, 'capacity.exceeded')
    # ...while keeping it and growing another class is fine,
    grown = allocate(rpc, ids.consumer, {host: {'VCPU': 6, 'MEMORY_MB': 1024}},
                     made['consumer_generation'])
    assert grown['status'] == 200
    # as is shrinking it, even while still above capacity.
    shrink_vcpu = {host: {'VCPU': 5, 'MEMORY_MB': 1024}}
    smaller = allocate(rpc, ids.consumer, shrink_vcpu,
                       grown['consumer_generation'])
    assert smaller['status'] == 200
    assert usage(rpc, host) == {'VCPU': 5, 'MEMORY_MB': 1024}


# -- batches -------------------------------------------------------------

def test_independent_items_do_not_affect_each_other(rpc, ids):
    host, _ = provider(rpc, {'VCPU': {'total': 4}})
    answer = rpc.allocate(items=[
        alloc_item(ids.a, {host: {'VCPU': 3}}),
        alloc_item(ids.b, {host: {'VCPU': 3}}),
        alloc_item(ids.c, {host: {'VCPU': 1}}),
        'not an item',
    ])
    assert answer['status'] == 207
    a, b, c, bad = answer['items']
    assert a['status'] == 200 and c['status'] == 200
    assert_fault(b, 409, 'capacity.exceeded')
    assert_fault(bad, 400, 'invalid_request')
    assert usage(rpc, host) == {'VCPU': 4}


def test_atomic_batch_judges_the_combined_result(rpc, ids):
    """Moving allocations between two consumers on a full provider."""
    host, _ = provider(rpc, {'VCPU': {'total': 4}})
    old = allocate(rpc, ids.old, {host: {'VCPU': 4}})
    answer = rpc.allocate(atomic=True, items=[
        alloc_item(ids.new, {host: {'VCPU': 4}}),
        alloc_item(ids.old, {}, old['consumer_generation']),
    ])
    assert answer['status'] == 200, answer
    assert [i['status'] for i in answer['items']] == [200, 200]
    assert answer['items'][0]['consumer_generation'] is not None
    assert answer['items'][1]['consumer_generation'] is None
    assert usage(rpc, host) == {'VCPU': 4}


def test_atomic_batch_failure_blames_the_culprit_and_aborts_the_rest(
        rpc, ids):
    host, _ = provider(rpc, {'VCPU': {'total': 4}})
    answer = rpc.allocate(atomic=True, items=[
        alloc_item(ids.a, {host: {'VCPU': 2}}),
        alloc_item(ids.b, {host: {'VCPU': 'two'}}),
        alloc_item(ids.c, {host: {'VCPU': 1}}),
    ])
    assert answer['status'] == 207
    a, b, c = answer['items']
    assert_fault(a, 424, 'batch.aborted')
    assert_fault(b, 400, 'invalid_request')
    assert_fault(c, 424, 'batch.aborted')
    assert usage(rpc, host) == {'VCPU': 0}


def test_atomic_capacity_failure_blames_every_item_that_adds_usage(rpc, ids):
    full, _ = provider(rpc, {'VCPU': {'total': 4}})
    other, _ = provider(rpc, {'VCPU': {'total': 4}})
    answer = rpc.allocate(atomic=True, items=[
        alloc_item(ids.a, {full: {'VCPU': 3}}),
        alloc_item(ids.b, {other: {'VCPU': 1}}),
        alloc_item(ids.c, {full: {'VCPU': 3}}),
    ])
    a, b, c = answer['items']
    assert_fault(a, 409, 'capacity.exceeded')
    assert_fault(b, 424, 'batch.aborted')
    assert_fault(c, 409, 'capacity.exceeded')
    assert usage(rpc, full) == {'VCPU': 0}
    assert usage(rpc, other) == {'VCPU': 0}


def test_same_consumer_twice_in_one_call(rpc, ids):
    host, _ = provider(rpc, {'VCPU': {'total': 4}})
    for atomic in (False, True):
        answer = rpc.allocate(atomic=atomic, items=[
            alloc_item(ids.twice, {host: {'VCPU': 1}}),
            alloc_item(ids.once, {host: {'VCPU': 1}}),
            alloc_item(ids.twice, {host: {'VCPU': 2}}),
        ])
        first, other, second = answer['items']
        assert_fault(first, 400, 'invalid_request')
        assert_fault(second, 400, 'invalid_request')
        assert other['status'] == (424 if atomic else 200)
    assert usage(rpc, host) == {'VCPU': 1}


def test_too_many_items_fail_the_whole_request(rpc, ids):
    answer = rpc.allocate(items=[alloc_item(ids.consumer, {})] * 1001)
    assert answer['status'] == 400
    assert answer['code'] == 'invalid_request'
    assert 'max_batch_items' in answer['detail']
    assert answer['items'] == []
    assert answer['request_id'] == rpc.context['request_id']


def test_context_without_request_id_still_gets_one(rpc, ids):
    answer = rpc.call('get_allocations', context={},
                      consumer_uuids=[ids.consumer])
    assert answer['request_id'].startswith('req-')
    answer = rpc.call('get_allocations',
                      context={'request_id': 'req-mine', 'bogus': 1},
                      consumer_uuids=[ids.consumer])
    assert answer['request_id'] == 'req-mine'


# -- idempotent retries -----------------------------------------------------

def test_repeat_with_same_key_returns_first_answer_and_writes_nothing(
        rpc, ids):
    host, _ = provider(rpc, {'VCPU': {'total': 10}})
    item = alloc_item(ids.consumer, {host: {'VCPU': 2}},
                      idempotency_key='boot-' + ids.key)
    first = one(rpc.allocate(items=[item]))
    assert first['status'] == 200
    again = one(rpc.allocate(items=[item]))
    assert again == first
    assert usage(rpc, host) == {'VCPU': 2}
    changed = dict(item, allocations={host: {'VCPU': 3}})
    assert_fault(one(rpc.allocate(items=[changed])), 409,
                 'idempotency.key_reused')
    assert usage(rpc, host) == {'VCPU': 2}


def test_same_key_twice_in_one_call_is_invalid(rpc, ids):
    host, _ = provider(rpc, {'VCPU': {'total': 10}})
    answer = rpc.allocate(items=[
        alloc_item(ids.a, {host: {'VCPU': 1}}, idempotency_key='k-' + ids.k),
        alloc_item(ids.b, {host: {'VCPU': 1}}, idempotency_key='k-' + ids.k)])
    assert [i.get('code') for i in answer['items']] == [
        'invalid_request', 'invalid_request']


def test_refused_keyed_item_answers_its_refusal_again_and_writes_nothing(
        rpc, ids):
    """A refusal is the key's first answer too: a late copy of the call
    (queued while its caller timed out and sent it again) must not write
    what its caller was told was refused, even once there is room."""
    host, _ = provider(rpc, {'VCPU': {'total': 1}})
    blocker = allocate(rpc, ids.blocker, {host: {'VCPU': 1}})
    item = alloc_item(ids.consumer, {host: {'VCPU': 1}},
                      idempotency_key='retry-' + ids.key)
    refused = one(rpc.allocate(items=[item]))
    assert_fault(refused, 409, 'capacity.exceeded')
    allocate(rpc, ids.blocker, {}, blocker['consumer_generation'])
    assert one(rpc.allocate(items=[item])) == refused
    assert one(rpc.get_allocations(
        consumer_uuids=[ids.consumer]))['status'] == 404
    assert usage(rpc, host) == {'VCPU': 0}
    renewed = dict(item, idempotency_key='again-' + ids.key)
    assert one(rpc.allocate(items=[renewed]))['status'] == 200


def test_refused_atomic_batch_answers_its_refusal_again(rpc, ids):
    host, _ = provider(rpc, {'VCPU': {'total': 1}})
    blocker = allocate(rpc, ids.blocker, {host: {'VCPU': 1}})
    items = [alloc_item(ids.a, {host: {'VCPU': 1}},
                        idempotency_key='a-' + ids.key),
             alloc_item(ids.b, {}, idempotency_key='b-' + ids.key)]
    first = rpc.allocate(items=items, atomic=True)['items']
    assert [(i['status'], i['code']) for i in first] == [
        (409, 'capacity.exceeded'), (424, 'batch.aborted')]
    allocate(rpc, ids.blocker, {}, blocker['consumer_generation'])
    assert rpc.allocate(items=items, atomic=True)['items'] == first
    assert usage(rpc, host) == {'VCPU': 0}


def test_atomic_batch_refused_before_its_transaction_keeps_no_answer(
        rpc, ids):
    """Its valid items' 424 came from another item's bad input, not from
    the books: sent again, corrected, under the same keys, it writes."""
    host, _ = provider(rpc, {'VCPU': {'total': 2}})
    good = alloc_item(ids.a, {host: {'VCPU': 1}},
                      idempotency_key='good-' + ids.key)
    bad = alloc_item(ids.b, {host: {'VCPU': -1}},
                     idempotency_key='bad-' + ids.key)
    first = rpc.allocate(items=[good, bad], atomic=True)['items']
    assert [i['status'] for i in first] == [424, 400]
    fixed = dict(bad, allocations={host: {'VCPU': 1}})
    again = rpc.allocate(items=[good, fixed], atomic=True)['items']
    assert [i['status'] for i in again] == [200, 200], again
    assert usage(rpc, host) == {'VCPU': 2}


def test_audit_catches_a_usage_counter_that_drifted(rpc, ids, database,
                                                    scratch):
    import json
    import sqlalchemy as sa
    from tests.functional import services
    host, _ = provider(rpc, {'VCPU': {'total': 10}})
    allocate(rpc, ids.consumer, {host: {'VCPU': 3}})
    engine = sa.create_engine(database)
    # The room left moves with the counter, as a write would move it.
    drift = ('UPDATE usages SET used = used + %d, free = free - %d WHERE '
             'provider_id = (SELECT id FROM providers WHERE uuid = \'{}\')'
             .format(host))
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql(drift % (7, 7))
        broken = services.manage('%s/sync.conf' % scratch, 'audit',
                                 '--format', 'json', check=False)
        assert broken.returncode == 1
        breaches = json.loads(broken.stdout)['breaches']
        assert [b['invariant'] for b in breaches] == [
            'usage counter differs from the allocations']
        assert breaches[0]['rows'] == [{
            'provider_uuid': host, 'resource_class': 'VCPU', 'counted': 10,
            'allocated': 3}]
    finally:
        with engine.begin() as conn:
            conn.exec_driver_sql(drift % (-7, -7))
        engine.dispose()
    assert services.manage('%s/sync.conf' % scratch, 'audit').returncode == 0


def test_audit_catches_room_left_that_drifted(rpc, ids, database, scratch):
    import json
    import sqlalchemy as sa
    from tests.functional import services
    host, _ = provider(rpc, {'VCPU': {'total': 10, 'allocation_ratio': 1.5}})
    allocate(rpc, ids.consumer, {host: {'VCPU': 3}})
    engine = sa.create_engine(database)
    drift = ('UPDATE usages SET free = free + %d WHERE provider_id = '
             '(SELECT id FROM providers WHERE uuid = \'{}\')'.format(host))
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql(drift % 1)
        broken = services.manage('%s/sync.conf' % scratch, 'audit',
                                 '--format', 'json', check=False)
        assert broken.returncode == 1
        breaches = json.loads(broken.stdout)['breaches']
        assert [b['invariant'] for b in breaches] == [
            'room left differs from capacity and usage, or is missing']
        assert breaches[0]['rows'][0]['free'] == 13
        assert breaches[0]['rows'][0]['room'] == 12
        # What a rolling upgrade from a release without it needs after.
        fixed = services.manage('%s/sync.conf' % scratch, 'db',
                                'refresh-room')
        assert 'corrected on 1 usage' in fixed.stdout
    finally:
        engine.dispose()
    assert services.manage('%s/sync.conf' % scratch, 'audit').returncode == 0
