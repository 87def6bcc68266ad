"""allocworker-api answers as Placement 16.0.0 answers, where Nova's
report client and functional tests read it: each consumer's generation
in a provider's allocations (1.28), the whole detail of a refused
allocation write, and the details of the provider, inventory, class and
trait errors (WebOb's paragraph, then Placement's own message).

Every expected text here is what Placement 16.0.0 sends for the same
request.
"""

import uuid

import pytest

from tests.functional import placement_cloud
from tests.functional import services

BAD_REQUEST = ('The server could not comply with the request since it is '
               'either malformed or otherwise incorrect.\n\n %s  ')
NOT_FOUND = 'The resource could not be found.\n\n %s  '
CONFLICT = ('There was a conflict when trying to complete your request.'
            '\n\n %s  ')
NO_INVENTORY = ("Unable to allocate inventory: Inventory for '%s' on "
                "resource provider '%s' invalid.")
NOT_ALLOCATED = ("Unable to allocate inventory: Unable to create allocation "
                 "for '%s' on resource provider '%s'. The requested amount "
                 "would %s.")
CONSTRAINTS = 'violate inventory constraints'
CAPACITY = 'exceed the capacity'
MEMORY = {'total': 1024, 'min_unit': 256, 'max_unit': 512, 'step_size': 256}


@pytest.fixture(scope='module')
def shim(database, scratch):
    server, port = services.start_api(database, scratch)
    api = placement_cloud.Api('http://127.0.0.1:%d' % port)
    api.call('PUT', '/resource_classes/CUSTOM_FIDELITY', version='1.7')
    yield api
    server.kill()
    server.wait()


def _error(answer):
    entry, = answer['errors']
    return entry['detail'], entry.get('code')


def _new():
    return str(uuid.uuid4())


def _body(provider, resources, generation=None):
    return {'allocations': {provider: {'resources': resources}},
            'project_id': 'p', 'user_id': 'u',
            'consumer_generation': generation, 'consumer_type': 'INSTANCE'}


def test_provider_allocations_show_consumer_generation(shim):
    provider = shim.provider('fidelity-held', {'VCPU': {'total': 8}})
    consumer = _new()
    shim.allocate(consumer, {provider: {'VCPU': 2}})
    shim.allocate(consumer, {provider: {'VCPU': 1}})
    generation = shim.consumer(consumer)['consumer_generation']
    path = '/resource_providers/%s/allocations' % provider
    old = shim.call('GET', path, version='1.27')
    assert old['allocations'] == {consumer: {'resources': {'VCPU': 1}}}
    for version in ('1.28', '1.39'):
        new = shim.call('GET', path, version=version)
        # The generation only: Placement shows no project or user here.
        assert new['allocations'] == {consumer: {
            'resources': {'VCPU': 1}, 'consumer_generation': generation}}
        assert new['resource_provider_generation'] == \
            shim.generation(provider)


def _refusals(shim):
    """(resources, status, Placement's message) for each refusal of an
    allocation on a provider with VCPU and MEMORY_MB, and that provider."""
    provider = shim.provider('fidelity-refusals-' + _new(), {
        'VCPU': {'total': 8}, 'MEMORY_MB': MEMORY})
    return provider, [
        ({'CUSTOM_FIDELITY': 1}, 409,
         NO_INVENTORY % ('CUSTOM_FIDELITY', provider)),
        ({'VCPU': 1, 'CUSTOM_FIDELITY': 1}, 409,
         NO_INVENTORY % ('CUSTOM_FIDELITY', provider)),
        ({'VCPU': 9}, 409, NOT_ALLOCATED % ('VCPU', provider, CAPACITY)),
        ({'MEMORY_MB': 128}, 409,
         NOT_ALLOCATED % ('MEMORY_MB', provider, CONSTRAINTS)),
        ({'MEMORY_MB': 768}, 409,
         NOT_ALLOCATED % ('MEMORY_MB', provider, CONSTRAINTS)),
        ({'MEMORY_MB': 300}, 409,
         NOT_ALLOCATED % ('MEMORY_MB', provider, CONSTRAINTS)),
    ]


def _framed(status, message):
    return (CONFLICT if status == 409 else BAD_REQUEST) % message


