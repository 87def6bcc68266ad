"""allocworker-api: every RPC call answers the same over POST /v1/{method}
(same service layer, same policies, same codes)."""

import json
import re
import urllib.error
import urllib.request
import uuid

import pytest

from tests.functional import jsonhttp
from tests.functional import services

BACKENDS = ['sqlite', 'postgresql']


class Http(object):
    """The mirror, called like the bare RPC client."""

    def __init__(self, port):
        self.base = 'http://127.0.0.1:%d' % port

    def call(self, method, token='admin', roles=None, raw=None, **kwargs):
        headers = {'x-auth-token': token} if token else {}
        if roles:
            headers['x-roles'] = roles
        return jsonhttp.call('%s/v1/%s' % (self.base, method), 'POST',
                             raw if raw is not None else kwargs, headers)


@pytest.fixture(scope='module')
def http(database, scratch):
    server, port = services.start_api(database, scratch)
    client = Http(port)
    yield client
    server.terminate()
    server.wait(30)


def scenario(call, ids):
    """One run through every call; each answer normalized for comparing."""
    host = ids('host')
    consumer = ids('consumer')
    group = ids('group')
    cls = 'CUSTOM_' + ids('class').replace('-', '_').upper()
    steps = [
        ('create_provider', dict(uuid=host, name='h-' + host)),
        ('create_provider', dict(uuid=host, name='h-' + host)),
        ('get_providers', dict(uuids=[host, ids('missing')])),
        ('set_inventories', dict(provider_uuid=host, provider_generation=0,
                                 inventories={'VCPU': {'total': 4}})),
        ('create_resource_class', dict(name=cls)),
        ('list_resource_classes', {}),
        ('create_group', dict(uuid=group, name='g',
                              policy='anti-affinity')),
        ('add_members', dict(group_uuid=group, consumer_uuids=[consumer])),
        ('get_groups', dict(uuids=[group])),
        ('external_event', dict(events=[{'name': 'network-vif-plugged',
                                         'consumer_uuid': consumer}])),
        ('wait_for_events', dict(consumer_uuid=consumer, timeout=0,
                                 names=['network-vif-plugged',
                                        'network-changed'])),
        ('get_allocations', dict(consumer_uuids=[consumer])),
        ('get_usages', dict(provider_uuids=[host])),
        ('list_allocations', dict(provider_uuid=ids('missing'))),
        ('list_consumers', dict(project_id='no-such-project')),
        ('allocate', dict(items='not a list')),
        ('remove_members', dict(group_uuid=group,
                                consumer_uuids=[consumer])),
        ('delete_group', dict(uuid=group)),
        ('delete_provider', dict(uuid=host)),
    ]
    answers = [normalize(call(method, **kwargs), ids.known)
               for method, kwargs in steps]
    for answer in answers:
        # Other runs' custom classes are not this run's business.
        answer['items'] = [i for i in answer['items'] if not str(
            i.get('name', '')).startswith('CUSTOM_') or
            i['name'] == 'CUSTOM_CLASS']
    return answers


def normalize(answer, known):
    text = json.dumps(answer, sort_keys=True)
    text = re.sub(r'"req-[0-9a-f-]+"', '"REQ"', text)
    text = re.sub(r'"(generation|consumer_generation)": \d+',
                  r'"\1": "G"', text)
    text = re.sub(r'"received_at": "[^"]+"', '"received_at": "T"', text)
    text = re.sub(r'generation \d+', 'generation G', text)
    for value, name in known.items():
        text = text.replace(value, name)
        text = text.replace(value.replace('-', '_').upper(), name.upper())
    return json.loads(text)


class Ids(object):
    def __init__(self):
        self.known = {}

    def __call__(self, name):
        value = str(uuid.uuid4())
        self.known[value] = name
        return value


def test_every_call_answers_the_same_over_http_and_rpc(rpc, http):
    def over_rpc(method, **kwargs):
        return rpc.call(method, **kwargs)

    def over_http(method, **kwargs):
        status, body = http.call(method, **kwargs)
        assert status == body['status'], (method, status, body)
        return body

    by_rpc = scenario(over_rpc, Ids())
    by_http = scenario(over_http, Ids())
    assert by_http == by_rpc
    assert {s['status'] for s in by_http} == {200, 207, 400, 404}


def test_http_specifics(http):
    status, body = http.call('list_resource_classes', token=None)
    assert status == 401
    status, body = http.call('create_provider', token='bob:p1',
                             uuid=str(uuid.uuid4()), name='x')
    assert status == 207 and body['items'][0]['code'] == 'forbidden'
    status, body = http.call('create_provider', token='bob:p1',
                             roles='admin', uuid=str(uuid.uuid4()),
                             name='bob-' + str(uuid.uuid4()))
    assert status == 200
    status, body = http.call('no_such_call')
    assert status == 404 and body['status'] == 404
    status, body = http.call('allocate', raw=b'{not json')
    assert status == 400 and body['code'] == 'invalid_request'
    request = urllib.request.Request(http.base + '/v1/get_providers',
                                     headers={'x-auth-token': 'admin'})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 405
    assert refused.value.headers['Allow'] == 'POST'
