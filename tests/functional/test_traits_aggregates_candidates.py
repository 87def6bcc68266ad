"""The service-layer rules behind the REST shim's Placement extras: traits,
aggregates, allocation candidates, reshape, project usages, and consumers
written without a type. On every backend."""

import uuid

import pytest

from allocworker.providers import aggregates
from allocworker.allocations import writes as allocations
from allocworker.allocations import consumers
from allocworker.providers import tree as provider_tree
from allocworker.providers import rules as providers
from allocworker.allocations import reshaper
from allocworker.providers import traits
from allocworker.allocations import usages

pytestmark = pytest.mark.usefixtures('service_layer')


def new_provider(inventories=None, parent=None):
    provider_uuid = str(uuid.uuid4())
    item, = providers.create_provider(None, provider_uuid,
                                      'rp-' + provider_uuid, parent)
    if inventories:
        item, = providers.set_inventories(None, provider_uuid,
                                          item['generation'], inventories)
    assert item['status'] == 200, item
    return item


def write(consumer, allocs, generation=None, project='p', **extra):
    item = dict({'consumer_uuid': consumer, 'consumer_generation': generation,
                 'project_id': project, 'user_id': 'u',
                 'allocations': allocs}, **extra)
    return allocations.allocate(None, [item])[0]


def test_standard_traits_exist_and_custom_ones_can_be_made_and_removed():
    names = {i['name'] for i in traits.list_traits(None)}
    assert {'HW_CPU_X86_AVX2', 'MISC_SHARES_VIA_AGGREGATE'} <= names
    made, = traits.create_trait(None, 'CUSTOM_GOLD')
    assert (made['status'], made['created']) == (200, True)
    again, = traits.create_trait(None, 'CUSTOM_GOLD')
    assert again['created'] is False
    assert traits.create_trait(None, 'GOLD')[0]['code'] == 'invalid_request'
    assert traits.delete_trait(None, 'HW_CPU_X86_AVX2')[0]['status'] == 400
    assert traits.delete_trait(None, 'CUSTOM_GOLD')[0]['status'] == 200
    assert traits.delete_trait(None, 'CUSTOM_GOLD')[0]['code'] == \
        'trait.not_found'


def test_provider_traits_are_written_under_the_provider_generation():
    rp = new_provider()
    item, = traits.set_provider_traits(None, rp['uuid'], 0,
                                       ['STORAGE_DISK_SSD'])
    assert (item['status'], item['generation']) == (200, 1)
    stale, = traits.set_provider_traits(None, rp['uuid'], 0, [])
    assert (stale['code'], stale['generation']) == (
        'provider.generation_conflict', 1)
    unknown, = traits.set_provider_traits(None, rp['uuid'], 1,
                                          ['CUSTOM_NEVER_MADE'])
    assert (unknown['status'], unknown['code']) == (400, 'trait.not_found')
    traits.create_trait(None, 'CUSTOM_IN_USE')
    traits.set_provider_traits(None, rp['uuid'], 1, ['CUSTOM_IN_USE'])
    assert traits.delete_trait(None, 'CUSTOM_IN_USE')[0]['code'] == \
        'trait.in_use'
    assert traits.get_provider_traits(None, rp['uuid'])[0]['traits'] == [
        'CUSTOM_IN_USE']


def test_aggregates_replace_and_move_the_generation():
    rp = new_provider()
    agg = str(uuid.uuid4())
    item, = aggregates.set_provider_aggregates(None, rp['uuid'], 0, [agg])
    assert (item['generation'], item['aggregates']) == (1, [agg])
    # Placement before 1.19 writes without a generation and keeps it.
    item, = aggregates.set_provider_aggregates(None, rp['uuid'], None, [])
    assert (item['generation'], item['aggregates']) == (1, [])
    item, = aggregates.get_provider_aggregates(None, rp['uuid'])
    assert (item['generation'], item['aggregates']) == (1, [])
    missing, = aggregates.get_provider_aggregates(None, str(uuid.uuid4()))
    assert missing['code'] == 'provider.not_found'


