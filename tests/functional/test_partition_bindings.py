"""Two deployments' service users and an operator over RPC, one
allocworker (design §3 "Partitions"): each service user is bound to its
partition by ``[partitions] bindings`` and sees and writes only it and
``shared``; the operator (unbound, admin) sees every partition and may
narrow a search to some. Every backend, real workers over RabbitMQ."""

import uuid

import pytest

from tests.functional.helpers import alloc_item, one
from tests.functional.test_claims import claim_item, slot_class

WORKER_CONFIG = """
[partitions]
bindings = nova-east:east,nova-west:west
"""


def _context(user):
    return {'request_id': 'req-%s' % uuid.uuid4(), 'roles': ['admin'],
            'project_id': 'test-project', 'user_id': user}


class Caller(object):
    """The RPC client under one user's context."""

    def __init__(self, rpc, user):
        self.rpc, self.context = rpc, _context(user)

    def __getattr__(self, method):
        return lambda **kw: self.rpc.call(method, context=self.context, **kw)


@pytest.fixture(scope='module')
def callers(rpc):
    return {'east': Caller(rpc, 'nova-east'), 'west': Caller(rpc, 'nova-west'),
            'operator': Caller(rpc, 'operator')}


def _host(caller, name, slots, **extra):
    host = str(uuid.uuid4())
    item = one(caller.create_provider(uuid=host, name=name, **extra))
    assert item['status'] == 200, item
    item = one(caller.set_inventories(
        provider_uuid=host, provider_generation=item['generation'],
        inventories={slots: {'total': 4}}))
    assert item['status'] == 200, item
    return host


@pytest.fixture(scope='module')
def cloud(callers, rpc):
    """compute-01 in east and in west (each made by its own service
    user, landing in its partition), and a shared pool."""
    slots = slot_class(rpc)
    name = 'compute-01-%s' % uuid.uuid4().hex[:6]
    east = _host(callers['east'], name, slots)
    west = _host(callers['west'], name, slots)
    pool = _host(callers['operator'], 'pool-%s' % uuid.uuid4().hex[:6],
                 slots, partition='shared')
    return {'slots': slots, 'east': east, 'west': west, 'pool': pool,
            'name': name}


def test_each_service_user_creates_in_its_partition_and_names_collide(
        callers, cloud):
    for side in ('east', 'west'):
        item = one(callers['operator'].get_providers(uuids=[cloud[side]]))
        assert (item['partition'], item['name']) == (side, cloud['name'])
    item = one(callers['east'].create_provider(
        uuid=str(uuid.uuid4()), name='x', partition='west'))
    assert (item['status'], item['code']) == (403, 'forbidden'), item


def test_listings_leave_other_partitions_out(callers, cloud):
    listed = {i['uuid'] for i in callers['east'].get_providers()['items']}
    assert cloud['east'] in listed and cloud['pool'] in listed
    assert cloud['west'] not in listed
    item = one(callers['east'].get_providers(uuids=[cloud['west']]))
    assert (item['status'], item['code']) == (404, 'provider.not_found')
    item = one(callers['east'].get_usages(provider_uuids=[cloud['west']]))
    assert item['status'] == 404, item
    everything = {i['uuid'] for i in
                  callers['operator'].get_providers()['items']}
    assert {cloud['east'], cloud['west'], cloud['pool']} <= everything


def test_writes_across_partitions_are_refused_and_write_nothing(
        callers, cloud, rpc):
    slots, consumer = cloud['slots'], str(uuid.uuid4())
    answer = callers['east'].allocate(items=[alloc_item(
        consumer, {cloud['west']: {slots: 1}})])
    assert (one(answer)['status'], one(answer)['code']) == (403, 'forbidden')
    assert one(rpc.get_allocations(consumer_uuids=[consumer]))[
        'status'] == 404
    item = one(callers['east'].set_inventories(
        provider_uuid=cloud['west'], provider_generation=1,
        inventories={slots: {'total': 8}}))
    assert (item['status'], item['code']) == (403, 'forbidden'), item
    item = one(callers['east'].delete_provider(uuid=cloud['west']))
    assert (item['status'], item['code']) == (403, 'forbidden'), item
    item = one(callers['operator'].get_providers(uuids=[cloud['west']]))
    assert item['inventories'][slots]['total'] == 4


