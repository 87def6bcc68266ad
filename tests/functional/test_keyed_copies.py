"""Copies of one keyed call in flight at once, as when a caller timed out
and sent it again while the first copy still waited in another worker:
over room for fewer items than are sent, while room comes and goes,
across three worker processes on every backend. Every copy of a key
answers alike, and the books hold exactly what those answers say
(design §3 "Idempotent retries": the first answer, refusals included)."""

import collections
import random
import threading
import uuid

from allocworker.allocations import refusals
from allocworker.allocations import writes
from allocworker import codes
from tests.functional.helpers import (alloc_item, allocate, in_parallel,
                                      one, provider, usage)

ITEMS = 12
COPIES = 4
ROOM = 6
CHURN = 3


def _churn(rpc, host, consumer, stop):
    """Take CHURN of the room and give it back, over and over."""
    generation = None
    while not stop.is_set():
        taken = allocate(rpc, consumer, {host: {'VCPU': CHURN}}, generation)
        if taken['status'] != 200:
            continue
        freed = allocate(rpc, consumer, {}, taken['consumer_generation'])
        assert freed['status'] == 200, freed
        generation = None


def test_copies_of_keyed_items_racing_for_room_all_answer_alike(rpc, ids):
    host, _ = provider(rpc, {'VCPU': {'total': ROOM}})
    items = [alloc_item(str(uuid.uuid4()), {host: {'VCPU': 1}},
                        idempotency_key=str(uuid.uuid4()))
             for _ in range(ITEMS)]
    copies = [item for item in items for _ in range(COPIES)]
    random.Random(7).shuffle(copies)
    stop = threading.Event()
    churner = threading.Thread(target=_churn,
                               args=(rpc, host, ids.churner, stop))
    churner.start()
    try:
        answered = in_parallel(lambda item: one(rpc.allocate(items=[item])),
                               copies, clients=16)
    finally:
        stop.set()
        churner.join(60)
    per_key = collections.defaultdict(list)
    for item, answer in zip(copies, answered):
        per_key[item['idempotency_key']].append(answer)
    for key, answers in per_key.items():
        assert all(a == answers[0] for a in answers), (key, answers)
    firsts = {item['consumer_uuid']: per_key[item['idempotency_key']][0]
              for item in items}
    statuses = collections.Counter((a['status'], a.get('code'))
                                   for a in firsts.values())
    assert set(statuses) <= {(200, None), (409, 'capacity.exceeded')}
    # Never more room than ROOM, never less than ROOM - CHURN.
    assert ROOM - CHURN <= statuses[(200, None)] <= ROOM, statuses
    books = rpc.get_allocations(consumer_uuids=list(firsts))['items']
    for read in books:
        first = firsts[read['consumer_uuid']]
        if first['status'] == 200:
            assert read['status'] == 200, (first, read)
            assert read['consumer_generation'] == \
                first['consumer_generation']
        else:
            assert read['status'] == 404, (first, read)
    assert usage(rpc, host) == {'VCPU': statuses[(200, None)]}


def test_a_refusal_gives_way_to_the_answer_a_copy_stored_first(
        rpc, ids, service_layer):
    """The window between a refusal's transaction and the one that
    remembers it: a copy that committed in it wins, and the caller is
    told what the books hold."""
    host, _ = provider(rpc, {'VCPU': {'total': 2}})
    item = alloc_item(ids.consumer, {host: {'VCPU': 1}},
                      idempotency_key='first-' + ids.key)
    written = one(rpc.allocate(items=[item]))
    assert written['status'] == 200
    request = writes.parse_item(item, 0)
    refusal = codes.Fault(codes.CAPACITY_EXCEEDED, 'items[0]: no room').item(
        consumer_uuid=ids.consumer)
    assert refusals.settle([request], [dict(refusal)]) == [written]
    # A key nobody stored keeps the refusal, and a later copy replays it.
    other = alloc_item(ids.other, {host: {'VCPU': 1}},
                       idempotency_key='second-' + ids.key)
    assert refusals.settle([writes.parse_item(other, 0)], [dict(
        refusal, consumer_uuid=ids.other)]) == [dict(
            refusal, consumer_uuid=ids.other)]
    assert one(rpc.allocate(items=[other])) == dict(
        refusal, consumer_uuid=ids.other)
    assert usage(rpc, host) == {'VCPU': 1}
