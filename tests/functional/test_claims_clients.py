"""The clients of the scheduling calls: the rpcapi library (1.3 and its
version cap), the HTTP mirror ``POST /v1/claim``, ``allocworker-manage
candidates``, and who may claim. What they reach is the same service
layer on every backend, so one backend is enough here."""

import json
import subprocess
import uuid

import oslo_messaging as messaging
import pytest

from allocworker import rpcapi
from tests.functional import services
from tests.functional.helpers import assert_fault, one
from tests.functional.test_api import Http
from tests.functional.test_claims import (claim_item, held, hosts,
                                          slot_class, wanting)

BACKENDS = ('sqlite',)


def test_rpcapi_claims_at_1_3_and_refuses_under_an_older_cap(rpc, topic):
    from oslo_config import cfg
    cfg.CONF.set_override('topic', topic, 'worker')
    name = slot_class(rpc)
    root = hosts(rpc, name, 1, 2)[0]
    api = rpcapi.AllocWorkerAPI(transport=rpc.transport)
    found = api.get_allocation_candidates(rpc.context, wanting(name))
    assert [c['root_uuid'] for c in found['items']] == [root]
    placed = one(api.claim(rpc.context, [claim_item(str(uuid.uuid4()),
                                                    wanting(name))]))
    assert (placed['status'], placed['root_uuid']) == (200, root)
    # 0.1, the release before scheduling, served RPC 1.2.
    cfg.CONF.set_override('allocworker', '0.1', 'upgrade_levels')
    try:
        old = rpcapi.AllocWorkerAPI(transport=rpc.transport)
        try:
            old.claim(rpc.context, [claim_item(str(uuid.uuid4()),
                                               wanting(name))])
            raise AssertionError('a 1.3 call went past a 1.2 cap')
        except messaging.RPCVersionCapError:
            pass
    finally:
        cfg.CONF.clear_override('allocworker', 'upgrade_levels')
    assert rpcapi.VERSION_ALIASES['0.2'] == '1.3'
    assert rpcapi.VERSION_ALIASES['0.3'] == '1.4'
    # 0.4, the release in the making, serves partitions (RPC 1.6) too.
    assert rpcapi.VERSION_ALIASES['0.4'] == rpcapi.VERSION == '1.6'


def test_rpcapi_speaks_1_5_and_refuses_it_under_an_older_cap(rpc, topic):
    from oslo_config import cfg
    cfg.CONF.set_override('topic', topic, 'worker')
    api = rpcapi.AllocWorkerAPI(transport=rpc.transport)
    name = 'rack-%s' % uuid.uuid4().hex[:6]
    level = one(api.set_topology_level(rpc.context, name, {
        str(uuid.uuid4()): 'r1'}))
    assert level['status'] == 200 and level['generation'] == 2
    group_uuid = str(uuid.uuid4())
    group = one(api.create_group(rpc.context, group_uuid, 'g', rules=[
        {'policy': 'spread', 'scope': name}]))
    assert group['rules'][0]['scope'] == name, group
    updated = one(api.update_group(rpc.context, group_uuid,
                                   group['generation'],
                                   [{'policy': 'anti-affinity'}]))
    assert updated['policy'] == 'anti-affinity', updated
    assert one(api.get_topology(rpc.context, [name]))['roots'] == {}
    # 0.3 served RPC 1.4: a client capped there sends no 1.5 call, and
    # its 1.0 group calls still work.
    cfg.CONF.set_override('allocworker', '0.3', 'upgrade_levels')
    try:
        old = rpcapi.AllocWorkerAPI(transport=rpc.transport)
        with pytest.raises(messaging.RPCVersionCapError):
            old.delete_topology_level(rpc.context, name)
        with pytest.raises(messaging.RPCVersionCapError):
            old.create_group(rpc.context, str(uuid.uuid4()), 'g',
                             rules=[{'policy': 'affinity'}])
        assert one(old.create_group(rpc.context, str(uuid.uuid4()), 'g',
                                    'affinity'))['status'] == 200
    finally:
        cfg.CONF.clear_override('allocworker', 'upgrade_levels')


