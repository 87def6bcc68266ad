"""Project limits judged inside the allocation transaction (design §3
"Project limits"), through the service layer of this process on every
backend, with limits handed in by the test (``quota.limits.use``): what
is tested here is the rule, not where the limits come from
(test_limits_keystone.py runs the worker against a real Keystone)."""

import io
import json
import threading
import uuid
import wsgiref.util

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from oslo_context import context
import pytest

from allocworker.api import app
from allocworker import books
from allocworker import calls
from allocworker.conf import CONF
from allocworker.providers import resource_classes
from allocworker.quota import limits as limit_source
from tests.functional.helpers import assert_fault

pytestmark = pytest.mark.usefixtures('service_layer')
ADMIN = context.RequestContext(roles=['admin'], project_id='admin',
                               user_id='u', is_admin=True)


class Keystone(object):
    """Limits the test sets: registered defaults and per-project ones."""

    def __init__(self):
        self.registered, self.projects = {}, {}

    def __call__(self):
        return dict(self.registered), {p: dict(v)
                                       for p, v in self.projects.items()}


@pytest.fixture
def keystone():
    CONF([], project='allocworker', default_config_files=[])
    CONF.set_override('driver', 'unified_limits', 'quota')
    fake = Keystone()
    source = limit_source.use(fake)
    fake.refresh = source.refresh
    yield fake
    source.stop()
    CONF.clear_override('driver', 'quota')


def call(method, **kwargs):
    return calls.answer(ADMIN, method, kwargs)


@pytest.fixture(scope='module')
def host(service_layer):
    CONF([], project='allocworker', default_config_files=[])
    rp = str(uuid.uuid4())
    assert call('create_provider', uuid=rp, name=rp)['status'] == 200
    assert call('set_inventories', provider_uuid=rp, provider_generation=0,
                inventories={'VCPU': {'total': 10000},
                             'MEMORY_MB': {'total': 10 ** 6}})['status'] \
        == 200
    return rp


def item(consumer, vcpu, project, generation=None, kind=None, rp=None):
    found = {'consumer_uuid': consumer, 'consumer_generation': generation,
             'project_id': project, 'user_id': 'u',
             'allocations': {rp: {'VCPU': vcpu}} if vcpu else {}}
    if kind:
        found['consumer_type'] = kind
    return found


def allocate(items, atomic=False):
    return call('allocate', items=items, atomic=atomic)['items']


def limits_of(project):
    return {i['resource']: (i['limit'], i['usage'], i['remaining'])
            for i in call('get_limits', project_id=project)['items']}


def test_an_item_past_the_limit_is_refused_and_writes_nothing(
        keystone, host):
    project = str(uuid.uuid4())
    keystone.registered = {'class:VCPU': 4, 'servers': 10}
    keystone.refresh()
    first, second = str(uuid.uuid4()), str(uuid.uuid4())
    assert allocate([item(first, 3, project, rp=host)])[0]['status'] == 200
    refused = allocate([item(second, 2, project, rp=host)])[0]
    assert_fault(refused, 403, 'quota.exceeded')
    for word in ('class:VCPU', ' 4', ' 3', ' 2', project):
        assert word in refused['detail'], refused
    assert call('get_allocations', consumer_uuids=[second])['items'][0][
        'status'] == 404
    assert allocate([item(second, 1, project, rp=host)])[0]['status'] == 200
    assert limits_of(project) == {'class:VCPU': (4, 4, 0),
                                  'servers': (10, 2, 8)}


def test_a_resize_at_the_limit_counts_once(keystone, host):
    project = str(uuid.uuid4())
    keystone.registered = {'class:VCPU': 4}
    keystone.refresh()
    consumer = str(uuid.uuid4())
    answer = allocate([item(consumer, 4, project, rp=host)])[0]
    resized = allocate([item(consumer, 3, project, answer[
        'consumer_generation'], rp=host)])[0]
    assert resized['status'] == 200, resized
    grown = allocate([item(consumer, 4, project, resized[
        'consumer_generation'], rp=host)])[0]
    assert grown['status'] == 200, grown
    assert_fault(allocate([item(str(uuid.uuid4()), 1, project, rp=host)])[0],
                 403, 'quota.exceeded')