def test_put_refusals(shim):
    provider, refusals = _refusals(shim)
    for resources, status, message in refusals:
        consumer = _new()
        path = '/allocations/%s' % consumer
        answer = shim.call('PUT', path, _body(provider, resources),
                           expect=(status,))
        assert _error(answer) == (_framed(status, message),
                                  'placement.undefined_code'), resources
        # Before 1.28 (no consumer generation) and in 1.0's list form.
        answer = shim.call('PUT', path, {
            'allocations': {provider: {'resources': resources}},
            'project_id': 'p', 'user_id': 'u'}, version='1.27',
            expect=(status,))
        assert _error(answer)[0] == _framed(status, message)
        answer = shim.call('PUT', path, {'allocations': [
            {'resource_provider': {'uuid': provider},
             'resources': resources}]}, version='1.0', expect=(status,))
        assert _error(answer) == (_framed(status, message), None)
    consumer = _new()
    answer = shim.call('PUT', '/allocations/%s' % consumer, _body(
        provider, {'CUSTOM_NOT_A_CLASS': 1}), expect=(400,))
    assert _error(answer)[0] == BAD_REQUEST % (
        'Unable to allocate inventory for consumer %s: No such resource '
        'class CUSTOM_NOT_A_CLASS.' % consumer)
    absent = _new()
    answer = shim.call('PUT', '/allocations/%s' % consumer,
                       _body(absent, {'VCPU': 1}), expect=(400,))
    assert _error(answer)[0] == BAD_REQUEST % (
        "Allocation for resource provider '%s' that does not exist."
        % absent)


def test_post_and_reshaper_refusals(shim):
    provider, refusals = _refusals(shim)
    for resources, status, message in refusals:
        answer = shim.call('POST', '/allocations', {
            _new(): _body(provider, resources)}, expect=(status,))
        assert _error(answer)[0] == _framed(status, message), resources
        answer = shim.call('POST', '/reshaper', {
            'inventories': {provider: {
                'resource_provider_generation': shim.generation(provider),
                'inventories': {'VCPU': {'total': 8},
                                'MEMORY_MB': MEMORY}}},
            'allocations': {_new(): _body(provider, resources)}},
            expect=(status,))
        assert _error(answer)[0] == _framed(status, message), resources
    answer = shim.call('POST', '/allocations', {_new(): _body(
        provider, {'CUSTOM_NOT_A_CLASS': 1})}, expect=(400,))
    assert _error(answer)[0] == BAD_REQUEST % (
        'Unable to allocate inventory No such resource class '
        'CUSTOM_NOT_A_CLASS.')
    answer = shim.call('POST', '/reshaper', {
        'inventories': {provider: {
            'resource_provider_generation': shim.generation(provider),
            'inventories': {'CUSTOM_NOT_A_CLASS': {'total': 1}}}},
        'allocations': {}}, expect=(400,))
    assert _error(answer)[0] == BAD_REQUEST % (
        'malformed reshaper data: No such resource class '
        'CUSTOM_NOT_A_CLASS.')


def test_consumer_generation_conflicts(shim):
    provider = shim.provider('fidelity-generations', {'VCPU': {'total': 8}})
    consumer = _new()
    shim.allocate(consumer, {provider: {'VCPU': 1}})
    held = shim.consumer(consumer)['consumer_generation']
    path = '/allocations/%s' % consumer
    # The generation given reads as Python prints it; one the consumer
    # has not got reads as null.
    for given, shown in ((None, 'None'), (held + 5, str(held + 5))):
        answer = shim.call('PUT', path, _body(provider, {'VCPU': 2}, given),
                           expect=(409,))
        assert _error(answer) == (CONFLICT % (
            'consumer generation conflict - expected %s but got %s'
            % (held, shown)), 'placement.concurrent_update')
        answer = shim.call('POST', '/allocations', {
            consumer: _body(provider, {'VCPU': 2}, given)}, expect=(409,))
        assert _error(answer)[0] == CONFLICT % (
            'consumer generation conflict - expected %s but got %s'
            % (held, shown))
    answer = shim.call('PUT', '/allocations/%s' % _new(),
                       _body(provider, {'VCPU': 2}, 3), expect=(409,))
    assert _error(answer)[0] == CONFLICT % (
        'consumer generation conflict - expected null but got 3')


