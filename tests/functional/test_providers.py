"""The provider, inventory and resource-class rules of design §2, through
the service layer the worker, the CLI and the REST shim share, on every
backend. Each rule is one test that fails when the rule is broken."""

import uuid

import pytest

from allocworker.allocations import writes as allocations
from allocworker.providers import resource_classes
from allocworker.providers import rules as providers

pytestmark = pytest.mark.usefixtures('service_layer')


def new_provider(name=None, parent=None, inventories=None):
    provider_uuid = str(uuid.uuid4())
    item, = providers.create_provider(None, provider_uuid,
                                      name or 'rp-' + provider_uuid, parent)
    assert item['status'] == 200, item
    if inventories:
        item, = providers.set_inventories(None, provider_uuid,
                                          item['generation'], inventories)
        assert item['status'] == 200, item
    return item


def code(item):
    return item['status'], item.get('code')


def allocate(provider_uuid, amount, consumer=None):
    item, = allocations.allocate(None, [{
        'consumer_uuid': consumer or str(uuid.uuid4()),
        'consumer_generation': None, 'project_id': 'p', 'user_id': 'u',
        'allocations': {provider_uuid: {'VCPU': amount}}}])
    assert item['status'] == 200, item
    return item


def test_create_provider_answers_the_contract():
    parent = new_provider()
    child = new_provider(parent=parent['uuid'])
    assert set(child) == {'uuid', 'name', 'generation', 'parent_uuid',
                          'root_uuid', 'partition', 'status'}
    assert child['parent_uuid'] == parent['uuid']
    assert child['root_uuid'] == parent['uuid']
    grandchild = new_provider(parent=child['uuid'])
    assert grandchild['root_uuid'] == parent['uuid']
    assert parent['root_uuid'] == parent['uuid']


def test_provider_exists_for_taken_uuid_or_name():
    first = new_provider()
    again, = providers.create_provider(None, first['uuid'], 'other-name')
    assert code(again) == (409, 'provider.exists')
    same_name, = providers.create_provider(None, str(uuid.uuid4()),
                                           first['name'])
    assert code(same_name) == (409, 'provider.exists')


@pytest.mark.parametrize('name', ['', 'x' * 201, 7, None])
def test_provider_name_must_be_1_to_200_characters(name):
    item, = providers.create_provider(None, str(uuid.uuid4()), name)
    assert code(item) == (400, 'invalid_request')
    assert 'name' in item['detail']


def test_unknown_parent_is_named_in_the_body():
    item, = providers.create_provider(None, str(uuid.uuid4()), 'orphan-' +
                                      str(uuid.uuid4()), str(uuid.uuid4()))
    assert code(item) == (400, 'provider.not_found')


def test_delete_refuses_provider_with_children_or_allocations():
    parent = new_provider(inventories={'VCPU': {'total': 4}})
    child = new_provider(parent=parent['uuid'])
    item, = providers.delete_provider(None, parent['uuid'])
    assert code(item) == (409, 'provider.in_use')
    assert providers.delete_provider(None, child['uuid'])[0]['status'] == 200
    held = allocate(parent['uuid'], 1)
    item, = providers.delete_provider(None, parent['uuid'])
    assert code(item) == (409, 'provider.in_use')
    allocations.allocate(None, [{
        'consumer_uuid': held['consumer_uuid'],
        'consumer_generation': held['consumer_generation'],
        'project_id': 'p', 'user_id': 'u', 'allocations': {}}])
    assert providers.delete_provider(None, parent['uuid'])[0]['status'] == 200
    gone, = providers.get_providers(None, [parent['uuid']])
    assert code(gone) == (404, 'provider.not_found')


def test_delete_unknown_provider_is_404():
    item, = providers.delete_provider(None, str(uuid.uuid4()))
    assert code(item) == (404, 'provider.not_found')


