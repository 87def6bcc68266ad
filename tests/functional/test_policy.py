"""Authorization over the real RabbitMQ: roles x calls x own/other
project, and an operator's policy file that changes rules at run time."""

import time
import uuid

import pytest
import yaml

from tests.functional import services
from tests.functional.helpers import alloc_item, one, provider

BACKENDS = ['postgresql']
PROJECT = 'project-a'


def caller(roles, project):
    return {'request_id': 'req-%s' % uuid.uuid4(), 'roles': roles,
            'project_id': project, 'user_id': 'user-%s' % project}


CALLERS = {
    'admin': caller(['admin'], 'ops'),
    'service': caller(['service'], 'services'),
    'owner': caller(['member'], PROJECT),
    'stranger': caller(['member'], 'project-b'),
}


@pytest.fixture(scope='module')
def world(rpc):
    """As admin: a provider, a consumer and a group of project A."""
    host, _ = provider(rpc, {'VCPU': {'total': 100}})
    consumer = str(uuid.uuid4())
    made = one(rpc.allocate(items=[alloc_item(consumer, {host: {'VCPU': 1}},
                                              project=PROJECT)]))
    group = str(uuid.uuid4())
    one(rpc.create_group(uuid=group, name='g', policy='anti-affinity',
                         project_id=PROJECT))
    return {'host': host, 'consumer': consumer, 'group': group,
            'generation': made['consumer_generation']}


def as_(rpc, who, method, **kwargs):
    return rpc.call(method, context=CALLERS[who], **kwargs)


@pytest.mark.parametrize('who, status', [
    ('admin', 200), ('service', 200), ('owner', 200), ('stranger', 403)])
def test_allocate_for_project_a(rpc, world, who, status):
    consumer = str(uuid.uuid4())
    item = one(as_(rpc, who, 'allocate', items=[alloc_item(
        consumer, {world['host']: {'VCPU': 1}}, project=PROJECT)]))
    assert item['status'] == status, item
    read = one(rpc.get_allocations(consumer_uuids=[consumer]))
    assert read['status'] == (200 if status == 200 else 404)


def test_stranger_cannot_take_over_a_consumer_by_claiming_it(rpc, world):
    item = one(as_(rpc, 'stranger', 'allocate', items=[alloc_item(
        world['consumer'], {}, world['generation'], project='project-b')]))
    assert (item['status'], item['code']) == (403, 'forbidden')
    read = one(rpc.get_allocations(consumer_uuids=[world['consumer']]))
    assert read['project_id'] == PROJECT and read['allocations']


@pytest.mark.parametrize('who, status', [
    ('admin', 200), ('service', 200), ('owner', 200), ('stranger', 403)])
def test_get_allocations(rpc, world, who, status):
    item = one(as_(rpc, who, 'get_allocations',
                   consumer_uuids=[world['consumer']]))
    assert item['status'] == status
    if status == 403:
        assert item['code'] == 'forbidden' and 'allocations' not in item


@pytest.mark.parametrize('who, sees', [
    ('admin', True), ('service', True), ('owner', True), ('stranger', False)])
def test_listings_show_only_what_the_caller_may_see(rpc, world, who, sees):
    listed = as_(rpc, who, 'list_allocations', provider_uuid=world['host'])
    assert listed['status'] == 200
    assert (world['consumer'] in [i['consumer_uuid']
                                  for i in listed['items']]) is sees
    assert all(i['project_id'] == PROJECT for i in listed['items']
               if who == 'owner')
    page = as_(rpc, who, 'list_consumers', limit=1000)
    assert page['status'] == 200
    assert (world['consumer'] in [i['consumer_uuid']
                                  for i in page['items']]) is sees
    if who == 'stranger':
        assert all(i['project_id'] == 'project-b' for i in page['items'])


@pytest.mark.parametrize('who, status', [
    ('admin', 200), ('service', 200), ('owner', 403), ('stranger', 403)])
def test_external_events_come_from_services(rpc, world, who, status):
    tag = 'port-%s' % uuid.uuid4()
    item = one(as_(rpc, who, 'external_event', events=[{
        'name': 'network-vif-plugged', 'consumer_uuid': world['consumer'],
        'tag': tag}]))
    assert item['status'] == status
    waited = one(rpc.wait_for_events(
        consumer_uuid=world['consumer'], timeout=0,
        names=['network-vif-plugged:%s' % tag]))
    assert waited['status'] == (200 if status == 200 else 408)


@pytest.mark.parametrize('who, status', [
    ('owner', 408), ('stranger', 403)])
def test_wait_for_events_of_own_consumers_only(rpc, world, who, status):
    item = one(as_(rpc, who, 'wait_for_events',
                   consumer_uuid=world['consumer'], timeout=0,
                   names=['volume-extended']))
    assert item['status'] == status