def test_provider_texts(shim):
    parent = shim.provider('fidelity-parent', {'VCPU': {'total': 1}})
    child, other = _new(), _new()
    shim.call('POST', '/resource_providers', {
        'uuid': child, 'name': 'fidelity-child-' + child,
        'parent_provider_uuid': parent})
    answer = shim.call('POST', '/resource_providers', {
        'uuid': parent, 'name': 'fidelity-again'}, expect=(409,))
    assert _error(answer) == (CONFLICT % (
        'Conflicting resource provider uuid: %s already exists.' % parent),
        'placement.duplicate_name')
    orphan, lone = _new(), _new()
    for given, parent_uuid, reason in (
            (orphan, other, 'parent provider UUID does not exist.'),
            (lone, lone, 'parent provider UUID cannot be same as UUID. '
                         'Please set parent provider UUID to None if there '
                         'is no parent.')):
        answer = shim.call('POST', '/resource_providers', {
            'uuid': given, 'name': 'fidelity-' + given,
            'parent_provider_uuid': parent_uuid}, expect=(400,))
        assert _error(answer)[0] == BAD_REQUEST % (
            'Unable to create resource provider "fidelity-%s", %s: Object '
            'action create failed because: %s' % (given, given, reason))
    _moves_refused(shim, parent, child)
    answer = shim.call('DELETE', '/resource_providers/%s' % parent,
                       expect=(409,))
    assert _error(answer) == (CONFLICT % (
        'Unable to delete parent resource provider %s: It has child '
        'resource providers.' % parent),
        'placement.resource_provider.cannot_delete_parent')
    for absent in (other, 'not-a-uuid'):
        answer = shim.call('DELETE', '/resource_providers/%s' % absent,
                           expect=(404,))
        assert _error(answer)[0] == NOT_FOUND % (
            'No resource provider with uuid %s found for delete' % absent)


def _moves_refused(shim, parent, child):
    def refused(body, version, action, reason, target=child):
        answer = shim.call('PUT', '/resource_providers/%s' % target, body,
                           version=version, expect=(400,))
        assert _error(answer)[0] == BAD_REQUEST % (
            'Unable to save resource provider %s: Object action %s failed '
            'because: %s' % (target, action, reason))
    name = {'name': 'fidelity-child-' + child}
    elsewhere = shim.provider('fidelity-elsewhere', {})
    refused(dict(name, parent_provider_uuid=_new()), '1.36', 'create',
            'parent provider UUID does not exist.')
    refused(dict(name, parent_provider_uuid=elsewhere), '1.36', 'update',
            're-parenting a provider is not currently allowed.')
    refused(dict(name, parent_provider_uuid=None), '1.36', 'update',
            'un-parenting a provider is not currently allowed.')
    refused(dict(name, parent_provider_uuid=child), '1.37', 'update',
            'creating loop in the provider tree is not allowed.')
    refused({'name': 'fidelity-parent', 'parent_provider_uuid': child},
            '1.37', 'update', 'creating loop in the provider tree is not '
            'allowed.', target=parent)
    answer = shim.call('PUT', '/resource_providers/%s' % elsewhere,
                       {'name': 'fidelity-parent'}, expect=(409,))
    assert _error(answer) == (CONFLICT % (
        'Conflicting resource provider fidelity-parent already exists.'),
        'placement.duplicate_name')


def test_inventory_texts(shim):
    provider = shim.provider('fidelity-inventory', {'VCPU': {'total': 8}})
    path = '/resource_providers/%s/inventories' % provider
    answer = shim.call('PUT', path, {'resource_provider_generation': 0,
                                     'inventories': {}}, expect=(409,))
    assert _error(answer) == (
        CONFLICT % 'resource provider generation conflict',
        'placement.concurrent_update')
    answer = shim.call('PUT', path + '/VCPU', {
        'resource_provider_generation': 0, 'total': 9}, expect=(409,))
    assert _error(answer)[0] == \
        CONFLICT % 'resource provider generation conflict'
    unable = 'Unable to %s inventory for resource provider ' + provider
    answer = shim.call('PUT', path, {
        'resource_provider_generation': shim.generation(provider),
        'inventories': {'CUSTOM_NOT_A_CLASS': {'total': 1}}}, expect=(400,))
    assert _error(answer)[0] == BAD_REQUEST % (
        'Unknown resource class in inventory for resource provider %s: No '
        'such resource class CUSTOM_NOT_A_CLASS.' % provider)
    answer = shim.call('POST', path, {
        'resource_class': 'CUSTOM_NOT_A_CLASS', 'total': 1}, expect=(400,))
    assert _error(answer)[0] == BAD_REQUEST % (
        unable % 'create' + ': No such resource class CUSTOM_NOT_A_CLASS.')
    answer = shim.call('POST', path, {'resource_class': 'VCPU', 'total': 1},
                       expect=(409,))
    assert _error(answer)[1] == 'placement.concurrent_update'
    invalid = (": Invalid inventory for 'DISK_GB' on resource provider "
               "'%s'. The reserved value is greater than" % provider)
    for version, reserved, how in (('1.25', 8, ' or equal to'),
                                   ('1.26', 9, '')):
        answer = shim.call('POST', path, {
            'resource_class': 'DISK_GB', 'total': 8, 'reserved': reserved},
            version=version, expect=(400,))
        assert _error(answer)[0] == BAD_REQUEST % (
            unable % 'create' + invalid + how + ' total.')
    _absent_inventory_texts(shim, provider, path)