def test_claim_through_the_http_mirror(rpc, database, scratch):
    name = slot_class(rpc)
    root = hosts(rpc, name, 1, 2)[0]
    server, port = services.start_api(database, scratch,
                                      stderr=subprocess.DEVNULL)
    try:
        http = Http(port)
        consumer = str(uuid.uuid4())
        status, answer = http.call('claim', items=[
            claim_item(consumer, wanting(name, 2))])
        assert (status, answer['status']) == (200, 200), answer
        assert one(answer)['root_uuid'] == root
        status, answer = http.call('claim', items=[
            claim_item(str(uuid.uuid4()), wanting(name))])
        assert status == 207
        assert_fault(one(answer), 409, 'capacity.exceeded')
        status, answer = http.call('get_allocation_candidates',
                                   request=wanting(name))
        assert (status, answer['items']) == (200, [])
    finally:
        server.terminate()
        server.wait(30)
    assert held(rpc, consumer) == {root: {name: 2}}


def test_manage_candidates_shows_where_a_request_fits(rpc, scratch,
                                                      database):
    name = slot_class(rpc)
    root = hosts(rpc, name, 1, 4)[0]
    config = services.write_config('%s/manage.conf' % scratch, database,
                                   'unused')
    table = services.manage(config, 'candidates', '--resources',
                            '%s:3' % name).stdout
    header, row = services.table(table)
    assert header == ['candidate', 'root_uuid', 'provider', 'resources',
                      'used', 'capacity']
    assert row[:3] == ['1', root, root]
    found = json.loads(services.manage(
        config, 'candidates', '--format', 'json', '--request',
        json.dumps(wanting(name, 3))).stdout)
    assert [c['allocations'] for c in found] == [{root: {name: 3}}]
    refused = services.manage(config, 'candidates', '--request', '{}',
                              check=False)
    assert refused.returncode == 1 and 'groups' in refused.stderr


def _caller(roles, project):
    return {'request_id': 'req-%s' % uuid.uuid4(), 'roles': roles,
            'project_id': project, 'user_id': 'user-%s' % project}


@pytest.mark.parametrize('roles, project, status', [
    (['admin'], 'ops', 200), (['service'], 'services', 200),
    (['member'], 'project-a', 200), (['member'], 'project-b', 403)])
def test_claim_policy_follows_the_items_project(rpc, roles, project, status):
    name = slot_class(rpc)
    hosts(rpc, name, 1, 4)
    consumer = str(uuid.uuid4())
    item = one(rpc.call('claim', context=_caller(roles, project), items=[
        dict(claim_item(consumer, wanting(name)), project_id='project-a')]))
    assert item['status'] == status, item
    assert (held(rpc, consumer) is not None) == (status == 200)
    found = rpc.call('get_allocation_candidates',
                     context=_caller(roles, project), request=wanting(name))
    assert found['status'] == 200 and len(found['items']) == 1


def test_a_stranger_cannot_claim_another_projects_consumer(rpc):
    name = slot_class(rpc)
    hosts(rpc, name, 1, 4)
    consumer = str(uuid.uuid4())
    first = one(rpc.claim(items=[dict(claim_item(consumer, wanting(name)),
                                      project_id='project-a')]))
    taken = one(rpc.call('claim', context=_caller(['member'], 'project-b'),
                         items=[dict(claim_item(
                             consumer, wanting(name),
                             first['consumer_generation']),
                             project_id='project-b')]))
    assert_fault(taken, 403, 'forbidden')
    assert held(rpc, consumer) == first['allocations']


def test_one_consumer_twice_in_a_call_is_refused_for_both(rpc):
    name = slot_class(rpc)
    hosts(rpc, name, 1, 4)
    consumer = str(uuid.uuid4())
    answer = rpc.claim(items=[claim_item(consumer, wanting(name)),
                              claim_item(consumer, wanting(name, 2))])
    assert [i['code'] for i in answer['items']] == ['invalid_request'] * 2
    assert held(rpc, consumer) is None
