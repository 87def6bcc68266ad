"""Partitions (RPC 1.6, design §3 "Partitions"), the providers' and
consumers' part, on every backend: over RPC to worker processes, the
client library and its version cap, ``allocworker-manage provider
set-partition``, and re-parenting through allocworker-api (Placement's
``PUT /resource_providers/{uuid}``, whose JSON never shows a partition).
"""

import json
import uuid

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
import oslo_messaging as messaging
from oslo_context import context as oslo_context
import pytest

from allocworker.conf import CONF
from allocworker import rpcapi
from allocworker.providers import tree
from tests.functional import services
from tests.functional.helpers import (alloc_item, allocate, assert_fault,
                                      one, usage)

NAME = r'^[a-z0-9][a-z0-9_.-]{0,63}$'


def _partition(prefix='p'):
    return '%s-%s' % (prefix, uuid.uuid4().hex[:10])


def _create(rpc, name=None, parent=None, partition=None, provider=None):
    """create_provider's item (partition sent only when given)."""
    provider = provider or str(uuid.uuid4())
    kwargs = {'uuid': provider, 'name': name or 'rp-' + provider,
              'parent_uuid': parent}
    if partition is not None:
        kwargs['partition'] = partition
    return one(rpc.create_provider(**kwargs))


def _host(rpc, partition, inventories=None, parent=None):
    """A provider of ``partition`` with inventory; its uuid."""
    item = _create(rpc, parent=parent, partition=partition)
    assert item['status'] == 200, item
    answer = one(rpc.set_inventories(
        provider_uuid=item['uuid'], provider_generation=item['generation'],
        inventories=inventories or {'VCPU': {'total': 8},
                                    'DISK_GB': {'total': 100}}))
    assert answer['status'] == 200, answer
    return item['uuid']


def _shown(rpc, provider):
    item = one(rpc.get_providers(uuids=[provider]))
    assert item['status'] == 200, item
    return item


def _nothing_held(rpc, consumers, hosts):
    for consumer in consumers:
        assert_fault(one(rpc.get_allocations(consumer_uuids=[consumer])),
                     404, 'consumer.not_found')
    for host in hosts:
        assert set(usage(rpc, host).values()) == {0}, host


# -- providers -----------------------------------------------------------

def test_provider_items_show_their_partition(rpc):
    made = _create(rpc)
    assert set(made) == {'uuid', 'name', 'generation', 'parent_uuid',
                         'root_uuid', 'partition', 'status'}
    assert made['partition'] == 'default'
    east = _partition('east')
    placed = _create(rpc, partition=east)
    assert placed['partition'] == east
    assert _shown(rpc, placed['uuid'])['partition'] == east
    listed = {i['uuid']: i for i in rpc.get_providers()['items']}
    assert listed[made['uuid']]['partition'] == 'default'
    assert listed[placed['uuid']]['partition'] == east
    assert all('partition' in i for i in listed.values())


def test_names_are_unique_per_partition(rpc):
    name = 'compute-01-%s' % uuid.uuid4().hex[:8]
    east, west = _partition('east'), _partition('west')
    first = _create(rpc, name, partition=east)
    second = _create(rpc, name, partition=west)
    assert (first['status'], second['status']) == (200, 200)
    third = _create(rpc, name)
    assert (third['status'], third['partition']) == (200, 'default')
    again = _create(rpc, name, partition=east)
    assert_fault(again, 409, 'provider.exists')
    assert east in again['detail']
    assert_fault(_create(rpc, 'other', partition=west,
                         provider=first['uuid']), 409, 'provider.exists')


def test_children_take_their_parents_partition(rpc):
    east = _partition('east')
    root = _create(rpc, partition=east)
    child = _create(rpc, parent=root['uuid'])
    grandchild = _create(rpc, parent=child['uuid'], partition=east)
    assert (child['partition'], grandchild['partition']) == (east, east)
    assert grandchild['root_uuid'] == root['uuid']
    # A child of a tree in ``default`` is in ``default`` too.
    assert _create(rpc, parent=_create(rpc)['uuid'])['partition'] == \
        'default'
    refused = _create(rpc, parent=root['uuid'], partition=_partition())
    assert_fault(refused, 400, 'invalid_request')
    assert 'partition' in refused['detail'] and east in refused['detail']
    assert_fault(one(rpc.get_providers(uuids=[refused['uuid']])), 404,
                 'provider.not_found')


@pytest.mark.parametrize('partition', ['', 'East', '-east', 'e' * 65,
                                       'a b', 'east\n', 7, ['east']])
def test_bad_partition_names_are_a_400_naming_the_field(rpc, partition):
    refused = _create(rpc, partition=partition)
    assert_fault(refused, 400, 'invalid_request')
    assert 'partition' in refused['detail']
    assert_fault(one(rpc.get_providers(uuids=[refused['uuid']])), 404,
                 'provider.not_found')


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(partition=st.from_regex(NAME, fullmatch=True))
def test_every_name_of_the_pattern_is_a_partition(rpc, partition):
    assert _create(rpc, partition=partition)['partition'] == partition


