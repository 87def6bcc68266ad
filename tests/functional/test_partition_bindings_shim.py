"""Two deployments share one allocworker-api, each through its own
service user bound to its partition (``[partitions] bindings``): each
sees the Placement it would have had alone, with colliding provider
names, and the operator sees both. noauth2 names the user as Keystone's
middleware would (``X-User-Id``)."""

import json
import uuid

import pytest

from tests.functional import jsonhttp
from tests.functional import services

BINDINGS = '[partitions]\nbindings = nova-east:east,nova-west:west\n'


class Deployment(object):
    """A Placement client calling as one user."""

    def __init__(self, base, user):
        self.base, self.user = base, user

    def call(self, method, path, body=None, version='1.39'):
        headers = jsonhttp.placement_headers(version)
        headers.update({'x-auth-token': '%s:service' % self.user,
                        'x-roles': 'admin,service'})
        status, raw = jsonhttp.request(self.base + path, method, body,
                                       headers)
        return status, json.loads(raw) if raw else None

    def ok(self, method, path, body=None, version='1.39'):
        status, found = self.call(method, path, body, version)
        assert 200 <= status < 300, (method, path, status, found)
        return found


@pytest.fixture(scope='module')
def api(database, scratch):
    server, port = services.start_api(database, scratch, extra=BINDINGS)
    base = 'http://127.0.0.1:%d' % port
    yield {user: Deployment(base, user)
           for user in ('nova-east', 'nova-west', 'admin')}
    server.kill()
    server.wait()


def _compute(deployment, name):
    rp = str(uuid.uuid4())
    deployment.ok('POST', '/resource_providers', {'uuid': rp, 'name': name})
    deployment.ok('PUT', '/resource_providers/%s/inventories' % rp, {
        'resource_provider_generation': 0,
        'inventories': {'VCPU': {'total': 8}, 'MEMORY_MB': {'total': 4096}}})
    return rp


def test_two_deployments_see_their_own_placement(api):
    east, west, admin = api['nova-east'], api['nova-west'], api['admin']
    name = 'compute-01-%s' % uuid.uuid4().hex[:6]
    east_rp, west_rp = _compute(east, name), _compute(west, name)
    for deployment, own, other in ((east, east_rp, west_rp),
                                   (west, west_rp, east_rp)):
        listed = deployment.ok('GET', '/resource_providers?name=%s' % name)
        assert [p['uuid'] for p in listed['resource_providers']] == [own]
        status, _ = deployment.call('GET', '/resource_providers/%s' % other)
        assert status == 404
        found = deployment.ok(
            'GET', '/allocation_candidates?resources=VCPU:1&limit=1000')
        roots = {r for r in found['provider_summaries']}
        assert own in roots and other not in roots
        consumer = str(uuid.uuid4())
        status, body = deployment.call('PUT', '/allocations/%s' % consumer, {
            'allocations': {other: {'resources': {'VCPU': 1}}},
            'project_id': 'p1', 'user_id': 'u1', 'consumer_generation': None,
            'consumer_type': 'INSTANCE'})
        assert status == 403, body
        deployment.ok('PUT', '/allocations/%s' % consumer, {
            'allocations': {own: {'resources': {'VCPU': 1}}},
            'project_id': 'p1', 'user_id': 'u1', 'consumer_generation': None,
            'consumer_type': 'INSTANCE'})
        usages = deployment.ok('GET', '/usages?project_id=p1',
                               version='1.9')['usages']
        assert usages['VCPU'] == 1, usages
    both = admin.ok('GET', '/resource_providers?name=%s' % name)
    assert {p['uuid'] for p in both['resource_providers']} == {
        east_rp, west_rp}
    assert admin.ok('GET', '/usages?project_id=p1', version='1.9')[
        'usages']['VCPU'] == 2