def test_set_inventories_replaces_and_fills_defaults():
    rp = new_provider(inventories={'VCPU': {'total': 4},
                                   'DISK_GB': {'total': 100}})
    item, = providers.set_inventories(None, rp['uuid'], rp['generation'],
                                      {'MEMORY_MB': {'total': 1024,
                                                     'reserved': 512}})
    assert item['status'] == 200
    assert item['generation'] != rp['generation']
    assert item['inventories'] == {'MEMORY_MB': {
        'total': 1024, 'reserved': 512, 'min_unit': 1,
        'max_unit': 2147483647, 'step_size': 1, 'allocation_ratio': 1.0}}
    shown, = providers.get_providers(None, [rp['uuid']])
    assert shown['inventories'] == item['inventories']


def test_stale_provider_generation_is_a_conflict_with_the_current_one():
    rp = new_provider(inventories={'VCPU': {'total': 4}})
    item, = providers.set_inventories(None, rp['uuid'], rp['generation'] - 1,
                                      {'VCPU': {'total': 8}})
    assert code(item) == (409, 'provider.generation_conflict')
    assert item['generation'] == rp['generation']


def test_inventory_in_use_cannot_be_removed():
    rp = new_provider(inventories={'VCPU': {'total': 4},
                                   'DISK_GB': {'total': 10}})
    allocate(rp['uuid'], 2)
    current = providers.get_providers(None, [rp['uuid']])[0]['generation']
    item, = providers.set_inventories(None, rp['uuid'], current,
                                      {'DISK_GB': {'total': 10}})
    assert code(item) == (409, 'inventory.in_use')
    assert 'VCPU' in item['detail']
    # Even force does not drop a class that still has allocations.
    item, = providers.set_inventories(None, rp['uuid'], current,
                                      {'DISK_GB': {'total': 10}}, force=True)
    assert code(item) == (409, 'inventory.in_use')


def test_inventory_shrink_below_usage_needs_force():
    rp = new_provider(inventories={'VCPU': {'total': 8}})
    allocate(rp['uuid'], 6)
    current = providers.get_providers(None, [rp['uuid']])[0]['generation']
    for shrunk in ({'total': 4}, {'total': 8, 'reserved': 4},
                   {'total': 8, 'allocation_ratio': 0.5}):
        item, = providers.set_inventories(None, rp['uuid'], current,
                                          {'VCPU': shrunk})
        assert code(item) == (409, 'inventory.in_use'), shrunk
    item, = providers.set_inventories(None, rp['uuid'], current,
                                      {'VCPU': {'total': 6}})
    assert item['status'] == 200  # exactly at usage is fine
    item, = providers.set_inventories(None, rp['uuid'], item['generation'],
                                      {'VCPU': {'total': 4}}, force=True)
    assert item['status'] == 200
    usage, = providers.get_usages(None, [rp['uuid']])
    assert usage['usages'] == {'VCPU': 6}


def test_unknown_resource_class_in_inventory():
    rp = new_provider()
    item, = providers.set_inventories(None, rp['uuid'], rp['generation'],
                                      {'CUSTOM_NEVER_MADE': {'total': 1}})
    assert code(item) == (400, 'resource_class.not_found')


def test_custom_resource_classes():
    name = 'CUSTOM_' + uuid.uuid4().hex.upper()
    item, = resource_classes.create_resource_class(None, name)
    assert item == {'name': name, 'created': True, 'status': 200}
    item, = resource_classes.create_resource_class(None, name)
    assert item == {'name': name, 'created': False, 'status': 200}
    names = [i['name'] for i in
             resource_classes.list_resource_classes(None)]
    assert name in names and 'VCPU' in names and 'PCI_DEVICE' in names
    for bad in ('VCPU', 'CUSTOM_lower', 'CUSTOM_', 'custom_x', 5):
        item, = resource_classes.create_resource_class(None, bad)
        assert code(item) == (400, 'invalid_request'), bad


