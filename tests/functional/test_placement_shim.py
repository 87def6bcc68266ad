"""Placement's API through allocworker-api where Placement's own gabbi
files cannot look: a Content-Length that is not a number, allocations
with mappings checked without candidates, and a resource class renamed
while inventories and allocations use it."""

import http.client
import json
import uuid

import pytest

from tests.functional import services

BACKENDS = ['sqlite', 'postgresql']


class Placement(object):
    def __init__(self, port):
        self.port = port

    def request(self, method, path, body=None, version='1.39',
                token='admin', headers=None):
        connection = http.client.HTTPConnection('127.0.0.1', self.port,
                                                timeout=60)
        sent = {'x-auth-token': token, 'accept': 'application/json',
                'openstack-api-version': 'placement %s' % version}
        if body is not None:
            body = json.dumps(body)
            sent['content-type'] = 'application/json'
        sent.update(headers or {})
        connection.request(method, path, body=body, headers=sent)
        response = connection.getresponse()
        data = response.read()
        connection.close()
        return response.status, json.loads(data) if data else None


@pytest.fixture(scope='module')
def placement(database, scratch):
    server, port = services.start_api(database, scratch, 'placement')
    yield Placement(port)
    server.terminate()
    server.wait(30)


def _provider(placement, inventories):
    provider = str(uuid.uuid4())
    status, _ = placement.request('POST', '/resource_providers', {
        'uuid': provider, 'name': 'rp-' + provider})
    assert status == 200
    status, _ = placement.request(
        'PUT', '/resource_providers/%s/inventories' % provider,
        {'resource_provider_generation': 0, 'inventories': inventories})
    assert status == 200
    return provider


def test_framing_errors_are_placements(placement):
    status, body = placement.request(
        'POST', '/resource_providers', headers={'content-length': 'hi mom'})
    assert status == 400
    assert 'content-length header must be an integer' in \
        body['errors'][0]['detail']
    status, body = placement.request('GET', '/resource_providers',
                                     token='member:p1')
    assert status == 403
    status, body = placement.request('GET', '/resource_providers/nonsense')
    assert status == 404
    # A consumer is read by any string (nothing there), deleted by any
    # string (404), written only by a uuid.
    status, body = placement.request('GET', '/allocations/nonsense')
    assert (status, body) == (200, {'allocations': {}})
    assert placement.request('DELETE', '/allocations/nonsense')[0] == 404
    status, body = placement.request('PUT', '/allocations/nonsense', {
        'allocations': {}, 'consumer_generation': None, 'project_id': 'p',
        'user_id': 'u', 'consumer_type': 'INSTANCE'})
    assert status == 400
    assert 'Malformed consumer_uuid' in body['errors'][0]['detail']


def test_allocations_carry_mappings_from_1_34(placement):
    provider = _provider(placement, {'VCPU': {'total': 4}})
    consumer = '/allocations/%s' % uuid.uuid4()
    item = {'allocations': {provider: {'resources': {'VCPU': 1}}},
            'consumer_generation': None, 'project_id': 'p', 'user_id': 'u',
            'mappings': {'': [provider]}}
    status, body = placement.request('PUT', consumer, item, version='1.33')
    assert status == 400
    assert 'Additional properties are not allowed' in \
        body['errors'][0]['detail']
    for bad in ({}, {'alpha': 'beta'}, {'x': ['not-a-uuid']}):
        status, _ = placement.request('PUT', consumer,
                                      dict(item, mappings=bad),
                                      version='1.34')
        assert status == 400, bad
    status, _ = placement.request('PUT', consumer, item, version='1.34')
    assert status == 204
    status, body = placement.request('GET', consumer)
    assert body['allocations'][provider]['resources'] == {'VCPU': 1}
    assert 'mappings' not in body


def test_renamed_class_carries_its_inventories_and_allocations(placement):
    old, new = ('CUSTOM_OLD_%s' % uuid.uuid4().hex.upper(),
                'CUSTOM_NEW_%s' % uuid.uuid4().hex.upper())
    assert placement.request('PUT', '/resource_classes/%s' % old)[0] == 201
    provider = _provider(placement, {old: {'total': 10}})
    consumer = '/allocations/%s' % uuid.uuid4()
    status, _ = placement.request('PUT', consumer, {
        'allocations': {provider: {'resources': {old: 3}}},
        'consumer_generation': None, 'project_id': 'p', 'user_id': 'u',
        'consumer_type': 'INSTANCE'})
    assert status == 204
    status, body = placement.request('PUT', '/resource_classes/%s' % old,
                                     {'name': new}, version='1.6')
    assert (status, body['name']) == (200, new)
    status, body = placement.request(
        'GET', '/resource_providers/%s/inventories' % provider)
    assert list(body['inventories']) == [new]
    status, body = placement.request(
        'GET', '/resource_providers/%s/usages' % provider)
    assert body['usages'] == {new: 3}
    status, body = placement.request('GET', consumer)
    assert body['allocations'][provider]['resources'] == {new: 3}
    assert placement.request('GET', '/resource_classes/%s' % old)[0] == 404
    status, body = placement.request('PUT', '/resource_classes/VCPU',
                                     {'name': new + '_X'}, version='1.6')
    assert status == 400
    assert 'Cannot update standard resource class VCPU' in \
        body['errors'][0]['detail']