@pytest.mark.parametrize('who', ['service', 'owner', 'stranger'])
def test_provider_writes_need_admin(rpc, world, who):
    new = str(uuid.uuid4())
    assert one(as_(rpc, who, 'create_provider', uuid=new,
                   name='x-' + new))['status'] == 403
    assert one(rpc.get_providers(uuids=[new]))['status'] == 404
    current = one(rpc.get_providers(uuids=[world['host']]))
    assert one(as_(rpc, who, 'set_inventories', provider_uuid=world['host'],
                   provider_generation=current['generation'],
                   inventories={}))['status'] == 403
    assert one(as_(rpc, who, 'delete_provider',
                   uuid=world['host']))['status'] == 403
    assert one(as_(rpc, who, 'create_resource_class',
                   name='CUSTOM_X'))['status'] == 403
    assert one(rpc.get_providers(uuids=[world['host']])) == current


@pytest.mark.parametrize('who', ['admin', 'service', 'owner', 'stranger'])
def test_everyone_reads_providers_usages_and_classes(rpc, world, who):
    assert one(as_(rpc, who, 'get_providers',
                   uuids=[world['host']]))['status'] == 200
    assert one(as_(rpc, who, 'get_usages',
                   provider_uuids=[world['host']]))['status'] == 200
    assert as_(rpc, who, 'list_resource_classes')['items']


@pytest.mark.parametrize('who, status', [
    ('admin', 200), ('service', 200), ('owner', 200), ('stranger', 403)])
def test_groups_of_project_a(rpc, world, who, status):
    new = str(uuid.uuid4())
    item = one(as_(rpc, who, 'create_group', uuid=new, name='g',
                   policy='affinity', project_id=PROJECT))
    assert item['status'] == status
    assert one(as_(rpc, who, 'get_groups',
                   uuids=[world['group']]))['status'] == status
    member = str(uuid.uuid4())
    added = one(as_(rpc, who, 'add_members', group_uuid=world['group'],
                    consumer_uuids=[member]))
    assert added['status'] == status
    members = one(rpc.get_groups(uuids=[world['group']]))['members']
    assert (member in members) is (status == 200)
    if status == 403:
        assert one(as_(rpc, who, 'delete_group',
                       uuid=world['group']))['status'] == 403
        assert one(rpc.get_groups(uuids=[world['group']]))['status'] == 200
        groups = as_(rpc, who, 'get_groups', uuids=None)
        assert world['group'] not in [g['uuid'] for g in groups['items']]


def test_policy_file_opens_and_closes_rules_at_run_time(database, scratch):
    topic = 'aw-policy-%s' % uuid.uuid4().hex[:8]
    policy_file = '%s/policy.yaml' % scratch
    rules = {'allocworker:create_resource_class': '@',
             'allocworker:get_usages': '!'}
    with open(policy_file, 'w') as f:
        yaml.safe_dump(rules, f)
    config = services.write_config(
        '%s/policy.conf' % scratch, database, topic, workers=2,
        extra='[oslo_policy]\npolicy_file = %s\n' % policy_file)
    client = services.BareClient(topic)
    worker = services.Worker(config).start(client)
    try:
        member = CALLERS['owner']
        name = 'CUSTOM_' + uuid.uuid4().hex.upper()
        opened = client.call('create_resource_class', context=member,
                             name=name)
        assert one(opened)['status'] == 200
        closed = client.call('get_usages', context=CALLERS['admin'],
                             provider_uuids=[str(uuid.uuid4())])
        assert one(closed)['status'] == 403
        # Both workers decide for the admin now (and keep the decision).
        for n in range(4):
            opened = client.call('create_resource_class',
                                 context=CALLERS['admin'],
                                 name='%s_A%d' % (name, n))
            assert one(opened)['status'] == 200
        # Changing the file changes the rules; no restart, no code. The
        # workers look at the files at most once a second.
        with open(policy_file, 'w') as f:
            yaml.safe_dump({'allocworker:create_resource_class': '!'}, f)
        time.sleep(1.5)
        for n in range(4):
            again = client.call('create_resource_class',
                                context=CALLERS['admin'],
                                name='%s_B%d' % (name, n))
            assert one(again)['status'] == 403
    finally:
        assert worker.stop() == 0


def test_is_admin_context_counts_as_admin(rpc):
    new = str(uuid.uuid4())
    context = {'request_id': 'req-1', 'is_admin': True, 'roles': []}
    item = one(rpc.call('create_provider', context=context, uuid=new,
                        name='admin-ctx-' + new))
    assert item['status'] == 200
    nobody = {'request_id': 'req-2', 'roles': []}
    item = one(rpc.call('create_provider', context=nobody,
                        uuid=str(uuid.uuid4()), name='nobody-' + new))
    assert (item['status'], item['code']) == (403, 'forbidden')