def test_usages_list_every_inventoried_class():
    rp = new_provider(inventories={'VCPU': {'total': 4},
                                   'MEMORY_MB': {'total': 64}})
    allocate(rp['uuid'], 3)
    item, missing, bad = providers.get_usages(
        None, [rp['uuid'], str(uuid.uuid4()), 'nope'])
    assert item == {'provider_uuid': rp['uuid'], 'status': 200,
                    'generation': item['generation'],
                    'usages': {'VCPU': 3, 'MEMORY_MB': 0}}
    assert code(missing) == (404, 'provider.not_found')
    assert code(bad) == (400, 'invalid_request')


def test_get_providers_lists_all_or_answers_per_uuid():
    rp = new_provider(inventories={'VCPU': {'total': 4}})
    listed = {i['uuid'] for i in providers.get_providers(None)}
    assert rp['uuid'] in listed
    found, missing = providers.get_providers(None, [rp['uuid'],
                                                    str(uuid.uuid4())])
    assert found['inventories']['VCPU']['total'] == 4
    assert code(missing) == (404, 'provider.not_found')


def test_provider_generation_changes_on_every_write_and_never_repeats():
    rp = new_provider(inventories={'VCPU': {'total': 100}})
    seen = [rp['generation']]
    for total in (50, 60, 70):
        item, = providers.set_inventories(None, rp['uuid'], seen[-1],
                                          {'VCPU': {'total': total}})
        seen.append(item['generation'])
    allocate(rp['uuid'], 1)
    seen.append(providers.get_providers(None, [rp['uuid']])[0]['generation'])
    assert len(set(seen)) == len(seen)


def test_generations_count_per_object_as_placement_does():
    rp = new_provider()
    assert rp['generation'] == 0
    item, = providers.set_inventories(None, rp['uuid'], 0,
                                      {'VCPU': {'total': 8}})
    assert item['generation'] == 1
    consumer = str(uuid.uuid4())
    assert allocate(rp['uuid'], 1, consumer)['consumer_generation'] == 1
    assert providers.get_providers(None, [rp['uuid']])[0]['generation'] == 2
    item, = allocations.allocate(None, [{
        'consumer_uuid': consumer, 'consumer_generation': 1,
        'project_id': 'p', 'user_id': 'u',
        'allocations': {rp['uuid']: {'VCPU': 2}}}])
    assert item['consumer_generation'] == 2


def test_recreated_provider_starts_above_its_retired_generation():
    rp = new_provider(inventories={'VCPU': {'total': 8}})
    item, = providers.set_inventories(None, rp['uuid'], rp['generation'],
                                      {'VCPU': {'total': 9}})
    assert item['generation'] == 2
    assert code(providers.delete_provider(None, rp['uuid'])[0]) == (200,
                                                                    None)
    again, = providers.create_provider(None, rp['uuid'], 'recreated')
    assert again['generation'] == 3


def test_a_provider_created_again_is_allocated_on_as_the_new_one():
    """Workers remember provider ids; a uuid deleted and created again
    must be found afresh, never through the old id."""
    rp = new_provider(inventories={'VCPU': {'total': 4}})
    consumer = str(uuid.uuid4())
    held = allocate(rp['uuid'], 1, consumer)
    item, = allocations.allocate(None, [{
        'consumer_uuid': consumer, 'project_id': 'p', 'user_id': 'u',
        'consumer_generation': held['consumer_generation'],
        'allocations': {}}])
    assert item['status'] == 200
    assert code(providers.delete_provider(None, rp['uuid'])[0]) == (200,
                                                                    None)
    new_provider(name='taking-ids-' + rp['uuid'])
    made, = providers.create_provider(None, rp['uuid'], 'back-' + rp['uuid'])
    providers.set_inventories(None, rp['uuid'], made['generation'],
                              {'VCPU': {'total': 2}})
    allocate(rp['uuid'], 2)
    usage, = providers.get_usages(None, [rp['uuid']])
    assert usage['usages'] == {'VCPU': 2}
    item, = allocations.allocate(None, [{
        'consumer_uuid': str(uuid.uuid4()), 'consumer_generation': None,
        'project_id': 'p', 'user_id': 'u',
        'allocations': {str(uuid.uuid4()): {'VCPU': 1}}}])
    assert code(item) == (400, 'provider.not_found')