def test_a_migration_consumer_beside_the_instance_is_not_counted(keystone,
                                                                 host):
    project = str(uuid.uuid4())
    keystone.registered = {'class:VCPU': 4, 'servers': 1}
    keystone.refresh()
    instance, migration = str(uuid.uuid4()), str(uuid.uuid4())
    assert allocate([item(instance, 4, project, rp=host)])[0][
        'status'] == 200
    held = allocate([item(migration, 4, project, kind='MIGRATION',
                          rp=host)])[0]
    assert held['status'] == 200, held
    assert limits_of(project) == {'class:VCPU': (4, 4, 0),
                                  'servers': (1, 1, 0)}
    assert_fault(allocate([item(str(uuid.uuid4()), 1, project, rp=host)])[0],
                 403, 'quota.exceeded')


def test_a_project_over_a_lowered_limit_can_shrink_but_not_grow(keystone,
                                                                host):
    project = str(uuid.uuid4())
    keystone.registered = {'class:VCPU': 10}
    keystone.refresh()
    consumers = [str(uuid.uuid4()) for _ in range(3)]
    answers = allocate([item(c, 3, project, rp=host) for c in consumers])
    assert [a['status'] for a in answers] == [200] * 3
    keystone.projects = {project: {'class:VCPU': 2}}
    keystone.refresh()
    assert limits_of(project) == {'class:VCPU': (2, 9, 0)}
    shrunk = allocate([item(consumers[0], 2, project,
                            answers[0]['consumer_generation'], rp=host),
                       item(consumers[1], 0, project,
                            answers[1]['consumer_generation'])])
    assert [a['status'] for a in shrunk] == [200, 200], shrunk
    same = allocate([item(consumers[2], 3, project,
                          answers[2]['consumer_generation'], rp=host)])[0]
    assert same['status'] == 200, same
    assert_fault(allocate([item(consumers[0], 3, project,
                                shrunk[0]['consumer_generation'],
                                rp=host)])[0], 403, 'quota.exceeded')


def test_an_atomic_batch_blames_the_items_that_grow_past_the_limit(
        keystone, host):
    project, other = str(uuid.uuid4()), str(uuid.uuid4())
    keystone.registered = {'class:VCPU': 4}
    keystone.refresh()
    answers = allocate([item(str(uuid.uuid4()), 3, project, rp=host),
                        item(str(uuid.uuid4()), 2, project, rp=host),
                        item(str(uuid.uuid4()), 4, other, rp=host)],
                       atomic=True)
    assert [(a['status'], a['code']) for a in answers] == [
        (403, 'quota.exceeded'), (403, 'quota.exceeded'),
        (424, 'batch.aborted')]
    assert limits_of(project)['class:VCPU'] == (4, 0, 4)


@pytest.mark.parametrize('atomic', [False, True])
def test_a_consumer_emptied_earlier_in_the_call_makes_room(keystone, host,
                                                           atomic):
    project = str(uuid.uuid4())
    keystone.registered = {'class:VCPU': 1}
    keystone.refresh()
    old = str(uuid.uuid4())
    held = allocate([item(old, 1, project, rp=host)])[0]
    assert held['status'] == 200
    answers = allocate([item(old, 0, project, held['consumer_generation'],
                             rp=host),
                        item(str(uuid.uuid4()), 1, project, rp=host)],
                       atomic=atomic)
    assert [a['status'] for a in answers] == [200, 200], answers
    assert limits_of(project)['class:VCPU'] == (1, 1, 0)


