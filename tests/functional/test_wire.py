"""The worker as a black box on the wire: hostile payloads, whole-request
errors, the rpcapi client library, and a clean shutdown."""

import threading
import uuid

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
import pytest

from allocworker import rpcapi
from tests.functional import services
from tests.functional.helpers import alloc_item, one, provider, usage

# The wire behaviour does not depend on the database; one backend is enough.
BACKENDS = ['postgresql']

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**40, 2**40) |
    st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=4) |
    st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12)


@pytest.fixture(scope='module')
def target(rpc):
    host, _ = provider(rpc, {'VCPU': {'total': 4}})
    return host


def _mutations(host):
    good = alloc_item(str(uuid.uuid4()), {host: {'VCPU': 1}})
    return st.one_of(
        json_values,
        st.builds(lambda k, v: dict(good, **{k: v}),
                  st.sampled_from(sorted(good)), json_values),
        st.builds(lambda v: dict(good, allocations={host: {'VCPU': v}}),
                  json_values),
        st.builds(lambda k: dict(good, allocations={host: {k: 1}}),
                  st.text(max_size=20)),
        st.builds(lambda k: {x: good[x] for x in good if x != k},
                  st.sampled_from(sorted(good))))


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_malformed_items_get_400s_and_write_nothing(rpc, target, data):
    items = data.draw(st.lists(_mutations(target), min_size=1, max_size=4))
    answer = rpc.allocate(items=items,
                          atomic=data.draw(st.booleans()))
    assert answer['status'] in (200, 207)
    assert len(answer['items']) == len(items)
    for item in answer['items']:
        assert item['status'] in (200, 400, 409, 424), item
        if item['status'] != 200:
            assert item['code'] and item['detail']
    # Whatever was accepted is exactly what the books now show.
    accepted = [i for i in answer['items'] if i['status'] == 200 and
                i['consumer_generation'] is not None]
    for item in accepted:
        rpc.allocate(items=[alloc_item(item['consumer_uuid'], {},
                                       item['consumer_generation'])])
    assert usage(rpc, target) == {'VCPU': 0}


@pytest.mark.parametrize('method, kwargs', [
    ('allocate', {'items': 'nope'}),
    ('allocate', {'items': [], 'atomic': 'yes'}),
    ('allocate', {}),
    ('allocate', {'items': [], 'surprise': 1}),
    ('get_allocations', {'consumer_uuids': 'nope'}),
    ('get_usages', {'provider_uuids': {}}),
    ('list_allocations', {'provider_uuid': 42}),
    ('list_consumers', {'limit': 0}),
    ('list_consumers', {'limit': 100000}),
    ('get_providers', {'uuids': 'x'}),
])
def test_malformed_requests_fail_whole_with_400(rpc, method, kwargs):
    answer = rpc.call(method, **kwargs)
    assert answer['status'] == 400, answer
    assert answer['code'] == 'invalid_request'
    assert answer['items'] == [] and answer['detail']
    assert answer['request_id'] == rpc.context['request_id']


def test_listing_of_unknown_provider_is_a_whole_request_404(rpc):
    answer = rpc.list_allocations(provider_uuid=str(uuid.uuid4()))
    assert (answer['status'], answer['code']) == (404, 'provider.not_found')
    assert answer['items'] == []


def test_list_consumers_pages_by_marker(rpc):
    project = 'proj-' + uuid.uuid4().hex
    host, _ = provider(rpc, {'VCPU': {'total': 10}})
    made = sorted(str(uuid.uuid4()) for _ in range(5))
    for consumer in made:
        rpc.allocate(items=[alloc_item(consumer, {host: {'VCPU': 1}},
                                       project=project)])
    pages, marker = [], None
    while True:
        page = rpc.list_consumers(project_id=project, limit=2, marker=marker)
        assert page['status'] == 200
        if not page['items']:
            break
        pages.append([i['consumer_uuid'] for i in page['items']])
        marker = pages[-1][-1]
    assert pages == [made[0:2], made[2:4], made[4:5]]


def test_rpcapi_client_gets_what_the_bare_client_gets(rpc, topic):
    from oslo_config import cfg
    cfg.CONF.set_override('topic', topic, 'worker')
    api = rpcapi.AllocWorkerAPI(transport=rpc.transport)
    host, _ = provider(rpc, {'VCPU': {'total': 4}})
    consumer = str(uuid.uuid4())
    made = one(api.allocate(rpc.context, [alloc_item(consumer, {
        host: {'VCPU': 2}})]))
    assert made['status'] == 200
    assert api.get_allocations(rpc.context, [consumer]) == \
        rpc.get_allocations(consumer_uuids=[consumer])
    assert api.get_usages(rpc.context, [host]) == \
        rpc.get_usages(provider_uuids=[host])
    assert api.list_allocations(rpc.context, host)['items'][0][
        'resources'] == {'VCPU': 2}


def test_sigterm_finishes_calls_in_flight_then_exits_0(database, scratch):
    topic = 'aw-term-%s' % uuid.uuid4().hex[:8]
    config = services.write_config('%s/term.conf' % scratch, database, topic,
                                   workers=2)
    client = services.BareClient(topic, timeout=60)
    worker = services.Worker(config).start(client)
    host, _ = provider(client, {'VCPU': {'total': 1000}})
    answers, errors = [], []

    def load():
        try:
            answers.append(client.allocate(items=[
                alloc_item(str(uuid.uuid4()), {host: {'VCPU': 1}})
                for _ in range(200)]))
        except Exception as exc:  # a lost call would show up here
            errors.append(exc)

    threads = [threading.Thread(target=load) for _ in range(4)]
    for t in threads:
        t.start()
    assert worker.stop() == 0
    for t in threads:
        t.join()
    # Calls taken before the signal were answered in full; none was cut.
    for answer in answers:
        assert answer['status'] == 200
    assert len(answers) + len(errors) == 4