def test_a_consumer_of_another_partition_is_not_seen_nor_written(
        callers, cloud):
    slots, consumer = cloud['slots'], str(uuid.uuid4())
    answer = callers['west'].allocate(items=[alloc_item(
        consumer, {cloud['west']: {slots: 1}})])
    assert one(answer)['status'] == 200, answer
    item = one(callers['east'].get_allocations(consumer_uuids=[consumer]))
    assert (item['status'], item['code']) == (404, 'consumer.not_found')
    listed = {i['consumer_uuid'] for i in callers['east'].list_allocations(
        provider_uuid=cloud['east'])['items']}
    assert consumer not in listed
    answer = callers['east'].list_allocations(provider_uuid=cloud['west'])
    assert answer['status'] == 404, answer
    # Moving it onto an east host would write west's consumer.
    answer = callers['east'].allocate(items=[alloc_item(
        consumer, {cloud['east']: {slots: 1}}, generation=1)])
    assert (one(answer)['status'], one(answer)['code']) == (403, 'forbidden')
    item = one(callers['west'].get_allocations(consumer_uuids=[consumer]))
    assert list(item['allocations']) == [cloud['west']]
    item = one(callers['west'].allocate(items=[alloc_item(
        consumer, {}, generation=1)]))
    assert item['status'] == 200, item


def test_shared_pools_serve_every_partition(callers, cloud):
    slots = cloud['slots']
    for side in ('east', 'west'):
        consumer = str(uuid.uuid4())
        answer = callers[side].allocate(items=[alloc_item(
            consumer, {cloud[side]: {slots: 1}, cloud['pool']: {slots: 1}})])
        assert one(answer)['status'] == 200, answer
        item = one(callers[side].allocate(items=[alloc_item(
            consumer, {}, generation=1)]))
        assert item['status'] == 200, item


def test_claims_and_candidates_stay_in_the_callers_partition(callers, cloud):
    slots = cloud['slots']
    request = {'groups': [{'resources': {slots: 1}}]}
    for side in ('east', 'west'):
        found = callers[side].get_allocation_candidates(request=request)
        roots = {i['root_uuid'] for i in found['items']}
        assert cloud[side] in roots and not roots & {
            cloud['east' if side == 'west' else 'west']}, (side, roots)
        consumer = str(uuid.uuid4())
        item = one(callers[side].claim(items=[claim_item(consumer,
                                                         request)]))
        assert item['status'] == 200, item
        assert item['root_uuid'] in (cloud[side], cloud['pool'])
        one(callers[side].allocate(items=[alloc_item(
            consumer, {}, generation=item['consumer_generation'])]))
    item = one(callers['east'].claim(items=[claim_item(
        str(uuid.uuid4()), dict(request, partitions=['west']))]))
    assert (item['status'], item['code']) == (403, 'forbidden'), item


def test_an_operator_narrows_a_search_to_partitions(callers, cloud):
    slots = cloud['slots']
    request = {'groups': [{'resources': {slots: 1}}], 'partitions': ['west']}
    found = callers['operator'].get_allocation_candidates(request=request)
    assert {i['root_uuid'] for i in found['items']} == {cloud['west']}
    answer = callers['operator'].get_allocation_candidates(request=dict(
        request, partitions=['Not A Name']))
    assert answer['status'] == 400, answer


def test_an_item_spanning_two_partitions_is_refused(callers, cloud):
    slots, consumer = cloud['slots'], str(uuid.uuid4())
    answer = callers['operator'].allocate(items=[alloc_item(
        consumer, {cloud['east']: {slots: 1}, cloud['west']: {slots: 1}})])
    assert (one(answer)['status'], one(answer)['code']) == (
        409, 'partition.mismatch')