def test_concurrent_calls_sharing_a_transaction_count_each_other(keystone,
                                                                 host):
    """Calls of one process share transactions (group commit): the items
    of earlier calls in the same transaction count."""
    project = str(uuid.uuid4())
    keystone.registered = {'class:VCPU': 10}
    keystone.refresh()
    start = threading.Barrier(24)
    results = []

    def boot():
        start.wait()
        results.append(allocate([item(str(uuid.uuid4()), 1, project,
                                      rp=host)])[0]['status'])

    threads = [threading.Thread(target=boot) for _ in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [200] * 10 + [403] * 14
    assert limits_of(project)['class:VCPU'] == (10, 10, 0)


def test_unlimited_resources_and_projects_are_not_judged(keystone, host):
    project = str(uuid.uuid4())
    keystone.registered = {'class:DISK_GB': 1}
    keystone.refresh()
    assert allocate([item(str(uuid.uuid4()), 50, project, rp=host)])[0][
        'status'] == 200
    assert limits_of(project) == {'class:DISK_GB': (1, 0, 1)}


# -- the rule against a sequential model ------------------------------------

def _model(limits, steps):
    """The statuses of ``steps`` when each is judged alone, in order."""
    held, statuses = {}, []
    for consumer, project, vcpu in steps:
        before = held.get(consumer)
        after = dict(held)
        after.pop(consumer, None)
        if vcpu:
            after[consumer] = (project, vcpu)
        mine = [v for p, v in after.values() if p == project]
        was = [v for p, v in held.values() if p == project]
        grows = {'class:VCPU': sum(mine) > sum(was),
                 'servers': len(mine) > len(was)}
        use = {'class:VCPU': sum(mine), 'servers': len(mine)}
        limit = limits.get(project, {})
        if any(grows[r] and use[r] > limit[r] for r in limit):
            statuses.append(403)
            continue
        held = after
        statuses.append(200)
        del before
    return statuses, held


projects_st = st.sampled_from(['a', 'b'])
limits_st = st.dictionaries(
    projects_st, st.fixed_dictionaries(
        {}, optional={'class:VCPU': st.integers(0, 6),
                      'servers': st.integers(0, 3)}))
steps_st = st.lists(st.tuples(st.integers(0, 3), projects_st,
                              st.integers(0, 4)), min_size=1, max_size=8)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(limits=limits_st, steps=steps_st, batched=st.booleans())
# A consumer of a limited project emptied by an item naming another
# project frees its room for the next item of the same transaction.
@example(limits={'a': {}, 'b': {'class:VCPU': 1}},
         steps=[(1, 'b', 1), (1, 'a', 0), (0, 'b', 1)], batched=True)
# The same room freed by moving the consumer to a project far from its
# limits (whose items are passed without a running count).
@example(limits={'a': {}, 'b': {'class:VCPU': 1}},
         steps=[(1, 'b', 1), (1, 'a', 1), (0, 'b', 1)], batched=True)
def test_outcomes_equal_a_sequential_model(keystone, host, limits, steps,
                                           batched):
    run = uuid.uuid4().hex[:8]
    keystone.projects = {run + p: v for p, v in limits.items()}
    keystone.registered = {}
    keystone.refresh()
    consumers = [str(uuid.uuid4()) for _ in range(4)]
    expected, held = _model(limits, steps)
    generations, statuses = {}, []
    # One call per step, or as many steps per call as name each consumer
    # once (one transaction, judged item by item).
    calls_of = []
    for step in steps:
        if not batched or not calls_of or step[0] in {
                s[0] for s in calls_of[-1]}:
            calls_of.append([])
        calls_of[-1].append(step)
    for steps_of_call in calls_of:
        answers = allocate([
            item(consumers[c], vcpu, run + project, generations.get(c),
                 rp=host) for c, project, vcpu in steps_of_call])
        for (c, _p, vcpu), answer in zip(steps_of_call, answers):
            statuses.append(answer['status'])
            if answer['status'] == 200:
                generations[c] = answer['consumer_generation']
    assert statuses == expected
    for project in ('a', 'b'):
        mine = [v for p, v in held.values() if p == project]
        found = {i['resource']: i['usage'] for i in call(
            'get_limits', project_id=run + project)['items']}
        for resource, used in (('class:VCPU', sum(mine)),
                               ('servers', len(mine))):
            if resource in limits.get(project, {}):
                assert found[resource] == used


def _put_allocations(app, consumer, project, host, vcpu):
    body = json.dumps({'allocations': {host: {'resources': {'VCPU': vcpu}}},
                       'project_id': project, 'user_id': 'u',
                       'consumer_generation': None,
                       'consumer_type': 'INSTANCE'}).encode()
    environ = {'REQUEST_METHOD': 'PUT',
               'PATH_INFO': '/allocations/%s' % consumer,
               'CONTENT_TYPE': 'application/json',
               'CONTENT_LENGTH': str(len(body)),
               'HTTP_X_AUTH_TOKEN': 'admin',
               'HTTP_OPENSTACK_API_VERSION': 'placement 1.38',
               'wsgi.input': io.BytesIO(body)}
    wsgiref.util.setup_testing_defaults(environ)
    answered = []
    b''.join(app(environ, lambda status, headers: answered.append(status)))
    return int(answered[0].split()[0])


@pytest.mark.parametrize('enforced', [False, True])
def test_the_placement_api_is_judged_only_when_configured(
        keystone, host, enforced):
    CONF.set_override('enforce_placement_api', enforced, 'quota')
    CONF.set_override('auth_strategy', 'noauth2', 'api')
    try:
        project = str(uuid.uuid4())
        keystone.registered = {'class:VCPU': 2}
        keystone.refresh()
        application = app.build(CONF)
        first = _put_allocations(application, str(uuid.uuid4()), project,
                                 host, 2)
        second = _put_allocations(application, str(uuid.uuid4()), project,
                                  host, 1)
    finally:
        CONF.clear_override('enforce_placement_api', 'quota')
        CONF.clear_override('auth_strategy', 'api')
    assert (first, second) == ((204, 403) if enforced else (204, 204))


def test_a_claim_is_judged_like_an_allocate(keystone, host):
    project = str(uuid.uuid4())
    keystone.registered = {'class:VCPU': 4}
    keystone.refresh()

    def claim(vcpu):
        return call('claim', items=[{
            'consumer_uuid': str(uuid.uuid4()), 'consumer_generation': None,
            'project_id': project, 'user_id': 'u',
            'request': {'groups': [{'resources': {'VCPU': vcpu}}]}}])[
            'items'][0]

    placed = claim(3)
    assert (placed['status'], placed['root_uuid']) == (200, host), placed
    assert_fault(claim(2), 403, 'quota.exceeded')
    assert claim(1)['status'] == 200


def test_a_deleted_class_leaves_every_count_adding_up(keystone):
    # A judged write counts the class in its project's lock row, the
    # delete that empties the consumer (not judged) on the shard rows:
    # deleting the class must drop both parts, not one.
    name = 'CUSTOM_AW_%s' % uuid.uuid4().hex[:8].upper()
    assert call('create_resource_class', name=name)['status'] == 200
    rp = str(uuid.uuid4())
    assert call('create_provider', uuid=rp, name=rp)['status'] == 200
    assert call('set_inventories', provider_uuid=rp, provider_generation=0,
                inventories={name: {'total': 10}})['status'] == 200
    project, consumer = str(uuid.uuid4()), str(uuid.uuid4())
    keystone.registered = {'class:%s' % name: 5}
    keystone.refresh()
    answer, = allocate([dict(item(consumer, 0, project), allocations={
        rp: {name: 3}})])
    assert answer['status'] == 200, answer
    assert limits_of(project)['class:%s' % name][1] == 3
    answer, = allocate([item(consumer, 0, project, generation=1)])
    assert answer['status'] == 200, answer
    assert call('set_inventories', provider_uuid=rp, provider_generation=2,
                inventories={})['status'] == 200
    deleted, = resource_classes.delete_resource_class(ADMIN, name)
    assert deleted['status'] == 200, deleted
    assert books.check() == []