def test_reshape_moves_inventory_and_allocations_together():
    root = new_provider({'VGPU': {'total': 4}})
    child = new_provider(parent=root['uuid'])
    consumer = str(uuid.uuid4())
    held = write(consumer, {root['uuid']: {'VGPU': 2}})
    root_now = providers.get_providers(None, [root['uuid']])[0]
    moved = {'consumer_uuid': consumer,
             'consumer_generation': held['consumer_generation'],
             'project_id': 'p', 'user_id': 'u',
             'allocations': {child['uuid']: {'VGPU': 2}}}
    answer = reshaper.reshape(None, {
        root['uuid']: {'provider_generation': root_now['generation'],
                       'inventories': {}},
        child['uuid']: {'provider_generation': child['generation'],
                        'inventories': {'VGPU': {'total': 4}}}}, [moved])
    assert [a['status'] for a in answer] == [200], answer
    now, = consumers.get_allocations(None, [consumer])
    assert list(now['allocations']) == [child['uuid']]


def test_reshape_that_strands_allocations_writes_nothing():
    rp = new_provider({'VGPU': {'total': 4}})
    write(str(uuid.uuid4()), {rp['uuid']: {'VGPU': 1}})
    before = providers.get_providers(None, [rp['uuid']])[0]
    with pytest.raises(Exception) as failed:
        reshaper.reshape(None, {rp['uuid']: {
            'provider_generation': before['generation'],
            'inventories': {}}}, [])
    assert failed.value.code.code == 'inventory.in_use'
    after = providers.get_providers(None, [rp['uuid']])[0]
    assert after == before


def test_project_usages_by_consumer_type_and_untyped_consumers():
    rp = new_provider({'VCPU': {'total': 100}})
    project = str(uuid.uuid4())
    allocations.write(None, [{
        'consumer_uuid': str(uuid.uuid4()), 'consumer_generation': None,
        'project_id': project, 'user_id': 'u',
        'allocations': {rp['uuid']: {'VCPU': 2}}}], new_type=None)
    write(str(uuid.uuid4()), {rp['uuid']: {'VCPU': 3}}, project=project,
          consumer_type='MIGRATION')
    found = usages.by_project(None, project)
    assert found == [
        {'consumer_type': None, 'consumer_count': 1,
         'usages': {'VCPU': 2}},
        {'consumer_type': 'MIGRATION', 'consumer_count': 1,
         'usages': {'VCPU': 3}}]


def test_rename_keeps_the_generation_and_names_stay_unique():
    rp, other = new_provider(), new_provider()
    item, = provider_tree.update_provider(None, rp['uuid'], 'renamed-' +
                                          rp['uuid'])
    assert (item['status'], item['generation']) == (200, rp['generation'])
    taken, = provider_tree.update_provider(None, other['uuid'],
                                           item['name'])
    assert taken['code'] == 'provider.exists'


def test_moving_a_tree_moves_every_root_below_it():
    root, new_root = new_provider(), new_provider()
    child = new_provider(parent=root['uuid'])
    grandchild = new_provider(parent=child['uuid'])
    moved, = provider_tree.update_provider(None, child['uuid'],
                                           'moved-' + child['uuid'],
                                           new_root['uuid'])
    assert (moved['parent_uuid'], moved['root_uuid']) == (
        new_root['uuid'], new_root['uuid'])
    below, = providers.get_providers(None, [grandchild['uuid']])
    assert below['root_uuid'] == new_root['uuid']
    freed, = provider_tree.update_provider(None, child['uuid'],
                                           moved['name'], None)
    assert (freed['parent_uuid'], freed['root_uuid']) == (None,
                                                          child['uuid'])
    below, = providers.get_providers(None, [grandchild['uuid']])
    assert below['root_uuid'] == child['uuid']


def test_a_tree_cannot_loop_or_move_with_allocations():
    root = new_provider()
    child = new_provider({'VCPU': {'total': 4}}, parent=root['uuid'])
    loop, = provider_tree.update_provider(None, root['uuid'], 'loop' +
                                          root['uuid'], child['uuid'])
    assert loop['code'] == 'invalid_request'
    write(str(uuid.uuid4()), {child['uuid']: {'VCPU': 1}})
    held, = provider_tree.update_provider(None, child['uuid'],
                                          'held' + child['uuid'], None)
    assert (held['status'], held['code']) == (409, 'provider.in_use')
    assert providers.get_providers(None, [child['uuid']])[0][
        'root_uuid'] == root['uuid']