# -- consumers -----------------------------------------------------------

def test_an_item_across_two_partitions_writes_nothing(rpc, ids):
    east, west = _partition('east'), _partition('west')
    here, there = _host(rpc, east), _host(rpc, west)
    refused = allocate(rpc, ids.consumer, {here: {'VCPU': 1},
                                           there: {'DISK_GB': 1}})
    assert_fault(refused, 409, 'partition.mismatch')
    for named in (east, west, here, there):
        assert named in refused['detail']
    _nothing_held(rpc, [ids.consumer], [here, there])
    # Independent items: the good one is written, the other refused.
    answer = rpc.allocate(items=[
        alloc_item(ids.good, {here: {'VCPU': 2}}),
        alloc_item(ids.bad, {here: {'VCPU': 1}, there: {'VCPU': 1}})])
    assert answer['status'] == 207
    assert answer['items'][0]['status'] == 200
    assert_fault(answer['items'][1], 409, 'partition.mismatch')
    assert usage(rpc, here)['VCPU'] == 2 and usage(rpc, there)['VCPU'] == 0


def test_a_mismatch_aborts_an_atomic_batch(rpc, ids):
    east, west = _partition('east'), _partition('west')
    here, there = _host(rpc, east), _host(rpc, west)
    answer = rpc.allocate(atomic=True, items=[
        alloc_item(ids.good, {here: {'VCPU': 1}}),
        alloc_item(ids.bad, {there: {'VCPU': 1}, here: {'DISK_GB': 1}}),
        alloc_item(ids.other, {there: {'VCPU': 1}})])
    assert answer['status'] == 207
    assert_fault(answer['items'][1], 409, 'partition.mismatch')
    for index in (0, 2):
        assert_fault(answer['items'][index], 424, 'batch.aborted')
    _nothing_held(rpc, [ids.good, ids.bad, ids.other], [here, there])


def test_shared_providers_serve_every_partition(rpc, ids):
    east, west = _partition('east'), _partition('west')
    here, there = _host(rpc, east), _host(rpc, west)
    pool = _host(rpc, 'shared', {'DISK_GB': {'total': 1000}})
    for consumer, host in ((ids.a, here), (ids.b, there)):
        item = allocate(rpc, consumer, {host: {'VCPU': 1},
                                        pool: {'DISK_GB': 10}})
        assert item['status'] == 200, item
    # A consumer on shared providers only lives in ``shared``.
    assert allocate(rpc, ids.c, {pool: {'DISK_GB': 5}})['status'] == 200
    assert usage(rpc, pool)['DISK_GB'] == 25
    # ``shared`` aside, two partitions are still two, ``default`` too.
    refused = allocate(rpc, ids.d, {here: {'VCPU': 1}, pool: {'DISK_GB': 1},
                                    _host(rpc, None): {'VCPU': 1}})
    assert_fault(refused, 409, 'partition.mismatch')
    assert 'default' in refused['detail'] and east in refused['detail']


def test_a_consumer_may_move_whole_to_another_partition(rpc, ids):
    here, there = _host(rpc, _partition('east')), _host(rpc, _partition())
    made = allocate(rpc, ids.consumer, {here: {'VCPU': 1}})
    moved = allocate(rpc, ids.consumer, {there: {'VCPU': 1}},
                     made['consumer_generation'])
    assert moved['status'] == 200, moved
    assert usage(rpc, here)['VCPU'] == 0 and usage(rpc, there)['VCPU'] == 1


# -- changing a tree's partition (allocworker-manage) ---------------------

def _set_partition(scratch, provider, partition, check=True):
    return services.manage('%s/sync.conf' % scratch, 'provider',
                           'set-partition', provider, partition,
                           '--format', 'json', check=check)


def test_set_partition_moves_a_whole_tree_without_allocations(rpc, scratch,
                                                              ids):
    east, west = _partition('east'), _partition('west')
    root = _host(rpc, east)
    child = _host(rpc, None, parent=root)
    held = allocate(rpc, ids.consumer, {child: {'VCPU': 1}})
    refused = _set_partition(scratch, root, west, check=False)
    assert refused.returncode == 1
    assert 'provider.in_use' in refused.stderr
    assert _shown(rpc, child)['partition'] == east
    freed = allocate(rpc, ids.consumer, {}, held['consumer_generation'])
    assert freed['status'] == 200, freed
    moved, = json.loads(_set_partition(scratch, root, west).stdout)
    assert (moved['uuid'], moved['partition']) == (root, west)
    assert _shown(rpc, child)['partition'] == west
    # Names are judged in the partition the tree moves to.
    taken = _create(rpc, _shown(rpc, child)['name'], partition=east)
    assert taken['status'] == 200, taken
    refused = _set_partition(scratch, root, east, check=False)
    assert 'provider.exists' in refused.stderr
    assert _shown(rpc, root)['partition'] == west
    # Only a root's partition is set: a tree lies in one.
    refused = _set_partition(scratch, child, east, check=False)
    assert 'invalid_request' in refused.stderr and root in refused.stderr
    refused = _set_partition(scratch, root, 'Not-A-Partition', check=False)
    assert 'invalid_request' in refused.stderr


