"""Error texts Placement's clients match on, through allocworker-api:
osc-placement's functional suite looks for "is not a 'uuid'" (a
malformed aggregate), "JSON does not validate" (a resource class name
that breaks the pattern) and "update conflict: Inventory for 'X' on
resource provider 'U' in use." (inventory still allocated); Nova's
report client for "Inventory for (.+) on resource provider (.+) in use".

A detail is whole as Placement 16.0.0 sends it: WebOb's paragraph for the
status, a blank line, then Placement's message (and two spaces after it
for the statuses whose WebOb template ends in a line break).
"""

import json
import urllib.error
import urllib.request
import uuid

import pytest


BACKENDS = ('sqlite',)

BAD_REQUEST = ('The server could not comply with the request since it is '
               'either malformed or otherwise incorrect.\n\n %s  ')
NOT_FOUND = 'The resource could not be found.\n\n %s  '
CONFLICT = ('There was a conflict when trying to complete your request.'
            '\n\n %s  ')


def _detail(answer):
    return answer['errors'][0]['detail']


def _raw(shim, method, path, headers, body=None):
    """(status, error entry) of a request with its own headers."""
    request = urllib.request.Request(
        shim.base + path, method=method, data=body,
        headers=dict({'x-auth-token': 'admin'}, **headers))
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, None
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())['errors'][0]


def test_malformed_aggregate_uuid(shim):
    provider = shim.provider('texts-aggregates', {})
    for version, body in (('1.1', ['abc', 'efg']),
                          ('1.19', {'aggregates': ['abc'],
                                    'resource_provider_generation': 0})):
        answer = shim.call('PUT', '/resource_providers/%s/aggregates'
                           % provider, body, version=version, expect=(400,))
        assert "is not a 'uuid'" in _detail(answer)
        assert _detail(answer).startswith(BAD_REQUEST[:-4])


def test_resource_class_name_breaking_the_pattern(shim):
    for name in ('fake_class', 'CUSTOM_lower', 'CUSTOM_GPU.INTEL'):
        answer = shim.call('POST', '/resource_classes', {'name': name},
                           version='1.2', expect=(400,))
        assert _detail(answer).startswith(
            BAD_REQUEST[:-4] + 'JSON does not validate')
        # The validation error's own line breaks read as spaces.
        assert '\n' not in _detail(answer)[len(BAD_REQUEST) - 4:]


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
    assert _detail(answer) == CONFLICT % ('update conflict: ' + held)
    assert answer['errors'][0]['code'] == 'placement.inventory.inuse'
    answer = shim.call('DELETE', path + '/CUSTOM_TEXTS', expect=(409,))
    assert _detail(answer) == CONFLICT % (
        'Unable to delete inventory of class CUSTOM_TEXTS: ' + held)
    # Placement's handler for one class files this under its code for a
    # concurrent update.
    assert answer['errors'][0]['code'] == 'placement.concurrent_update'
    answer = shim.call('DELETE', path, version='1.5', expect=(409,))
    assert _detail(answer) == CONFLICT % held


def test_paths_and_versions_not_served(shim):
    """A 404 without a message of Placement's own is WebOb's paragraph
    alone; so is the 405 of a method a microversion does not have."""
    answer = shim.call('GET', '/nowhere', expect=(404,))
    assert _detail(answer) == NOT_FOUND % ''
    answer = shim.call('GET', '/traits', version='1.5', expect=(404,))
    assert _detail(answer) == NOT_FOUND % ''
    provider = shim.provider('texts-405', {})
    status, entry = _raw(shim, 'DELETE', '/resource_providers/%s/inventories'
                         % provider, {'openstack-api-version':
                                      'placement 1.4'})
    assert (status, entry['detail']) == (
        405, 'The method DELETE is not allowed for this resource. \n\n ')
    status, entry = _raw(shim, 'PATCH', '/resource_providers', {})
    assert (status, entry['detail']) == (
        405, 'The method PATCH is not allowed for this resource. \n\n The '
        'method specified is not allowed for this resource.')


def test_framing_refusals_name_the_header(shim):
    status, entry = _raw(shim, 'POST', '/resource_providers',
                         {'content-type': 'text/plain'}, b'{}')
    assert (status, entry['detail']) == (
        415, 'The request media type text/plain is not supported by this '
        'server. \n\n The media type text/plain is not supported, use '
        'application/json')
    status, entry = _raw(shim, 'GET', '/resource_providers',
                         {'openstack-api-version': 'placement 1.99'})
    assert status == 406
    assert entry['detail'] == (
        'The resource could not be generated that was acceptable to your '
        'browser (content of type application/json. \n\n Invalid '
        'microversion: Unacceptable version header: 1.99')
    assert (entry['min_version'], entry['max_version']) == ('1.0', '1.39')
    assert entry['request_id'].startswith('req-')
    status, entry = _raw(shim, 'GET', '/resource_providers',
                         {'openstack-api-version': 'placement nope'})
    assert (status, entry['detail']) == (400, BAD_REQUEST % (
        "Invalid microversion: invalid version string: nope; invalid "
        "literal for int() with base 10: 'nope'"))


def test_html_error_page(shim):
    request = urllib.request.Request(
        shim.base + '/nowhere',
        headers={'x-auth-token': 'admin', 'accept': 'text/html'})
    with pytest.raises(urllib.error.HTTPError) as raised:
        urllib.request.urlopen(request, timeout=60)
    assert raised.value.read().decode() == (
        '<html>\n <head>\n  <title>404 Not Found</title>\n </head>\n <body>'
        '\n  <h1>404 Not Found</h1>\n  The resource could not be found.'
        '<br /><br />\n\n\n\n </body>\n</html>')
