"""Error texts Placement's clients match on, through allocworker-api:
osc-placement's functional suite looks for "is not a 'uuid'" (a
malformed aggregate), "JSON does not validate" (a resource class name
that breaks the pattern) and "update conflict: Inventory for 'X' on
resource provider 'U' in use." (inventory still allocated); Nova's
report client for "Inventory for (.+) on resource provider (.+) in use".
"""

import uuid

import pytest

from tests.functional import placement_cloud
from tests.functional import services

BACKENDS = ('sqlite',)


@pytest.fixture(scope='module')
def shim(database, scratch):
    server, port = services.start_api(database, scratch)
    yield placement_cloud.Api('http://127.0.0.1:%d' % port)
    server.kill()
    server.wait()


def _detail(answer):
    return answer['errors'][0]['detail']


def test_malformed_aggregate_uuid(shim):
    provider = shim.provider('texts-aggregates', {})
    for version, body in (('1.1', ['abc', 'efg']),
                          ('1.19', {'aggregates': ['abc'],
                                    'resource_provider_generation': 0})):
        answer = shim.call('PUT', '/resource_providers/%s/aggregates'
                           % provider, body, version=version, expect=(400,))
        assert "is not a 'uuid'" in _detail(answer)


def test_resource_class_name_breaking_the_pattern(shim):
    for name in ('fake_class', 'CUSTOM_lower', 'CUSTOM_GPU.INTEL'):
        answer = shim.call('POST', '/resource_classes', {'name': name},
                           version='1.2', expect=(400,))
        assert _detail(answer).startswith('JSON does not validate')


def test_inventory_in_use(shim):
    shim.call('PUT', '/resource_classes/CUSTOM_TEXTS', version='1.7')
    provider = shim.provider('texts-inventory', {
        'VCPU': {'total': 8}, 'CUSTOM_TEXTS': {'total': 1}})
    shim.allocate(str(uuid.uuid4()), {provider: {'CUSTOM_TEXTS': 1}})
    held = ("Inventory for 'CUSTOM_TEXTS' on resource provider '%s' in "
            "use." % provider)
    path = '/resource_providers/%s/inventories' % provider
    answer = shim.call('PUT', path, {
        'resource_provider_generation': shim.generation(provider),
        'inventories': {'VCPU': {'total': 8}}}, expect=(409,))
    assert _detail(answer) == 'update conflict: ' + held
    assert answer['errors'][0]['code'] == 'placement.inventory.inuse'
    answer = shim.call('DELETE', path + '/CUSTOM_TEXTS', expect=(409,))
    assert _detail(answer) == ('Unable to delete inventory of class '
                               'CUSTOM_TEXTS: ' + held)
    answer = shim.call('DELETE', path, version='1.5', expect=(409,))
    assert _detail(answer) == held