def test_set_partition_is_for_admins(rpc, service_layer):
    # In this process, as the CLI calls it: policy reads parsed options
    # (the defaults, and the fixture's database).
    CONF([], project='allocworker', default_config_files=[])
    root = _create(rpc)['uuid']
    member = oslo_context.RequestContext(roles=['member'], project_id='p',
                                         user_id='u')
    item, = tree.set_partition(member, root, _partition())
    assert_fault(item, 403, 'forbidden')
    assert _shown(rpc, root)['partition'] == 'default'
    admin = oslo_context.RequestContext(roles=['admin'], project_id='p',
                                        user_id='u')
    east = _partition('east')
    item, = tree.set_partition(admin, root, east)
    assert (item['status'], item['partition']) == (200, east)


# -- re-parenting through allocworker-api ---------------------------------

def _reparent(shim, provider, parent, expect=(200,)):
    name = shim.call('GET', '/resource_providers/%s' % provider)['name']
    return shim.call('PUT', '/resource_providers/%s' % provider,
                     {'name': name, 'parent_provider_uuid': parent},
                     version='1.37', expect=expect)


def test_a_subtree_moved_into_another_tree_takes_its_partition(rpc, shim,
                                                               ids):
    east, west = _partition('east'), _partition('west')
    old_root, new_root = _host(rpc, east), _host(rpc, west)
    moving = _host(rpc, None, parent=old_root)
    below = _host(rpc, None, parent=moving)
    shown = _reparent(shim, moving, new_root)
    assert 'partition' not in shown
    for provider in (moving, below):
        item = _shown(rpc, provider)
        assert (item['partition'], item['root_uuid']) == (west, new_root)
    # Made a root of its own, it keeps the partition it lies in.
    _reparent(shim, moving, None)
    assert _shown(rpc, below)['partition'] == west
    # Not while the subtree holds allocations.
    assert allocate(rpc, ids.consumer, {below: {'VCPU': 1}})['status'] == 200
    _reparent(shim, moving, old_root, expect=(409,))
    assert _shown(rpc, below)['partition'] == west


def test_a_move_into_a_partition_that_has_the_name_is_refused(rpc, shim):
    east, west = _partition('east'), _partition('west')
    root = _host(rpc, east)
    moving = _host(rpc, west)
    _create(rpc, _shown(rpc, moving)['name'], parent=root)
    _reparent(shim, moving, root, expect=(409,))
    assert _shown(rpc, moving)['partition'] == west


def test_the_shim_keeps_placements_json_and_creates_in_default(rpc, shim):
    provider = str(uuid.uuid4())
    shim.call('POST', '/resource_providers',
              {'uuid': provider, 'name': 'shim-%s' % provider})
    for version in ('1.14', '1.39'):
        shown = shim.call('GET', '/resource_providers/%s' % provider,
                          version=version)
        assert 'partition' not in shown
    listed = shim.call('GET', '/resource_providers')['resource_providers']
    assert all('partition' not in p for p in listed)
    assert _shown(rpc, provider)['partition'] == 'default'


# -- the client library --------------------------------------------------

def test_rpcapi_sends_partition_at_1_6_and_not_under_a_1_5_cap(rpc, topic):
    from oslo_config import cfg
    cfg.CONF.set_override('topic', topic, 'worker')
    try:
        api = rpcapi.AllocWorkerAPI(transport=rpc.transport)
        east = _partition('east')
        made = one(api.create_provider(rpc.context, str(uuid.uuid4()),
                                       'lib-%s' % east, partition=east))
        assert (made['status'], made['partition']) == (200, east)
        cfg.CONF.set_override('allocworker', '1.5', 'upgrade_levels')
        old = rpcapi.AllocWorkerAPI(transport=rpc.transport)
        with pytest.raises(messaging.RPCVersionCapError):
            old.create_provider(rpc.context, str(uuid.uuid4()), 'x',
                                partition=east)
        # Without a partition it is the 1.0 call, into ``default``.
        plain = one(old.create_provider(rpc.context, str(uuid.uuid4()),
                                        'lib-%s' % uuid.uuid4()))
        assert (plain['status'], plain['partition']) == (200, 'default')
    finally:
        cfg.CONF.clear_override('allocworker', 'upgrade_levels')
        cfg.CONF.clear_override('topic', 'worker')
    assert rpcapi.VERSION == rpcapi.VERSION_ALIASES['0.4'] == '1.6'