def _absent_inventory_texts(shim, provider, path):
    generation = shim.generation(provider)
    answer = shim.call('PUT', path + '/DISK_GB', {
        'resource_provider_generation': generation, 'total': 1},
        expect=(400,))
    assert _error(answer)[0] == BAD_REQUEST % (
        'No inventory record with resource class for resource provider '
        '%s: No inventory of class DISK_GB found.' % provider)
    answer = shim.call('PUT', path + '/CUSTOM_NOT_A_CLASS', {
        'resource_provider_generation': generation, 'total': 1},
        expect=(404,))
    assert _error(answer)[0] == \
        NOT_FOUND % 'No such resource class CUSTOM_NOT_A_CLASS.'
    gone = 'No inventory of class %s found for delete'
    answer = shim.call('DELETE', path + '/DISK_GB', expect=(404,))
    assert _error(answer)[0] == NOT_FOUND % (
        gone % 'DISK_GB' + ': ' + gone % 'DISK_GB')
    answer = shim.call('DELETE', path + '/CUSTOM_NOT_A_CLASS', expect=(404,))
    assert _error(answer)[0] == NOT_FOUND % (
        gone % 'CUSTOM_NOT_A_CLASS' + ': No such resource class '
        'CUSTOM_NOT_A_CLASS.')
    missing = 'No resource provider with uuid %s found'
    for absent in (_new(), 'not-a-uuid'):
        base = '/resource_providers/%s' % absent
        plain = missing % absent
        for suffix, message in (
                ('', plain), ('/inventories', plain + ' : ' + plain),
                ('/inventories/VCPU', plain + ' : ' + plain),
                ('/usages', plain + ': ' + plain),
                ('/traits', plain + ': ' + plain),
                ('/aggregates', plain),
                ('/allocations', "Resource provider '%s' not found: %s"
                 % (absent, plain))):
            answer = shim.call('GET', base + suffix, expect=(404,))
            assert _error(answer)[0] == NOT_FOUND % message, suffix


def test_class_and_trait_texts(shim):
    answer = shim.call('POST', '/resource_classes',
                       {'name': 'CUSTOM_FIDELITY'}, expect=(409,))
    assert _error(answer) == (CONFLICT % (
        'Conflicting resource class already exists: CUSTOM_FIDELITY'),
        'placement.undefined_code')
    shim.call('PUT', '/resource_classes/CUSTOM_FIDELITY_HELD', version='1.7')
    shim.provider('fidelity-class', {'CUSTOM_FIDELITY_HELD': {'total': 1}})
    answer = shim.call('DELETE', '/resource_classes/CUSTOM_FIDELITY_HELD',
                       expect=(409,))
    assert _error(answer)[0] == CONFLICT % (
        'Error in delete resource class: Cannot delete resource class '
        'CUSTOM_FIDELITY_HELD. Class is in use in inventory.')
    for method in ('GET', 'DELETE'):
        answer = shim.call(method, '/traits/CUSTOM_NO_SUCH_TRAIT',
                           expect=(404,))
        assert _error(answer)[0] == \
            NOT_FOUND % 'No such trait(s): CUSTOM_NO_SUCH_TRAIT.'
    provider = shim.provider('fidelity-traits', {})
    answer = shim.call('PUT', '/resource_providers/%s/traits' % provider, {
        'resource_provider_generation': shim.generation(provider),
        'traits': ['CUSTOM_NO_SUCH_TRAIT']}, expect=(400,))
    assert _error(answer)[0] == \
        BAD_REQUEST % 'No such trait CUSTOM_NO_SUCH_TRAIT'
