"""Two Nova deployments share one allocworker-api through a real Keystone
(tools/keystone.sh): each authenticates as its own service user
(``nova-east``, ``nova-west``, made through Keystone's API with the
admin and service roles on the ``service`` project, as devstack makes
Nova's), the API validates their tokens with keystonemiddleware (``[api]
auth_strategy = keystone``), and ``[partitions] bindings`` names the
users by their Keystone ids. Each sees the Placement it would have had
alone; the operator's admin token, unbound, sees both. PostgreSQL only:
what is checked here is the identity reaching the bindings, which the
backend does not change (test_partition_bindings_shim.py covers the
rest)."""

import subprocess
import uuid

import pytest

from tests.functional import jsonhttp
from tests.functional import services

BACKENDS = ('postgresql',)
# allocworker's policy lets only admins write providers and inventories
# (Placement 16.0.0's defaults let the service role too).
USERS = {'nova-east': ['admin', 'service'], 'nova-west': ['admin', 'service']}
PARTITION = {'nova-east': 'east', 'nova-west': 'west'}
NAME = 'compute-01'


@pytest.fixture(scope='module')
def tokens(keystone):
    """{user: (Keystone user id, token)} of the two service users and
    the operator's admin (project-scoped by password, as Nova's
    ``[placement]`` section and the operator's CLI get theirs)."""
    found = keystone.service_users(USERS)
    found['admin'] = (None, keystone.user_token(
        'admin', keystone.ids['ADMIN_PASSWORD'], 'admin'))
    return found


@pytest.fixture(scope='module')
def api(database, scratch, keystone, tokens):
    """allocworker-api checking tokens against ``keystone``, with each
    service user bound to its partition by id."""
    server, port = services.start_api(
        database, scratch, auth='keystone', stderr=subprocess.DEVNULL,
        extra=keystone.api_config({tokens[user][0]: PARTITION[user]
                                   for user in USERS}))
    base = 'http://127.0.0.1:%d' % port
    try:
        yield {user: Deployment(base, token)
               for user, (_id, token) in tokens.items()}
    finally:
        server.kill()
        server.wait()


class Deployment(object):
    """A Placement client calling with one Keystone token."""

    def __init__(self, base, token):
        self.base, self.token = base, token

    def call(self, method, path, body=None, version='1.39'):
        headers = jsonhttp.placement_headers(version)
        headers['x-auth-token'] = self.token
        return jsonhttp.call(self.base + path, method, body, headers)

    def ok(self, method, path, body=None, version='1.39'):
        status, found = self.call(method, path, body, version)
        assert 200 <= status < 300, (method, path, status, found)
        return found


def _compute(deployment):
    """``compute-01`` with 8 VCPU, as Nova's resource tracker makes it."""
    made = deployment.ok('POST', '/resource_providers', {'name': NAME})
    deployment.ok('PUT', '/resource_providers/%s/inventories' % made['uuid'],
                  {'resource_provider_generation': made['generation'],
                   'inventories': {'VCPU': {'total': 8},
                                   'MEMORY_MB': {'total': 4096}}})
    return made['uuid']


def _allocation(provider, vcpu, project):
    return {'allocations': {provider: {'resources': {'VCPU': vcpu}}},
            'project_id': project, 'user_id': 'u1',
            'consumer_generation': None, 'consumer_type': 'INSTANCE'}


def test_a_request_without_a_valid_token_is_refused(api):
    status, _ = jsonhttp.call(api['admin'].base + '/resource_providers')
    assert status == 401
    status, _raw = Deployment(api['admin'].base, 'not-a-token').call(
        'GET', '/resource_providers')
    assert status == 401


def test_two_service_users_each_see_their_own_placement(api):
    east, west, admin = api['nova-east'], api['nova-west'], api['admin']
    rps = {'nova-east': _compute(east), 'nova-west': _compute(west)}
    project = str(uuid.uuid4())
    for user, vcpu, other in (('nova-east', 1, 'nova-west'),
                              ('nova-west', 2, 'nova-east')):
        deployment, own, theirs = api[user], rps[user], rps[other]
        listed = deployment.ok('GET', '/resource_providers')
        assert [(p['uuid'], p['name']) for p in
                listed['resource_providers']] == [(own, NAME)]
        status, _ = deployment.call('GET', '/resource_providers/%s' % theirs)
        assert status == 404
        found = deployment.ok('GET', '/allocation_candidates?resources=VCPU:1')
        assert set(found['provider_summaries']) == {own}
        consumer = str(uuid.uuid4())
        status, body = deployment.call(
            'PUT', '/allocations/%s' % consumer,
            _allocation(theirs, vcpu, project))
        assert status == 403, body
        deployment.ok('PUT', '/allocations/%s' % consumer,
                      _allocation(own, vcpu, project))
        usages = deployment.ok('GET', '/usages?project_id=%s' % project,
                               version='1.9')['usages']
        assert usages == {'VCPU': vcpu}, usages
    # The operator, unbound: both, each in its user's partition.
    both = admin.ok('GET', '/resource_providers?name=%s' % NAME)
    assert {p['uuid'] for p in both['resource_providers']} == set(
        rps.values())
    found = admin.ok('GET', '/allocation_candidates?resources=VCPU:1')
    assert set(found['provider_summaries']) == set(rps.values())
    assert admin.ok('GET', '/usages?project_id=%s' % project,
                    version='1.9')['usages'] == {'VCPU': 3}
    status, answer = jsonhttp.call(
        admin.base + '/v1/get_providers', 'POST',
        {'uuids': list(rps.values())}, {'x-auth-token': admin.token,
                                        'content-type': 'application/json'})
    assert status == 200, answer
    assert {i['uuid']: i['partition'] for i in answer['items']} == {
        rps[user]: PARTITION[user] for user in USERS}
