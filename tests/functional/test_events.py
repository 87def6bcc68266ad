"""External events over RabbitMQ with several worker processes: per-event
statuses, held events, waiters that never miss an event, notifications."""

import json
import queue
import threading
import time
import uuid

import oslo_messaging as messaging
import pytest

from tests.functional import services
from tests.functional.helpers import allocate, assert_fault, one, provider

HOLD_SECONDS = 4
WORKER_CONFIG = '''
[events]
hold_seconds = %d
[oslo_messaging_notifications]
driver = messagingv2
topics = {topic}-notifications
[worker]
upkeep_interval = 1
''' % HOLD_SECONDS


class _Collector(object):
    def __init__(self):
        self.seen = queue.Queue()

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        self.seen.put((event_type, payload))

    def wait_for(self, event_type, match, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                kind, payload = self.seen.get(timeout=0.5)
            except queue.Empty:
                continue
            if kind == event_type and match(payload):
                return payload
        raise AssertionError('no %s notification arrived' % event_type)


@pytest.fixture(scope='module')
def notices(topic):
    """A real listener on the notification topic, started before the
    worker so no notification is sent before its queue exists."""
    from oslo_config import cfg
    transport = messaging.get_notification_transport(
        cfg.CONF, url=services.RABBIT_URL)
    collector = _Collector()
    listener = messaging.get_notification_listener(
        transport, [messaging.Target(topic='%s-notifications' % topic)],
        [collector])
    listener.start()
    yield collector
    listener.stop()
    listener.wait()


@pytest.fixture(scope='module')
def agent(notices, rpc):
    return rpc


def event(consumer, name='network-vif-plugged', **extra):
    value = {'name': name, 'consumer_uuid': consumer}
    value.update(extra)
    return value


def existing_consumer(rpc):
    host, _ = provider(rpc, {'VCPU': {'total': 100}})
    consumer = str(uuid.uuid4())
    assert allocate(rpc, consumer, {host: {'VCPU': 1}})['status'] == 200
    return consumer, host


def test_event_for_unknown_consumer_is_held_never_404(agent, ids):
    answer = agent.external_event(events=[event(ids.consumer, tag='port-1')])
    assert answer['status'] == 207
    item = one(answer)
    assert_fault(item, 202, 'event.held')
    assert (item['name'], item['consumer_uuid'], item['tag'],
            item['event_status']) == ('network-vif-plugged', ids.consumer,
                                      'port-1', 'completed')


def test_mixed_batch_answers_per_event(agent, ids):
    consumer, _ = existing_consumer(agent)
    answer = agent.external_event(events=[
        event(consumer, tag='port-1'),
        event(ids.unknown, status='failed'),
        event(consumer, name='no-such-event'),
        event(consumer, name='volume-extended'),
        event(consumer, name='power-update', tag='POWER_SIDEWAYS'),
        event(consumer, status='done'),
        event('not-a-uuid'),
        event(consumer, tag='x' * 256),
        event(consumer, name='power-update', tag='POWER_OFF'),
        'not an event',
    ])
    assert answer['status'] == 207
    statuses = [(i['status'], i.get('code')) for i in answer['items']]
    assert statuses == [(200, None), (202, 'event.held')] + \
        [(400, 'invalid_request')] * 6 + [(200, None),
                                          (400, 'invalid_request')]
    assert 'tag' in answer['items'][3]['detail']
    assert answer['items'][1]['event_status'] == 'failed'
    ok = agent.external_event(events=[event(consumer, tag='port-2')])
    assert ok['status'] == 200


def test_identical_resend_is_idempotent(agent, rpc, ids, scratch):
    consumer, _ = existing_consumer(agent)
    sent = [event(consumer, tag='port-9')]
    first = agent.external_event(events=sent)
    again = agent.external_event(events=sent + sent)
    assert first['items'][0] == again['items'][0] == again['items'][1]
    listed = json.loads(services.manage(
        '%s/worker.conf' % scratch, 'event', 'list', '--consumer', consumer,
        '--format', 'json').stdout)
    assert len(listed) == 1 and listed[0]['tag'] == 'port-9'


def test_event_before_consumer_and_before_waiter_is_not_lost(agent, ids):
    assert one(agent.external_event(events=[
        event(ids.consumer, tag='port-1')]))['status'] == 202
    host, _ = provider(agent, {'VCPU': {'total': 10}})
    assert allocate(agent, ids.consumer, {host: {'VCPU': 1}})['status'] == 200
    started = time.monotonic()
    answer = agent.wait_for_events(consumer_uuid=ids.consumer,
                                   names=['network-vif-plugged'], timeout=10)
    assert time.monotonic() - started < 5  # answered at once, no waiting
    item = one(answer)
    assert item['status'] == 200
    assert item['event']['tag'] == 'port-1'
    assert item['event']['consumer_uuid'] == ids.consumer
    assert item['event']['event_status'] == 'completed'
    assert item['event']['received_at']
    # And it still counts after the hold window, as the consumer appeared.
    time.sleep(HOLD_SECONDS + 2)
    later = one(agent.wait_for_events(consumer_uuid=ids.consumer,
                                      names=['network-vif-plugged'],
                                      timeout=0))
    assert later['status'] == 200


def test_waiter_on_one_process_woken_by_event_received_on_another(
        agent, ids, topic):
    consumer, _ = existing_consumer(agent)
    result = {}

    def waiter():
        result['answer'] = agent.call(
            'wait_for_events', server='%s.0' % topic,
            consumer_uuid=consumer, names=['network-vif-plugged:port-7',
                                           'network-changed'], timeout=30)
        result['woke'] = time.monotonic()

    thread = threading.Thread(target=waiter)
    thread.start()
    time.sleep(2)  # the waiter is polling by now
    agent.call('external_event', server='%s.1' % topic, events=[
        event(consumer, tag='port-6'), event(consumer, tag='port-7')])
    agent.call('external_event', server='%s.2' % topic, events=[
        event(consumer, name='network-changed')])
    arrived = time.monotonic()
    thread.join(40)
    delay = result['woke'] - arrived
    print('wake-up delay across processes: %.3f s' % delay)
    assert result['answer']['status'] == 200, result
    tagged, changed = result['answer']['items']
    assert tagged['name'] == 'network-vif-plugged:port-7'
    assert tagged['event']['tag'] == 'port-7'
    assert changed['event']['name'] == 'network-changed'


def test_missing_events_time_out_per_name(agent, ids):
    consumer, _ = existing_consumer(agent)
    agent.external_event(events=[event(consumer, tag='port-1')])
    answer = agent.wait_for_events(
        consumer_uuid=consumer, timeout=1,
        names=['network-vif-plugged:port-1', 'network-vif-plugged:port-2',
               'volume-extended', 'bogus-name'])
    assert answer['status'] == 207
    got, other_tag, never, bad = answer['items']
    assert got['status'] == 200
    assert_fault(other_tag, 408, 'event.timeout')
    assert_fault(never, 408, 'event.timeout')
    assert_fault(bad, 400, 'invalid_request')
    assert [i['name'] for i in answer['items']] == [
        'network-vif-plugged:port-1', 'network-vif-plugged:port-2',
        'volume-extended', 'bogus-name']


def test_cast_is_recorded_like_a_call(agent, ids):
    consumer, _ = existing_consumer(agent)
    agent.cast('external_event', events=[
        event(consumer, name='volume-extended', tag='vol-1')])
    item = one(agent.wait_for_events(consumer_uuid=consumer,
                                     names=['volume-extended:vol-1'],
                                     timeout=20))
    assert item['status'] == 200


def test_held_event_expires_when_its_consumer_never_comes(
        agent, ids, scratch):
    agent.external_event(events=[event(ids.consumer)])
    time.sleep(HOLD_SECONDS + 3)  # the window plus an upkeep run
    answer = agent.wait_for_events(consumer_uuid=ids.consumer,
                                   names=['network-vif-plugged'], timeout=0)
    assert_fault(one(answer), 408, 'event.timeout')
    listed = json.loads(services.manage(
        '%s/worker.conf' % scratch, 'event', 'list', '--consumer',
        ids.consumer, '--format', 'json').stdout)
    assert listed == []


def test_notifications_reach_a_real_listener(agent, notices, ids):
    consumer, host = existing_consumer(agent)
    changed = notices.wait_for('allocworker.allocation.changed',
                               lambda p: p['consumer_uuid'] == consumer and
                               p['allocations'] == {host: {'VCPU': 1}})
    assert changed['partition'] == 'default'

    agent.external_event(events=[event(consumer, tag='port-5')])
    payload = notices.wait_for('allocworker.event.received',
                               lambda p: p['consumer_uuid'] == consumer)
    assert payload['tag'] == 'port-5' and payload['held'] is False
    assert payload['event_status'] == 'completed'


def test_events_past_retention_are_removed(service_layer, agent, ids):
    from allocworker.conf import CONF
    from allocworker.events import external as service
    consumer, _ = existing_consumer(agent)
    agent.external_event(events=[event(consumer, tag='old')])
    assert [e['tag'] for e in service.list_events(consumer)] == ['old']
    CONF.set_override('retention_seconds', 1, 'events')
    try:
        time.sleep(1.5)
        assert service.expire() >= 1
    finally:
        CONF.clear_override('retention_seconds', 'events')
    assert service.list_events(consumer) == []


def test_a_change_names_the_partition_its_consumer_lives_in(agent, notices):
    east, shared = str(uuid.uuid4()), str(uuid.uuid4())
    for provider_uuid, partition in ((east, 'east'), (shared, 'shared')):
        item = one(agent.create_provider(uuid=provider_uuid,
                                         name='rp-' + provider_uuid,
                                         partition=partition))
        assert item['status'] == 200, item
        item = one(agent.set_inventories(
            provider_uuid=provider_uuid,
            provider_generation=item['generation'],
            inventories={'VCPU': {'total': 8}, 'DISK_GB': {'total': 80}}))
        assert item['status'] == 200, item
    both, pooled = str(uuid.uuid4()), str(uuid.uuid4())
    for consumer, allocations in (
            (both, {east: {'VCPU': 1}, shared: {'DISK_GB': 10}}),
            (pooled, {shared: {'DISK_GB': 10}})):
        assert allocate(agent, consumer, allocations)['status'] == 200
    seen = {consumer: notices.wait_for(
        'allocworker.allocation.changed',
        lambda p, c=consumer: p['consumer_uuid'] == c)['partition']
        for consumer in (both, pooled)}
    assert seen == {both: 'east', pooled: 'shared'}
    # Emptied, it still names where it lived.
    generation = one(agent.get_allocations(
        consumer_uuids=[both]))['consumer_generation']
    assert allocate(agent, both, {}, generation)['status'] == 200
    emptied = notices.wait_for(
        'allocworker.allocation.changed',
        lambda p: p['consumer_uuid'] == both and
        p['consumer_generation'] is None)
    assert emptied['partition'] == 'east'
